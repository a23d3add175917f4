/* kern_math.c: the exp and tanh polynomials of the format (expressions fixed in kern.h).
 *
 * Owns kern_exp / kern_tanh and their vector forms, and kern_log (scalar).  Only + − × ÷, min/max on NaN-free data, an exact
 * float→int conversion of an integral value and exponent-bit construction: no libm, no estimate
 * instructions, no FMA.  The SSE2, AVX2 and AVX-512 vector forms evaluate the same expression lane by lane
 * and give the scalar bits.  Constants: Cephes expf (S. Moshier), Cody–Waite split of ln 2.  Also owns the
 * kernels built on exp: the quantiser's max and exp/sum pass and the backward's softmax (kern.h).
 */
#include "../common/fpenv.h"
#include "kern.h"

#include <stdint.h>
#include <string.h>

#if !defined(NLM_NO_SIMD) && (defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__)))
#define KERN_X86 1
#include <immintrin.h>
#else
#define KERN_X86 0
#endif

#define EXP_HI 88.0f
#define EXP_LO -87.0f
#define LOG2E 1.44269504088896341f
#define MAGIC 12582912.0f /* 1.5 * 2^23: (t + MAGIC) - MAGIC rounds t to an integer, ties to even */
#define C1 0.693359375f
#define C2 -2.12194440e-4f
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f
#define LOG_MIN 1.17549435e-38f /* FLT_MIN: below it (and NaN) kern_log gives LOG_FLOOR */
#define LOG_FLOOR -104.0f
#define TANH_CLAMP 9.0f

float kern_exp(float x) {
    x = x < EXP_HI ? x : EXP_HI; /* minps semantics: NaN -> 88 */
    x = x > EXP_LO ? x : EXP_LO; /* maxps semantics */
    float t = x * LOG2E;
    float u = t + MAGIC;
    float f = u - MAGIC;
    float a = f * C1;
    float r = x - a;
    float b = f * C2;
    r = r - b;
    float z = r * r;
    float p = P0;
    p = p * r;
    p = p + P1;
    p = p * r;
    p = p + P2;
    p = p * r;
    p = p + P3;
    p = p * r;
    p = p + P4;
    p = p * r;
    p = p + P5;
    float y = p * z;
    y = y + r;
    y = y + 1.0f;
    int32_t n = (int32_t)f;
    uint32_t bits = (uint32_t)(n + 127) << 23;
    float s;
    memcpy(&s, &bits, 4);
    return y * s;
}

/* kern_log: see kern.h (the formula there is the definition). */
float kern_log(float x) {
    if (!(x >= LOG_MIN)) return LOG_FLOOR; /* NaN, negatives, zero and subnormals */
    if (x > 3.40282347e+38f) x = 3.40282347e+38f;  /* +inf */
    uint32_t b;
    memcpy(&b, &x, 4);
    int32_t e = (int32_t)(b >> 23) - 127;
    uint32_t mb = (b & 0x007FFFFFu) | 0x3F800000u; /* mantissa in [1, 2) */
    float m;
    memcpy(&m, &mb, 4);
    if (m > 1.41421354f) { /* [sqrt 2, 2) -> [sqrt 1/2, 1) */
        m = m * 0.5f;
        e = e + 1;
    }
    float s = (m - 1.0f) / (m + 1.0f);
    float s2 = s * s;
    float p = 0.222222222f;
    p = p * s2;
    p = p + 0.285714287f;
    p = p * s2;
    p = p + 0.400000006f;
    p = p * s2;
    p = p + 0.666666687f;
    p = p * s2;
    p = p + 2.0f;
    p = p * s;
    float fe = (float)e;
    float hi = fe * C1;
    float lo = fe * C2;
    return (p + lo) + hi;
}

float kern_tanh(float x) {
    uint32_t xb;
    memcpy(&xb, &x, 4);
    uint32_t sign = xb & 0x80000000u;
    uint32_t ab = xb & 0x7FFFFFFFu;
    float a;
    memcpy(&a, &ab, 4);
    a = a < TANH_CLAMP ? a : TANH_CLAMP; /* minps semantics: NaN -> 9 */
    float e = kern_exp(a + a);
    float d = e + 1.0f;
    float q = 2.0f / d;
    float t = 1.0f - q;
    uint32_t tb;
    memcpy(&tb, &t, 4);
    tb |= sign;
    memcpy(&t, &tb, 4);
    return t;
}

