/* kern_math.c: the exp and tanh polynomials of the format (expressions fixed in kern.h).
 *
 * Owns kern_exp / kern_tanh and their vector forms.  Only + − × ÷, min/max on NaN-free data, an exact
 * float→int conversion of an integral value and exponent-bit construction: no libm, no estimate
 * instructions, no FMA.  The SSE2 and AVX2 vector forms evaluate the same expression lane by lane and give
 * the scalar bits.  Constants: Cephes expf (S. Moshier), Cody–Waite split of ln 2.
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
#endif

void kern_exp_vec(float* y, const float* x, int n) {
    int i = 0;
#if KERN_X86
    int lvl = kern_simd_level();
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
    if (lvl >= 2) {
        tanh_vec_avx2(y, x, n);
        return;
    }
    if (lvl >= 1)
        for (; i + 4 <= n; i += 4) _mm_storeu_ps(y + i, tanh_sse2(_mm_loadu_ps(x + i)));
#endif
    for (; i < n; i++) y[i] = kern_tanh(x[i]);
}
