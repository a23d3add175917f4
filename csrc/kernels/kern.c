/* kern.c: dot, matvec and the elementwise backward/update kernels (see kern.h for the contracts).
 *
 * Owns the 16-lane canonical reduction order of docs/format.md §2 in three implementations: the scalar
 * reference (the definition), SSE2 (four 4-lane registers = lanes 0-3, 4-7, 8-11, 12-15), AVX2 (two
 * 8-lane registers = lanes 0-7, 8-15) and AVX-512F (one 16-lane register = the 16 lanes), selected at run
 * time.  The SIMD paths use mul then add (never FMA) and the same pairwise tree (+8, +4, +2, +1), so they
 * give the scalar bits.  Elementwise kernels (axpy, adds, outer products, the update) are exact at any
 * width.  NLM_NO_SIMD builds the scalar code only.
 */
#include "../common/fpenv.h"
#include "kern.h"

#include <stddef.h>
#include <stdlib.h> /* getenv: NLMCODEC_SIMD_CAP */
#include <string.h>

#if !defined(NLM_NO_SIMD) && (defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__)))
#define KERN_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define KERN_X86 0
#endif

/* ---- scalar reference ---- */

float kern_dot(const float* a, const float* b, int n) {
    float acc[16];
    for (int j = 0; j < 16; j++) acc[j] = 0.0f;
    for (int i = 0; i < n; i += 16)
        for (int j = 0; j < 16; j++) {
            float p = a[i + j] * b[i + j];
            acc[j] = acc[j] + p;
        }
    for (int j = 0; j < 8; j++) acc[j] = acc[j] + acc[j + 8];
    for (int j = 0; j < 4; j++) acc[j] = acc[j] + acc[j + 4];
    for (int j = 0; j < 2; j++) acc[j] = acc[j] + acc[j + 2];
    return acc[0] + acc[1];
}

static void matvec_scalar(float* y, const float* W, const float* x, int rows, int cols) {
    for (int r = 0; r < rows; r++) y[r] = kern_dot(W + (size_t)r * cols, x, cols);
}

static void axpy_scalar(float* y, float a, const float* x, int n) {
    for (int i = 0; i < n; i++) {
        float p = a * x[i];
        y[i] = y[i] + p;
    }
}

static void outer_acc_seq_scalar(float* G, const float* const* d, const float* const* x, int T, int rows,
                                 int cols, int zero_first) {
    for (int r = 0; r < rows; r++) {
        float* g = G + (size_t)r * cols;
        for (int k = 0; k < cols; k++) {
            float acc = zero_first ? 0.0f : g[k];
            for (int i = 0; i < T; i++) {
                float p = d[i][r] * x[i][k];
                acc = acc + p;
            }
            g[k] = acc;
        }
    }
}

/* Clamp to [-lim, lim] with x86 min/max semantics (a NaN s gives lim), identical in every path. */
static inline float clampf(float s, float lim) {
    float a = s < lim ? s : lim;          /* minps(s, lim) */
    float nl = -lim;
    return a > nl ? a : nl;               /* maxps(a, -lim) */
}