#if KERN_X86
/* SSE2, 4 lanes.  min_ps(x, c) = (x < c ? x : c) and max_ps(x, c) = (x > c ? x : c), the scalar clamps,
 * NaN included. */
static inline __m128 exp_sse2(__m128 x) {
    x = _mm_min_ps(x, _mm_set1_ps(EXP_HI));
    x = _mm_max_ps(x, _mm_set1_ps(EXP_LO));
    __m128 t = _mm_mul_ps(x, _mm_set1_ps(LOG2E));
    __m128 u = _mm_add_ps(t, _mm_set1_ps(MAGIC));
    __m128 f = _mm_sub_ps(u, _mm_set1_ps(MAGIC));
    __m128 r = _mm_sub_ps(x, _mm_mul_ps(f, _mm_set1_ps(C1)));
    r = _mm_sub_ps(r, _mm_mul_ps(f, _mm_set1_ps(C2)));
    __m128 z = _mm_mul_ps(r, r);
    __m128 p = _mm_set1_ps(P0);
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(P1));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(P2));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(P3));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(P4));
    p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(P5));
    __m128 y = _mm_add_ps(_mm_add_ps(_mm_mul_ps(p, z), r), _mm_set1_ps(1.0f));
    __m128i n = _mm_cvttps_epi32(f);
    __m128i bits = _mm_slli_epi32(_mm_add_epi32(n, _mm_set1_epi32(127)), 23);
    return _mm_mul_ps(y, _mm_castsi128_ps(bits));
}

static inline __m128 tanh_sse2(__m128 x) {
    __m128 sm = _mm_castsi128_ps(_mm_set1_epi32((int)0x80000000u));
    __m128 sign = _mm_and_ps(x, sm);
    __m128 a = _mm_andnot_ps(sm, x);
    a = _mm_min_ps(a, _mm_set1_ps(TANH_CLAMP));
    __m128 e = exp_sse2(_mm_add_ps(a, a));
    __m128 q = _mm_div_ps(_mm_set1_ps(2.0f), _mm_add_ps(e, _mm_set1_ps(1.0f)));
    __m128 t = _mm_sub_ps(_mm_set1_ps(1.0f), q);
    return _mm_or_ps(t, sign);
}

__attribute__((target("avx2"))) static inline __m256 exp_avx2(__m256 x) {
    x = _mm256_min_ps(x, _mm256_set1_ps(EXP_HI));
    x = _mm256_max_ps(x, _mm256_set1_ps(EXP_LO));
    __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(LOG2E));
    __m256 u = _mm256_add_ps(t, _mm256_set1_ps(MAGIC));
    __m256 f = _mm256_sub_ps(u, _mm256_set1_ps(MAGIC));
    __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(f, _mm256_set1_ps(C1)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(f, _mm256_set1_ps(C2)));
    __m256 z = _mm256_mul_ps(r, r);
    __m256 p = _mm256_set1_ps(P0);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(P1));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(P2));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(P3));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(P4));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(P5));
    __m256 y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, z), r), _mm256_set1_ps(1.0f));
    __m256i n = _mm256_cvttps_epi32(f);
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
}

__attribute__((target("avx2"))) static inline __m256 tanh_avx2(__m256 x) {
    __m256 sm = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    __m256 sign = _mm256_and_ps(x, sm);
    __m256 a = _mm256_andnot_ps(sm, x);
    a = _mm256_min_ps(a, _mm256_set1_ps(TANH_CLAMP));
    __m256 e = exp_avx2(_mm256_add_ps(a, a));
    __m256 q = _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
    __m256 t = _mm256_sub_ps(_mm256_set1_ps(1.0f), q);
    return _mm256_or_ps(t, sign);
}

