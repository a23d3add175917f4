/* kern_q8.c: the integer forward products (docs/format.md §2.6): int8 weights with one scale per row
 * times activations on the grid 1/127, summed exactly in int32.
 *
 * An integer sum has one value in any order, so every path (scalar, AVX2 vpmaddwd, AVX-512 VNNI vpdpbusd) gives
 * the same bits without a canonical lane order; only the two roundings to the grids (kern_quant_row,
 * kern_quant_act) and the final rescale (one int32 -> float conversion, one multiply) are float, and each is one
 * IEEE operation in a fixed order.  Shapes in comments: [rows][cols] row-major.
 */
#include "../common/fpenv.h"
#include "kern.h"

#include <string.h>

#if !defined(NLM_NO_SIMD) && (defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__)))
#define KERN_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define KERN_X86 0
#endif

/* round half to even of t (|t| < 2^22) under the canonical round-to-nearest environment: the kern_exp idiom */
static inline float rne(float t) { return (t + 12582912.0f) - 12582912.0f; }

static inline int clamp127(float f) {
    if (f != f) return 0;
    return f > 127.0f ? 127 : f < -127.0f ? -127 : (int)f;
}

/* The SIMD forms of the grids (below; AVX-512BW or AVX2 by the run-time level): each does a prefix of the
 * vector, a multiple of 8 or 16 elements, and returns its length (0 without SIMD); the scalar loops finish. */
static float simd_amax(const float* w, int n, int* done);
static int simd_quant_row(int8_t* q, int32_t* rsum, const float* w, float sc, int n);
static int simd_grid(int16_t* g16, uint8_t* gu8, const float* x, float c, int n);

void kern_quant_row(int8_t* q, int32_t* rsum, float* mul, const float* w, int n) {
    float amax = 0.0f;
    int k0 = 0;
    amax = simd_amax(w, n, &k0);
    for (int k = k0; k < n; k++) {
        float a = w[k] < 0.0f ? -w[k] : w[k];
        if (a > amax) amax = a;
    }
    int32_t s = 0;
    if (!(amax > 0.0f) || !(amax <= 3.40282347e38f)) { /* all zero (or not finite): a zero row */
        memset(q, 0, (size_t)n);
        *rsum = 0;
        *mul = 0.0f;
        return;
    }
    float sc = amax / 127.0f;
    int k1 = simd_quant_row(q, &s, w, sc, n);
    for (int k = k1; k < n; k++) {
        int v = clamp127(rne(w[k] / sc));
        q[k] = (int8_t)v;
        s += v;
    }
    *rsum = s;
    *mul = sc / 127.0f;
}

/* g = rne(x[k] * c) clamped, both forms */
static void grid(int16_t* g16, uint8_t* gu8, const float* x, float c, int n) {
    for (int k = simd_grid(g16, gu8, x, c, n); k < n; k++) {
        int v = clamp127(rne(x[k] * c));
        g16[k] = (int16_t)v;
        gu8[k] = (uint8_t)(v + 128);
    }
}

void kern_quant_act(int16_t* h16, uint8_t* hu8, const float* x, int n) { grid(h16, hu8, x, 127.0f, n); }

float kern_quant_vec(int16_t* g16, uint8_t* gu8, const float* x, int n) {
    int k0 = 0;
    float amax = simd_amax(x, n, &k0);
    for (int k = k0; k < n; k++) {
        float a = x[k] < 0.0f ? -x[k] : x[k];
        if (a > amax) amax = a;
    }
    if (!(amax > 0.0f) || !(amax <= 3.40282347e38f)) {
        memset(g16, 0, (size_t)n * 2);
        memset(gu8, 128, (size_t)n);
        return 0.0f;
    }
    grid(g16, gu8, x, 127.0f / amax, n);
    return amax;
}

static inline float rescale(int32_t s, float mul) { return (float)s * mul; }

