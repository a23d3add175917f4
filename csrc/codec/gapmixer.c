/* gapmixer.c: the gap mixer of format 14 (gapmixer.h, docs/format.md §3.7, the normative text).  Integer only.
 *
 * The symbol is coded as a unary walk over ORDER (the symbols by how often they occur): node k says whether
 * the symbol is ORDER[k], given it is none of ORDER[0..k).  A literal run is coded byte by byte at nodes 7-12:
 * END? (not at its first byte), then a unary walk over '\n' ' ' '\t' '\r' '\v' ('\f' last).  Per node:
 *   x[0]        stretch of the blended distribution's share of ORDER[k] among ORDER[k..8) (0 in a run)
 *   x[1..12]    stretch of an adaptive probability in each structure context (0 while the slot is unseen)
 *   x[13]       a bias, 256
 *   t = clamp(asr(Σ w[s][i] x[i], 16), ±2047), s = (node, run position, blank line so far, body class);
 *   p_mix = squash(t); an APM by (node, column bucket) over t, 33 points; p = (p_mix + p_apm + 1) / 2.
 * Update: slots p += (y - p) / (n + 1.5), n capped at GM_LIMIT; weights w += asr(x err GM_LR, 18); the APM's
 * nearer point moves 1/32 of the way.  Constants: docs/decisions/gap-mixer.md.
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "codec/gapmixer.h"

#include <math.h> /* log2: statistics only */
#include <stdlib.h>
#include <string.h>

#include "bytemodel/cm.h" /* cm_logistic_tables, cm_hash64 */
#include "kernels/kern.h"  /* kern_asr64: floor shifts of signed values */

static const int ORDER[NLM_NGAP] = {1, 0, 3, 4, 7, 2, 6, 5};

enum {
    GM_LR = 320,          /* mixer rate: w += x err GM_LR >> 18 */
    GM_LIMIT = 60,        /* slot count cap: the slowest rate is 1 / 61.5 */
    GM_W_EXT = 49152,     /* initial weight of the blended distribution, 0.75 (16.16) */
    GM_W_CTX = 8192,      /* ... of each context, 0.125 */
    GM_APM_SHIFT = 5,     /* APM rate 1/32 */
};

void gapmixer_tables(GmTables* t) { cm_logistic_tables(t->squash_t, t->stretch_t); }

static inline int sq(const GmTables* t, int x) {
    if (x > 2047) x = 2047;
    if (x < -2047) x = -2047;
    return t->squash_t[x + 2048];
}

void gapmixer_reset(GapMixer* g, const GmTables* t) {
    memset(g->cur, 0, sizeof g->cur);
    memset(g->prev, 0, sizeof g->prev);
    g->curlen = g->prevlen = 0;
    g->last = 0;
    g->pword = 0;
    for (int k = 0; k < GM_NCTX; k++)
        for (int i = 0; i < (1 << GM_TBITS); i++) g->p[k][i] = 32768;
    memset(g->n, 0, sizeof g->n);
    for (int s = 0; s < GM_SETS; s++)
        for (int i = 0; i < GM_NIN; i++) g->w[s][i] = i == 0 ? GM_W_EXT : i <= GM_NCTX ? GM_W_CTX : 0;
    for (int r = 0; r < GM_APM_ROWS; r++)
        for (int j = 0; j < 33; j++) g->apm[r][j] = (uint16_t)(sq(t, (j - 16) * 128) * 16);
}

/* A byte's class: 0 none, 1 lower-case letter, 2 capital, 3 digit, 4 non-ASCII, 5 .!?, 6 ,;:, 7 other. */
static int byte_class(int c) {
    if (c < 0) return 0;
    if (c >= 'a' && c <= 'z') return 1;
    if (c >= 'A' && c <= 'Z') return 2;
    if (c >= '0' && c <= '9') return 3;
    if (c >= 128) return 4;
    if (c == '.' || c == '!' || c == '?') return 5;
    if (c == ',' || c == ';' || c == ':') return 6;
    return 7;
}

/* The hash of a body (§3.7: the context of the body a gap precedes, and pword). */
static uint32_t body_hash(const uint8_t* b, int n) {
    uint32_t h = 0;
    for (int i = 0; i < n; i++) h = (h + b[i] + 1) * 0x2F0F3A55u;
    return h;
}

static int indent_of(const uint8_t* b, uint32_t len) {
    uint32_t k = 0, n = len < GM_LINE ? len : GM_LINE;
    while (k < n && (b[k] == ' ' || b[k] == '\t')) k++;
    return (int)k;
}