__attribute__((target("avx2"))) static void exp_vec_avx2(float* y, const float* x, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_avx2(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = kern_exp(x[i]);
}

__attribute__((target("avx2"))) static void tanh_vec_avx2(float* y, const float* x, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, tanh_avx2(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = kern_tanh(x[i]);
}

__attribute__((target("avx512f"))) static inline __m512 exp_avx512(__m512 x) {
    x = _mm512_min_ps(x, _mm512_set1_ps(EXP_HI));
    x = _mm512_max_ps(x, _mm512_set1_ps(EXP_LO));
    __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(LOG2E));
    __m512 u = _mm512_add_ps(t, _mm512_set1_ps(MAGIC));
    __m512 f = _mm512_sub_ps(u, _mm512_set1_ps(MAGIC));
    __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(f, _mm512_set1_ps(C1)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(f, _mm512_set1_ps(C2)));
    __m512 z = _mm512_mul_ps(r, r);
    __m512 p = _mm512_set1_ps(P0);
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(P1));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(P2));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(P3));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(P4));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(P5));
    __m512 y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, z), r), _mm512_set1_ps(1.0f));
    __m512i n = _mm512_cvttps_epi32(f);
    __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(bits));
}

__attribute__((target("avx512f"))) static inline __m512 tanh_avx512(__m512 x) {
    __m512i sm = _mm512_set1_epi32((int)0x80000000u);
    __m512i xi = _mm512_castps_si512(x);
    __m512i sign = _mm512_and_si512(xi, sm);
    __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(sm, xi));
    a = _mm512_min_ps(a, _mm512_set1_ps(TANH_CLAMP));
    __m512 e = exp_avx512(_mm512_add_ps(a, a));
    __m512 q = _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
    __m512 t = _mm512_sub_ps(_mm512_set1_ps(1.0f), q);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
}

__attribute__((target("avx512f"))) static void exp_vec_avx512(float* y, const float* x, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp_avx512(_mm512_loadu_ps(x + i)));
    exp_vec_avx2(y + i, x + i, n - i);
}

__attribute__((target("avx512f"))) static void tanh_vec_avx512(float* y, const float* x, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, tanh_avx512(_mm512_loadu_ps(x + i)));
    tanh_vec_avx2(y + i, x + i, n - i);
}
#endif

void kern_exp_vec(float* y, const float* x, int n) {
    int i = 0;
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 3) {
        exp_vec_avx512(y, x, n);
        return;
    }
    if (lvl >= 2) {
        exp_vec_avx2(y, x, n);
        return;
    }
    if (lvl >= 1)
        for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, exp_sse2(_mm_loadu_ps(x + i)));
#endif
    for (; i < n; i++) y[i] = kern_exp(x[i]);
}

void kern_tanh_vec(float* y, const float* x, int n) {
    int i = 0;
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 3) {
        tanh_vec_avx512(y, x, n);
        return;
    }
    if (lvl >= 2) {
        tanh_vec_avx2(y, x, n);
        return;
    }
    if (lvl >= 1)
        for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, tanh_sse2(_mm_loadu_ps(x + i)));
#endif
    for (; i < n; i++) y[i] = kern_tanh(x[i]);
}

/* ---- the quantiser's max and exp/sum pass, the backward's softmax (contracts in kern.h) ---- */

static float quant_max_scalar(const float* z, int n) {
    float m = z[0];
    for (int i = 1; i < n; i++)
        if (z[i] > m || m != m) m = z[i];
    return m;
}

static float softmax_max_scalar(const float* z, int n) {
    float m = z[0];
    for (int i = 1; i < n; i++)
        if (z[i] > m) m = z[i];
    return m;
}

static uint64_t exp_u40_scalar(uint32_t* ebits, const float* z, float m, int n) {
    uint64_t S = 0;
    for (int i = 0; i < n; i++) {
        float e = kern_exp(z[i] - m);
        memcpy(&ebits[i], &e, 4);
        S += kern_to_u40(e);
    }
    return S;
}

static inline int finite_f(float x) { return x - x == 0.0f; }

/* 1 + floor(u*M / 2^64) with u <= 2^40, M < 2^56, from the products of hi = u >> 20, lo = u mod 2^20 with
 * Mh = M >> 32, Ml = M mod 2^32 (each below 2^64):  u*M = A*2^52 + B*2^32 + C*2^20 + D, A = hi*Mh, B = lo*Mh,
 * C = hi*Ml, D = lo*Ml;  floor(u*M/2^32) = A*2^20 + B + (C >> 12) + ((C mod 2^12)*2^20 + D) >> 32 (< 2^64);
 * then >> 32 again. */
