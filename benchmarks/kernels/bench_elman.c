/* bench_elman.c: speed of the C Elman model (csrc/model) and its kernels on one core.
 *
 * Model V=16384, D=128, H=256, C=128 (128 ids per class), random weights.  Per token it does what the
 * codec step does: class logits, word logits of the token's class, case and gap logits, advance; in
 * dynamic mode also lm_end_segment every 20 tokens.  Token ids are Zipf(1.1)-distributed (text-like,
 * frequent classes stay in cache) or uniform (every class read from memory: the worst case).
 *
 * Build and run (from the repository root):
 *   gcc -O2 -ffp-contract=off -fno-fast-math -fno-unsafe-math-optimizations -std=c11 \
 *       -o /tmp/bench_elman benchmarks/kernels/bench_elman.c csrc/model/lm.c csrc/model/elman.c csrc/kernels/kern.c \
 *       csrc/kernels/kern_math.c -lm && /tmp/bench_elman [ntok]
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../csrc/kernels/kern.h"
#include "../../csrc/model/lm.h"

static uint64_t rs = 88172645463325252ull;
static uint64_t xr(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return rs;
}
static float uf(void) { return (float)(xr() >> 40) * (1.0f / 16777216.0f); }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); /* CPU time: the machine is shared */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double run(Lm* m, const int32_t* w, int n, int seg) {
    double t0 = now();
    volatile float sink = 0.0f;
    for (int t = 0; t < n; t++) {
        int c = lm_class_of(m, w[t]), k;
        sink += lm_class_logits(m)[0];
        sink += lm_word_logits(m, c, &k)[0];
        sink += lm_case_logits(m, w[t])[0];
        sink += lm_gap_logits(m, w[t])[0];
        lm_advance(m, w[t], t & 3, (t >> 2) & 7, (t & 3) < 3);
        if (seg && (t + 1) % seg == 0) lm_end_segment(m);
    }
    return (double)n / (now() - t0);
}

int main(int argc, char** argv) {
    int ntok = argc > 1 ? atoi(argv[1]) : 50000;
    NlmConfig cfg = {16384, 128, 256, 128, 20, 1e-3f, 2e-3f, 1e-5f};
    size_t np = nlm_param_count(&cfg);
    float* p = malloc(np * 4);
    for (size_t i = 0; i < np; i++) p[i] = (uf() - 0.5f) * 0.1f;
    float ms[14];
    for (int i = 0; i < 14; i++) ms[i] = 0.05f;
    int32_t cs[129];
    for (int c = 0; c <= 128; c++) cs[c] = c * 128;
    int32_t* zipf = malloc((size_t)ntok * 4);
    int32_t* unif = malloc((size_t)ntok * 4);
    /* Zipf(1.1) over ids by inverse CDF on a table */
    double* cdf = malloc(16384 * sizeof(double));
    double s = 0;
    for (int i = 0; i < 16384; i++) cdf[i] = (s += 1.0 / __builtin_pow(i + 1.0, 1.1));
    for (int t = 0; t < ntok; t++) {
        double u = (double)(xr() >> 11) * (1.0 / 9007199254740992.0) * s;
        int lo = 0, hi = 16383;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (cdf[mid] < u) lo = mid + 1; else hi = mid;
        }
        zipf[t] = lo;
        unif[t] = (int)(xr() % 16384);
    }
    printf("simd level %d (0 scalar, 1 SSE2, 2 AVX2), %d tokens\n", kern_simd_level(), ntok);
    for (int adapt = 0; adapt <= 1; adapt++) {
        int err;
        LmWeights* wts = lm_weights_new(&cfg, &lm_body_elman, p, NLM_PARAM_F32, ms, cs, &err);
        Lm* m = wts ? lm_new(wts, adapt, &err) : NULL;
        if (!m) return 1;
        run(m, zipf, ntok / 10, adapt ? 20 : 0); /* warm up */
        lm_reset(m);
        double a = run(m, zipf, ntok, adapt ? 20 : 0);
        lm_reset(m);
        double b = run(m, unif, ntok, adapt ? 20 : 0);
        double t0 = now();
        lm_save(m);
        double ts = now() - t0;
        t0 = now();
        lm_restore(m);
        double tr = now() - t0;
        printf("%-8s zipf %8.0f tok/s   uniform %8.0f tok/s   memory %.1f MB  save %.2f ms  restore %.2f ms\n",
               adapt ? "dynamic" : "static", a, b, (double)lm_memory(m) / 1e6, ts * 1e3, tr * 1e3);
        lm_free(m);
        lm_weights_free(wts);
    }
    return 0;
}
