/* test_wide.c: the portable 128-bit steps of csrc/coder/wide.h against the compiler's unsigned __int128.
 *
 * Used by tests/test_coder.py.  Checks wide_div_shl64_portable (floor(a * 2^64 / s), a < s: what
 * wide_div_shl64 runs where the compiler has no unsigned __int128) and wide_mulhi64 (high
 * half of x * y) on edge values and on N random pairs drawn with splitmix64 at every magnitude (random bit
 * lengths), plus the exact quantiser range (a = 2^30 - n, s in [2^39, 2^64)).  Usage: test_wide N
 */
#include <stdio.h>
#include <stdlib.h>

#include "coder/wide.h"

static uint64_t st = 12345;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t any_magnitude(void) { /* uniform bit length 0..64, then uniform below it */
    unsigned b = (unsigned)(next() % 65);
    uint64_t v = next();
    return b == 64 ? v : (b == 0 ? 0 : v & ((1ull << b) - 1));
}

static long fails;
static void check_div(uint64_t a, uint64_t s) {
    if (!(a < s)) return;
    uint64_t want = (uint64_t)(((unsigned __int128)a << 64) / s), got = wide_div_shl64_portable(a, s);
    if (got != want && fails++ < 5)
        printf("div a=%llu s=%llu want %llu got %llu\n", (unsigned long long)a, (unsigned long long)s,
               (unsigned long long)want, (unsigned long long)got);
}
static void check_mul(uint64_t x, uint64_t y) {
    uint64_t want = (uint64_t)(((unsigned __int128)x * y) >> 64), got = wide_mulhi64(x, y);
    if (got != want && fails++ < 5)
        printf("mulhi x=%llu y=%llu want %llu got %llu\n", (unsigned long long)x, (unsigned long long)y,
               (unsigned long long)want, (unsigned long long)got);
}

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    const uint64_t edge[] = {0, 1, 2, 3, 0x7FFFFFFFull, 0x80000000ull, 0xFFFFFFFFull, 0x100000000ull,
                             (1ull << 30) - 1, 1ull << 30, (1ull << 39) - 1, 1ull << 39, (1ull << 40) + 1,
                             0x7FFFFFFFFFFFFFFFull, 0x8000000000000000ull, 0xFFFFFFFFFFFFFFFEull,
                             0xFFFFFFFFFFFFFFFFull};
    int ne = (int)(sizeof edge / sizeof *edge);
    long cases = 0;
    for (int i = 0; i < ne; i++)
        for (int j = 0; j < ne; j++) {
            check_div(edge[i], edge[j]);
            check_mul(edge[i], edge[j]);
            cases += 2;
        }
    for (long k = 0; k < n; k++) {
        uint64_t a = any_magnitude(), s = any_magnitude();
        check_div(a < s ? a : s, a < s ? s : a);
        check_div(a, a + 1 + (s & 0xFF));
        check_mul(a, s);
        /* the quantiser's own range: a = T - n, S >= 2^39; u <= 2^40 times M < 2^55 */
        uint64_t qa = (1ull << 30) - (next() % (1u << 24)), qs = (1ull << 39) + (next() >> (next() % 26));
        check_div(qa, qs);
        check_mul(next() >> 24, next() >> 9);
        cases += 5;
    }
    printf("wide cases %ld fails %ld\n", cases, fails);
    if (fails) return 1;
    printf("ALL OK\n");
    return 0;
}