/* binary16 weights may sit at any byte address (a mapped model file): read them with memcpy / loadu */
static inline uint16_t ld16(const uint16_t* p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* The update kernels read θ0 as float32 or, for a binary16 model, as stored (TH0_F16: an exact conversion,
 * so the same values and bits; half the bytes of the float32 copy). */
#define TH0_F32(i) th0[i]
#define TH0_F16(i) kern_half_to_float(ld16(th0 + (i)))

#define DECAY_SGD_SCALAR_BODY(TH0)                                                                   \
    for (int i = 0; i < n; i++) {                                                                    \
        float z = TH0(i);                                                                            \
        float t = th[i] - z;                                                                         \
        float v = t * q;                                                                             \
        float a = z + v;                                                                             \
        float t2 = z - a;                                                                            \
        float s = clampf(step * g[i], lim);                                                          \
        float u = a - s;                                                                             \
        float w = decay * t2;                                                                        \
        th[i] = u + w;                                                                               \
    }

#define SGD_DECAY_SCALAR_BODY(TH0)                                                                   \
    for (int i = 0; i < n; i++) {                                                                    \
        float t = TH0(i) - th[i];                                                                    \
        float s = clampf(step * g[i], lim);                                                          \
        float u = th[i] - s;                                                                         \
        float v = decay * t;                                                                         \
        th[i] = u + v;                                                                               \
    }

static void decay_sgd_scalar(float* th, const float* th0, const float* g, float q, float step, float decay,
                             float lim, int n) {
    DECAY_SGD_SCALAR_BODY(TH0_F32)
}
static void sgd_decay_scalar(float* th, const float* th0, const float* g, float step, float decay, float lim,
                             int n) {
    SGD_DECAY_SCALAR_BODY(TH0_F32)
}
static void decay_sgd_scalar_h(float* th, const uint16_t* th0, const float* g, float q, float step, float decay,
                               float lim, int n) {
    DECAY_SGD_SCALAR_BODY(TH0_F16)
}
static void sgd_decay_scalar_h(float* th, const uint16_t* th0, const float* g, float step, float decay,
                               float lim, int n) {
    SGD_DECAY_SCALAR_BODY(TH0_F16)
}

static void decay_toward_scalar(float* th, const float* th0, float q, int n) {
    for (int i = 0; i < n; i++) {
        float t = th[i] - th0[i];
        float v = t * q;
        th[i] = th0[i] + v;
    }
}

static void add_scalar(float* y, const float* a, const float* b, int n) {
    for (int i = 0; i < n; i++) y[i] = a[i] + b[i];
}

static void add3_scalar(float* y, const float* a, const float* b, const float* c, int n) {
    for (int i = 0; i < n; i++) {
        float s = a[i] + b[i];
        y[i] = s + c[i];
    }
}

void kern_sgd_decay_idx(float* th, const float* th0, const float* g, const int32_t* idx, const float* q,
                        float step, float decay, float lim, int n) {
    /* one call per element of the same scalar code kern_decay_sgd / kern_sgd_decay run on n = 1 */
    for (int i = 0; i < n; i++) {
        size_t j = (size_t)idx[i];
        if (q[i] >= 0.0f)
            decay_sgd_scalar(th + j, th0 + j, g + i, q[i], step, decay, lim, 1);
        else
            sgd_decay_scalar(th + j, th0 + j, g + i, step, decay, lim, 1);
    }
}

/* ---- integer kernels of the token cache's mixing (exact: every path gives these values) ---- */

static void weigh_acc_scalar(uint32_t* out, const uint32_t* x, uint64_t R, int n, int first) {
    for (int i = 0; i < n; i++) out[i] = (first ? 1u : out[i]) + kern_weigh(x[i], R);
}

static uint32_t sum_u32_scalar(const uint32_t* x, int n) {
    uint32_t s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return s;
}

/* ---- integer kernels of the byte model's mixers (exact: every path gives these values) ---- */

static void mix2_dot_scalar(int64_t* da, int64_t* db, const int32_t* a, const int32_t* b, const int32_t* x) {
    int64_t sa = 0, sb = 0;
    for (int k = 0; k < KERN_MIX_N; k++) {
        sa += (int64_t)a[k] * x[k];
        sb += (int64_t)b[k] * x[k];
    }
    *da = sa;
    *db = sb;
}

static inline int32_t clamp_lim(int64_t w, int32_t lim) { return (int32_t)(w > lim ? lim : w < -lim ? -lim : w); }

static void mix2_train_scalar(int32_t* a, int32_t* b, const int32_t* x, int32_t ea, int32_t eb, int shift,
                              int32_t lim) {
    for (int k = 0; k < KERN_MIX_N; k++) {
        a[k] = clamp_lim(a[k] + kern_asr64((int64_t)x[k] * ea, shift), lim);
        b[k] = clamp_lim(b[k] + kern_asr64((int64_t)x[k] * eb, shift), lim);
    }
}

/* ---- x86 SIMD paths ---- */
#if KERN_X86

static int g_level_cap = 3;
static int g_level = -1; /* cached kern_simd_level; -1 = not computed */

static int simd_level_raw(void) {
    int lvl = 1; /* SSE2 is baseline on x86-64 */
    if (__builtin_cpu_supports("avx2")) lvl = 2;
    if (lvl == 2 && __builtin_cpu_supports("avx512f")) lvl = 3;
    const char* env = getenv("NLMCODEC_SIMD_CAP");
    if (env && env[0] >= '0' && env[0] <= '9' && env[0] - '0' < lvl) lvl = env[0] - '0';
    return lvl < g_level_cap ? lvl : g_level_cap;
}

/* The dispatchers read the cached level inline (kern_simd_level is exported, so a PIC build would call it
 * through the PLT). */
static inline int level_cached(void) {
    int l = g_level;
    if (l < 0) g_level = l = simd_level_raw(); /* a benign race: every thread computes the same value */
    return l;
}

int kern_simd_level(void) { return level_cached(); }

void kern_set_simd_cap(int cap) {
    g_level_cap = cap;
    g_level = -1;
}

/* SSE2: r0..r3 hold lanes 0-3, 4-7, 8-11, 12-15.  +8: r0+=r2, r1+=r3; +4: r0+=r1; +2: movehl; +1. */
static inline float sse_reduce16(__m128 r0, __m128 r1, __m128 r2, __m128 r3) {
    r0 = _mm_add_ps(r0, r2);
    r1 = _mm_add_ps(r1, r3);
    r0 = _mm_add_ps(r0, r1);
    r0 = _mm_add_ps(r0, _mm_movehl_ps(r0, r0));
    r0 = _mm_add_ss(r0, _mm_shuffle_ps(r0, r0, 0x55));
    return _mm_cvtss_f32(r0);
}

static void matvec_sse2(float* y, const float* W, const float* x, int rows, int cols) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) {
        const float* w0 = W + (size_t)r * cols;
        const float* w1 = w0 + cols;
        __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m128 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (int i = 0; i < cols; i += 16) {
            __m128 x0 = _mm_loadu_ps(x + i), x1 = _mm_loadu_ps(x + i + 4);
            __m128 x2 = _mm_loadu_ps(x + i + 8), x3 = _mm_loadu_ps(x + i + 12);
            a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_loadu_ps(w0 + i), x0));
            a1 = _mm_add_ps(a1, _mm_mul_ps(_mm_loadu_ps(w0 + i + 4), x1));
            a2 = _mm_add_ps(a2, _mm_mul_ps(_mm_loadu_ps(w0 + i + 8), x2));
            a3 = _mm_add_ps(a3, _mm_mul_ps(_mm_loadu_ps(w0 + i + 12), x3));
            b0 = _mm_add_ps(b0, _mm_mul_ps(_mm_loadu_ps(w1 + i), x0));
            b1 = _mm_add_ps(b1, _mm_mul_ps(_mm_loadu_ps(w1 + i + 4), x1));
            b2 = _mm_add_ps(b2, _mm_mul_ps(_mm_loadu_ps(w1 + i + 8), x2));
            b3 = _mm_add_ps(b3, _mm_mul_ps(_mm_loadu_ps(w1 + i + 12), x3));
        }
        y[r] = sse_reduce16(a0, a1, a2, a3);
        y[r + 1] = sse_reduce16(b0, b1, b2, b3);
    }
    for (; r < rows; r++) {
        const float* w0 = W + (size_t)r * cols;
        __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int i = 0; i < cols; i += 16) {
            a0 = _mm_add_ps(a0, _mm_mul_ps(_mm_loadu_ps(w0 + i), _mm_loadu_ps(x + i)));
            a1 = _mm_add_ps(a1, _mm_mul_ps(_mm_loadu_ps(w0 + i + 4), _mm_loadu_ps(x + i + 4)));
            a2 = _mm_add_ps(a2, _mm_mul_ps(_mm_loadu_ps(w0 + i + 8), _mm_loadu_ps(x + i + 8)));
            a3 = _mm_add_ps(a3, _mm_mul_ps(_mm_loadu_ps(w0 + i + 12), _mm_loadu_ps(x + i + 12)));
        }
        y[r] = sse_reduce16(a0, a1, a2, a3);
    }
}

/* AVX2: A = lanes 0-7, B = lanes 8-15.  +8: A+B; +4: lo128+hi128; +2: movehl; +1: shuffle. */
__attribute__((target("avx2"))) static inline float avx_reduce16(__m256 A, __m256 B) {
    __m256 s = _mm256_add_ps(A, B);
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ss(t, _mm_shuffle_ps(t, t, 0x55));
    return _mm_cvtss_f32(t);
}

/* The AVX2 matvec: 4 rows at a time, lanes 0-7 in A and 8-15 in B (the canonical 16 lanes), reduced by
 * avx_reduce16.  One body for float rows and binary16 rows (LOAD converts 8 weights to __m256; the F16C
 * conversion is exact, so both give the bits of the scalar code on the same values). */