static void matvec_q8_scalar(float* y, const int8_t* W, const float* mul, const int16_t* h16, int rows,
                             int cols) {
    for (int r = 0; r < rows; r++) {
        const int8_t* w = W + (size_t)r * cols;
        int32_t s = 0;
        for (int k = 0; k < cols; k++) s += (int32_t)w[k] * (int32_t)h16[k];
        y[r] = rescale(s, mul[r]);
    }
}

#if KERN_X86
/* AVX2: W's int8 widened to int16, vpmaddwd with h16 (pairs summed exactly into int32), two rows at a time. */
__attribute__((target("avx2"))) static inline int32_t hsum8_epi32(__m256i a) {
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return _mm_cvtsi128_si32(t);
}

/* rows r..r+3 from their int32 accumulators: one hadd tree, then (float)s · mul as a 4-lane vector */
__attribute__((target("avx2"))) static inline void finish4_avx2(float* y, const float* mul, __m256i a0, __m256i a1,
                                                                __m256i a2, __m256i a3) {
#define Q8_QUARTER(b) _mm_add_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1))
    __m128i s = _mm_hadd_epi32(_mm_hadd_epi32(Q8_QUARTER(a0), Q8_QUARTER(a1)),
                               _mm_hadd_epi32(Q8_QUARTER(a2), Q8_QUARTER(a3)));
#undef Q8_QUARTER
    _mm_storeu_ps(y, _mm_mul_ps(_mm_cvtepi32_ps(s), _mm_loadu_ps(mul)));
}

#define Q8_W16(p) _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(p)))
__attribute__((target("avx2"))) static void matvec_q8_avx2(float* y, const int8_t* W, const float* mul,
                                                           const int16_t* h16, int rows, int cols) {
    int r = 0;
    for (; r + 4 <= rows; r += 4) {
        const int8_t *w0 = W + (size_t)r * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        for (int k = 0; k < cols; k += 16) {
            __m256i h = _mm256_loadu_si256((const __m256i*)(h16 + k));
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(Q8_W16(w0 + k), h));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(Q8_W16(w1 + k), h));
            a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(Q8_W16(w2 + k), h));
            a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(Q8_W16(w3 + k), h));
        }
        finish4_avx2(y + r, mul + r, a0, a1, a2, a3);
    }
    for (; r + 2 <= rows; r += 2) {
        const int8_t *w0 = W + (size_t)r * cols, *w1 = w0 + cols;
        __m256i a0 = _mm256_setzero_si256(), a1 = a0;
        for (int k = 0; k < cols; k += 16) {
            __m256i h = _mm256_loadu_si256((const __m256i*)(h16 + k));
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(w0 + k))), h));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(w1 + k))), h));
        }
        y[r] = rescale(hsum8_epi32(a0), mul[r]);
        y[r + 1] = rescale(hsum8_epi32(a1), mul[r + 1]);
    }
    for (; r < rows; r++) {
        const int8_t* w0 = W + (size_t)r * cols;
        __m256i a0 = _mm256_setzero_si256();
        for (int k = 0; k < cols; k += 16)
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(w0 + k))),
                                                        _mm256_loadu_si256((const __m256i*)(h16 + k))));
        y[r] = rescale(hsum8_epi32(a0), mul[r]);
    }
}

/* AVX-512 VNNI: vpdpbusd multiplies hu8 = h16 + 128 (unsigned) by W (signed), four products per int32 lane
 * (no saturation); Σ W·h16 = Σ W·hu8 − 128·rsum.  64 columns per register, the last 16/32/48 masked; sixteen
 * rows at a time (Q8_FINISH16) where the columns are 128 or 256, else and then four, then one. */
#define Q8_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))
Q8_VNNI_TARGET static inline __m512i dp_row(const int8_t* w, const uint8_t* hu8, int cols) {
    __m512i a = _mm512_setzero_si512();
    int k = 0;
    for (; k + 64 <= cols; k += 64)
        a = _mm512_dpbusd_epi32(a, _mm512_loadu_si512(hu8 + k), _mm512_loadu_si512(w + k));
    if (k < cols) {
        __mmask64 m = (~0ULL) >> (64 - (cols - k));
        a = _mm512_dpbusd_epi32(a, _mm512_maskz_loadu_epi8(m, hu8 + k), _mm512_maskz_loadu_epi8(m, w + k));
    }
    return a;
}

