/* codec/ctxhash.h: the one mixing step of the token contexts' hashes (docs/format.md §3.4, §3.6, §5.1.1):
 * mix(h, x) = ((h XOR x) * 0x85EBCA77) XOR (that >> 15), mod 2^32.  Shared by the token match model, the
 * token cache and the body mixer, whose hashes are part of the format. */
#ifndef NLM_CODEC_CTXHASH_H
#define NLM_CODEC_CTXHASH_H

#include <stdint.h>

static inline uint32_t mix32(uint32_t h, uint32_t x) {
    h ^= x;
    h *= 0x85EBCA77u;
    return h ^ (h >> 15);
}

#endif /* NLM_CODEC_CTXHASH_H */
