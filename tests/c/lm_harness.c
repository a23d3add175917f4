/* lm_harness.c: drives the model interface (csrc/model/lm.c) with a model type's body (elman.c, lstm.c) on
 * a model and token stream read from a file, writes every logit vector, every state and (on request)
 * parameters / gradients to an output file, for tests/test_lm_c.py.
 *
 * Usage: lm_harness IN OUT
 * IN (little-endian): int32 V, D, H, C, seg_len, adapt, ntok, flags; float32 lr, decay, eps;
 *   int32 class_start[C+1]; float32 ms[14]; float32 params[np]; int32 tokens[ntok][4] (w, case, gap, coded).
 * flags: 1 dump params after every segment, 2 dump the dense gradient after every segment,
 *   4 set MXCSR to FTZ|DAZ|round-down before running (the model must not care),
 *   32 the LSTM body, 64 the NPLM body with a context of 3 tokens (else the Elman's),
 *   8 save at ntok/3, run to 2ntok/3, restore, then run and write from ntok/3 (the output must equal a
 *     plain run's), 16 cap the kernels at SSE2.
 * OUT: per token: class logits (C), word logits of its class (n), case (4), gap (8), the state S after the
 *   token (Elman h: H, LSTM h and c: 2H, NPLM h and 2 inputs: H + 2D); after every segment the requested dumps; at the end the final params.  A segment ends after seg_len
 *   tokens, after a <end> token (w == 1), and after the last token.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "../../csrc/kernels/kern.h"
#include "../../csrc/model/lm.h"

static void die(const char* s) {
    fprintf(stderr, "lm_harness: %s\n", s);
    exit(2);
}

static void rd(void* p, size_t n, FILE* f) {
    if (fread(p, 1, n, f) != n) die("short read");
}

static int32_t *tok, ntok, flags, seg_len;
static size_t np; /* floats of the parameter block */
static NlmConfig cfg;
static float* gbuf;

/* run tokens [from, to); *inseg: tokens in the current segment */
static void run(Lm* m, int from, int to, int* inseg, FILE* out) {
    for (int t = from; t < to; t++) {
        int w = tok[4 * t], k = tok[4 * t + 1], g = tok[4 * t + 2], cc = tok[4 * t + 3];
        int c = lm_class_of(m, w), n;
        const float* zc = lm_class_logits(m);
        if (out) fwrite(zc, 4, (size_t)cfg.C, out);
        const float* zw = lm_word_logits(m, c, &n);
        if (out) fwrite(zw, 4, (size_t)n, out);
        if (out) fwrite(lm_case_logits(m, w), 4, 4, out);
        if (out) fwrite(lm_gap_logits(m, w), 4, 8, out);
        lm_advance(m, w, k, g, cc);
        if (out) fwrite(lm_hidden(m), 4, (size_t)lm_state_size(m), out);
        (*inseg)++;
        if (*inseg == seg_len || w == 1 || t == ntok - 1) {
            lm_end_segment(m);
            *inseg = 0;
            if (out && (flags & 1)) lm_params(m, gbuf), fwrite(gbuf, 4, np, out);
            if (out && (flags & 2)) {
                lm_debug_grad(m, gbuf);
                fwrite(gbuf, 4, np, out);
            }
        }
    }
}

int main(int argc, char** argv) {
    if (argc != 3) die("usage: lm_harness IN OUT");
    FILE* f = fopen(argv[1], "rb");
    if (!f) die("cannot open input");
    int32_t hdr[8];
    rd(hdr, sizeof hdr, f);
    cfg.V = hdr[0], cfg.D = hdr[1], cfg.H = hdr[2], cfg.C = hdr[3], cfg.seg_len = hdr[4];
    int adapt = hdr[5];
    ntok = hdr[6], flags = hdr[7], seg_len = hdr[4];
    float hp[3];
    rd(hp, sizeof hp, f);
    cfg.lr = hp[0], cfg.decay = hp[1], cfg.eps = hp[2];
    int32_t* cs = malloc((size_t)(cfg.C + 1) * 4);
    rd(cs, (size_t)(cfg.C + 1) * 4, f);
    float ms[14];
    rd(ms, sizeof ms, f);
    cfg.arch = (flags & 32) ? NLM_ARCH_LSTM : (flags & 64) ? (NLM_ARCH_NPLM | 3 << 8) : NLM_ARCH_ELMAN;
    const LmBodyOps* body = lm_body_for(cfg.arch);
    np = lm_param_count(&cfg, body);
    if (!np) die("bad config");
    float* params = malloc(np * 4);
    gbuf = malloc(np * 4);
    rd(params, np * 4, f);
    tok = malloc((size_t)ntok * 16 + 16);
    rd(tok, (size_t)ntok * 16, f);
    fclose(f);
    if (flags & 16) kern_set_simd_cap(1);
#if defined(__x86_64__)
    if (flags & 4) _mm_setcsr(0x9FC0 | 0x2000); /* FTZ | DAZ | round down */
#endif
    int err;
    LmWeights* wts = lm_weights_new(&cfg, body, params, NLM_PARAM_F32, ms, cs, &err);
    if (!wts) die("lm_weights_new failed");
    Lm* m = lm_new(wts, adapt, &err);
    if (!m) die("lm_new failed");
    /* the whole backward and update (dynamic mode's schedule, docs/format.md §6.3-§6.4), which the gradient checks
     * read; heads mode's schedule (§6.5) is a subset of it, replayed by tests/c/vector_driver.c */
    if (adapt && lm_set_schedule(m, 1, 0, 0) != NLM_OK) die("lm_set_schedule failed");
    FILE* out = fopen(argv[2], "wb");
    if (!out) die("cannot open output");
    int inseg = 0;
    if (flags & 8) {
        int a = ntok / 3, b = 2 * ntok / 3;
        run(m, 0, a, &inseg, out);
        if (lm_save(m)) die("save failed");
        int saved_inseg = inseg;
        run(m, a, b, &inseg, NULL);
        if (lm_restore(m)) die("restore failed");
        inseg = saved_inseg;
        run(m, a, ntok, &inseg, out);
    } else {
        run(m, 0, ntok, &inseg, out);
    }
    lm_params(m, gbuf);
    fwrite(gbuf, 4, np, out);
    fclose(out);
    fprintf(stderr, "simd_level=%d memory=%zu\n", kern_simd_level(), lm_memory(m));
    lm_free(m);
    lm_weights_free(wts);
    free(params), free(gbuf), free(tok), free(cs);
    return 0;
}