/* The contexts of the next decision: slot hashes idx[], weight set and APM row bases.  j: -1 for the symbol, else
 * the position in a literal run (whose bytes so far are already in the line history, rh their hash). */
typedef struct {
    uint32_t idx[GM_NCTX];
    int set, arow;
} GmCtx;

static void gm_contexts(const GapMixer* g, const uint8_t* body, int blen, int j, uint32_t rh, GmCtx* o) {
    const uint32_t col = g->curlen, ccol = col < 90 ? col : 90;
    const int ind = indent_of(g->cur, g->curlen);
    const int blank = (uint32_t)ind >= col;
    const int pind = indent_of(g->prev, g->prevlen);
    const int above = col < g->prevlen && col < GM_LINE ? g->prev[col] : 256;
    const int above2 = col + 1 < g->prevlen && col + 1 < GM_LINE ? g->prev[col + 1] : 256;
    const int first = !blank && (uint32_t)ind < GM_LINE ? g->cur[ind] : 256;
    const int pfirst = (uint32_t)pind < g->prevlen && pind < GM_LINE ? g->prev[pind] : 256;
    const uint32_t plen = g->prevlen / 8 < 12 ? g->prevlen / 8 : 12;
    const int b1 = (int)(g->last & 0xFF), b2 = (int)(g->last >> 8 & 0xFF), b3 = (int)(g->last >> 16 & 0xFF);
    const int c1 = byte_class(b1);
    const int b0 = blen > 0 ? body[0] : -1, bk = byte_class(b0);
    const uint64_t jj = (uint64_t)(j < 0 ? 0 : 1 + (j < 3 ? j : 3)); /* 0 the symbol, 1..4 run positions */
    const uint32_t bh = body_hash(body, blen);
    const uint64_t ctx[GM_NCTX] = {
        (uint64_t)b1 << 8 | (uint64_t)bk | jj << 40 | (uint64_t)rh << 44,
        (uint64_t)b1 << 16 | (uint64_t)b2 << 8 | (uint64_t)bk | jj << 40,
        (uint64_t)b1 << 16 | (uint64_t)b2 << 8 | (uint64_t)b3,
        (uint64_t)ccol << 8 | (uint64_t)blank << 4 | (uint64_t)bk,
        (uint64_t)(pind < 255 ? pind : 255) << 16 | (uint64_t)ccol << 8 | (uint64_t)blank | jj << 40,
        (uint64_t)above << 20 | (uint64_t)above2 << 8 | (uint64_t)blank << 4 | (uint64_t)c1,
        (uint64_t)g->pword << 8 | (uint64_t)bk | jj << 40,
        (uint64_t)byte_class(first < 256 ? first : -1) << 16 | (uint64_t)(ccol / 4) << 8 | (uint64_t)c1,
        (uint64_t)pfirst << 24 | (uint64_t)plen << 16 | (uint64_t)(ccol / 8) << 8 | (uint64_t)blank,
        (uint64_t)(ind < 255 ? ind : 255) << 32 | (uint64_t)(pind < 255 ? pind : 255) << 24 | (uint64_t)above << 8 |
            (uint64_t)b1,
        (uint64_t)bk << 24 | (uint64_t)(blen < 8 ? blen : 8) << 16 | (uint64_t)(ccol / 4) << 8 | (uint64_t)blank,
        (uint64_t)bh << 8 | (uint64_t)c1 | jj << 40,
    };
    for (int k = 0; k < GM_NCTX; k++) o->idx[k] = cm_hash64(ctx[k], (uint32_t)(k + 1) * 0x3C6EF372u);
    o->set = (int)((jj * 2 + (uint64_t)blank) * 8 + (uint64_t)bk);   /* 0..79 */
    o->arow = (int)(ccol / 4 < 23 ? ccol / 4 : 23);
}

/* A decision at node `node` between its prediction and its update (gm_predict, gm_learn). */
struct GmPending {
    int32_t x[GM_NIN];
    uint32_t slot[GM_NCTX];
    int node, set, arow, pm, lo, wt, p;
};