#define MATVEC_AVX2_BODY(WT, LOAD)                                                                   \
    int r = 0;                                                                                       \
    for (; r + 4 <= rows; r += 4) {                                                                  \
        const WT* w0 = W + (size_t)r * cols;                                                         \
        const WT* w1 = w0 + cols;                                                                    \
        const WT* w2 = w1 + cols;                                                                    \
        const WT* w3 = w2 + cols;                                                                    \
        __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0; \
        for (int i = 0; i < cols; i += 16) {                                                         \
            __m256 xl = _mm256_loadu_ps(x + i), xh = _mm256_loadu_ps(x + i + 8);                     \
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(LOAD(w0 + i), xl));                                 \
            b0 = _mm256_add_ps(b0, _mm256_mul_ps(LOAD(w0 + i + 8), xh));                             \
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(LOAD(w1 + i), xl));                                 \
            b1 = _mm256_add_ps(b1, _mm256_mul_ps(LOAD(w1 + i + 8), xh));                             \
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(LOAD(w2 + i), xl));                                 \
            b2 = _mm256_add_ps(b2, _mm256_mul_ps(LOAD(w2 + i + 8), xh));                             \
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(LOAD(w3 + i), xl));                                 \
            b3 = _mm256_add_ps(b3, _mm256_mul_ps(LOAD(w3 + i + 8), xh));                             \
        }                                                                                            \
        y[r] = avx_reduce16(a0, b0);                                                                 \
        y[r + 1] = avx_reduce16(a1, b1);                                                             \
        y[r + 2] = avx_reduce16(a2, b2);                                                             \
        y[r + 3] = avx_reduce16(a3, b3);                                                             \
    }                                                                                                \
    for (; r < rows; r++) {                                                                          \
        const WT* w0 = W + (size_t)r * cols;                                                         \
        __m256 a0 = _mm256_setzero_ps(), b0 = a0;                                                    \
        for (int i = 0; i < cols; i += 16) {                                                         \
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(LOAD(w0 + i), _mm256_loadu_ps(x + i)));             \
            b0 = _mm256_add_ps(b0, _mm256_mul_ps(LOAD(w0 + i + 8), _mm256_loadu_ps(x + i + 8)));     \
        }                                                                                            \
        y[r] = avx_reduce16(a0, b0);                                                                 \
    }

__attribute__((target("avx2"))) static void matvec_avx2(float* y, const float* W, const float* x, int rows,
                                                        int cols) {
    MATVEC_AVX2_BODY(float, _mm256_loadu_ps)
}

__attribute__((target("avx2"))) static void axpy_avx2(float* y, float a, const float* x, int n) {
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, _mm256_loadu_ps(x + i))));
    axpy_scalar(y + i, a, x + i, n - i);
}

/* y[k] += sum_r W[r][k]*d[r], r ascending, 32 columns kept in registers while r runs. */
/* ld: the row stride of W (cols for a whole matrix; the AVX-512 form passes its tail columns). */
__attribute__((target("avx2"))) static void matvec_t_acc_avx2(float* y, const float* W, const float* d, int rows,
                                                              int cols, int ld) {
    int k = 0;
    for (; k + 32 <= cols; k += 32) {
        __m256 y0 = _mm256_loadu_ps(y + k), y1 = _mm256_loadu_ps(y + k + 8);
        __m256 y2 = _mm256_loadu_ps(y + k + 16), y3 = _mm256_loadu_ps(y + k + 24);
        for (int r = 0; r < rows; r++) {
            const float* w = W + (size_t)r * ld + k;
            __m256 dr = _mm256_set1_ps(d[r]);
            y0 = _mm256_add_ps(y0, _mm256_mul_ps(_mm256_loadu_ps(w), dr));
            y1 = _mm256_add_ps(y1, _mm256_mul_ps(_mm256_loadu_ps(w + 8), dr));
            y2 = _mm256_add_ps(y2, _mm256_mul_ps(_mm256_loadu_ps(w + 16), dr));
            y3 = _mm256_add_ps(y3, _mm256_mul_ps(_mm256_loadu_ps(w + 24), dr));
        }
        _mm256_storeu_ps(y + k, y0);
        _mm256_storeu_ps(y + k + 8, y1);
        _mm256_storeu_ps(y + k + 16, y2);
        _mm256_storeu_ps(y + k + 24, y3);
    }
    for (; k + 8 <= cols; k += 8) {
        __m256 y0 = _mm256_loadu_ps(y + k);
        for (int r = 0; r < rows; r++)
            y0 = _mm256_add_ps(y0, _mm256_mul_ps(_mm256_loadu_ps(W + (size_t)r * ld + k), _mm256_set1_ps(d[r])));
        _mm256_storeu_ps(y + k, y0);
    }
    for (; k < cols; k++) {
        float acc = y[k];
        for (int r = 0; r < rows; r++) {
            float p = W[(size_t)r * ld + k] * d[r];
            acc = acc + p;
        }
        y[k] = acc;
    }
}

/* k0: the first column to do (0; the AVX-512 form passes its tail). */
__attribute__((target("avx2"))) static void outer_acc_seq_avx2(float* G, const float* const* d,
                                                               const float* const* x, int T, int rows, int cols,
                                                               int zero_first, int k0) {
    for (int r = 0; r < rows; r++) {
        float* g = G + (size_t)r * cols;
        int k = k0;
        for (; k + 32 <= cols; k += 32) {
            __m256 g0, g1, g2, g3;
            if (zero_first) {
                g0 = g1 = g2 = g3 = _mm256_setzero_ps();
            } else {
                g0 = _mm256_loadu_ps(g + k), g1 = _mm256_loadu_ps(g + k + 8);
                g2 = _mm256_loadu_ps(g + k + 16), g3 = _mm256_loadu_ps(g + k + 24);
            }
            for (int i = 0; i < T; i++) {
                __m256 dr = _mm256_set1_ps(d[i][r]);
                const float* xi = x[i] + k;
                g0 = _mm256_add_ps(g0, _mm256_mul_ps(dr, _mm256_loadu_ps(xi)));
                g1 = _mm256_add_ps(g1, _mm256_mul_ps(dr, _mm256_loadu_ps(xi + 8)));
                g2 = _mm256_add_ps(g2, _mm256_mul_ps(dr, _mm256_loadu_ps(xi + 16)));
                g3 = _mm256_add_ps(g3, _mm256_mul_ps(dr, _mm256_loadu_ps(xi + 24)));
            }
            _mm256_storeu_ps(g + k, g0);
            _mm256_storeu_ps(g + k + 8, g1);
            _mm256_storeu_ps(g + k + 16, g2);
            _mm256_storeu_ps(g + k + 24, g3);
        }
        for (; k + 8 <= cols; k += 8) {
            __m256 g0 = zero_first ? _mm256_setzero_ps() : _mm256_loadu_ps(g + k);
            for (int i = 0; i < T; i++)
                g0 = _mm256_add_ps(g0, _mm256_mul_ps(_mm256_set1_ps(d[i][r]), _mm256_loadu_ps(x[i] + k)));
            _mm256_storeu_ps(g + k, g0);
        }
        for (; k < cols; k++) {
            float acc = zero_first ? 0.0f : g[k];
            for (int i = 0; i < T; i++) {
                float p = d[i][r] * x[i][k];
                acc = acc + p;
            }
            g[k] = acc;
        }
    }
}

