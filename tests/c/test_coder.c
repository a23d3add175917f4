/* tests/c/test_coder.c: harness for csrc/coder (range coder, Fenwick tree, quantiser).
 *
 * Built by tests/test_coder.py (twice: -O2 and -O0 -DNLM_NO_SIMD).  Prints "ok <name> ..." lines and
 * "hash <name> <hex>" lines (the latter must agree between builds); exits non-zero on the first failure.
 * libm is used here for the reference entropy only, never by the coder.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coder/quant.h"
#include "coder/rc.h"

#define RND_SEED 0x9E3779B97F4A7C15ull
#include "check.h" /* CHECK, rnd */
static double rndu(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static uint64_t fnv(uint64_t h, const void* p, size_t n) {
    const uint8_t* b = (const uint8_t*)p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

/* ---- a random distribution over n symbols, total <= 2^30 ---- */
static uint32_t make_dist(uint32_t* f, int n, int kind) {
    double* w = (double*)malloc(sizeof(double) * n);
    double s = 0;
    for (int i = 0; i < n; i++) {
        double x;
        switch (kind) {
        case 0: x = 1.0; break;                                    /* uniform */
        case 1: x = rndu(); break;                                 /* flat random */
        case 2: x = pow(rndu(), 8.0); break;                       /* skewed */
        case 3: x = 1.0 / pow(1.0 + i, 1.1); break;                /* Zipf */
        default: x = (i == 0) ? 1.0 : 1e-9 * rndu(); break;        /* one symbol dominates */
        }
        w[i] = x;
        s += x;
    }
    uint32_t T = (uint32_t)(1 + rnd() % RC_MAX_TOTAL);
    if (T < (uint32_t)n * 2) T = (uint32_t)n * 2;
    if (T > RC_MAX_TOTAL) T = RC_MAX_TOTAL;
    uint32_t F = 0;
    for (int i = 0; i < n; i++) {
        double v = floor(w[i] / s * (T - n));
        f[i] = 1 + (uint32_t)v;
        F += f[i];
    }
    free(w);
    return F;
}

typedef struct {
    const uint32_t* cum; /* cum[0..n] */
    int n;
} Cum;

static int find_cum(void* ctx, uint32_t t, int* sym, uint32_t* cum, uint32_t* f) {
    const Cum* c = (const Cum*)ctx;
    int lo = 0, hi = c->n; /* largest i with cum[i] <= t */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (c->cum[mid] <= t) lo = mid;
        else hi = mid;
    }
    *sym = lo;
    *cum = c->cum[lo];
    *f = c->cum[lo + 1] - c->cum[lo];
    return 0;
}

/* ---- round trip over random alphabets ---- */
static void test_roundtrip(void) {
    uint64_t h = 0xcbf29ce484222325ull;
    double worst = 0;
    for (int trial = 0; trial < 60; trial++) {
        int n = 2 + (int)(pow(2.0, rndu() * 16.0)) - 1;
        if (trial == 0) n = 2;
        if (trial == 1) n = 65536;
        if (n > 65536) n = 65536;
        int kind = trial % 5;
        uint32_t* f = (uint32_t*)malloc(sizeof(uint32_t) * n);
        uint32_t* cum = (uint32_t*)malloc(sizeof(uint32_t) * (n + 1));
        uint32_t F = make_dist(f, n, kind);
        CHECK(F <= RC_MAX_TOTAL, "F");
        cum[0] = 0;
        for (int i = 0; i < n; i++) cum[i + 1] = cum[i] + f[i];
        Cum cc = {cum, n};
        int N = 1000 + (int)(rnd() % 4000);
        int* syms = (int*)malloc(sizeof(int) * N);
        double bits = 0;
        for (int k = 0; k < N; k++) {
            int s;
            if (rnd() & 1) {
                uint32_t t = (uint32_t)(rnd() % F);
                uint32_t c, ff;
                find_cum(&cc, t, &s, &c, &ff); /* drawn from the distribution */
            } else {
                s = (int)(rnd() % n); /* uniform: exercises rare symbols */
            }
            syms[k] = s;
            bits += -log2((double)f[s] / F);
        }
        int small = n <= 512; /* rc_code_freqs (linear) for small alphabets, rc_code_cum for large */
        Rc rc;
        memset(&rc, 0, sizeof rc);
        rc_enc_init(&rc.enc);
        for (int k = 0; k < N; k++) {
            int s = syms[k];
            int err = small ? rc_code_freqs(&rc, f, n, F, &s)
                            : rc_code_cum(&rc, F, &s, cum[s], f[s], find_cum, &cc);
            CHECK(err == 0, "encode err %d", err);
        }
        CHECK(rc_enc_finish(&rc.enc) == 0, "finish");
        size_t len = rc.enc.len;
        double bound = bits / 8 * 1.0001 + 16;
        CHECK(len <= bound, "trial %d n %d: %zu bytes > bound %.1f (ideal %.1f)", trial, n, len, bound, bits / 8);
        if (len - bits / 8 > worst) worst = len - bits / 8;
        h = fnv(h, rc.enc.buf, len);
        rc.decoding = 1;
        rc_dec_init(&rc.dec, rc.enc.buf, len);
        for (int k = 0; k < N; k++) {
            int s = -1;
            int err = small ? rc_code_freqs(&rc, f, n, F, &s) : rc_code_cum(&rc, F, &s, 0, 0, find_cum, &cc);
            CHECK(err == 0 && s == syms[k], "decode trial %d k %d err %d got %d want %d", trial, k, err, s, syms[k]);
        }
        CHECK(rc_dec_finish(&rc.dec) == 0, "dec finish trial %d", trial);
        CHECK(rc_dec_past_end(&rc.dec) <= 7, "past end %zu", rc_dec_past_end(&rc.dec));
        rc_enc_free(&rc.enc);
        free(f);
        free(cum);
        free(syms);
    }
    printf("ok roundtrip worst_excess_bytes %.2f\n", worst);
    printf("hash roundtrip %016llx\n", (unsigned long long)h);
}

/* ---- one stream mixing many alphabets, symbol by symbol ---- */
static void test_mixed(void) {
    enum { N = 20000 };
    static uint32_t f[N][4];
    static int n[N], s[N];
    static uint32_t F[N];
    double bits = 0;
    for (int k = 0; k < N; k++) {
        n[k] = 2 + (int)(rnd() % 3);
        F[k] = 0;
        for (int i = 0; i < n[k]; i++) {
            f[k][i] = 1 + (uint32_t)(rnd() % ((rnd() & 1) ? 3 : (RC_MAX_TOTAL / 4)));
            F[k] += f[k][i];
        }
        s[k] = (int)(rnd() % n[k]);
        bits += -log2((double)f[k][s[k]] / F[k]);
    }
    Rc rc;
    memset(&rc, 0, sizeof rc);
    rc_enc_init(&rc.enc);
    for (int k = 0; k < N; k++) CHECK(rc_code_freqs(&rc, f[k], n[k], F[k], &s[k]) == 0, "enc");
    CHECK(rc_enc_finish(&rc.enc) == 0, "finish");
    CHECK(rc.enc.len <= bits / 8 * 1.0001 + 16, "mixed bound %zu vs %.1f", rc.enc.len, bits / 8);
    rc.decoding = 1;
    rc_dec_init(&rc.dec, rc.enc.buf, rc.enc.len);
    for (int k = 0; k < N; k++) {
        int x;
        CHECK(rc_code_freqs(&rc, f[k], n[k], F[k], &x) == 0 && x == s[k], "dec %d", k);
    }
    CHECK(rc_dec_finish(&rc.dec) == 0, "dec finish");
    printf("ok mixed bytes %zu ideal %.1f\n", rc.enc.len, bits / 8);
    rc_enc_free(&rc.enc);
}

/* ---- carry propagation: long runs of 0xFF, then carries ---- */
static void test_carry(void) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t max_ff = 0, carries_seen = 0;
    for (int trial = 0; trial < 40; trial++) {
        int N = 20000;
        uint32_t F = RC_MAX_TOTAL;
        uint32_t f[3] = {1, F - 2, 1}; /* symbol 2 is the very top of the interval */
        int* syms = (int*)malloc(sizeof(int) * N);
        for (int k = 0; k < N; k++) {
            uint64_t x = rnd() % 1000;
            /* mostly the middle symbol (low creeps up: runs of 0xFF) with bursts of top symbols */
            syms[k] = x < (uint64_t)(trial % 4) ? 0 : (x < 990 ? 1 : 2);
            if (trial >= 20 && (k / 500) % 2) syms[k] = 2;
        }
        Rc rc;
        memset(&rc, 0, sizeof rc);
        rc_enc_init(&rc.enc);
        for (int k = 0; k < N; k++) CHECK(rc_code_freqs(&rc, f, 3, F, &syms[k]) == 0, "enc");
        CHECK(rc_enc_finish(&rc.enc) == 0, "finish");
        size_t run = 0;
        for (size_t i = 0; i < rc.enc.len; i++) {
            run = rc.enc.buf[i] == 0xFF ? run + 1 : 0;
            if (run > max_ff) max_ff = run;
            if (i && rc.enc.buf[i] == 0 && rc.enc.buf[i - 1] != 0xFF) carries_seen++;
        }
        h = fnv(h, rc.enc.buf, rc.enc.len);
        rc.decoding = 1;
        rc_dec_init(&rc.dec, rc.enc.buf, rc.enc.len);
        for (int k = 0; k < N; k++) {
            int x;
            CHECK(rc_code_freqs(&rc, f, 3, F, &x) == 0 && x == syms[k], "carry dec trial %d k %d", trial, k);
        }
        CHECK(rc_dec_finish(&rc.dec) == 0, "carry finish");
        rc_enc_free(&rc.enc);
        free(syms);
    }
    CHECK(max_ff >= 8, "no long 0xFF runs (%zu)", max_ff);
    printf("ok carry longest_ff_run %zu\n", max_ff);
    printf("hash carry %016llx\n", (unsigned long long)h);
}

