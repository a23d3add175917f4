/* kern.h: the float kernels of the C core (docs/format.md §2).
 *
 * Owns every float reduction and transcendental on the coding path: the 16-lane canonical dot product,
 * matrix-vector products, the elementwise update kernels used by the backward pass, the exp/tanh
 * polynomials, the quantiser's vector passes and the glue loops of the model.  Each kernel has a scalar
 * reference and, on x86 unless NLM_NO_SIMD is defined, SIMD paths chosen at run time (SSE2, AVX2, AVX-512F;
 * some kernels have no SSE2 form and run scalar there); every path gives the same bits as the scalar code
 * (no FMA; products are rounded, then added; only the canonical order).  Kernels know nothing of the model
 * or the coder.
 *
 * The kernels do not touch the floating-point environment: callers (model/, coder/) wrap their exported
 * entry points in nlm_fpenv_enter/leave (common/fpenv.h).  Argument order: outputs, inputs, dimensions.
 * Shapes in comments: [rows][cols] row-major.
 */
#ifndef NLM_KERN_H
#define NLM_KERN_H

#include <stddef.h> /* size_t */
#include <stdint.h> /* uint16_t: binary16 weights */

/* Dot product of a[n] and b[n], n a multiple of 16, in the 16-lane canonical order:
 * acc[j] = 0; for i = 0, 16, ...: acc[j] = acc[j] + a[i+j]*b[i+j]; then acc[j] += acc[j+8] (j<8),
 * acc[j] += acc[j+4] (j<4), acc[j] += acc[j+2] (j<2), acc[0] += acc[1]; result acc[0]. */
float kern_dot(const float* a, const float* b, int n);

/* y[rows] = W[rows][cols] · x[cols]: y[r] = kern_dot(W + r*cols, x, cols), cols a multiple of 16.
 * Blocks four rows at a time on SIMD paths (per-row order unchanged).  y must not alias W or x. */
void kern_matvec(float* y, const float* W, const float* x, int rows, int cols);

/* y[n] = y[n] + a*x[n] elementwise (product rounded, then added).  Any n >= 0. */
void kern_axpy(float* y, float a, const float* x, int n);

/* y[r] = kern_dot(W16 row r as float, x): the same canonical order as kern_matvec on a matrix stored as
 * IEEE binary16 (W16: rows x cols).  binary16 -> float32 is exact, so this equals kern_matvec on the
 * converted matrix bit for bit; it only halves the bytes read (static mode, float16-exact weights). */
void kern_matvec_h(float* y, const uint16_t* W16, const float* x, int rows, int cols);
/* (The binary16 kernels accept W16 / x at any byte address: a mapped model file need not be aligned.) */
/* Exact conversions.  kern_float_to_half_exact returns 0 when f is not a binary16 value (or is inf/NaN). */
float kern_half_to_float(uint16_t h);
int kern_float_to_half_exact(float f, uint16_t* h);
/* y[i] = kern_half_to_float(x[i]) for i < n (F16C when present: the same exact conversion). */
void kern_half_to_float_vec(float* y, const uint16_t* x, size_t n);

/* y[cols] += W[rows][cols]^T · d[rows], accumulated one row at a time in ascending r:
 * for r = 0..rows-1: y[k] = y[k] + W[r][k]*d[r].  Vectorised across k (elementwise, so exact at any
 * width).  Any rows, cols >= 0.  y must not alias W or d. */
void kern_matvec_t_acc(float* y, const float* W, const float* d, int rows, int cols);

/* G[rows][cols] += d[rows] ⊗ x[cols]: G[r][k] = G[r][k] + d[r]*x[k].  Any rows, cols >= 0. */
void kern_outer_acc(float* G, const float* d, const float* x, int rows, int cols);

/* The sum of T outer products into G, i ascending: for i = 0..T-1: G[r][k] = G[r][k] + d[i][r]*x[i][k].
 * Bit-identical to T calls kern_outer_acc(G, d[i], x[i], rows, cols) in order i = 0..T-1, but each element
 * of G is loaded and stored once.  d[i]: rows floats, x[i]: cols floats.  zero_first = 1: G is treated as
 * +0 on entry (write-only; same bits as a memset to 0 first). */
void kern_outer_acc_seq(float* G, const float* const* d, const float* const* x, int T, int rows, int cols,
                        int zero_first);

/* Dynamic-evaluation update of n parameters (docs/format.md §6), elementwise:
 * t = th0[i] - th[i]; s = clamp(step*g[i], -lim, lim) (min then max, x86 semantics);
 * th[i] = (th[i] - s) + decay*t, with step = lr/(ms_t + eps) and lim = lr*clip computed by the caller. */
