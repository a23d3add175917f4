/* coder/quant.c: the one float -> integer frequency conversion (codec/FORMAT.md §4).
 *
 * Owns quant_freqs.  Shapes: z[n] logits in, f[n] frequencies out (n = C classes, a class's words, 4 cases
 * or 8 gaps).  The max and the exp/sum pass are kernels (kern_quant_max, kern_exp_u40: the format's exp
 * polynomial, SIMD with the scalar bits); the integer arithmetic stays here; no libm.
 */
#include "coder/quant.h"

#include "kernels/kern.h"

#include <string.h>

uint32_t quant_freqs(uint32_t* f, const float* z, int n) {
    if (n <= 0 || n >= (1 << 24)) return 0;
    /* m = max z (a NaN never wins a > comparison; exact and order-free) */
    float m = kern_quant_max(z, n);
    /* pass 1 (vectorised in csrc/kernels): S = Σ u_i, the float e_i kept in f[i]'s bits to avoid a second exp */
    uint64_t S = kern_exp_u40(f, z, m, n);
    unsigned __int128 num = (unsigned __int128)(QUANT_T - (uint32_t)n) << 64;
    uint32_t F = 0;
    if (S < (1ull << 39)) {
        /* only non-finite input gets here (the max gives e = exp(0) = 1): uniform */
        for (int i = 0; i < n; i++) f[i] = 1;
        return (uint32_t)n;
    }
    uint64_t M = (uint64_t)(num / S);
    for (int i = 0; i < n; i++) {
        float e;
        uint32_t bits = f[i];
        memcpy(&e, &bits, 4);
        f[i] = 1 + (uint32_t)(((unsigned __int128)kern_to_u40(e) * M) >> 64);
        F += f[i];
    }
    return F;
}
