/* codec/selftest.c: the run-time arithmetic self-test (nlm_selftest, nlm.h), run once per process at
 * codec creation.
 *
 * A fixed tiny model step through the same kernels the codec uses, on the path this machine dispatches to
 * (scalar, SSE2, AVX2, F16C): three steps of an Elman recurrence h = tanh(W·x + U·h + b) (H = 32, matvec
 * and tanh vector forms), class logits through the binary16 matvec, exp, one dynamic-evaluation update
 * (outer product, sgd-decay), a subnormal product (flush-to-zero would zero it), quantisation
 * (quant_freqs) and range coding of three symbols, decoded back, and the integer forward (docs/format.md
 * §2.6: U's rows and the last h on their int8 grids, kern_matvec_q8: the masked VNNI tail at H = 32).  A
 * 64-bit FNV-1a digest of every float's bits, frequency and payload byte is compared with SELFTEST_DIGEST,
 * the value the scalar reference computes.  A mismatch (non-IEEE float environment, contraction into FMA, a
 * miscompiled kernel) means this build would write streams other machines cannot decode: nlm_codec_new then
 * fails with NLM_ERR_SELFTEST instead.
 *
 * Test-only build define NLM_SELFTEST_PERTURB_ROUNDING: the test runs with round-toward-zero, so it must
 * fail (tests/test_selftest.py proves that the self-test can fail).
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "nlm.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "codec/selftest.h"
#include "coder/quant.h" /* quant_freqs */
#include "coder/rc.h"    /* RcEnc, RcDec */
#include "kernels/kern.h"

#ifdef NLM_SELFTEST_PERTURB_ROUNDING
#include <fenv.h>
#endif

#define SELFTEST_DIGEST 0xc60a0ebd6c342629ull /* FNV-1a 64 of the scalar reference (-O0 -DNLM_NO_SIMD) */

#define SH 32 /* hidden = input width (a multiple of 16: the SIMD paths run) */
#define SC 20 /* classes */
#define ST 3  /* steps */

static uint64_t fnv(uint64_t d, const uint8_t* b, size_t n) {
    for (size_t i = 0; i < n; i++) d = (d ^ b[i]) * 0x100000001B3ull;
    return d;
}

/* 32-bit words hashed as their little-endian bytes, so the digest does not depend on the host byte order */
static uint64_t fnv_words(uint64_t d, const void* p, size_t nwords) {
    for (size_t i = 0; i < nwords; i++) {
        uint32_t w;
        memcpy(&w, (const uint8_t*)p + 4 * i, 4);
        const uint8_t le[4] = {(uint8_t)w, (uint8_t)(w >> 8), (uint8_t)(w >> 16), (uint8_t)(w >> 24)};
        d = fnv(d, le, 4);
    }
    return d;
}

/* k/256 for k in [-128, 128): exact in binary16 and float32 */
static float val(uint32_t* s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((int)(*s >> 24) - 128) / 256.0f;
}

/* Code syms[0..ST) with the tables f[k] (totals F[k]), decode them back: 1 if the round trip holds. */
static int round_trip(RcEnc* enc, uint32_t f[ST][SC], const uint32_t* F, const int* syms) {
    for (int k = 0; k < ST; k++) {
        uint32_t cum = 0;
        for (int i = 0; i < syms[k]; i++) cum += f[k][i];
        if (rc_enc_encode(enc, cum, f[k][syms[k]], F[k])) return 0;
    }
    if (rc_enc_finish(enc)) return 0;
    RcDec dec;
    rc_dec_init(&dec, enc->buf, enc->len);
    for (int k = 0; k < ST; k++) {
        uint32_t t, cum = 0;
        int i = 0;
        if (rc_dec_target(&dec, F[k], &t)) return 0;
        while (i < SC - 1 && cum + f[k][i] <= t) cum += f[k][i++];
        if (i != syms[k] || rc_dec_update(&dec, cum, f[k][i])) return 0;
    }
    return rc_dec_finish(&dec) == 0;
}