/* Direct carry check: pending 0xFF bytes turned into 0x00 by a later carry. */
static void test_carry_direct(void) {
    /* Drive low to ...FF FF FF then add: symbol (cum = F-1, f = 1) repeatedly sits at the top, then
     * (cum = 0) symbols; check round trip for many short random prefixes. */
    int found = 0;
    for (int trial = 0; trial < 2000; trial++) {
        int N = 1 + (int)(rnd() % 64);
        uint32_t F = 1u << (1 + rnd() % 30);
        uint32_t cums[64], fs[64];
        Rc rc;
        memset(&rc, 0, sizeof rc);
        rc_enc_init(&rc.enc);
        for (int k = 0; k < N; k++) {
            int top = (rnd() % 8) != 0;
            fs[k] = top ? 1 + (uint32_t)(rnd() % 2) : 1 + (uint32_t)(rnd() % F);
            if (fs[k] > F) fs[k] = F;
            cums[k] = top ? F - fs[k] : (uint32_t)(rnd() % (F - fs[k] + 1));
            CHECK(rc_enc_encode(&rc.enc, cums[k], fs[k], F) == 0, "enc");
        }
        uint64_t pend = rc.enc.pending;
        CHECK(rc_enc_finish(&rc.enc) == 0, "fin");
        if (pend > 3) found++;
        RcDec d;
        rc_dec_init(&d, rc.enc.buf, rc.enc.len);
        for (int k = 0; k < N; k++) {
            uint32_t t;
            CHECK(rc_dec_target(&d, F, &t) == 0, "tgt");
            CHECK(t >= cums[k] && t < cums[k] + fs[k], "carry_direct trial %d k %d", trial, k);
            CHECK(rc_dec_update(&d, cums[k], fs[k]) == 0, "upd");
        }
        CHECK(rc_dec_finish(&d) == 0, "carry_direct finish trial %d", trial);
        rc_enc_free(&rc.enc);
    }
    printf("ok carry_direct streams_with_pending_ff %d\n", found);
}

