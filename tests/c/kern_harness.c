/* kern_harness.c: runs the csrc/kernels kernels on inputs read from a file and writes the raw result bits,
 * for tests/test_kernels.py (which compares a SIMD -O2 build with an -O0 -DNLM_NO_SIMD build).
 *
 * Usage: kern_harness OP IN OUT [simd_cap]
 *   OP = lin: IN = int32 rows, cols; float32 W[rows*cols], x[cols], d[rows], y0[cols]
 *        OUT = matvec(W,x) [rows], kern_dot per row [rows], y0 + Wᵀd [cols], W + d⊗x [rows*cols],
 *              y0 + d[0]*x [cols], sgd_decay(th=y0, th0=x, g=W[0], step=d[0], decay=d[1]) [cols],
 *              decay_toward(th=y0, th0=x, q=d[2]) [cols], decay_sgd(y0, x, W[0], q=d[2], d[0], d[1]) [cols],
 *              W + Σ_i dd[i]⊗xx[i] and 0 + Σ_i dd[i]⊗xx[i] (dd = d, W[0..rows), d; xx = x, y0, W[0..cols)) [2*rows*cols]
 *              with θ0 = h, binary16 patterns from x's bits (hf: h as float32), on th = y0's first cols-1:
 *              sgd_decay_h(h), sgd_decay(hf), decay_sgd_h(h), decay_sgd(hf) [4*cols]
 *   OP = math: IN = int32 n; float32 x[n]
 *        OUT = exp_vec [n], kern_exp [n], tanh_vec [n], kern_tanh [n]
 *   OP = log: IN = int32 n; float32 x[n]
 *        OUT = kern_log [n]
 *   OP = glue: IN = int32 n; float32 z[n]  (n >= 4)
 *        OUT = kern_quant_max(z) (a zero written as +0) [1], S = kern_exp_u40(z, that max) [2 words] and its ebits [n],
 *              quant_freqs(z) [n + 1 words: F then f], kern_softmax_xent(z, target n/2) [n],
 *              kern_softmax_e(ebits as floats, target n/2) [n], kern_add(z, z reversed) [n],
 *              kern_add3(z, reversed, z) [n], kern_sgd_decay_idx on th = z reversed, th0 = z, rows 0, 2, 4, ...
 *              (g = z, q = z clipped to [-1, 1]; step 0.5, decay 0.01, lim 0.25) [n],
 *              kern_head_backward (H = 40, target n/3) then the same by its three steps: dh [2*40],
 *              gb [2*n], p [2*n]
 *   OP = q8: IN = int32 rows, cols; float32 W[rows*cols], x[cols]
 *        OUT = kern_quant_row of each row: q [rows*cols int8], rsum [rows int32], mul [rows]; kern_quant_act(x):
 *              h16 [cols int16], hu8 [cols uint8]; kern_matvec_q8 [rows]; kern_quant_vec(x * 5): g16 [cols int16],
 *              gu8 [cols uint8], xs [1]
 *   OP = mix: IN = int32 n; then n cases of int32 a[16], b[16], x[16], ea, eb, shift, lim
 *        OUT = per case: kern_mix2_dot(a, b, x) as int64 da, db; then a, b after kern_mix2_train [32 int32]
 *   OP = weigh: IN = int32 n, nr; uint64 R[nr]; uint32 x[n], y0[n]
 *        OUT = per R: kern_weigh_acc(first) [n], kern_weigh_acc on y0 [n]; then kern_sum_u32 of x[0..k) for
 *              k = 0..n [n + 1]
 * simd_cap (optional) caps the run-time SIMD level (0 scalar, 1 SSE2, 2 AVX2, 3 AVX-512).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/common/fpenv.h"
#include "../../csrc/coder/quant.h"
#include "../../csrc/kernels/kern.h"

static void die(const char* s) {
    fprintf(stderr, "kern_harness: %s\n", s);
    exit(2);
}

static float* rdf(FILE* f, size_t n) {
    float* p = malloc(n * 4 + 4);
    if (fread(p, 4, n, f) != n) die("short read");
    return p;
}

int main(int argc, char** argv) {
    if (argc < 4) die("usage: kern_harness OP IN OUT [simd_cap]");
    if (argc > 4) kern_set_simd_cap(atoi(argv[4]));
    FILE* f = fopen(argv[2], "rb");
    FILE* o = fopen(argv[3], "wb");
    if (!f || !o) die("cannot open files");
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    if (!strcmp(argv[1], "lin")) {
        int32_t dims[2];
        if (fread(dims, 4, 2, f) != 2) die("short read");
        int R = dims[0], K = dims[1];
        float *W = rdf(f, (size_t)R * K), *x = rdf(f, K), *d = rdf(f, R), *y0 = rdf(f, K);
        float* y = malloc((size_t)(R > K ? R : K) * 4);
        kern_matvec(y, W, x, R, K);
        fwrite(y, 4, R, o);
        for (int r = 0; r < R; r++) y[r] = kern_dot(W + (size_t)r * K, x, K);
        fwrite(y, 4, R, o);
        memcpy(y, y0, (size_t)K * 4);
        kern_matvec_t_acc(y, W, d, R, K);
        fwrite(y, 4, K, o);
        float* G = malloc((size_t)R * K * 4);
        memcpy(G, W, (size_t)R * K * 4);
        kern_outer_acc(G, d, x, R, K);
        fwrite(G, 4, (size_t)R * K, o);
        memcpy(y, y0, (size_t)K * 4);
        kern_axpy(y, d[0], x, K);
        fwrite(y, 4, K, o);
        memcpy(y, y0, (size_t)K * 4);
        kern_sgd_decay(y, x, W, d[0], d[1], 0.25f, K); /* lim 0.25 clips some steps */
        fwrite(y, 4, K, o);
        memcpy(y, y0, (size_t)K * 4);
        kern_decay_toward(y, x, d[2], K);
        fwrite(y, 4, K, o);
        memcpy(y, y0, (size_t)K * 4);
        kern_decay_sgd(y, x, W, d[2], d[0], d[1], 0.25f, K);
        fwrite(y, 4, K, o);
        const float* dd[3] = {d, W, d};  /* W's first R floats as a second d vector */
        const float* xx[3] = {x, y0, W};
        for (int z = 0; z < 2; z++) {
            memcpy(G, W, (size_t)R * K * 4);
            kern_outer_acc_seq(G, dd, xx, 3, R, K, z);
            fwrite(G, 4, (size_t)R * K, o);
        }
        /* θ0 stored as binary16 (finite patterns derived from x's bits), n = K - 1 so every path has a tail */
        uint16_t* h = malloc((size_t)K * 2);
        float* hf = malloc((size_t)K * 4);
        for (int i = 0; i < K; i++) {
            uint32_t b;
            memcpy(&b, &x[i], 4);
            h[i] = (uint16_t)((b * 2654435761u) >> 16);
            if (((h[i] >> 10) & 31) == 31) h[i] = (uint16_t)(h[i] & 0xBFFFu); /* no inf / NaN in a model */
            hf[i] = kern_half_to_float(h[i]);
        }
        for (int v = 0; v < 4; v++) {
            memcpy(y, y0, (size_t)K * 4);
            if (v == 0) kern_sgd_decay_h(y, h, W, d[0], d[1], 0.25f, K - 1);
            if (v == 1) kern_sgd_decay(y, hf, W, d[0], d[1], 0.25f, K - 1);
            if (v == 2) kern_decay_sgd_h(y, h, W, d[2], d[0], d[1], 0.25f, K - 1);
            if (v == 3) kern_decay_sgd(y, hf, W, d[2], d[0], d[1], 0.25f, K - 1);
            fwrite(y, 4, K, o);
        }
        free(h);
        free(hf);
    } else if (!strcmp(argv[1], "math")) {
        int32_t n;
        if (fread(&n, 4, 1, f) != 1) die("short read");
        float *x = rdf(f, n), *y = malloc((size_t)n * 4 + 4);
        kern_exp_vec(y, x, n);
        fwrite(y, 4, n, o);
        for (int i = 0; i < n; i++) y[i] = kern_exp(x[i]);
        fwrite(y, 4, n, o);
        kern_tanh_vec(y, x, n);
        fwrite(y, 4, n, o);
        for (int i = 0; i < n; i++) y[i] = kern_tanh(x[i]);
        fwrite(y, 4, n, o);
    } else if (!strcmp(argv[1], "log")) {
        int32_t n;
        if (fread(&n, 4, 1, f) != 1) die("short read");
        float *x = rdf(f, n), *y = malloc((size_t)n * 4 + 4);
        for (int i = 0; i < n; i++) y[i] = kern_log(x[i]);
        fwrite(y, 4, n, o);
    } else if (!strcmp(argv[1], "q8")) {
        int32_t dims[2];
        if (fread(dims, 4, 2, f) != 2) die("short read");
        int R = dims[0], K = dims[1];
        float *W = rdf(f, (size_t)R * K), *x = rdf(f, K), *y = malloc((size_t)R * 4 + 4);
        int8_t* q = malloc((size_t)R * K + 1);
        int32_t* rsum = malloc((size_t)R * 4 + 4);
        float* mul = malloc((size_t)R * 4 + 4);
        int16_t* h16 = malloc((size_t)K * 2 + 2);
        uint8_t* hu8 = malloc((size_t)K + 1);
        for (int r = 0; r < R; r++) kern_quant_row(q + (size_t)r * K, rsum + r, mul + r, W + (size_t)r * K, K);
        kern_quant_act(h16, hu8, x, K);
        kern_matvec_q8(y, q, rsum, mul, h16, hu8, R, K);
        fwrite(q, 1, (size_t)R * K, o);
        fwrite(rsum, 4, R, o);
        fwrite(mul, 4, R, o);
        fwrite(h16, 2, K, o);
        fwrite(hu8, 1, K, o);
        fwrite(y, 4, R, o);
        for (int k = 0; k < K; k++) x[k] = x[k] * 5.0f;
        float xs = kern_quant_vec(h16, hu8, x, K);
        fwrite(h16, 2, K, o);
        fwrite(hu8, 1, K, o);
        fwrite(&xs, 4, 1, o);
    } else if (!strcmp(argv[1], "mix")) {
        int32_t n;
        if (fread(&n, 4, 1, f) != 1) die("short read");
        for (int i = 0; i < n; i++) {
            int32_t v[3 * KERN_MIX_N + 4];
            if (fread(v, 4, 3 * KERN_MIX_N + 4, f) != 3 * KERN_MIX_N + 4) die("short read");
            int32_t *a = v, *b = v + KERN_MIX_N, *x = v + 2 * KERN_MIX_N, *e = v + 3 * KERN_MIX_N;
            int64_t d[2];
            kern_mix2_dot(d, d + 1, a, b, x);
            fwrite(d, 8, 2, o);
            kern_mix2_train(a, b, x, e[0], e[1], e[2], e[3]);
            fwrite(a, 4, 2 * KERN_MIX_N, o);
        }
    } else if (!strcmp(argv[1], "weigh")) {
        int32_t hd[2];
        if (fread(hd, 4, 2, f) != 2) die("short read");
        const int n = hd[0], nr = hd[1];
        uint64_t* R = malloc((size_t)nr * 8 + 8);
        uint32_t *x = malloc((size_t)n * 4 + 4), *y0 = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 4 + 4);
        if (fread(R, 8, (size_t)nr, f) != (size_t)nr || fread(x, 4, (size_t)n, f) != (size_t)n ||
            fread(y0, 4, (size_t)n, f) != (size_t)n)
            die("short read");
        for (int r = 0; r < nr; r++) {
            kern_weigh_acc(y, x, R[r], n, 1);
            fwrite(y, 4, (size_t)n, o);
            memcpy(y, y0, (size_t)n * 4);
            kern_weigh_acc(y, x, R[r], n, 0);
            fwrite(y, 4, (size_t)n, o);
        }
        for (int k = 0; k <= n; k++) {
            uint32_t s = kern_sum_u32(x, k);
            fwrite(&s, 4, 1, o);
        }
        free(R), free(x), free(y0), free(y);
    } else if (!strcmp(argv[1], "glue")) {
        int32_t n;
        if (fread(&n, 4, 1, f) != 1 || n < 4) die("short read");
        float *z = rdf(f, n), *y = malloc((size_t)n * 4 + 8), *r = malloc((size_t)n * 4);
        uint32_t* u = malloc((size_t)n * 4 + 8);
        for (int i = 0; i < n; i++) r[i] = z[n - 1 - i];
        float m = kern_quant_max(z, n);
        float mw = m == 0.0f ? 0.0f : m; /* a zero maximum may come back as -0 or +0 (kern.h) */
        fwrite(&mw, 4, 1, o);
        uint64_t S = kern_exp_u40(u, z, m, n);
        fwrite(&S, 8, 1, o);
        fwrite(u, 4, n, o);
        float* e = malloc((size_t)n * 4);
        memcpy(e, u, (size_t)n * 4);
        u[0] = quant_freqs(u + 1, z, n);
        fwrite(u, 4, (size_t)n + 1, o);
        kern_softmax_xent(y, z, n, n / 2);
        fwrite(y, 4, n, o);
        kern_softmax_e(y, e, n, n / 2);
        fwrite(y, 4, n, o);
        kern_add(y, z, r, n);
        fwrite(y, 4, n, o);
        kern_add3(y, z, r, z, n);
        fwrite(y, 4, n, o);
        int32_t* idx = malloc((size_t)n * 4);
        float* q = malloc((size_t)n * 4);
        int k = 0;
        for (int i = 0; i < n; i += 2) {
            idx[k] = i;
            q[k] = z[i] < -1.0f ? -1.0f : (z[i] > 1.0f ? 1.0f : z[i]);
            k++;
        }
        memcpy(y, r, (size_t)n * 4);
        kern_sgd_decay_idx(y, z, z, idx, q, 0.5f, 0.01f, 0.25f, k);
        fwrite(y, 4, n, o);
        /* the fused head, and its three steps one by one */
        enum { HH = 40 };
        float *Wh = malloc((size_t)n * HH * 4), dh[2][HH], *gb = malloc((size_t)n * 8), *pp = malloc((size_t)n * 8);
        /* finite weights (the model's are): with NaN on both sides of a product the paths may keep the
         * payload of either operand (scalar d*W, SIMD W*d), a difference no finite input can show */
        for (int i = 0; i < n * HH; i++) Wh[i] = (float)((i * 7) % 13 - 6) * 0.125f;
        for (int v = 0; v < 2; v++) {
            for (int j = 0; j < HH; j++) dh[v][j] = r[j % n];
            for (int j = 0; j < n; j++) gb[(size_t)v * n + j] = r[j];
        }
        kern_head_backward(dh[0], gb, pp, z, Wh, n, HH, n / 3);
        kern_softmax_xent(pp + n, z, n, n / 3);
        kern_add(gb + n, gb + n, pp + n, n);
        kern_matvec_t_acc(dh[1], Wh, pp + n, n, HH);
        fwrite(dh, 4, 2 * HH, o);
        fwrite(gb, 4, (size_t)n * 2, o);
        fwrite(pp, 4, (size_t)n * 2, o);
    } else {
        die("unknown op");
    }
    nlm_fpenv_leave(&fe);
    fprintf(stderr, "simd_level=%d\n", kern_simd_level());
    fclose(o);
    return 0;
}
