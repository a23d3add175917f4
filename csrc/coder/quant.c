/* coder/quant.c: the one float -> integer frequency conversion (codec/FORMAT.md §4).
 *
 * Owns quant_freqs.  Shapes: z[n] logits in, f[n] frequencies out (n = C classes, a class's words, 4 cases
 * or 8 gaps).  kern_exp is the format's exp polynomial (csrc/kernels); no libm.
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "coder/quant.h"

#include "coder/wide.h"
#include "kernels/kern.h"

#include <string.h>

static inline uint64_t to_u(float e) {
    if (!(e > 0.0f)) return 0; /* NaN, 0, negative */
    if (e >= 1.0f) return 1ull << 40;
    return (uint64_t)(e * 1099511627776.0f); /* e * 2^40 is exact; truncation */
}

uint32_t quant_freqs(uint32_t* f, const float* z, int n) {
    if (n <= 0 || n >= (1 << 24)) return 0;
    /* m = max z (a NaN never wins a > comparison; exact and order-free) */
    float m = z[0];
    for (int i = 1; i < n; i++)
        if (z[i] > m || m != m) m = z[i];
    /* pass 1: u_i, kept as the float e_i in f[i]'s bits (same size) to avoid a second exp */
    uint64_t S = 0;
    for (int i = 0; i < n; i++) {
        float e = kern_exp(z[i] - m);
        uint32_t bits;
        memcpy(&bits, &e, 4);
        f[i] = bits;
        S += to_u(e);
    }
    uint32_t F = 0;
    if (S < (1ull << 39)) {
        /* only non-finite input gets here (the max gives e = exp(0) = 1): uniform */
        for (int i = 0; i < n; i++) f[i] = 1;
        return (uint32_t)n;
    }
    /* S >= 2^39 > T - n, so the quotient fits in 64 bits */
    uint64_t M = wide_div_shl64(QUANT_T - (uint32_t)n, S);
    for (int i = 0; i < n; i++) {
        float e;
        uint32_t bits = f[i];
        memcpy(&e, &bits, 4);
        f[i] = 1 + (uint32_t)wide_mulhi64(to_u(e), M);
        F += f[i];
    }
    return F;
}