/* ---- truncated / extended / corrupted payloads ---- */
static void test_truncation(void) {
    int N = 3000, detected_trunc = 0, total_trunc = 0, detected_flip = 0, total_flip = 0;
    uint32_t f[16];
    int n = 16;
    uint32_t F = make_dist(f, n, 2);
    int* syms = (int*)malloc(sizeof(int) * N);
    for (int k = 0; k < N; k++) syms[k] = (int)(rnd() % n);
    Rc rc;
    memset(&rc, 0, sizeof rc);
    rc_enc_init(&rc.enc);
    for (int k = 0; k < N; k++) CHECK(rc_code_freqs(&rc, f, n, F, &syms[k]) == 0, "enc");
    CHECK(rc_enc_finish(&rc.enc) == 0, "fin");
    size_t len = rc.enc.len;
    uint8_t* buf = (uint8_t*)malloc(len + 8);
    for (size_t cut = 1; cut <= len; cut += (cut < 64 ? 1 : 97)) {
        Rc d;
        d.decoding = 1;
        rc_dec_init(&d.dec, rc.enc.buf, len - cut);
        int bad = 0;
        for (int k = 0; k < N && !bad; k++) {
            int x;
            if (rc_code_freqs(&d, f, n, F, &x) || x != syms[k]) bad = 1;
        }
        if (!bad && rc_dec_finish(&d.dec)) bad = 1;
        total_trunc++;
        detected_trunc += bad;
        if (!bad) printf("undetected cut %zu past_end %zu\n", cut, rc_dec_past_end(&d.dec));
    }
    /* extension by one byte (any value) is always detected */
    for (int b = 0; b < 256; b++) {
        memcpy(buf, rc.enc.buf, len);
        buf[len] = (uint8_t)b;
        Rc d;
        d.decoding = 1;
        rc_dec_init(&d.dec, buf, len + 1);
        int bad = 0;
        for (int k = 0; k < N && !bad; k++) {
            int x;
            if (rc_code_freqs(&d, f, n, F, &x) || x != syms[k]) bad = 1;
        }
        if (!bad && rc_dec_finish(&d.dec)) bad = 1;
        CHECK(bad, "extension by byte %d undetected", b);
    }
    /* random byte flips: the decoded symbols differ or the finish check fails */
    for (int t = 0; t < 300; t++) {
        memcpy(buf, rc.enc.buf, len);
        size_t at = rnd() % len;
        buf[at] ^= (uint8_t)(1 + rnd() % 255);
        Rc d;
        d.decoding = 1;
        rc_dec_init(&d.dec, buf, len);
        int bad = 0, differ = 0;
        for (int k = 0; k < N && !bad; k++) {
            int x;
            if (rc_code_freqs(&d, f, n, F, &x)) bad = 1;
            else if (x != syms[k]) differ = 1;
        }
        if (!bad && rc_dec_finish(&d.dec)) bad = 1;
        total_flip++;
        detected_flip += bad || differ;
    }
    CHECK(detected_trunc == total_trunc, "truncation detected %d/%d", detected_trunc, total_trunc);
    CHECK(detected_flip == total_flip, "flips detected %d/%d", detected_flip, total_flip);
    /* the past-end counter: a valid payload reads at most 7 bytes past its end */
    Rc d;
    d.decoding = 1;
    rc_dec_init(&d.dec, rc.enc.buf, len);
    for (int k = 0; k < N; k++) {
        int x;
        rc_code_freqs(&d, f, n, F, &x);
    }
    CHECK(rc_dec_past_end(&d.dec) <= 7, "valid past end");
    size_t valid_past = rc_dec_past_end(&d.dec);
    rc_dec_init(&d.dec, rc.enc.buf, len / 2);
    for (int k = 0; k < N; k++) {
        int x;
        if (rc_code_freqs(&d, f, n, F, &x)) break;
    }
    CHECK(rc_dec_past_end(&d.dec) > 7, "half payload past end %zu", rc_dec_past_end(&d.dec));
    printf("ok truncation cuts %d flips %d valid_past_end %zu\n", total_trunc, total_flip, valid_past);
    /* empty stream and one-symbol streams */
    RcEnc e;
    rc_enc_init(&e);
    CHECK(rc_enc_finish(&e) == 0 && e.len == 0, "empty stream is 0 bytes");
    RcDec dd;
    rc_dec_init(&dd, NULL, 0);
    CHECK(rc_dec_finish(&dd) == 0, "empty decode");
    size_t maxlen1 = 0;
    for (int t = 0; t < 1000; t++) {
        rc_enc_reset(&e);
        uint32_t FF = 2 + (uint32_t)(rnd() % (RC_MAX_TOTAL - 1)), c = (uint32_t)(rnd() % FF);
        CHECK(rc_enc_encode(&e, c, 1, FF) == 0 && rc_enc_finish(&e) == 0, "one");
        if (e.len > maxlen1) maxlen1 = e.len;
        rc_dec_init(&dd, e.buf, e.len);
        uint32_t tt;
        CHECK(rc_dec_target(&dd, FF, &tt) == 0 && tt == c && rc_dec_update(&dd, c, 1) == 0 && rc_dec_finish(&dd) == 0,
              "one-symbol decode");
    }
    printf("ok short_streams max_bytes_one_symbol %zu\n", maxlen1);
    rc_enc_free(&e);
    rc_enc_free(&rc.enc);
    free(buf);
    free(syms);
}