static inline uint32_t scale_u40(uint64_t u, uint64_t Mh, uint64_t Ml) {
    uint64_t hi = u >> 20, lo = u & 0xFFFFFu;
    uint64_t A = hi * Mh, B = lo * Mh, C = hi * Ml, D = lo * Ml;
    uint64_t Q = (A << 20) + B + (C >> 12) + ((((C & 0xFFFu) << 20) + D) >> 32);
    return 1u + (uint32_t)(Q >> 32);
}

static uint32_t u40_scale_scalar(uint32_t* f, uint64_t M, int n) {
    uint64_t Mh = M >> 32, Ml = M & 0xFFFFFFFFu;
    uint32_t F = 0;
    for (int i = 0; i < n; i++) {
        float e;
        memcpy(&e, &f[i], 4);
        f[i] = scale_u40(kern_to_u40(e), Mh, Ml);
        F += f[i];
    }
    return F;
}

#if KERN_X86
/* Max of the non-NaN elements (-inf if none): max_ps(v, acc) returns acc when v is NaN. */
static float max_nonnan_sse2(const float* z, int n) {
    __m128 acc = _mm_set1_ps(-__builtin_inff());
    int i = 0;
    for (; i + 4 <= n; i += 4) acc = _mm_max_ps(_mm_loadu_ps(z + i), acc);
    acc = _mm_max_ps(acc, _mm_movehl_ps(acc, acc));
    acc = _mm_max_ss(acc, _mm_shuffle_ps(acc, acc, 0x55));
    float m = _mm_cvtss_f32(acc);
    for (; i < n; i++) m = z[i] > m ? z[i] : m;
    return m;
}

__attribute__((target("avx2"))) static float max_nonnan_avx2(const float* z, int n) {
    __m256 acc = _mm256_set1_ps(-__builtin_inff());
    int i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_max_ps(_mm256_loadu_ps(z + i), acc);
    __m128 t = _mm_max_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    t = _mm_max_ps(t, _mm_movehl_ps(t, t));
    t = _mm_max_ss(t, _mm_shuffle_ps(t, t, 0x55));
    float m = _mm_cvtss_f32(t);
    for (; i < n; i++) m = z[i] > m ? z[i] : m;
    return m;
}

__attribute__((target("avx512f"))) static float max_nonnan_avx512(const float* z, int n) {
    __m512 acc = _mm512_set1_ps(-__builtin_inff());
    int i = 0;
    for (; i + 16 <= n; i += 16) acc = _mm512_max_ps(_mm512_loadu_ps(z + i), acc);
    float m = _mm512_reduce_max_ps(acc);
    for (; i < n; i++) m = z[i] > m ? z[i] : m;
    return m;
}

static float max_nonnan(const float* z, int n, int lvl) {
    if (lvl >= 3) return max_nonnan_avx512(z, n);
    if (lvl >= 2) return max_nonnan_avx2(z, n);
    return max_nonnan_sse2(z, n);
}

/* One block of W lanes: e = exp(z - m) stored as bits; hi/lo the two 20-bit halves of u (kern.h). */
#define U40_SPLIT(PS, SI, pre)                                                                        \
    PS ec = pre##_min_ps(e, pre##_set1_ps(1.0f));                                                     \
    PS xs = pre##_mul_ps(ec, pre##_set1_ps(1048576.0f));                                              \
    SI hi = pre##_cvttps_epi32(xs);                                                                   \
    SI lo = pre##_cvttps_epi32(pre##_mul_ps(pre##_sub_ps(xs, pre##_cvtepi32_ps(hi)),                  \
                                            pre##_set1_ps(1048576.0f)));

/* Lane sums of hi and lo stay below 2^31 for 2047 blocks (each <= 2^20), then go to 64 bits. */
#define U40_CHUNK 2047