/* The prediction of a decision at node `node` (0..GM_NODES_ALL): pn the outside prediction (12 bits, 0: none). */
static int gm_predict(const GapMixer* g, const GmTables* t, const GmCtx* cx, int node, int pn, GmPending* d) {
    memset(d->x, 0, sizeof d->x);
    d->x[0] = pn ? t->stretch_t[pn] : 0;
    for (int j = 0; j < GM_NCTX; j++) {
        d->slot[j] = (cx->idx[j] + (uint32_t)(node + 1) * 0x9E3779B1u) >> (32 - GM_TBITS);
        d->x[1 + j] = g->n[j][d->slot[j]] ? t->stretch_t[g->p[j][d->slot[j]] >> 4] : 0;
    }
    d->x[1 + GM_NCTX] = 256;
    d->node = node, d->set = cx->set, d->arow = cx->arow;
    const int32_t* w = g->w[node * GM_SETS_PER_NODE + cx->set];
    int64_t dot = 0;
    for (int i = 0; i < GM_NIN; i++) dot += (int64_t)w[i] * d->x[i];
    int tm = (int)kern_asr64(dot, 16);
    if (tm > 2047) tm = 2047;
    if (tm < -2047) tm = -2047;
    d->pm = sq(t, tm);
    const int u = tm + 2048;
    d->lo = u >> 7, d->wt = u & 127;
    const uint16_t* a = g->apm[node * 24 + cx->arow];
    const int pa = (a[d->lo] * (128 - d->wt) + a[d->lo + 1] * d->wt) >> 11;
    int p = (d->pm + pa + 1) >> 1;
    d->p = p < 1 ? 1 : p > 4095 ? 4095 : p;
    return d->p;
}

/* The update after the decision d turned out y. */
static void gm_learn(GapMixer* g, const GmPending* d, int y) {
    for (int j = 0; j < GM_NCTX; j++) {
        uint16_t* pp = &g->p[j][d->slot[j]];
        uint8_t* nn = &g->n[j][d->slot[j]];
        int32_t target = y ? 65535 : 0;
        *pp = (uint16_t)(*pp + (int32_t)(((int64_t)(target - *pp) * 2) / (2 * *nn + 3)));
        if (*nn < GM_LIMIT) (*nn)++;
    }
    int32_t* w = g->w[d->node * GM_SETS_PER_NODE + d->set];
    const int err = ((y << 12) - d->pm) * GM_LR;
    for (int i = 0; i < GM_NIN; i++) {
        int64_t v = (int64_t)w[i] + kern_asr64((int64_t)d->x[i] * err, 18);
        w[i] = (int32_t)(v > (1 << 24) ? 1 << 24 : v < -(1 << 24) ? -(1 << 24) : v);
    }
    uint16_t* a = g->apm[d->node * 24 + d->arow];
    const int jj = d->lo + (d->wt >= 64);
    a[jj] = (uint16_t)(a[jj] + kern_asr64((y ? 65535 : 0) - a[jj], GM_APM_SHIFT));
}

/* One binary decision at node `node`: predicted, coded, learnt. */
static int gm_bit(GapMixer* g, const GmTables* t, const GmCtx* cx, int node, int pn, int* y, GmCodeBit code_bit,
                  void* cctx, double* bits) {
    GmPending d;
    const int p = gm_predict(g, t, cx, node, pn, &d);
    int r = code_bit(cctx, y, p);
    if (r < 0) return r;
    if (bits) *bits += log2(4096.0 / (double)(*y ? p : 4096 - p));
    gm_learn(g, &d, *y);
    return 0;
}

int gapmixer_code_allowed(GapMixer* g, const GmTables* t, const uint32_t* gf, const uint8_t* body, int blen,
                          int allowed, int dec, int* sym, GmCodeBit code_bit, void* cctx, double* bits) {
    if (!(allowed & 0xFF)) return NLM_ERR_CORRUPT;
    if (!dec && !(allowed >> *sym & 1)) return NLM_ERR_STATE;
    GmCtx cx;
    gm_contexts(g, body, blen, -1, 0, &cx);
    const int s = dec ? -1 : *sym;
    uint64_t rest = 0;
    int left = 0;
    for (int i = 0; i < NLM_NGAP; i++)
        if (allowed >> ORDER[i] & 1) rest += gf[ORDER[i]], left++;
    int k;
    for (k = 0; k < NLM_NGAP; k++) {
        if (!(allowed >> ORDER[k] & 1)) continue;
        if (left == 1) break; /* the one symbol left (with every symbol allowed: node 7 is never asked) */
        const uint64_t fk = gf[ORDER[k]];
        int pn = rest ? (int)((fk * 4096 + rest / 2) / rest) : 2048;
        if (pn < 1) pn = 1;
        if (pn > 4095) pn = 4095;
        int y = dec ? 0 : s == ORDER[k];
        int r = gm_bit(g, t, &cx, k, pn, &y, code_bit, cctx, bits);
        if (r < 0) return r;
        if (y) break;
        rest -= fk;
        left--;
    }
    if (dec) *sym = ORDER[k];
    return 0;
}