/* ---- Fenwick tree ---- */
static void test_fenwick(void) {
    Fen fw, cp;
    fen_init(&fw);
    fen_init(&cp);
    uint32_t ref[5000];
    int n = 0;
    for (int it = 0; it < 20000; it++) {
        if (n < 5000 && (n == 0 || rnd() % 3 == 0)) {
            ref[n] = (uint32_t)(rnd() % 5);
            CHECK(fen_push(&fw, ref[n]) == 0, "push");
            n++;
        } else {
            int i = (int)(rnd() % n);
            uint32_t d = 1 + (uint32_t)(rnd() % 3);
            ref[i] += d;
            fen_add(&fw, i, d);
        }
        if (it % 997 == 0) {
            uint32_t c = 0;
            for (int i = 0; i < n; i++) {
                CHECK(fen_prefix(&fw, i) == c, "prefix");
                c += ref[i];
            }
            CHECK(fw.total == c, "total");
            for (int k = 0; k < 50 && c; k++) {
                uint32_t t = (uint32_t)(rnd() % c), cum;
                int i = fen_find(&fw, t, &cum);
                CHECK(i < n && cum <= t && t < cum + ref[i] && cum == fen_prefix(&fw, i), "find");
            }
            CHECK(fen_copy(&cp, &fw) == 0 && cp.total == fw.total && fen_prefix(&cp, n / 2) == fen_prefix(&fw, n / 2),
                  "copy");
        }
    }
    /* copy into a tree with a larger capacity (rebuild path), then find everywhere */
    Fen big;
    fen_init(&big);
    for (int i = 0; i < 3 * n; i++) fen_push(&big, 7);
    CHECK(fen_copy(&big, &fw) == 0 && big.n == fw.n && big.total == fw.total, "copy to larger");
    for (int i = 0; i <= n; i += 1 + n / 100) CHECK(fen_prefix(&big, i) == fen_prefix(&fw, i), "larger prefix %d", i);
    for (uint32_t t = 0; t < fw.total; t += 1 + fw.total / 500) {
        uint32_t c1, c2;
        CHECK(fen_find(&big, t, &c1) == fen_find(&fw, t, &c2) && c1 == c2, "larger find");
    }
    fen_free(&big);
    fen_free(&fw);
    fen_free(&cp);
    printf("ok fenwick\n");
}

