/* tests/c/check.h: what the C test harnesses share: CHECK (print the failed condition and exit 1) and a
 * xorshift64* generator seeded by RND_SEED (define it before including this file). */
#ifndef NLM_TEST_CHECK_H
#define NLM_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c, ...)                                           \
    do {                                                        \
        if (!(c)) {                                             \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
            printf(__VA_ARGS__);                                \
            printf("\n");                                       \
            exit(1);                                            \
        }                                                       \
    } while (0)

static uint64_t rs = RND_SEED;
static uint64_t rnd(void) {
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return rs * 0x2545F4914F6CDD1Dull;
}

#endif
