/* gapmixer.h: the gap mixer of formats 14 to 17 (docs/format.md §3.7; node 13: §3.8), a binary context-mixing
 * model of the gap.
 *
 * Owns: the gap symbol (docs/format.md §3.2 step 5) coded as up to 7 binary decisions, each predicted by an
 * integer logistic mixer of (a) the blended distribution of §3.3 (the network's gap head with the column-aware
 * counts) and (b) adaptive probabilities in line-structure contexts the network cannot see: the bytes before the
 * gap, the column, the indentation and first byte of this line and of the previous one, the previous line's bytes
 * at this column, the previous token and the body the gap precedes (coded before the gap, §3.2).  Then an APM by
 * node and column.  Integer arithmetic only (the logistic tables of bytemodel/cm.h).
 *
 * A literal run (symbol 7) is coded by the same mixer, byte by byte (format 13: §5.3).
 */
#ifndef NLM_GAPMIXER_H
#define NLM_GAPMIXER_H

#include <stdint.h>

#include "nlm.h" /* NLM_NGAP */

#define GM_NODES (NLM_NGAP - 1)  /* binary decisions of the unary tree over the 8 symbols */
#define GM_NCTX 12               /* structure contexts */
#define GM_NIN 16                /* inputs: the blended distribution, the contexts, a bias, padding */
#define GM_TBITS 14              /* each context's table: 2^13 adaptive probabilities */
#define GM_LINE 256              /* bytes of a line kept (columns past it read as absent) */
#define GM_NODE_NL (GM_NODES + 6)  /* the line route (format 17, §3.8): does the next gap hold a '\n' (before the body) */
#define GM_NODES_ALL (GM_NODES + 7) /* + the literal run's byte tree: END?, '\n', ' ', '\t', '\r', '\v' / '\f'; the
                                     * newline bit */
#define GM_SETS_PER_NODE (5 * 2 * 8) /* run position (0 the symbol) x blank line so far x body class */
#define GM_SETS (GM_NODES_ALL * GM_SETS_PER_NODE)
#define GM_APM_ROWS (GM_NODES_ALL * 24)

typedef struct {
    /* the group's word-model output, as the decoder knows it after the body (bodies as sent) */
    uint8_t cur[GM_LINE], prev[GM_LINE];
    uint32_t curlen, prevlen;   /* bytes of this line so far, of the previous line (without its '\n') */
    uint32_t last;              /* the last 4 bytes, newest in bits 0..7 */
    uint32_t pword;             /* hash of the previous token's body */
    /* adaptive state */
    uint16_t p[GM_NCTX][1 << GM_TBITS];   /* P(bit = 1) in 16 bits */
    uint8_t n[GM_NCTX][1 << GM_TBITS];    /* its count, capped */
    int32_t w[GM_SETS][GM_NIN];           /* mixer weights, 16.16 */
    uint16_t apm[GM_APM_ROWS][33];        /* 16-bit p at 33 points of the stretched mix */
} GapMixer;

/* The tables the mixer reads (built once per codec: bytemodel/cm.h cm_logistic_tables). */
typedef struct {
    int16_t squash_t[4096], stretch_t[4096];
} GmTables;

void gapmixer_tables(GmTables* t);
void gapmixer_reset(GapMixer* g, const GmTables* t);

/* Code the gap symbol: the encoder (dec 0) passes *sym, the decoder (dec 1) receives it.  g_freqs[0..8): the
 * blended distribution of §3.3 (gapmix_freqs).  body, blen: the body the gap precedes (as sent).  code_bit codes
 * one decision with P(1) = p1 / 4096 through the codec's coder (0 or a negative NLM_ERR_*); *bits (optional)
 * accumulates -log2 of the coded probabilities. */
typedef int (*GmCodeBit)(void* ctx, int* bit, int p1);
/* What is known of a gap before it is coded (the line route, docs/format.md §3.8): its first
 * bytes pre[0..prelen), the end of a line the byte model coded (ending in '\n'). */
typedef struct {
    const uint8_t* pre;
    int prelen;
} GmKnown;
/* The symbols a gap can be given what is known of it (bit s: symbol s possible). */
int gapmixer_allowed(const GmKnown* k);
/* Code the gap symbol over the allowed symbols only: a node whose symbol is not allowed is not asked, and the last
 * allowed symbol is not asked either; the outside probability of a node is its symbol's share among the allowed
 * symbols left.  allowed = 0xFF: every symbol (nothing of the gap known). */
int gapmixer_code_allowed(GapMixer* g, const GmTables* t, const uint32_t* g_freqs, const uint8_t* body, int blen,
                          int allowed, int dec, int* sym, GmCodeBit code_bit, void* ctx, double* bits);
/* A literal run (symbol 7) by the same mixer, byte by byte (its bytes join the history as they are coded): the
 * encoder passes buf[0..*len), the decoder receives them (at most maxlen).  kn (NULL: nothing known, as in formats
 * 14 to 16): the first kn->prelen bytes are kn->pre and are not coded (nor is the end asked before them). */
int gapmixer_code_run_known(GapMixer* g, const GmTables* t, const uint8_t* body, int blen, const GmKnown* kn,
                            int dec, uint8_t* buf, int* len, int maxlen, GmCodeBit code_bit, void* ctx,
                            double* bits);
/* The line route (format 17, §3.8): the probability (12 bits) that the next gap holds a '\n', predicted before the
 * token's body at node GM_NODE_NL in the contexts of a gap before an empty body, and its update once the gap is
 * known (d: the prediction's inputs, kept between the two; other decisions may come in between). */
typedef struct GmPending GmPending;
GmPending* gapmixer_pending_new(void); /* free() it */
int gapmixer_newline_predict(const GapMixer* g, const GmTables* t, GmPending* d);
void gapmixer_newline_learn(GapMixer* g, const GmPending* d, int y);
/* After the gap (and its literal run) is known: the gap bytes and the body join the line history. */
void gapmixer_push(GapMixer* g, const uint8_t* gap, int glen, const uint8_t* body, int blen);
/* The class (§3.7's cls) of the first byte of the line in progress that is not ' ' or '\t', 0 when blank. */
int gapmixer_line_class(const GapMixer* g);

#endif