/* ---- quantiser ---- */
static void test_quant(void) {
    uint64_t h = 0xcbf29ce484222325ull;
    double worst_rel = 0, worst_bits = 0;
    float* z = (float*)malloc(sizeof(float) * 70000);
    uint32_t* f = (uint32_t*)malloc(sizeof(uint32_t) * 70000);
    double* p = (double*)malloc(sizeof(double) * 70000);
    for (int trial = 0; trial < 400; trial++) {
        int n = 1 + (int)(pow(2.0, rndu() * 16.0));
        if (n > 65536) n = 65536;
        double scale = pow(10.0, rndu() * 3.0 - 1.0); /* 0.1 .. 100 */
        for (int i = 0; i < n; i++) z[i] = (float)((rndu() * 2 - 1) * scale);
        if (trial % 7 == 0) z[rnd() % n] += 30.0f; /* very peaked */
        if (trial % 11 == 0) z[rnd() % n] = -INFINITY;
        uint32_t F = quant_freqs(f, z, n);
        uint64_t s = 0;
        for (int i = 0; i < n; i++) {
            CHECK(f[i] >= 1, "f >= 1");
            s += f[i];
        }
        CHECK(s == F && F <= QUANT_T && F >= QUANT_T - (uint32_t)n - 1, "F %u sum %llu n %d", F,
              (unsigned long long)s, n);
        h = fnv(h, f, sizeof(uint32_t) * n);
        /* overhead: cross-entropy of the float softmax against the quantised distribution */
        double m = -INFINITY, ps = 0, ce = 0, hh = 0;
        for (int i = 0; i < n; i++)
            if (z[i] > m) m = z[i];
        for (int i = 0; i < n; i++) ps += (p[i] = exp((double)z[i] - m));
        for (int i = 0; i < n; i++) {
            double pi = p[i] / ps;
            if (pi > 0) {
                ce += -pi * log2((double)f[i] / F);
                hh += -pi * log2(pi);
            }
        }
        double over = ce - hh; /* bits per symbol */
        if (over > worst_bits) worst_bits = over;
        if (hh > 0.5 && over / hh > worst_rel) worst_rel = over / hh;
        CHECK(over < 1e-4 + n * 2.0 / QUANT_T * 1.5, "overhead %.3g bits n %d", over, n);
    }
    /* degenerate inputs */
    z[0] = NAN;
    z[1] = 1.0f;
    z[2] = -INFINITY;
    uint32_t F = quant_freqs(f, z, 3);
    CHECK(f[0] >= 1 && f[1] >= 1 && f[2] >= 1 && F == f[0] + f[1] + f[2] && F <= QUANT_T, "nan");
    h = fnv(h, f, 12);
    z[0] = INFINITY;
    z[1] = INFINITY;
    F = quant_freqs(f, z, 2);
    /* inf - inf is NaN, which kern_exp maps to exp(88) (>= 1): both symbols get the same share */
    CHECK(F <= QUANT_T && F == f[0] + f[1] && f[0] == f[1] && f[0] >= 1, "inf");
    z[0] = 5.0f;
    F = quant_freqs(f, z, 1);
    CHECK(F == QUANT_T, "single symbol F %u", F);
    printf("ok quant worst_overhead_bits %.3g worst_relative %.3g\n", worst_bits, worst_rel);
    printf("hash quant %016llx\n", (unsigned long long)h);
    free(z);
    free(f);
    free(p);
}

int main(void) {
    test_fenwick();
    test_quant();
    test_roundtrip();
    test_mixed();
    test_carry();
    test_carry_direct();
    test_truncation();
    printf("ALL OK\n");
    return 0;
}