/* rows r..r+3: [s_0, s_1, s_2, s_3] from their accumulators, then (float)(s − 128·rsum) · mul into y */
Q8_VNNI_TARGET static inline void finish4(float* y, const int32_t* rsum, const float* mul, __m512i a0, __m512i a1,
                                          __m512i a2, __m512i a3) {
#define Q8_HALF(a) _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1))
#define Q8_QUARTER(b) _mm_add_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1))
    __m128i t0 = Q8_QUARTER(Q8_HALF(a0)), t1 = Q8_QUARTER(Q8_HALF(a1));
    __m128i t2 = Q8_QUARTER(Q8_HALF(a2)), t3 = Q8_QUARTER(Q8_HALF(a3));
#undef Q8_HALF
#undef Q8_QUARTER
    __m128i s = _mm_hadd_epi32(_mm_hadd_epi32(t0, t1), _mm_hadd_epi32(t2, t3));
    s = _mm_sub_epi32(s, _mm_slli_epi32(_mm_loadu_si128((const __m128i*)rsum), 7));
    _mm_storeu_ps(y, _mm_mul_ps(_mm_cvtepi32_ps(s), _mm_loadu_ps(mul)));
}

/* Sixteen rows at once: their sums as one register in row order, by pairs of rows (32-bit interleave), then
 * quads (64-bit interleave: each 128-bit quarter holds four rows), then the quarters added; integer adds, so
 * the sums are the four-row finish's whatever the order.  Named registers, not arrays: they stay in zmm. */
Q8_VNNI_TARGET static inline __m512i q8_pair(__m512i x, __m512i y) {
    return _mm512_add_epi32(_mm512_unpacklo_epi32(x, y), _mm512_unpackhi_epi32(x, y));
}
Q8_VNNI_TARGET static inline __m512i q8_quad(__m512i x, __m512i y) {
    return _mm512_add_epi32(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y));
}
Q8_VNNI_TARGET static inline __m512i q8_halves(__m512i x, __m512i y) {
    return _mm512_add_epi32(_mm512_shuffle_i32x4(x, y, 0x88), _mm512_shuffle_i32x4(x, y, 0xDD));
}

/* rows r..r+15 from their accumulators: (float)(s − 128·rsum) · mul into y[0..15] */
#define Q8_FINISH16(y, rsum, mul)                                                                              \
    do {                                                                                                       \
        __m512i e_ = q8_halves(q8_halves(q8_quad(q8_pair(a0, a1), q8_pair(a2, a3)),                            \
                                         q8_quad(q8_pair(a4, a5), q8_pair(a6, a7))),                           \
                               q8_halves(q8_quad(q8_pair(a8, a9), q8_pair(a10, a11)),                          \
                                         q8_quad(q8_pair(a12, a13), q8_pair(a14, a15))));                      \
        e_ = _mm512_sub_epi32(e_, _mm512_slli_epi32(_mm512_loadu_si512(rsum), 7));                             \
        _mm512_storeu_ps((y), _mm512_mul_ps(_mm512_cvtepi32_ps(e_), _mm512_loadu_ps(mul)));                    \
    } while (0)

/* one row of 256 columns against x0..x3 (two chains of two) */
#define Q8_ROW256(a, wj)                                                                                       \
    do {                                                                                                       \
        __m512i p_ = _mm512_dpbusd_epi32(_mm512_setzero_si512(), x0, _mm512_loadu_si512(wj));                  \
        __m512i q_ = _mm512_dpbusd_epi32(_mm512_setzero_si512(), x1, _mm512_loadu_si512((wj) + 64));           \
        p_ = _mm512_dpbusd_epi32(p_, x2, _mm512_loadu_si512((wj) + 128));                                      \
        q_ = _mm512_dpbusd_epi32(q_, x3, _mm512_loadu_si512((wj) + 192));                                      \
        a = _mm512_add_epi32(p_, q_);                                                                          \
    } while (0)