static uint64_t exp_u40_sse2(uint32_t* ebits, const float* z, float m, int n) {
    __m128 vm = _mm_set1_ps(m);
    uint64_t shi = 0, slo = 0;
    int i = 0;
    while (i + 4 <= n) {
        __m128i ahi = _mm_setzero_si128(), alo = ahi;
        for (int k = 0; k < U40_CHUNK && i + 4 <= n; k++, i += 4) {
            __m128 e = exp_sse2(_mm_sub_ps(_mm_loadu_ps(z + i), vm));
            _mm_storeu_si128((__m128i*)(ebits + i), _mm_castps_si128(e));
            U40_SPLIT(__m128, __m128i, _mm)
            ahi = _mm_add_epi32(ahi, hi);
            alo = _mm_add_epi32(alo, lo);
        }
        uint32_t h[4], l[4];
        _mm_storeu_si128((__m128i*)h, ahi);
        _mm_storeu_si128((__m128i*)l, alo);
        for (int j = 0; j < 4; j++) shi += h[j], slo += l[j];
    }
    return (shi << 20) + slo + exp_u40_scalar(ebits + i, z + i, m, n - i);
}

__attribute__((target("avx2"))) static uint64_t exp_u40_avx2(uint32_t* ebits, const float* z, float m, int n) {
    __m256 vm = _mm256_set1_ps(m);
    uint64_t shi = 0, slo = 0;
    int i = 0;
    while (i + 8 <= n) {
        __m256i ahi = _mm256_setzero_si256(), alo = ahi;
        for (int k = 0; k < U40_CHUNK && i + 8 <= n; k++, i += 8) {
            __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(z + i), vm));
            _mm256_storeu_si256((__m256i*)(ebits + i), _mm256_castps_si256(e));
            U40_SPLIT(__m256, __m256i, _mm256)
            ahi = _mm256_add_epi32(ahi, hi);
            alo = _mm256_add_epi32(alo, lo);
        }
        uint32_t h[8], l[8];
        _mm256_storeu_si256((__m256i*)h, ahi);
        _mm256_storeu_si256((__m256i*)l, alo);
        for (int j = 0; j < 8; j++) shi += h[j], slo += l[j];
    }
    return (shi << 20) + slo + exp_u40_sse2(ebits + i, z + i, m, n - i); /* the tail: exact integer sums */
}

__attribute__((target("avx512f"))) static uint64_t exp_u40_avx512(uint32_t* ebits, const float* z, float m,
                                                                  int n) {
    __m512 vm = _mm512_set1_ps(m);
    uint64_t shi = 0, slo = 0;
    int i = 0;
    while (i + 16 <= n) {
        __m512i ahi = _mm512_setzero_si512(), alo = ahi;
        for (int k = 0; k < U40_CHUNK && i + 16 <= n; k++, i += 16) {
            __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(z + i), vm));
            _mm512_storeu_si512((void*)(ebits + i), _mm512_castps_si512(e));
            U40_SPLIT(__m512, __m512i, _mm512)
            ahi = _mm512_add_epi32(ahi, hi);
            alo = _mm512_add_epi32(alo, lo);
        }
        uint32_t h[16], l[16];
        _mm512_storeu_si512((void*)h, ahi);
        _mm512_storeu_si512((void*)l, alo);
        for (int j = 0; j < 16; j++) shi += h[j], slo += l[j];
    }
    if (i < n) { /* the tail in one masked register: lanes past n are neither stored nor summed */
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, z + i), vm));
        _mm512_mask_storeu_epi32((void*)(ebits + i), k, _mm512_castps_si512(e));
        U40_SPLIT(__m512, __m512i, _mm512)
        uint32_t h[16], l[16];
        _mm512_storeu_si512((void*)h, _mm512_maskz_mov_epi32(k, hi));
        _mm512_storeu_si512((void*)l, _mm512_maskz_mov_epi32(k, lo));
        for (int j = 0; j < 16; j++) shi += h[j], slo += l[j];
    }
    return (shi << 20) + slo; /* exact integer sums: any order */
}

__attribute__((target("avx2"))) static void exp_sub_avx2(float* p, const float* z, float m, int n) {
    __m256 vm = _mm256_set1_ps(m);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(p + i, exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(z + i), vm)));
    for (; i < n; i++) p[i] = kern_exp(z[i] - m);
}