void kern_sgd_decay(float* th, const float* th0, const float* g, float step, float decay, float lim, int n);

/* Lazy decay of n parameters by the factor q: th[i] = th0[i] + (th[i] - th0[i])*q. */
void kern_decay_toward(float* th, const float* th0, float q, int n);

/* kern_decay_toward(th, th0, q, n) then kern_sgd_decay(th, th0, g, step, decay, lim, n), fused (same bits). */
void kern_decay_sgd(float* th, const float* th0, const float* g, float q, float step, float decay, float lim,
                    int n);

/* kern_sgd_decay / kern_decay_sgd with θ0 stored as IEEE binary16 (any address): the same bits as on θ0
 * converted to float32 (the conversion is exact), with half the bytes read. */
void kern_sgd_decay_h(float* th, const uint16_t* th0, const float* g, float step, float decay, float lim, int n);
void kern_decay_sgd_h(float* th, const uint16_t* th0, const float* g, float q, float step, float decay, float lim,
                      int n);

/* exp(x), part of the format.  Exact expression (all float32, each step rounded):
 *   x = (x < 88 ? x : 88);  x = (x > -87 ? x : -87)         (so NaN -> 88, ±inf -> 88 / -87)
 *   t = x * 1.44269504088896341f;  u = t + 12582912.0f;  f = u - 12582912.0f     (f = round(t), RNE)
 *   r = x - f*0.693359375f;  r = r - f*(-2.12194440e-4f)                        (Cody–Waite)
 *   z = r*r
 *   p = 1.9875691500e-4f; p = p*r + 1.3981999507e-3f; p = p*r + 8.3334519073e-3f;
 *   p = p*r + 4.1665795894e-2f; p = p*r + 1.6666665459e-1f; p = p*r + 5.0000001201e-1f   (Horner)
 *   y = ((p*z) + r) + 1.0f
 *   result = y * 2^f   (the float with exponent bits (int)f + 127, mantissa 0; f in [-126, 127])
 * Max error about 1 ulp; never subnormal, never inf. */
float kern_exp(float x);

/* tanh(x), part of the format:  a = |x|, a = (a < 9.0f ? a : 9.0f) (NaN -> 9);  t = 1.0f - 2.0f/(kern_exp(a + a) + 1.0f);
 * result = t with the sign bit of x (so tanh(-0) = -0). */
float kern_tanh(float x);

/* ln(x), part of the format (the Kneser-Ney expert, docs/format.md §2.5):  x not >= 2^-126 (NaN, <= 0,
 * subnormal) gives -104.0f; +inf is read as FLT_MAX.  Else x = m·2^e with m in [1, 2) taken from the bits;
 * if m > 1.41421354f then m = m*0.5f, e = e+1;  s = (m - 1.0f)/(m + 1.0f);  s2 = s*s;
 *   p = 0.222222222f; p = p*s2 + 0.285714287f; p = p*s2 + 0.400000006f; p = p*s2 + 0.666666687f;
 *   p = p*s2 + 2.0f; p = p*s                                       (Horner; 2·atanh(s) = ln m)
 *   result = (p + e*(-2.12194440e-4f)) + e*0.693359375f        (e as float; Cody-Waite ln 2)
 * Max error about 2e-7 relative; every step one IEEE operation in this order. */
float kern_log(float x);

/* Vector forms: y[i] = kern_exp(x[i]) / kern_tanh(x[i]) for i < n, any n.  y may equal x. */
void kern_exp_vec(float* y, const float* x, int n);
void kern_tanh_vec(float* y, const float* x, int n);

/* ---- quantiser support (coder/quant.c; docs/format.md §4) ---- */

/* The maximum of z[n] (n >= 1) as the quantiser defines it: m = z[0]; for i = 1..n-1: if (z[i] > m || m != m)
 * m = z[i].  SIMD paths take the maximum of the non-NaN lanes and fall back to that loop when it is not
 * finite; the one difference is that a zero maximum may come back as +0 or -0 (z - m then differs only in
 * the sign of a zero, and kern_exp(+0) = kern_exp(-0) = 1, so the quantiser's result is the same). */
float kern_quant_max(const float* z, int n);