/* one row of 128 columns against x0, x1 */
#define Q8_ROW128(a, wj)                                                                                       \
    a = _mm512_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), x0, _mm512_loadu_si512(wj)),             \
                         _mm512_dpbusd_epi32(_mm512_setzero_si512(), x1, _mm512_loadu_si512((wj) + 64)))

#define Q8_ROWS16(ROW, w, n)                                                                                   \
    do {                                                                                                       \
        ROW(a0, w);                                                                                            \
        ROW(a1, w + n);                                                                                        \
        ROW(a2, w + 2 * n);                                                                                    \
        ROW(a3, w + 3 * n);                                                                                    \
        ROW(a4, w + 4 * n);                                                                                    \
        ROW(a5, w + 5 * n);                                                                                    \
        ROW(a6, w + 6 * n);                                                                                    \
        ROW(a7, w + 7 * n);                                                                                    \
        ROW(a8, w + 8 * n);                                                                                    \
        ROW(a9, w + 9 * n);                                                                                    \
        ROW(a10, w + 10 * n);                                                                                  \
        ROW(a11, w + 11 * n);                                                                                  \
        ROW(a12, w + 12 * n);                                                                                  \
        ROW(a13, w + 13 * n);                                                                                  \
        ROW(a14, w + 14 * n);                                                                                  \
        ROW(a15, w + 15 * n);                                                                                  \
    } while (0)

Q8_VNNI_TARGET static void matvec_q8_vnni(float* y, const int8_t* W, const int32_t* rsum, const float* mul,
                                          const uint8_t* hu8, int rows, int cols) {
    int r = 0;
    const size_t C = (size_t)cols;
    __m512i a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15;
    if (cols == 128) { /* the default model's D (Wx) */
        __m512i x0 = _mm512_loadu_si512(hu8), x1 = _mm512_loadu_si512(hu8 + 64);
        for (; r + 16 <= rows; r += 16) {
            const int8_t* w = W + (size_t)r * 128;
            Q8_ROWS16(Q8_ROW128, w, 128);
            Q8_FINISH16(y + r, rsum + r, mul + r);
        }
    }
    if (cols == 256) { /* the default model's H: sixteen rows at a time, then four */
        __m512i x0 = _mm512_loadu_si512(hu8), x1 = _mm512_loadu_si512(hu8 + 64);
        __m512i x2 = _mm512_loadu_si512(hu8 + 128), x3 = _mm512_loadu_si512(hu8 + 192);
        for (; r + 16 <= rows; r += 16) {
            const int8_t* w = W + (size_t)r * 256;
            Q8_ROWS16(Q8_ROW256, w, 256);
            Q8_FINISH16(y + r, rsum + r, mul + r);
        }
        for (; r + 4 <= rows; r += 4) {
            const int8_t* w = W + (size_t)r * 256;
            Q8_ROW256(a0, w);
            Q8_ROW256(a1, w + 256);
            Q8_ROW256(a2, w + 512);
            Q8_ROW256(a3, w + 768);
            finish4(y + r, rsum + r, mul + r, a0, a1, a2, a3);
        }
    }
    for (; r + 4 <= rows; r += 4)
        finish4(y + r, rsum + r, mul + r, dp_row(W + r * C, hu8, cols), dp_row(W + (r + 1) * C, hu8, cols),
                dp_row(W + (r + 2) * C, hu8, cols), dp_row(W + (r + 3) * C, hu8, cols));
    for (; r < rows; r++)
        y[r] = rescale(_mm512_reduce_add_epi32(dp_row(W + r * C, hu8, cols)) - 128 * rsum[r], mul[r]);
}

/* The grids with AVX-512 (the same operations as the scalar loops, 16 lanes at a time; NaN -> 0 first, so the
 * min / max clamps see numbers). */