/* The update kernels on W lanes (pre: _mm256 or _mm512; PS its float vector); LOADZ(p): W θ0 values as PS;
 * TAIL: the next narrower form, for the remainder. */
#define DECAY_SGD_SIMD_BODY(PS, pre, W, LOADZ, TAIL)                                                 \
    PS vq = pre##_set1_ps(q), vs = pre##_set1_ps(step), vd = pre##_set1_ps(decay);                   \
    PS vl = pre##_set1_ps(lim), vnl = pre##_set1_ps(-lim);                                           \
    int i = 0;                                                                                       \
    for (; i + W <= n; i += W) {                                                                     \
        PS z = LOADZ(th0 + i);                                                                       \
        PS a = pre##_add_ps(z, pre##_mul_ps(pre##_sub_ps(pre##_loadu_ps(th + i), z), vq));           \
        PS s = pre##_max_ps(pre##_min_ps(pre##_mul_ps(vs, pre##_loadu_ps(g + i)), vl), vnl);         \
        PS u = pre##_sub_ps(a, s);                                                                   \
        pre##_storeu_ps(th + i, pre##_add_ps(u, pre##_mul_ps(vd, pre##_sub_ps(z, a))));              \
    }                                                                                                \
    TAIL(th + i, th0 + i, g + i, q, step, decay, lim, n - i);

#define SGD_DECAY_SIMD_BODY(PS, pre, W, LOADZ, TAIL)                                                 \
    PS vs = pre##_set1_ps(step), vd = pre##_set1_ps(decay);                                          \
    PS vl = pre##_set1_ps(lim), vnl = pre##_set1_ps(-lim);                                           \
    int i = 0;                                                                                       \
    for (; i + W <= n; i += W) {                                                                     \
        PS t = pre##_loadu_ps(th + i);                                                               \
        PS dt = pre##_sub_ps(LOADZ(th0 + i), t);                                                     \
        PS s = pre##_max_ps(pre##_min_ps(pre##_mul_ps(vs, pre##_loadu_ps(g + i)), vl), vnl);         \
        PS u = pre##_sub_ps(t, s);                                                                   \
        pre##_storeu_ps(th + i, pre##_add_ps(u, pre##_mul_ps(vd, dt)));                              \
    }                                                                                                \
    TAIL(th + i, th0 + i, g + i, step, decay, lim, n - i);

#define LOAD_HALF8(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(p)))

__attribute__((target("avx2"))) static void decay_sgd_avx2(float* th, const float* th0, const float* g, float q,
                                                           float step, float decay, float lim, int n) {
    DECAY_SGD_SIMD_BODY(__m256, _mm256, 8, _mm256_loadu_ps, decay_sgd_scalar)
}
__attribute__((target("avx2"))) static void sgd_decay_avx2(float* th, const float* th0, const float* g, float step,
                                                           float decay, float lim, int n) {
    SGD_DECAY_SIMD_BODY(__m256, _mm256, 8, _mm256_loadu_ps, sgd_decay_scalar)
}
__attribute__((target("avx2,f16c"))) static void decay_sgd_f16c(float* th, const uint16_t* th0, const float* g,
                                                                float q, float step, float decay, float lim,
                                                                int n) {
    DECAY_SGD_SIMD_BODY(__m256, _mm256, 8, LOAD_HALF8, decay_sgd_scalar_h)
}
__attribute__((target("avx2,f16c"))) static void sgd_decay_f16c(float* th, const uint16_t* th0, const float* g,
                                                                float step, float decay, float lim, int n) {
    SGD_DECAY_SIMD_BODY(__m256, _mm256, 8, LOAD_HALF8, sgd_decay_scalar_h)
}

__attribute__((target("avx2"))) static void decay_toward_avx2(float* th, const float* th0, float q, int n) {
    __m256 vq = _mm256_set1_ps(q);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 z = _mm256_loadu_ps(th0 + i);
        __m256 t = _mm256_sub_ps(_mm256_loadu_ps(th + i), z);
        _mm256_storeu_ps(th + i, _mm256_add_ps(z, _mm256_mul_ps(t, vq)));
    }
    decay_toward_scalar(th + i, th0 + i, q, n - i);
}

/* CPUID.1:ECX bit 29, read directly: clang 14 rejects __builtin_cpu_supports("f16c").  The F16C path is
 * taken only at level 2, whose AVX2 check also covers the OS's saving of the YMM registers. */
static int kern_has_f16c(void) {
    static int v = -1;
    if (v < 0) {
        unsigned int a, b, c, d;
        v = (__get_cpuid(1, &a, &b, &c, &d) && ((c >> 29) & 1u)) ? 1 : 0;
    }
    return v;
}

__attribute__((target("avx2,f16c"))) static void matvec_h_f16c(float* y, const uint16_t* W, const float* x,
                                                               int rows, int cols) {
    MATVEC_AVX2_BODY(uint16_t, LOAD_HALF8)
}

__attribute__((target("avx2,f16c"))) static int half_to_float_f16c(float* y, const uint16_t* x, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, LOAD_HALF8(x + i));
    return (int)(n - i);
}

__attribute__((target("avx2"))) static void add_avx2(float* y, const float* a, const float* b, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    add_scalar(y + i, a + i, b + i, n - i);
}

__attribute__((target("avx2"))) static void add3_avx2(float* y, const float* a, const float* b, const float* c,
                                                      int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 t = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
        _mm256_storeu_ps(y + i, _mm256_add_ps(t, _mm256_loadu_ps(c + i)));
    }
    add3_scalar(y + i, a + i, b + i, c + i, n - i);
}

