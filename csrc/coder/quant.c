/* coder/quant.c: the one float -> integer frequency conversion (docs/format.md §4).
 *
 * Owns quant_freqs.  Shapes: z[n] logits in, f[n] frequencies out (n = C classes, a class's words, 4 cases
 * or 8 gaps).  The max, the exp/sum pass and the scaling pass are kernels (kern_quant_max, kern_exp_u40,
 * kern_u40_scale: the format's exp polynomial and exact integer pieces, SIMD with the scalar bits); the
 * total and the division stay here; no libm.
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "coder/quant.h"

#include "coder/wide.h"
#include "kernels/kern.h"

uint32_t quant_freqs(uint32_t* f, const float* z, int n) {
    if (n <= 0 || n >= (1 << 24)) return 0;
    /* m = max z (a NaN never wins a > comparison; exact and order-free) */
    float m = kern_quant_max(z, n);
    /* pass 1 (vectorised in csrc/kernels): S = Σ u_i, the float e_i kept in f[i]'s bits to avoid a second exp */
    uint64_t S = kern_exp_u40(f, z, m, n);
    uint32_t F = 0;
    if (S < (1ull << 39)) {
        /* only non-finite input gets here (the max gives e = exp(0) = 1): uniform */
        for (int i = 0; i < n; i++) f[i] = 1;
        return (uint32_t)n;
    }
    /* S >= 2^39 > T - n, so the quotient fits in 64 bits */
    uint64_t M = wide_div_shl64(QUANT_T - (uint32_t)n, S);
    /* pass 2 (vectorised in csrc/kernels): f_i = 1 + floor(u_i * M / 2^64), exact integer pieces */
    F = kern_u40_scale(f, M, n);
    return F;
}