static uint64_t selftest_digest(void) {
    static const volatile float tiny[2] = {1.5e-20f, 3.0e-20f}; /* product 4.5e-40: subnormal */
    static float W[SH * SH], W0[SH * SH], U[SH * SH], G[SH * SH];
    float b[SH], x[ST][SH], h[SH], t[SH], u[SH], z[SC], e[SH];
    uint16_t Wo[SC * SH];
    uint32_t s = 20240601u, f[ST][SC], F[ST];
    int syms[ST];
    uint64_t d = 0xCBF29CE484222325ull;
    for (int i = 0; i < SH * SH; i++) W[i] = val(&s), U[i] = val(&s) * 0.25f;
    for (int i = 0; i < SC * SH; i++)
        if (!kern_float_to_half_exact(val(&s), &Wo[i])) return 0;
    for (int i = 0; i < SH; i++) b[i] = val(&s) * 0.125f, h[i] = 0.0f;
    for (int k = 0; k < ST; k++)
        for (int i = 0; i < SH; i++) x[k][i] = val(&s);
    memcpy(W0, W, sizeof W);
    for (int k = 0; k < ST; k++) {
        kern_matvec(t, W, x[k], SH, SH);
        kern_matvec(u, U, h, SH, SH);
        for (int i = 0; i < SH; i++) t[i] = (t[i] + u[i]) + b[i];
        kern_tanh_vec(h, t, SH);
        d = fnv_words(d, h, SH);
        kern_matvec_h(z, Wo, h, SC, SH);
        for (int i = 0; i < SC; i++) z[i] = z[i] * 4.0f;
        F[k] = quant_freqs(f[k], z, SC);
        d = fnv_words(d, f[k], SC);
        d = fnv_words(d, &F[k], 1);
        syms[k] = (int)((s >> (8 + k)) % SC);
        /* one update of W, as dynamic evaluation does: G = h ⊗ x, then clipped step and decay */
        const float* dv[1] = {h};
        const float* xv[1] = {x[k]};
        kern_outer_acc_seq(G, dv, xv, 1, SH, SH, 1);
        kern_sgd_decay(W, W0, G, 0.01f / (0.05f + 1e-5f), 0.001f, 0.01f, SH * SH);
        d = fnv_words(d, W, SH * SH);
    }
    static int8_t Uq[SH * SH];
    int32_t rs[SH];
    float mu[SH];
    int16_t g16[SH];
    uint8_t gu8[SH];
    for (int r = 0; r < SH; r++) kern_quant_row(Uq + r * SH, rs + r, mu + r, U + r * SH, SH);
    kern_quant_act(g16, gu8, h, SH);
    kern_matvec_q8(t, Uq, rs, mu, g16, gu8, SH, SH);
    d = fnv(d, (const uint8_t*)Uq, sizeof Uq);
    d = fnv_words(d, t, SH);
    kern_exp_vec(e, h, SH);
    e[0] = kern_exp(h[1] - 20.0f);
    e[1] = tiny[0] * tiny[1];
    d = fnv_words(d, e, SH);
    RcEnc enc;
    rc_enc_init(&enc);
    int ok = round_trip(&enc, f, F, syms);
    if (ok) d = fnv(d, enc.buf, enc.len);
    rc_enc_free(&enc);
    return ok ? d : 0;
}

/* 0 = not run yet, 1 = running, 2 = passed, 3 = failed */
static atomic_int g_state;

static int run_selftest(void) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
#ifdef NLM_SELFTEST_PERTURB_ROUNDING
    int saved_round = fegetround();
    fesetround(FE_TOWARDZERO);
#endif
    uint64_t d = selftest_digest();
#ifdef NLM_SELFTEST_PERTURB_ROUNDING
    fesetround(saved_round);
#endif
    nlm_fpenv_leave(&fe);
    return d == SELFTEST_DIGEST;
}

int nlm_selftest(void) {
    int st = atomic_load(&g_state);
    if (st < 2) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&g_state, &expect, 1)) {
            st = run_selftest() ? 2 : 3;
            atomic_store(&g_state, st);
        } else {
            while ((st = atomic_load(&g_state)) < 2) {
            } /* another thread is running it: microseconds */
        }
    }
    return st == 2 ? NLM_OK : NLM_ERR_SELFTEST;
}

uint64_t nlm_selftest_digest(void) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    uint64_t d = selftest_digest();
    nlm_fpenv_leave(&fe);
    return d;
}