/* AVX2 integer mixer kernels: _mm256_mul_epi32 multiplies the low (signed) 32 bits of each 64-bit lane, so
 * a vector of 8 int32 gives its even elements' products directly and its odd elements' after a 32-bit shift. */
__attribute__((target("avx2"))) static inline int64_t hsum64(__m256i v) {
    __m128i s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
    return _mm_cvtsi128_si64(s);
}

/* kern_weigh_acc: x·R mod 2^64 >> 32 = (hi32(x·R_lo) + x·R_hi) mod 2^32, with R = R_hi·2^32 + R_lo: the
 * 32×32→64 products of vpmuludq (even lanes, then the odd ones shifted down; their high halves blended into
 * one register) and the low half of x·R_hi (vpmulld). */
__attribute__((target("avx2"))) static void weigh_acc_avx2(uint32_t* out, const uint32_t* x, uint64_t R, int n,
                                                           int first) {
    const __m256i rlo = _mm256_set1_epi64x((long long)(R & 0xffffffffu)), rhi = _mm256_set1_epi32((int)(R >> 32));
    const __m256i one = _mm256_set1_epi32(1);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i*)(x + i));
        __m256i pe = _mm256_srli_epi64(_mm256_mul_epu32(v, rlo), 32);
        __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(v, 32), rlo);
        __m256i w = _mm256_add_epi32(_mm256_blend_epi32(pe, po, 0xAA), _mm256_mullo_epi32(v, rhi));
        __m256i b = first ? one : _mm256_loadu_si256((const __m256i*)(out + i));
        _mm256_storeu_si256((__m256i*)(out + i), _mm256_add_epi32(b, w));
    }
    weigh_acc_scalar(out + i, x + i, R, n - i, first);
}

__attribute__((target("avx2"))) static uint32_t sum_u32_avx2(const uint32_t* x, int n) {
    __m256i a = _mm256_setzero_si256();
    int i = 0;
    for (; i + 8 <= n; i += 8) a = _mm256_add_epi32(a, _mm256_loadu_si256((const __m256i*)(x + i)));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(t) + sum_u32_scalar(x + i, n - i);
}

__attribute__((target("avx512f"))) static void weigh_acc_avx512(uint32_t* out, const uint32_t* x, uint64_t R,
                                                                int n, int first) {
    const __m512i rlo = _mm512_set1_epi64((long long)(R & 0xffffffffu)), rhi = _mm512_set1_epi32((int)(R >> 32));
    const __m512i one = _mm512_set1_epi32(1);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_loadu_si512(x + i);
        __m512i pe = _mm512_srli_epi64(_mm512_mul_epu32(v, rlo), 32);
        __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(v, 32), rlo);
        __m512i w = _mm512_add_epi32(_mm512_mask_blend_epi32(0xAAAA, pe, po), _mm512_mullo_epi32(v, rhi));
        __m512i b = first ? one : _mm512_loadu_si512(out + i);
        _mm512_storeu_si512(out + i, _mm512_add_epi32(b, w));
    }
    weigh_acc_avx2(out + i, x + i, R, n - i, first);
}

__attribute__((target("avx512f"))) static uint32_t sum_u32_avx512(const uint32_t* x, int n) {
    __m512i a = _mm512_setzero_si512();
    int i = 0;
    for (; i + 16 <= n; i += 16) a = _mm512_add_epi32(a, _mm512_loadu_si512(x + i));
    return (uint32_t)_mm512_reduce_add_epi32(a) + sum_u32_avx2(x + i, n - i);
}

__attribute__((target("avx2"))) static void mix2_dot_avx2(int64_t* da, int64_t* db, const int32_t* a,
                                                           const int32_t* b, const int32_t* x) {
    __m256i sa = _mm256_setzero_si256(), sb = sa;
    for (int k = 0; k < KERN_MIX_N; k += 8) {
        __m256i xv = _mm256_loadu_si256((const __m256i*)(x + k)), xo = _mm256_srli_epi64(xv, 32);
        __m256i av = _mm256_loadu_si256((const __m256i*)(a + k));
        __m256i bv = _mm256_loadu_si256((const __m256i*)(b + k));
        sa = _mm256_add_epi64(sa, _mm256_mul_epi32(av, xv));
        sa = _mm256_add_epi64(sa, _mm256_mul_epi32(_mm256_srli_epi64(av, 32), xo));
        sb = _mm256_add_epi64(sb, _mm256_mul_epi32(bv, xv));
        sb = _mm256_add_epi64(sb, _mm256_mul_epi32(_mm256_srli_epi64(bv, 32), xo));
    }
    *da = hsum64(sa);
    *db = hsum64(sb);
}

/* floor(p / 2^shift) per 64-bit lane (AVX2 has no 64-bit arithmetic shift): the logical shift with the
 * sign bits filled in. */
__attribute__((target("avx2"))) static inline __m256i asr64_avx2(__m256i p, __m128i sh, __m128i fill) {
    __m256i neg = _mm256_cmpgt_epi64(_mm256_setzero_si256(), p);
    return _mm256_or_si256(_mm256_srl_epi64(p, sh), _mm256_sll_epi64(neg, fill));
}

/* The 8 deltas asr(x[k] * e, shift) as int32 (each fits: the contract bounds |x e|). */
__attribute__((target("avx2"))) static inline __m256i mix_delta_avx2(__m256i xv, __m256i xo, __m256i ev,
                                                                      __m128i sh, __m128i fill) {
    __m256i de = asr64_avx2(_mm256_mul_epi32(xv, ev), sh, fill);
    __m256i dodd = asr64_avx2(_mm256_mul_epi32(xo, ev), sh, fill);
    return _mm256_blend_epi32(de, _mm256_slli_epi64(dodd, 32), 0xAA);
}

__attribute__((target("avx2"))) static void mix2_train_avx2(int32_t* a, int32_t* b, const int32_t* x,
                                                             int32_t ea, int32_t eb, int shift, int32_t lim) {
    const __m128i sh = _mm_cvtsi32_si128(shift), fill = _mm_cvtsi32_si128(64 - shift);
    const __m256i eav = _mm256_set1_epi32(ea), ebv = _mm256_set1_epi32(eb);
    const __m256i hi = _mm256_set1_epi32(lim), lo = _mm256_set1_epi32(-lim);
    for (int k = 0; k < KERN_MIX_N; k += 8) {
        __m256i xv = _mm256_loadu_si256((const __m256i*)(x + k)), xo = _mm256_srli_epi64(xv, 32);
        __m256i av = _mm256_loadu_si256((const __m256i*)(a + k));
        __m256i bv = _mm256_loadu_si256((const __m256i*)(b + k));
        av = _mm256_add_epi32(av, mix_delta_avx2(xv, xo, eav, sh, fill));
        bv = _mm256_add_epi32(bv, mix_delta_avx2(xv, xo, ebv, sh, fill));
        _mm256_storeu_si256((__m256i*)(a + k), _mm256_min_epi32(_mm256_max_epi32(av, lo), hi));
        _mm256_storeu_si256((__m256i*)(b + k), _mm256_min_epi32(_mm256_max_epi32(bv, lo), hi));
    }
}