/* e_i = kern_exp(z[i] - m), its bits stored in ebits[i]; returns S = Σ u_i (integer, any order) with
 * u_i = (uint64)(e_i * 2^40) truncated, 2^40 if e_i >= 1, 0 if e_i is NaN or <= 0 (kern_exp never gives
 * those).  SIMD: u = hi * 2^20 + lo, hi = trunc(e'*2^20), lo = trunc((e'*2^20 - hi)*2^20), e' = min(e, 1): every
 * step is exact, so u is the scalar truncation.  Any n >= 0. */
uint64_t kern_exp_u40(uint32_t* ebits, const float* z, float m, int n);

/* The quantiser's second pass, in place: f[i] holds the bits of e_i (from kern_exp_u40) on entry and
 * f_i = 1 + floor(u_i * M / 2^64) on return (u_i as in kern_exp_u40; M < 2^56); returns F = Σ f_i (the
 * caller guarantees F <= 2^30).  Exact integer arithmetic in 32x32 -> 64-bit pieces (u = hi*2^20 + lo,
 * M = Mh*2^32 + Ml): the same value on every path and no 128-bit type.  Any n >= 0. */
uint32_t kern_u40_scale(uint32_t* f, uint64_t M, int n);

/* u = (uint64)(e * 2^40) truncated; 2^40 if e >= 1; 0 if e is NaN or <= 0 (the quantiser's u_i). */
static inline uint64_t kern_to_u40(float e) {
    if (!(e > 0.0f)) return 0; /* NaN, 0, negative */
    if (e >= 1.0f) return 1ull << 40;
    return (uint64_t)(e * 1099511627776.0f); /* e * 2^40 is exact; truncation */
}

/* ---- glue kernels for the model (entry points for model/lm.c and the bodies; elementwise, exact at any width) ---- */

/* y[i] = a[i] + b[i] (bias adds: z = W·h + b).  y may equal a or b.  Any n >= 0. */
void kern_add(float* y, const float* a, const float* b, int n);
/* y[i] = (a[i] + b[i]) + c[i] (the embedding sum E[w] + Ecase[k] + Egap[g]; the pre-activation
 * (Wx·x + Wh·h) + bh).  y may equal a, b or c.  Any n >= 0. */
void kern_add3(float* y, const float* a, const float* b, const float* c, int n);

/* The backward's softmax and cross-entropy gradient of one head, from logits:
 *   m = z[0]; for i ascending: if (z[i] > m) m = z[i];   t_i = z[i] - m;   p_i = kern_exp(t_i);
 *   S = p_0 + p_1 + ... (float, ascending i);   p_i = p_i / S;   p[target] = p[target] - 1  (target < 0: none)
 * the bits of lm.c's softmax followed by its "pz[c] - 1".  With z finite, the max is order-free and so is
 * everything but S, which stays sequential.  p must not alias z.  n >= 1. */
void kern_softmax_xent(float* p, const float* z, int n, int target);
/* The same from exps already computed, e_i = kern_exp(z_i - m) (e.g. the quantiser's ebits, as floats):
 * S = Σ e_i ascending, p_i = e_i / S, p[target] -= 1.  Equals kern_softmax_xent on z when both used the same
 * m (finite logits: the quantiser's max and the backward's max are the same value).  p may equal e. */
void kern_softmax_e(float* p, const float* e, int n, int target);

/* One output head of the backward, fused: kern_softmax_xent(p, z, n, target); gb[j] = gb[j] + p[j] (j < n);
 * dh += W[n][H]ᵀ · p (kern_matvec_t_acc, rows ascending; skipped when dh is NULL).  The same bits as those three steps in that order
 * (lm.c's class, word, case and gap heads).  p must not alias z, W, dh or gb. */
void kern_head_backward(float* dh, float* gb, float* p, const float* z, const float* W, int n, int H, int target);

/* Dynamic-evaluation update of n scattered single parameters (the one-float bias rows bo[r]):
 * for i < n: j = idx[i]; if q[i] >= 0: th[j] = th0[j] + (th[j] - th0[j])*q[i] (the lazy decay catch-up);
 * then the kern_sgd_decay step on th[j] with gradient g[i].  Bit-identical to n calls of kern_decay_sgd /
 * kern_sgd_decay with n = 1 (q[i] < 0 selects kern_sgd_decay). */
void kern_sgd_decay_idx(float* th, const float* th0, const float* g, const int32_t* idx, const float* q,
                        float step, float decay, float lim, int n);

/* Which path the dispatcher uses: 0 scalar, 1 SSE2, 2 AVX2, 3 AVX-512 (F, one register = the 16 canonical
 * lanes).  The level is the CPU's best, capped by the environment variable NLMCODEC_SIMD_CAP (read once)
 * and by kern_set_simd_cap.  Every level gives the same bits. */