int gapmixer_allowed(const GmKnown* kn) {
    int a = 0;
    for (int s = 0; s < NLM_NGAP; s++) {
        if (s == 7) { /* a literal run can hold any prefix and either answer */
            a |= 1 << s;
            continue;
        }
        static const char* const GAP[7] = {"", " ", "  ", "\n", "\n\n", "\r\n", "\t"};
        const int n = (int)strlen(GAP[s]);
        if (kn->prelen > n || (kn->prelen && memcmp(GAP[s], kn->pre, (size_t)kn->prelen))) continue;
        a |= 1 << s;
    }
    return a;
}

GmPending* gapmixer_pending_new(void) { return (GmPending*)malloc(sizeof(GmPending)); }

int gapmixer_newline_predict(const GapMixer* g, const GmTables* t, GmPending* d) {
    GmCtx cx;
    gm_contexts(g, NULL, 0, -1, 0, &cx);
    return gm_predict(g, t, &cx, GM_NODE_NL, 0, d);
}

void gapmixer_newline_learn(GapMixer* g, const GmPending* d, int y) { gm_learn(g, d, y); }

int gapmixer_line_class(const GapMixer* g) {
    const int ind = indent_of(g->cur, g->curlen);
    return (uint32_t)ind < g->curlen && ind < GM_LINE ? byte_class(g->cur[ind]) : 0;
}

/* A literal run's bytes, one at a time: END? then '\n', ' ', '\t', '\r', '\v' / '\f' (END not at the start).
 * Each byte joins the line history at once. */
static const uint8_t RUN_BYTES[6] = {'\n', ' ', '\t', '\r', '\v', '\f'};

int gapmixer_code_run_known(GapMixer* g, const GmTables* t, const uint8_t* body, int blen, const GmKnown* kn,
                            int dec, uint8_t* buf, int* len, int maxlen, GmCodeBit code_bit, void* cctx,
                            double* bits) {
    const int n = dec ? maxlen : *len;
    const int prelen = kn ? kn->prelen : 0;
    if (prelen > maxlen || (!dec && prelen && (n < prelen || memcmp(buf, kn->pre, (size_t)prelen))))
        return NLM_ERR_STATE;
    uint32_t rh = 0;
    int pos;
    for (pos = 0; pos < maxlen; pos++) {
        GmCtx cx;
        gm_contexts(g, body, blen, pos, rh, &cx);
        int x = -1; /* the byte's index in RUN_BYTES, -1 END */
        if (pos < prelen) {
            for (int i = 0; i < 6; i++)
                if (kn->pre[pos] == RUN_BYTES[i]) x = i;
            if (x < 0) return NLM_ERR_STATE;
            if (dec) buf[pos] = RUN_BYTES[x];
        } else {
            if (!dec && pos < n)
                for (int i = 0; i < 6; i++)
                    if (buf[pos] == RUN_BYTES[i]) x = i;
            if (!dec && pos < n && x < 0) return NLM_ERR_STATE;
            int node = GM_NODES, r, y;
            if (pos > 0) {
                y = dec ? 0 : x < 0;
                if ((r = gm_bit(g, t, &cx, node, 0, &y, code_bit, cctx, bits)) < 0) return r;
                if (y) break;
            }
            int i;
            for (i = 0; i < 5; i++) {
                y = dec ? 0 : x == i;
                if ((r = gm_bit(g, t, &cx, node + 1 + i, 0, &y, code_bit, cctx, bits)) < 0) return r;
                if (y) break;
            }
            if (dec) {
                x = i; /* i == 5: '\f' */
                buf[pos] = RUN_BYTES[x];
            }
        }
        gapmixer_push(g, buf + pos, 1, body, 0);
        rh = (rh << 4 | (uint32_t)x) & 0xFFFF;
    }
    if (dec) *len = pos;
    return 0;
}

void gapmixer_push(GapMixer* g, const uint8_t* gap, int glen, const uint8_t* body, int blen) {
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t* b = pass ? body : gap;
        int n = pass ? blen : glen;
        for (int i = 0; i < n; i++) {
            uint8_t c = b[i];
            g->last = g->last << 8 | c;
            if (c == '\n') {
                memcpy(g->prev, g->cur, sizeof g->cur);
                g->prevlen = g->curlen;
                g->curlen = 0;
            } else {
                if (g->curlen < GM_LINE) g->cur[g->curlen] = c;
                if (g->curlen < (1u << 20)) g->curlen++;
            }
        }
    }
    if (blen > 0) g->pword = body_hash(body, blen);
}