/* ---- AVX-512F: one __m512 is the 16 canonical lanes ---- */

/* +8: lo256 + hi256; then the AVX2 tree (+4: lo128 + hi128; +2: movehl; +1: shuffle). */
__attribute__((target("avx512f"))) static inline float avx512_reduce16(__m512 v) {
    __m256 lo = _mm512_castps512_ps256(v);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    __m256 s = _mm256_add_ps(lo, hi);
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    t = _mm_add_ps(t, _mm_movehl_ps(t, t));
    t = _mm_add_ss(t, _mm_shuffle_ps(t, t, 0x55));
    return _mm_cvtss_f32(t);
}

/* 4 rows at a time, one register per row; LOAD16 gives 16 weights as __m512 (binary16: exact conversion). */
#define MATVEC_AVX512_BODY(WT, LOAD16)                                                               \
    int r = 0;                                                                                       \
    for (; r + 4 <= rows; r += 4) {                                                                  \
        const WT* w0 = W + (size_t)r * cols;                                                         \
        const WT* w1 = w0 + cols;                                                                    \
        const WT* w2 = w1 + cols;                                                                    \
        const WT* w3 = w2 + cols;                                                                    \
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                                  \
        for (int i = 0; i < cols; i += 16) {                                                         \
            __m512 xv = _mm512_loadu_ps(x + i);                                                      \
            a0 = _mm512_add_ps(a0, _mm512_mul_ps(LOAD16(w0 + i), xv));                               \
            a1 = _mm512_add_ps(a1, _mm512_mul_ps(LOAD16(w1 + i), xv));                               \
            a2 = _mm512_add_ps(a2, _mm512_mul_ps(LOAD16(w2 + i), xv));                               \
            a3 = _mm512_add_ps(a3, _mm512_mul_ps(LOAD16(w3 + i), xv));                               \
        }                                                                                            \
        y[r] = avx512_reduce16(a0);                                                                  \
        y[r + 1] = avx512_reduce16(a1);                                                              \
        y[r + 2] = avx512_reduce16(a2);                                                              \
        y[r + 3] = avx512_reduce16(a3);                                                              \
    }                                                                                                \
    for (; r < rows; r++) {                                                                          \
        const WT* w0 = W + (size_t)r * cols;                                                         \
        __m512 a0 = _mm512_setzero_ps();                                                             \
        for (int i = 0; i < cols; i += 16)                                                           \
            a0 = _mm512_add_ps(a0, _mm512_mul_ps(LOAD16(w0 + i), _mm512_loadu_ps(x + i)));           \
        y[r] = avx512_reduce16(a0);                                                                  \
    }

__attribute__((target("avx512f"))) static void matvec_avx512(float* y, const float* W, const float* x, int rows,
                                                             int cols) {
    MATVEC_AVX512_BODY(float, _mm512_loadu_ps)
}

#define LOAD_HALF16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(p)))
__attribute__((target("avx512f"))) static void matvec_h_avx512(float* y, const uint16_t* W, const float* x,
                                                               int rows, int cols) {
    MATVEC_AVX512_BODY(uint16_t, LOAD_HALF16)
}

/* Elementwise AVX-512 kernels: 16 lanes, the same operations as the scalar code; the tails run the AVX2
 * form (itself exact), so every width gives the scalar bits. */
__attribute__((target("avx512f"))) static void axpy_avx512(float* y, float a, const float* x, int n) {
    __m512 va = _mm512_set1_ps(a);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_mul_ps(va, _mm512_loadu_ps(x + i))));
    axpy_avx2(y + i, a, x + i, n - i);
}

__attribute__((target("avx512f"))) static void add_avx512(float* y, const float* a, const float* b, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    add_avx2(y + i, a + i, b + i, n - i);
}

__attribute__((target("avx512f"))) static void add3_avx512(float* y, const float* a, const float* b,
                                                           const float* c, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 t = _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
        _mm512_storeu_ps(y + i, _mm512_add_ps(t, _mm512_loadu_ps(c + i)));
    }
    add3_avx2(y + i, a + i, b + i, c + i, n - i);
}

/* y[k] += sum_r W[r][k]*d[r], r ascending, 64 columns in registers while r runs; tail columns by AVX2. */
__attribute__((target("avx512f"))) static void matvec_t_acc_avx512(float* y, const float* W, const float* d,
                                                                   int rows, int cols) {
    int k = 0;
    for (; k + 64 <= cols; k += 64) {
        __m512 y0 = _mm512_loadu_ps(y + k), y1 = _mm512_loadu_ps(y + k + 16);
        __m512 y2 = _mm512_loadu_ps(y + k + 32), y3 = _mm512_loadu_ps(y + k + 48);
        for (int r = 0; r < rows; r++) {
            const float* w = W + (size_t)r * cols + k;
            __m512 dr = _mm512_set1_ps(d[r]);
            y0 = _mm512_add_ps(y0, _mm512_mul_ps(_mm512_loadu_ps(w), dr));
            y1 = _mm512_add_ps(y1, _mm512_mul_ps(_mm512_loadu_ps(w + 16), dr));
            y2 = _mm512_add_ps(y2, _mm512_mul_ps(_mm512_loadu_ps(w + 32), dr));
            y3 = _mm512_add_ps(y3, _mm512_mul_ps(_mm512_loadu_ps(w + 48), dr));
        }
        _mm512_storeu_ps(y + k, y0);
        _mm512_storeu_ps(y + k + 16, y1);
        _mm512_storeu_ps(y + k + 32, y2);
        _mm512_storeu_ps(y + k + 48, y3);
    }
    if (k < cols) matvec_t_acc_avx2(y + k, W + k, d, rows, cols - k, cols);
}