__attribute__((target("avx512f"))) static void exp_sub_avx512(float* p, const float* z, float m, int n) {
    __m512 vm = _mm512_set1_ps(m);
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(p + i, exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(z + i), vm)));
    exp_sub_avx2(p + i, z + i, m, n - i);
}

/* p[i] = e[i] / S for the leading whole registers; returns how many were done. */
__attribute__((target("avx2"))) static int div_avx2(float* p, const float* e, float S, int n) {
    __m256 vs = _mm256_set1_ps(S);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(p + i, _mm256_div_ps(_mm256_loadu_ps(e + i), vs));
    return i;
}

__attribute__((target("avx512f"))) static int div_avx512(float* p, const float* e, float S, int n) {
    __m512 vs = _mm512_set1_ps(S);
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(p + i, _mm512_div_ps(_mm512_loadu_ps(e + i), vs));
    return i + div_avx2(p + i, e + i, S, n - i);
}

/* scale_u40 on W lanes: hi, lo from U40_SPLIT (32-bit lanes); even and odd lanes through mul_epu32 (64-bit
 * lanes), then the results packed back into 32-bit lanes; F summed in 32-bit lanes (partial sums <= F).  The
 * tail goes to the next narrower form (TAIL), so at most 3 elements run scalar, or for AVX-512 into one
 * masked register: every form gives the scalar integers. */
#define U40_SCALE_BODY(PS, SI, pre, sfx, W, SET64, TAIL)                                              \
    SI vmh = SET64((long long)(M >> 32)), vml = SET64((long long)(M & 0xFFFFFFFFu));                  \
    SI m12 = SET64(0xFFF), lo32 = SET64(0xFFFFFFFFll), one = pre##_set1_epi32(1);                     \
    SI acc = pre##_setzero_##sfx();                                                                   \
    int i = 0;                                                                                        \
    for (; i + W <= n; i += W) {                                                                      \
        PS e = pre##_loadu_ps((const float*)(f + i));                                                 \
        U40_SCALE_STEP(PS, SI, pre, sfx)                                                              \
        pre##_storeu_##sfx((void*)(f + i), fv);                                                       \
        acc = pre##_add_epi32(acc, fv);                                                               \
    }                                                                                                 \
    U40_SCALE_TAIL_##W                                                                                \
    uint32_t lanes[W], F = 0;                                                                         \
    pre##_storeu_##sfx((void*)lanes, acc);                                                            \
    for (int j = 0; j < W; j++) F += lanes[j];                                                        \
    return F + TAIL(f + i, M, n - i);

/* e (W floats) -> fv (W lanes of 1 + floor(u*M / 2^64)) */
#define U40_SCALE_STEP(PS, SI, pre, sfx)                                                              \
    U40_SPLIT(PS, SI, pre)                                                                            \
    SI r[2];                                                                                          \
    for (int h = 0; h < 2; h++) {                                                                     \
        SI vh = h ? pre##_srli_epi64(hi, 32) : hi, vl = h ? pre##_srli_epi64(lo, 32) : lo;            \
        SI A = pre##_mul_epu32(vh, vmh), B = pre##_mul_epu32(vl, vmh);                                \
        SI C = pre##_mul_epu32(vh, vml), D = pre##_mul_epu32(vl, vml);                                \
        SI t = pre##_add_epi64(pre##_slli_epi64(pre##_and_##sfx(C, m12), 20), D);                     \
        SI Q = pre##_add_epi64(pre##_add_epi64(pre##_slli_epi64(A, 20), B),                           \
                               pre##_add_epi64(pre##_srli_epi64(C, 12), pre##_srli_epi64(t, 32)));    \
        r[h] = pre##_srli_epi64(Q, 32);                                                               \
    }                                                                                                 \
    SI fv = pre##_add_epi32(pre##_or_##sfx(pre##_and_##sfx(r[0], lo32), pre##_slli_epi64(r[1], 32)), one);

/* The narrower forms pass their tail on (TAIL); AVX-512 finishes in one masked register, leaving i = n. */
#define U40_SCALE_TAIL_4
#define U40_SCALE_TAIL_8
#define U40_SCALE_TAIL_16                                                                             \
    if (i < n) {                                                                                      \
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);                                              \
        __m512 e = _mm512_maskz_loadu_ps(k, (const float*)(f + i));                                   \
        U40_SCALE_STEP(__m512, __m512i, _mm512, si512)                                                \
        _mm512_mask_storeu_epi32((void*)(f + i), k, fv);                                              \
        acc = _mm512_mask_add_epi32(acc, k, acc, fv);                                                 \
        i = n;                                                                                        \
    }