__attribute__((target("avx512f,avx512bw"))) static inline __m512 rne_clamp16(__m512 t) {
    const __m512 M = _mm512_set1_ps(12582912.0f);
    __m512 f = _mm512_sub_ps(_mm512_add_ps(t, M), M);
    f = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(f, f, _CMP_ORD_Q), f);
    return _mm512_max_ps(_mm512_min_ps(f, _mm512_set1_ps(127.0f)), _mm512_set1_ps(-127.0f));
}

__attribute__((target("avx512f,avx512bw"))) static int quant_act_avx512(int16_t* h16, uint8_t* hu8, const float* x,
                                                                         float c, int n) {
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        __m512i v = _mm512_cvtps_epi32(rne_clamp16(_mm512_mul_ps(_mm512_loadu_ps(x + k), _mm512_set1_ps(c))));
        _mm256_storeu_si256((__m256i*)(h16 + k), _mm512_cvtepi32_epi16(v));
        _mm_storeu_si128((__m128i*)(hu8 + k), _mm512_cvtepi32_epi8(_mm512_add_epi32(v, _mm512_set1_epi32(128))));
    }
    return k;
}

/* amax of the row, then q = rne(w / sc) clamped, 16 at a time; returns the columns done (a multiple of 16) and
 * adds their q to *rsum.  amax: max over |w| of the non-NaN lanes (VMAXPS returns its second operand when the
 * first is NaN), which is the scalar loop's value whatever the order. */
__attribute__((target("avx512f,avx512bw"))) static float row_amax_avx512(const float* w, int n, int* done) {
    __m512 m = _mm512_setzero_ps();
    int k = 0;
    for (; k + 16 <= n; k += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(w + k)), m);
    *done = k;
    return _mm512_reduce_max_ps(m);
}

__attribute__((target("avx512f,avx512bw"))) static int quant_row_avx512(int8_t* q, int32_t* rsum, const float* w,
                                                                         float sc, int n) {
    __m512 vs = _mm512_set1_ps(sc);
    __m512i acc = _mm512_setzero_si512();
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        __m512i v = _mm512_cvtps_epi32(rne_clamp16(_mm512_div_ps(_mm512_loadu_ps(w + k), vs)));
        _mm_storeu_si128((__m128i*)(q + k), _mm512_cvtepi32_epi8(v));
        acc = _mm512_add_epi32(acc, v);
    }
    *rsum += _mm512_reduce_add_epi32(acc);
    return k;
}

/* The grids with AVX2, 16 elements a step (the same operations as the scalar loops; NaN -> +0 before the clamps). */
__attribute__((target("avx2"))) static inline __m256i rne_clamp8(__m256 t) {
    const __m256 M = _mm256_set1_ps(12582912.0f);
    __m256 f = _mm256_sub_ps(_mm256_add_ps(t, M), M);
    f = _mm256_and_ps(f, _mm256_cmp_ps(f, f, _CMP_ORD_Q));
    f = _mm256_max_ps(_mm256_min_ps(f, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));
    return _mm256_cvtps_epi32(f);
}

/* 16 int32 (two registers, elements in order) as 16 int16 in order */
__attribute__((target("avx2"))) static inline __m256i pack16(__m256i v0, __m256i v1) {
    return _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xD8);
}

/* 16 int16 in order (each in −128..255) as 16 bytes: signed (packs) or unsigned (packus) saturation, both exact */
__attribute__((target("avx2"))) static inline __m128i bytes16(__m256i p, int is_unsigned) {
    __m256i b = is_unsigned ? _mm256_packus_epi16(p, p) : _mm256_packs_epi16(p, p);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(b, 0x08));
}

__attribute__((target("avx2"))) static int grid_avx2(int16_t* g16, uint8_t* gu8, const float* x, float c, int n) {
    const __m256 vc = _mm256_set1_ps(c);
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        __m256i p = pack16(rne_clamp8(_mm256_mul_ps(_mm256_loadu_ps(x + k), vc)),
                           rne_clamp8(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8), vc)));
        _mm256_storeu_si256((__m256i*)(g16 + k), p);
        _mm_storeu_si128((__m128i*)(gu8 + k), bytes16(_mm256_add_epi16(p, _mm256_set1_epi16(128)), 1));
    }
    return k;
}