__attribute__((target("avx512f"))) static void outer_acc_seq_avx512(float* G, const float* const* d,
                                                                    const float* const* x, int T, int rows,
                                                                    int cols, int zero_first) {
    int k0 = cols & ~63;
    for (int r = 0; r < rows; r++) {
        float* g = G + (size_t)r * cols;
        for (int k = 0; k < k0; k += 64) {
            __m512 g0, g1, g2, g3;
            if (zero_first) {
                g0 = g1 = g2 = g3 = _mm512_setzero_ps();
            } else {
                g0 = _mm512_loadu_ps(g + k), g1 = _mm512_loadu_ps(g + k + 16);
                g2 = _mm512_loadu_ps(g + k + 32), g3 = _mm512_loadu_ps(g + k + 48);
            }
            for (int i = 0; i < T; i++) {
                __m512 dr = _mm512_set1_ps(d[i][r]);
                const float* xi = x[i] + k;
                g0 = _mm512_add_ps(g0, _mm512_mul_ps(dr, _mm512_loadu_ps(xi)));
                g1 = _mm512_add_ps(g1, _mm512_mul_ps(dr, _mm512_loadu_ps(xi + 16)));
                g2 = _mm512_add_ps(g2, _mm512_mul_ps(dr, _mm512_loadu_ps(xi + 32)));
                g3 = _mm512_add_ps(g3, _mm512_mul_ps(dr, _mm512_loadu_ps(xi + 48)));
            }
            _mm512_storeu_ps(g + k, g0);
            _mm512_storeu_ps(g + k + 16, g1);
            _mm512_storeu_ps(g + k + 32, g2);
            _mm512_storeu_ps(g + k + 48, g3);
        }
    }
    if (k0 < cols) outer_acc_seq_avx2(G, d, x, T, rows, cols, zero_first, k0);
}

__attribute__((target("avx512f"))) static void decay_sgd_avx512(float* th, const float* th0, const float* g,
                                                                float q, float step, float decay, float lim,
                                                                int n) {
    DECAY_SGD_SIMD_BODY(__m512, _mm512, 16, _mm512_loadu_ps, decay_sgd_avx2)
}
__attribute__((target("avx512f"))) static void sgd_decay_avx512(float* th, const float* th0, const float* g,
                                                                float step, float decay, float lim, int n) {
    SGD_DECAY_SIMD_BODY(__m512, _mm512, 16, _mm512_loadu_ps, sgd_decay_avx2)
}
__attribute__((target("avx512f"))) static void decay_sgd_avx512_h(float* th, const uint16_t* th0, const float* g,
                                                                  float q, float step, float decay, float lim,
                                                                  int n) {
    DECAY_SGD_SIMD_BODY(__m512, _mm512, 16, LOAD_HALF16, decay_sgd_f16c)
}
__attribute__((target("avx512f"))) static void sgd_decay_avx512_h(float* th, const uint16_t* th0, const float* g,
                                                                  float step, float decay, float lim, int n) {
    SGD_DECAY_SIMD_BODY(__m512, _mm512, 16, LOAD_HALF16, sgd_decay_f16c)
}

__attribute__((target("avx512f"))) static void decay_toward_avx512(float* th, const float* th0, float q, int n) {
    __m512 vq = _mm512_set1_ps(q);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 z = _mm512_loadu_ps(th0 + i);
        __m512 t = _mm512_sub_ps(_mm512_loadu_ps(th + i), z);
        _mm512_storeu_ps(th + i, _mm512_add_ps(z, _mm512_mul_ps(t, vq)));
    }
    decay_toward_avx2(th + i, th0 + i, q, n - i);
}

#define KERN_LEVEL() level_cached()
#else /* !KERN_X86 */
int kern_simd_level(void) { return 0; }
void kern_set_simd_cap(int cap) { (void)cap; }
#define KERN_LEVEL() 0
#endif

/* ---- dispatch ---- */

void kern_matvec(float* y, const float* W, const float* x, int rows, int cols) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        matvec_avx512(y, W, x, rows, cols);
        return;
    }
    if (lvl >= 2) {
        matvec_avx2(y, W, x, rows, cols);
        return;
    }
    if (lvl >= 1) {
        matvec_sse2(y, W, x, rows, cols);
        return;
    }
#endif
    matvec_scalar(y, W, x, rows, cols);
}

float kern_half_to_float(uint16_t h) {
    uint32_t sgn = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, mt = h & 0x3FFu, bits;
    if (e == 0) {
        if (mt == 0) {
            bits = sgn;
        } else { /* subnormal: normalise */
            uint32_t ex = 113; /* 127 - 15 + 1 */
            while (!(mt & 0x400u)) mt <<= 1, ex--;
            bits = sgn | (ex << 23) | ((mt & 0x3FFu) << 13);
        }
    } else if (e == 31) {
        bits = sgn | 0x7F800000u | (mt << 13);
    } else {
        bits = sgn | ((e + 112u) << 23) | (mt << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

int kern_float_to_half_exact(float f, uint16_t* h) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint16_t sgn = (uint16_t)((bits >> 16) & 0x8000u);
    int e = (int)((bits >> 23) & 0xFFu) - 127;
    uint32_t mt = bits & 0x7FFFFFu;
    if ((bits & 0x7FFFFFFFu) == 0) { *h = sgn; return 1; }
    if (e == 128) return 0; /* inf / NaN */
    if (e >= -14 && e <= 15) {
        if (mt & 0x1FFFu) return 0;
        *h = (uint16_t)(sgn | (uint32_t)(e + 15) << 10 | (mt >> 13));
    } else if (e >= -24 && e < -14) {
        uint32_t full = 0x800000u | mt;
        int sh = -(e + 1); /* value = full * 2^(e-23) = k * 2^-24  ->  k = full >> (-(e+1)) */
        if (full & ((1u << sh) - 1u)) return 0;
        *h = (uint16_t)(sgn | (full >> sh));
    } else {
        return 0;
    }
    return kern_half_to_float(*h) == f;
}


void kern_matvec_h(float* y, const uint16_t* W16, const float* x, int rows, int cols) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) { /* AVX-512F includes the 16-wide binary16 conversion */
        matvec_h_avx512(y, W16, x, rows, cols);
        return;
    }
    if (lvl >= 2 && kern_has_f16c()) {
        matvec_h_f16c(y, W16, x, rows, cols);
        return;
    }
#endif
    float row[4096]; /* cols <= 4096: the word head's H (config limit) or the self-test's 32 */
    for (int r = 0; r < rows; r++) {
        const uint16_t* w = W16 + (size_t)r * cols;
        for (int i = 0; i < cols; i++) row[i] = kern_half_to_float(ld16(w + i));
        kern_matvec(y + r, row, x, 1, cols);
    }
}