static uint32_t u40_scale_sse2(uint32_t* f, uint64_t M, int n) {
    U40_SCALE_BODY(__m128, __m128i, _mm, si128, 4, _mm_set1_epi64x, u40_scale_scalar)
}

__attribute__((target("avx2"))) static uint32_t u40_scale_avx2(uint32_t* f, uint64_t M, int n) {
    U40_SCALE_BODY(__m256, __m256i, _mm256, si256, 8, _mm256_set1_epi64x, u40_scale_sse2)
}

__attribute__((target("avx512f"))) static uint32_t u40_scale_avx512(uint32_t* f, uint64_t M, int n) {
    U40_SCALE_BODY(__m512, __m512i, _mm512, si512, 16, _mm512_set1_epi64, u40_scale_avx2)
}

/* p[i] = kern_exp(z[i] - m) */
static void exp_sub_vec(float* p, const float* z, float m, int n, int lvl) {
    int i = 0;
    if (lvl >= 3) {
        exp_sub_avx512(p, z, m, n);
        return;
    }
    if (lvl >= 2) {
        exp_sub_avx2(p, z, m, n);
        return;
    }
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(p + i, exp_sse2(_mm_sub_ps(_mm_loadu_ps(z + i), _mm_set1_ps(m))));
    for (; i < n; i++) p[i] = kern_exp(z[i] - m);
}
#endif

float kern_quant_max(const float* z, int n) {
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 1) {
        float m = max_nonnan(z, n, lvl);
        if (finite_f(m)) return m;
    }
#endif
    return quant_max_scalar(z, n);
}

uint64_t kern_exp_u40(uint32_t* ebits, const float* z, float m, int n) {
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 3) return exp_u40_avx512(ebits, z, m, n);
    if (lvl >= 2) return exp_u40_avx2(ebits, z, m, n);
    if (lvl >= 1) return exp_u40_sse2(ebits, z, m, n);
#endif
    return exp_u40_scalar(ebits, z, m, n);
}

uint32_t kern_u40_scale(uint32_t* f, uint64_t M, int n) {
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 3) return u40_scale_avx512(f, M, n);
    if (lvl >= 2) return u40_scale_avx2(f, M, n);
    if (lvl >= 1) return u40_scale_sse2(f, M, n);
#endif
    return u40_scale_scalar(f, M, n);
}

/* S = Σ e ascending (sequential: part of the bits), p = e / S, p[target] -= 1. */
static void softmax_finish(float* p, const float* e, int n, int target) {
    float S = 0.0f;
    for (int i = 0; i < n; i++) S = S + e[i];
    int i = 0;
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 3)
        i = div_avx512(p, e, S, n);
    else if (lvl >= 2)
        i = div_avx2(p, e, S, n);
    else if (lvl >= 1)
        for (; i + 4 <= n; i += 4) _mm_storeu_ps(p + i, _mm_div_ps(_mm_loadu_ps(e + i), _mm_set1_ps(S)));
#endif
    for (; i < n; i++) p[i] = e[i] / S;
    if (target >= 0 && target < n) p[target] = p[target] - 1.0f;
}

void kern_softmax_e(float* p, const float* e, int n, int target) { softmax_finish(p, e, n, target); }

void kern_softmax_xent(float* p, const float* z, int n, int target) {
#if KERN_X86
    int lvl = kern_simd_level();
    if (lvl >= 1 && z[0] == z[0]) {
        float m = max_nonnan(z, n, lvl); /* = the sequential max when z[0] is not NaN and m is finite */
        if (finite_f(m)) {
            exp_sub_vec(p, z, m, n, lvl);
            softmax_finish(p, p, n, target);
            return;
        }
    }
#endif
    float m = softmax_max_scalar(z, n);
    for (int i = 0; i < n; i++) p[i] = kern_exp(z[i] - m);
    softmax_finish(p, p, n, target);
}