int kern_simd_level(void);
/* Cap the run-time path (tests: force SSE2 on an AVX2 machine; 0 = scalar).  Not thread-safe; no-op
 * without SIMD. */
void kern_set_simd_cap(int cap);

/* ---- integer forward products (kern_q8.c; docs/format.md §2.6) ----
 * A weight row w[n] becomes int8 with one scale: amax = max |w[k]| (sequential), sc = amax / 127 (float),
 * q[k] = rne(w[k] / sc) clamped to ±127, rsum = Σ q[k], mul = sc / 127; a row with amax not in (0, FLT_MAX]
 * is all zeros with mul = 0.  rne(t) = (t + 12582912.0f) − 12582912.0f (round half to even).  An activation
 * vector x[n] (|x| <= 1: tanh outputs) goes on the grid 1/127: h16[k] = rne(x[k] * 127.0f) clamped to ±127
 * (NaN -> 0), hu8[k] = h16[k] + 128.  Any n >= 0. */
void kern_quant_row(int8_t* q, int32_t* rsum, float* mul, const float* w, int n);
void kern_quant_act(int16_t* h16, uint8_t* hu8, const float* x, int n);
/* A vector of any range (the input x) on its own grid: xs = max |x[k]| (sequential, NaN ignored); xs not in
 * (0, FLT_MAX]: g = 0 and returns 0; else c = 127 / xs, g16[k] = rne(x[k] * c) clamped to ±127, gu8 = g16 + 128,
 * returns xs (so x[k] ≈ g16[k]·xs/127, and W·x ≈ (float(s)·mul)·xs for the rows of kern_quant_row). */
float kern_quant_vec(int16_t* g16, uint8_t* gu8, const float* x, int n);
/* y[r] = (float)s_r · mul[r] with s_r = Σ_k W8[r][k]·h16[k], an exact int32 sum (so in any order: scalar,
 * AVX2 vpmaddwd and AVX-512 VNNI vpdpbusd on hu8 with s_r = Σ W8·hu8 − 128·rsum[r] all give it), converted
 * to float with round-to-nearest.  cols a multiple of 16, at most 4096. */
void kern_matvec_q8(float* y, const int8_t* W8, const int32_t* rsum, const float* mul, const int16_t* h16,
                    const uint8_t* hu8, int rows, int cols);

/* ---- integer kernels of the byte model's two mixers (bytemodel/cm.c, docs/format.md §9) ----
 * Exact integer arithmetic: every path gives the scalar values.  Vectors have KERN_MIX_N int32 lanes. */
enum { KERN_MIX_N = 16 };

/* floor(v / 2^k), for negative v too (C leaves >> of a negative value to the implementation). */
static inline int64_t kern_asr64(int64_t v, int k) { return v >= 0 ? v >> k : ~((~v) >> k); }

/* da = Σ_k a[k]·x[k], db = Σ_k b[k]·x[k] in int64.  Needs |a|, |b|, |x| < 2^31 (any int32). */
void kern_mix2_dot(int64_t* da, int64_t* db, const int32_t* a, const int32_t* b, const int32_t* x);

/* a[k] = clamp(a[k] + floor(x[k]·ea / 2^shift), -lim, lim), b[k] likewise with eb, for k < KERN_MIX_N.
 * Needs 0 < shift < 64, |x[k]·e| < 2^(shift+30) and 0 < lim < 2^30 with |a|, |b| <= lim on entry
 * (so every delta and sum fits int32, which the SIMD path relies on). */
void kern_mix2_train(int32_t* a, int32_t* b, const int32_t* x, int32_t ea, int32_t eb, int shift, int32_t lim);

/* ---- integer kernels of the token cache's mixing (codec/tokcache.c, docs/format.md §3.6) ----
 * Arithmetic mod 2^32 and 2^64 as C's unsigned types do it: every path gives the scalar values. */

/* A count x weighed by a rate R (2^32 · weight per count): the high half of x·R mod 2^64. */
static inline uint32_t kern_weigh(uint64_t x, uint64_t R) { return (uint32_t)((x * R) >> 32); }

/* out[i] = (first ? 1 : out[i]) + kern_weigh(x[i], R), i < n. */
void kern_weigh_acc(uint32_t* out, const uint32_t* x, uint64_t R, int n, int first);

/* Σ x[i] mod 2^32, i < n. */
uint32_t kern_sum_u32(const uint32_t* x, int n);

#endif /* NLM_KERN_H */