void kern_half_to_float_vec(float* y, const uint16_t* x, size_t n) {
    size_t i = 0;
#if KERN_X86
    if (KERN_LEVEL() >= 2 && kern_has_f16c()) i = n - (size_t)half_to_float_f16c(y, x, n);
#endif
    for (; i < n; i++) y[i] = kern_half_to_float(ld16(x + i));
}

void kern_axpy(float* y, float a, const float* x, int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        axpy_avx512(y, a, x, n);
        return;
    }
    if (lvl >= 2) {
        axpy_avx2(y, a, x, n);
        return;
    }
#endif
    axpy_scalar(y, a, x, n);
}

void kern_matvec_t_acc(float* y, const float* W, const float* d, int rows, int cols) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        matvec_t_acc_avx512(y, W, d, rows, cols);
        return;
    }
    if (lvl >= 2) {
        matvec_t_acc_avx2(y, W, d, rows, cols, cols);
        return;
    }
#endif
    for (int r = 0; r < rows; r++) axpy_scalar(y, d[r], W + (size_t)r * cols, cols);
}

void kern_outer_acc(float* G, const float* d, const float* x, int rows, int cols) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        for (int r = 0; r < rows; r++) axpy_avx512(G + (size_t)r * cols, d[r], x, cols);
        return;
    }
    if (lvl >= 2) {
        for (int r = 0; r < rows; r++) axpy_avx2(G + (size_t)r * cols, d[r], x, cols);
        return;
    }
#endif
    for (int r = 0; r < rows; r++) axpy_scalar(G + (size_t)r * cols, d[r], x, cols);
}

void kern_outer_acc_seq(float* G, const float* const* d, const float* const* x, int T, int rows, int cols,
                        int zero_first) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        outer_acc_seq_avx512(G, d, x, T, rows, cols, zero_first);
        return;
    }
    if (lvl >= 2) {
        outer_acc_seq_avx2(G, d, x, T, rows, cols, zero_first, 0);
        return;
    }
#endif
    outer_acc_seq_scalar(G, d, x, T, rows, cols, zero_first);
}

void kern_decay_sgd(float* th, const float* th0, const float* g, float q, float step, float decay, float lim,
                    int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        decay_sgd_avx512(th, th0, g, q, step, decay, lim, n);
        return;
    }
    if (lvl >= 2) {
        decay_sgd_avx2(th, th0, g, q, step, decay, lim, n);
        return;
    }
#endif
    decay_sgd_scalar(th, th0, g, q, step, decay, lim, n);
}

void kern_decay_sgd_h(float* th, const uint16_t* th0, const float* g, float q, float step, float decay, float lim,
                      int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        decay_sgd_avx512_h(th, th0, g, q, step, decay, lim, n);
        return;
    }
    if (lvl >= 2 && kern_has_f16c()) {
        decay_sgd_f16c(th, th0, g, q, step, decay, lim, n);
        return;
    }
#endif
    decay_sgd_scalar_h(th, th0, g, q, step, decay, lim, n);
}

void kern_sgd_decay_h(float* th, const uint16_t* th0, const float* g, float step, float decay, float lim, int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        sgd_decay_avx512_h(th, th0, g, step, decay, lim, n);
        return;
    }
    if (lvl >= 2 && kern_has_f16c()) {
        sgd_decay_f16c(th, th0, g, step, decay, lim, n);
        return;
    }
#endif
    sgd_decay_scalar_h(th, th0, g, step, decay, lim, n);
}

void kern_sgd_decay(float* th, const float* th0, const float* g, float step, float decay, float lim, int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        sgd_decay_avx512(th, th0, g, step, decay, lim, n);
        return;
    }
    if (lvl >= 2) {
        sgd_decay_avx2(th, th0, g, step, decay, lim, n);
        return;
    }
#endif
    sgd_decay_scalar(th, th0, g, step, decay, lim, n);
}

void kern_decay_toward(float* th, const float* th0, float q, int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        decay_toward_avx512(th, th0, q, n);
        return;
    }
    if (lvl >= 2) {
        decay_toward_avx2(th, th0, q, n);
        return;
    }
#endif
    decay_toward_scalar(th, th0, q, n);
}

void kern_add(float* y, const float* a, const float* b, int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        add_avx512(y, a, b, n);
        return;
    }
    if (lvl >= 2) {
        add_avx2(y, a, b, n);
        return;
    }
#endif
    add_scalar(y, a, b, n);
}

void kern_add3(float* y, const float* a, const float* b, const float* c, int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        add3_avx512(y, a, b, c, n);
        return;
    }
    if (lvl >= 2) {
        add3_avx2(y, a, b, c, n);
        return;
    }
#endif
    add3_scalar(y, a, b, c, n);
}

void kern_head_backward(float* dh, float* gb, float* p, const float* z, const float* W, int n, int H, int target) {
    kern_softmax_xent(p, z, n, target);
    kern_add(gb, gb, p, n);
    if (dh) kern_matvec_t_acc(dh, W, p, n, H);
}

void kern_weigh_acc(uint32_t* out, const uint32_t* x, uint64_t R, int n, int first) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) {
        weigh_acc_avx512(out, x, R, n, first);
        return;
    }
    if (lvl >= 2) {
        weigh_acc_avx2(out, x, R, n, first);
        return;
    }
#endif
    weigh_acc_scalar(out, x, R, n, first);
}

uint32_t kern_sum_u32(const uint32_t* x, int n) {
#if KERN_X86
    int lvl = KERN_LEVEL();
    if (lvl >= 3) return sum_u32_avx512(x, n);
    if (lvl >= 2) return sum_u32_avx2(x, n);
#endif
    return sum_u32_scalar(x, n);
}

void kern_mix2_dot(int64_t* da, int64_t* db, const int32_t* a, const int32_t* b, const int32_t* x) {
#if KERN_X86
    if (KERN_LEVEL() >= 2) {
        mix2_dot_avx2(da, db, a, b, x);
        return;
    }
#endif
    mix2_dot_scalar(da, db, a, b, x);
}

void kern_mix2_train(int32_t* a, int32_t* b, const int32_t* x, int32_t ea, int32_t eb, int shift, int32_t lim) {
#if KERN_X86
    if (KERN_LEVEL() >= 2) {
        mix2_train_avx2(a, b, x, ea, eb, shift, lim);
        return;
    }
#endif
    mix2_train_scalar(a, b, x, ea, eb, shift, lim);
}
