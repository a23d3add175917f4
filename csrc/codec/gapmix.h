/* gapmix.h: the column-aware secondary model for gap symbols (docs/format.md §3.3).
 *
 * An Elman network does not see the column, yet in line-wrapped text the choice between " " and "\n"
 * before a word is mostly decided by where the word would end.  GapMix keeps adaptive counts of the gap
 * symbol in the context (column the body would end at, the network's most likely gap, its confidence)
 * and blends them with the network's quantised distribution, integer-only, so encoder and decoder agree.
 */
#ifndef NLM_GAPMIX_H
#define NLM_GAPMIX_H

#include <stdint.h>

#include "nlm.h" /* NLM_NGAP */

#define GAPMIX_COLS 128                          /* column buckets: min(column, 127) */
#define GAPMIX_CTX (GAPMIX_COLS * NLM_NGAP * 2 * (NLM_NGAP + 1))  /* x top symbol x confident x match gap */

typedef struct {
    uint32_t col;                               /* bytes since the last '\n' of the block's output */
    uint16_t cnt[GAPMIX_CTX][NLM_NGAP];         /* adaptive counts */
    uint16_t tot[GAPMIX_CTX];                   /* Σ cnt of the context */
} GapMix;

void gapmix_reset(GapMix* g);
/* Blend the network's frequencies f (total F) for a body of blen bytes into g_out; returns the total and
 * the context index in *ctx (pass it to gapmix_update).  mg: the match context, 0..7 (the gap after the
 * predicted token's earlier occurrence, on a match hit, docs/format.md §3.4) or 8 (none). */
uint32_t gapmix_freqs(const GapMix* g, uint32_t* g_out, const uint32_t* f, uint32_t F, int blen, int mg, int* ctx);
/* Count the coded symbol, then advance the column over the token's gap and body bytes. */
void gapmix_update(GapMix* g, int ctx, int sym, const uint8_t* gap, int glen, int blen);

#endif
