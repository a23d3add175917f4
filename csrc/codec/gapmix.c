/* gapmix.c: column-aware secondary model for gap symbols (docs/format.md §3.3).  Integer only.
 *
 *   a    = min(col + 1 + blen, 127)          the column the body would end at after one space
 *   t    = argmax f (lowest index on ties);  q = 1 if f[t] >= F - F/16 (the network is confident)
 *   m    = the gap symbol of the token the match model predicted, when the flag said the token is that
 *          one (the token match flag, docs/format.md §3.4); 8 otherwise (always 8 while the flag is off)
 *   ctx  = ((a * 8 + t) * 2 + q) * 9 + m
 *   p_i  = floor(f_i * 2^16 / F)             the network, on a 2^16 scale
 *   g_i  = floor((GAPMIX_K * p_i + cnt_i * 2^16) / (GAPMIX_K + tot)) + 1
 * Counts start at 0, grow by GAPMIX_INC per coded symbol and are halved (rounding down) when the
 * context's total exceeds GAPMIX_LIMIT.  The constants were chosen on dev text (tools/dev_sample.py):
 * against the network alone, gaps cost 40% fewer bytes on a dev book (whole output -1.7% static, -2.1%
 * dynamic) and about the same on dev technical text; K in 8..64 and LIMIT in 60..1000 were within 0.2%.
 * The match context m: -0.22% static, -0.12% dynamic on the dev set (docs/decisions/match-flag.md).
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "codec/gapmix.h"

#include <string.h>

#define GAPMIX_K 24      /* prior weight of the network, in counts */
#define GAPMIX_INC 2     /* count increment per coded symbol */
#define GAPMIX_LIMIT 250 /* halve a context's counts above this total */

void gapmix_reset(GapMix* g) { memset(g, 0, sizeof *g); }

uint32_t gapmix_freqs(const GapMix* g, uint32_t* g_out, const uint32_t* f, uint32_t F, int blen, int mg, int* ctx) {
    uint32_t a = g->col + 1u + (uint32_t)blen;
    if (a > GAPMIX_COLS - 1) a = GAPMIX_COLS - 1;
    int t = 0;
    for (int i = 1; i < NLM_NGAP; i++)
        if (f[i] > f[t]) t = i;
    int q = f[t] >= F - F / 16u;
    int c = (((int)a * NLM_NGAP + t) * 2 + q) * (NLM_NGAP + 1) + mg;
    *ctx = c;
    const uint64_t den = (uint64_t)GAPMIX_K + g->tot[c];
    uint32_t G = 0;
    for (int i = 0; i < NLM_NGAP; i++) {
        uint64_t p = ((uint64_t)f[i] << 16) / F;
        uint64_t v = ((uint64_t)GAPMIX_K * p + ((uint64_t)g->cnt[c][i] << 16)) / den + 1u;
        g_out[i] = (uint32_t)v;
        G += (uint32_t)v;
    }
    return G;
}

void gapmix_update(GapMix* g, int ctx, int sym, const uint8_t* gap, int glen, int blen) {
    g->cnt[ctx][sym] = (uint16_t)(g->cnt[ctx][sym] + GAPMIX_INC);
    g->tot[ctx] = (uint16_t)(g->tot[ctx] + GAPMIX_INC);
    if (g->tot[ctx] > GAPMIX_LIMIT) {
        uint16_t s = 0;
        for (int i = 0; i < NLM_NGAP; i++) s = (uint16_t)(s + (g->cnt[ctx][i] >>= 1));
        g->tot[ctx] = s;
    }
    for (int i = 0; i < glen; i++) g->col = gap[i] == '\n' ? 0u : g->col + 1u;
    g->col += (uint32_t)blen;
    if (g->col > (1u << 20)) g->col = 1u << 20;
}
