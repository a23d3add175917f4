/* coder/wide.h: the two 128-bit integer steps of the quantiser (docs/format.md §4) in portable C.
 *
 * Owns wide_div_shl64 and wide_mulhi64, written with 64-bit integers only so that the core builds where
 * `unsigned __int128` does not exist (32-bit targets, MSVC); where it exists the division uses it (the same
 * quotient, far faster than the bit loop).  Both are exact: they give the bits of the
 * 128-bit expressions they replace, which tests/c/test_wide.c checks against __int128 on many values.
 */
#ifndef NLM_CODER_WIDE_H
#define NLM_CODER_WIDE_H

#include <stdint.h>

/* floor((a * 2^64) / s) for a < s (so the quotient fits in 64 bits): restoring long division, one
 * quotient bit per step.  r < s holds before each step; 2r may reach 2^65, hence the carry bit. */
static inline uint64_t wide_div_shl64_portable(uint64_t a, uint64_t s) {
    uint64_t r = a, q = 0;
    for (int i = 0; i < 64; i++) {
        uint64_t carry = r >> 63;
        r <<= 1;
        q <<= 1;
        if (carry || r >= s) {
            r -= s; /* modulo 2^64: the true 2r - s is < s */
            q |= 1u;
        }
    }
    return q;
}

/* The same quotient by the compiler's 128-bit division where it has one (one hardware division on x86-64,
 * against 64 data-dependent branches: the loop was most of the quantiser's own time). */
static inline uint64_t wide_div_shl64(uint64_t a, uint64_t s) {
#if defined(__SIZEOF_INT128__)
    return (uint64_t)(((unsigned __int128)a << 64) / s);
#else
    return wide_div_shl64_portable(a, s);
#endif
}

/* floor((x * y) / 2^64): the high half of the 128-bit product, from four 32 x 32 -> 64 partial products. */
static inline uint64_t wide_mulhi64(uint64_t x, uint64_t y) {
    uint64_t x0 = x & 0xFFFFFFFFu, x1 = x >> 32, y0 = y & 0xFFFFFFFFu, y1 = y >> 32;
    uint64_t p00 = x0 * y0, p01 = x0 * y1, p10 = x1 * y0, p11 = x1 * y1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu); /* < 3 * 2^32: no overflow */
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

#endif /* NLM_CODER_WIDE_H */