__attribute__((target("avx2"))) static float amax_avx2(const float* w, int n, int* done) {
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 m = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= n; k += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(w + k), abs), m);
    __m128 t = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    t = _mm_max_ps(t, _mm_movehl_ps(t, t));
    t = _mm_max_ss(t, _mm_shuffle_ps(t, t, 0x55));
    *done = k;
    return _mm_cvtss_f32(t);
}

__attribute__((target("avx2"))) static int quant_row_avx2(int8_t* q, int32_t* rsum, const float* w, float sc, int n) {
    const __m256 vs = _mm256_set1_ps(sc);
    __m256i acc = _mm256_setzero_si256();
    int k = 0;
    for (; k + 16 <= n; k += 16) {
        __m256i v0 = rne_clamp8(_mm256_div_ps(_mm256_loadu_ps(w + k), vs));
        __m256i v1 = rne_clamp8(_mm256_div_ps(_mm256_loadu_ps(w + k + 8), vs));
        _mm_storeu_si128((__m128i*)(q + k), bytes16(pack16(v0, v1), 0));
        acc = _mm256_add_epi32(acc, _mm256_add_epi32(v0, v1));
    }
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    *rsum += _mm_cvtsi128_si32(t);
    return k;
}

static int g_bw = -1; /* AVX512BW usable (level 3 has checked AVX-512F) */
static int grid_level(void) {
    int l = kern_simd_level();
    if (l >= 3) {
        if (g_bw < 0) g_bw = __builtin_cpu_supports("avx512bw") ? 1 : 0; /* benign race: one value */
        return g_bw ? 3 : 2;
    }
    return l >= 2 ? 2 : 0;
}

static float simd_amax(const float* w, int n, int* done) {
    int l = grid_level();
    if (l == 3) return row_amax_avx512(w, n, done);
    if (l == 2) return amax_avx2(w, n, done);
    *done = 0;
    return 0.0f;
}

static int simd_quant_row(int8_t* q, int32_t* rsum, const float* w, float sc, int n) {
    int l = grid_level();
    return l == 3 ? quant_row_avx512(q, rsum, w, sc, n) : l == 2 ? quant_row_avx2(q, rsum, w, sc, n) : 0;
}

static int simd_grid(int16_t* g16, uint8_t* gu8, const float* x, float c, int n) {
    int l = grid_level();
    return l == 3 ? quant_act_avx512(g16, gu8, x, c, n) : l == 2 ? grid_avx2(g16, gu8, x, c, n) : 0;
}

static int g_vnni = -1; /* AVX512-VNNI and AVX512BW usable (with AVX-512F, which level 3 has checked) */
static int have_vnni(void) {
    int v = g_vnni;
    if (v < 0) {
        unsigned a, b, c, d;
        v = 0;
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) v = ((c >> 11) & 1u) && ((b >> 30) & 1u);
        g_vnni = v; /* a benign race: every thread computes the same value */
    }
    return v;
}
#else
static float simd_amax(const float* w, int n, int* done) { return (void)w, (void)n, *done = 0, 0.0f; }
static int simd_quant_row(int8_t* q, int32_t* rsum, const float* w, float sc, int n) {
    return (void)q, (void)rsum, (void)w, (void)sc, (void)n, 0;
}
static int simd_grid(int16_t* g16, uint8_t* gu8, const float* x, float c, int n) {
    return (void)g16, (void)gu8, (void)x, (void)c, (void)n, 0;
}
#endif

void kern_matvec_q8(float* y, const int8_t* W8, const int32_t* rsum, const float* mul, const int16_t* h16,
                    const uint8_t* hu8, int rows, int cols) {
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 3 && have_vnni()) {
        matvec_q8_vnni(y, W8, rsum, mul, hu8, rows, cols);
        return;
    }
    if (lvl >= 2) {
        matvec_q8_avx2(y, W8, mul, h16, rows, cols);
        return;
    }
#endif
    (void)rsum, (void)hu8;
    matvec_q8_scalar(y, W8, mul, h16, rows, cols);
}
