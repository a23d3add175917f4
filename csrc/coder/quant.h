/* coder/quant.h: the one float -> integer frequency conversion of docs/format.md §4.
 *
 * Owns quant_freqs, the only place where model floats become coder frequencies.  All float work is
 * elementwise (max, kern_exp); every reduction is integer, so SIMD width cannot change the result.
 */
#ifndef NLM_CODER_QUANT_H
#define NLM_CODER_QUANT_H

#include <stdint.h>

#define QUANT_T (1u << 30) /* target total T */

/* Logits z[0..n) (1 <= n < 2^24) -> frequencies f[0..n), each >= 1; returns F = Σf <= 2^30.
 *   m = max z;  e_i = kern_exp(z_i - m);  u_i = (uint64)(e_i * 2^40);  S = Σ u_i;
 *   M = floor(((T - n) * 2^64) / S);  f_i = 1 + floor(u_i * M / 2^64).
 * Non-finite input never crashes: an e_i that is NaN or <= 0 gives u_i = 0, e_i >= 1 gives 2^40, and if
 * S < 2^39 (only possible when the max is not finite) every f_i = 1 (uniform, F = n).  Returns 0 only for n outside its range. */
uint32_t quant_freqs(uint32_t* f, const float* z, int n);

#endif /* NLM_CODER_QUANT_H */
