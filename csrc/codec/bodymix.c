/* codec/bodymix.c: the grown vocabulary's pointer model (docs/format.md §5.1.1), integer arithmetic only
 * (the reported bits are doubles, never fed back).
 *
 * Owns three experts over the spelling cache's symbols (0 = escape: a body new to the group; i + 1 = the
 * i-th cached body), their weights and the two-stage code that mixes them with the cache's PPM-C counts.
 * Shapes: per order k = 1, 2 a table of 2^BM_BITS_k slots, each the follower list of one context (the
 * previous k tokens): a 32-bit check, a total, up to BM_K_k (symbol, count) entries; the recency list:
 * up to BM_RCAP (symbol, count) entries; the weights W[BM_SETS][4] (PPM-C, order 1, order 2, recency) in
 * 1/65536.
 *
 * The code of a symbol, in 2^BM_SCALE parts: A_k = floor(W_k * 2^BM_SCALE / sum of the present experts'
 * weights); a count x of a distribution of total t weighs floor(A_k * x / t).  Stage A codes one of
 * [escape, the experts' candidate bodies in increasing symbol order, "other"], each candidate and the
 * escape 1 + the weighed counts of every expert, "other" 1 + the PPM-C weight of the counts of the bodies
 * that are not candidates (0 when there are none).  On "other", stage B codes the body with the PPM-C
 * counts alone, the escape and the candidates excluded.  So a body no expert names costs what it cost
 * before plus the price of "other", and a body the context names costs far less.
 */
#include "common/fpenv.h" /* first: FP contraction off (no float here; the rule is for every file) */
#include "codec/bodymix.h"
#include "codec/ctxhash.h" /* mix32 */
#include "codec/dirtyslots.h"

#include <math.h> /* log2: the statistics only */
#include <stdlib.h>
#include <string.h>

#include "nlm.h"

#define BM_INC 2          /* a follower's count step */
#define BM_L 30           /* a follower list is halved (rounding up) when its total exceeds this */
#define BM_RI 4           /* the recency list's count step */
#define BM_RL 100         /* the recency list is halved (rounding down, zeros dropped) above this total */
#define BM_RCAP 128       /* its entries: at most BM_RL + 2 * BM_RI counts of at least 1 */
#define BM_SCALE 24       /* stage A's scale: 2^24 parts */
#define BM_RATE 5         /* weights move 1/2^BM_RATE of the way to their responsibility */
#define BM_WMIN 655       /* no weight falls below this (1/100) */
#define BM_WMAX (1 << 20)
#define BM_BUCKETS 4      /* follower-list totals 0 (absent), 1, 2-3, 4+ */
#define BM_SETS (BM_BUCKETS * BM_BUCKETS)
#define BM_MAXCAND (16 + 8 + BM_RCAP)
static const uint32_t BM_W0[4] = {32768, 13107, 13107, 6554}; /* 0.5, 0.2, 0.2, 0.1 */
static const int BM_K[2] = {16, 8};
static const int BM_BITS[2] = {14, 15};

typedef struct {
    int K, bits;       /* entries per slot; 2^bits slots */
    uint32_t* check;   /* [S] the context's hash */
    uint8_t* tot;      /* [S] sum of the counts */
    uint8_t* n;        /* [S] entries (0: empty slot) */
    uint32_t* sym;     /* [S*K] cache symbols */
    uint8_t* c;        /* [S*K] counts */
} BmOrder;

typedef struct {
    uint32_t prev1, prev2, npushed;
    uint32_t rn, rtot;            /* the recency list's entries and total */
    uint32_t rsym[BM_RCAP];
    uint16_t rc[BM_RCAP];
    uint32_t W[BM_SETS][4];
} BmScalars;

struct BodyMix {
    BmScalars s, s_saved;
    BmOrder o[2], o_saved[2];
    int saved;
    /* the order slots written since the last save or restore (their one writer is follower_add): a save or a
     * restore copies those slots' entries in use; all_dirty: every slot (after a reset, until the first copy) */
    DirtySlots dirty[2];
    int all_dirty;
};

/* k = 0: the previous token; k = 1: the previous two */
static uint32_t ctx_hash(const BmScalars* s, int k) {
    return k == 0 ? mix32(mix32(0x2545F491u, s->prev1), 0x68E31DA4u) : mix32(mix32(0x9E3779B9u, s->prev2), s->prev1);
}

static int order_alloc(BmOrder* o, int K, int bits) {
    const size_t S = (size_t)1 << bits;
    o->K = K, o->bits = bits;
    o->check = (uint32_t*)malloc(S * 4);
    o->tot = (uint8_t*)malloc(S);
    o->n = (uint8_t*)calloc(S, 1);
    o->sym = (uint32_t*)malloc(S * (size_t)K * 4);
    o->c = (uint8_t*)malloc(S * (size_t)K);
    return o->check && o->tot && o->n && o->sym && o->c;
}

static void order_free(BmOrder* o) { free(o->check), free(o->tot), free(o->n), free(o->sym), free(o->c); }

static void order_copy(BmOrder* d, const BmOrder* s) {
    const size_t S = (size_t)1 << s->bits, K = (size_t)s->K;
    memcpy(d->check, s->check, S * 4);
    memcpy(d->tot, s->tot, S);
    memcpy(d->n, s->n, S);
    memcpy(d->sym, s->sym, S * K * 4);
    memcpy(d->c, s->c, S * K);
}

BodyMix* bodymix_new(void) {
    BodyMix* b = (BodyMix*)calloc(1, sizeof *b);
    if (!b) return NULL;
    for (int k = 0; k < 2; k++) {
        int ok = order_alloc(&b->o[k], BM_K[k], BM_BITS[k]);
        if (!(dirty_init(&b->dirty[k], (size_t)1 << BM_BITS[k]) && ok)) {
            bodymix_free(b);
            return NULL;
        }
    }
    bodymix_reset(b);
    return b;
}

void bodymix_free(BodyMix* b) {
    if (!b) return;
    for (int k = 0; k < 2; k++) order_free(&b->o[k]), order_free(&b->o_saved[k]), dirty_free(&b->dirty[k]);
    free(b);
}

void bodymix_reset(BodyMix* b) {
    memset(&b->s, 0, sizeof b->s);
    for (int i = 0; i < BM_SETS; i++) memcpy(b->s.W[i], BM_W0, sizeof BM_W0);
    for (int k = 0; k < 2; k++) memset(b->o[k].n, 0, (size_t)1 << b->o[k].bits);
    b->all_dirty = 1;
}

/* Make dst's orders hold src's (save: cur -> saved; restore: saved -> cur): every table when all_dirty, else
 * the slots written since the last copy, each its check, total, count and its n entries in use (a slot's
 * entries beyond n are never read: follower_add writes an entry before it counts it).  Then no slot is
 * dirty. */
static void orders_sync(BodyMix* b, BmOrder* dst, const BmOrder* src) {
    for (int k = 0; k < 2; k++) {
        const size_t K = (size_t)src[k].K;
        if (!b->all_dirty)
            for (uint32_t q = 0; q < b->dirty[k].n; q++) {
                const size_t i = b->dirty[k].list[q];
                const int n = src[k].n[i];
                dst[k].check[i] = src[k].check[i], dst[k].tot[i] = src[k].tot[i], dst[k].n[i] = (uint8_t)n;
                memcpy(dst[k].sym + i * K, src[k].sym + i * K, (size_t)n * 4);
                memcpy(dst[k].c + i * K, src[k].c + i * K, (size_t)n);
            }
        else
            order_copy(&dst[k], &src[k]);
        dirty_clear(&b->dirty[k]);
    }
    b->all_dirty = 0;
}

int bodymix_save(BodyMix* b) {
    if (!b->o_saved[0].check)
        for (int k = 0; k < 2; k++)
            if (!order_alloc(&b->o_saved[k], BM_K[k], BM_BITS[k])) return NLM_ERR_NOMEM;
    b->s_saved = b->s;
    orders_sync(b, b->o_saved, b->o);
    b->saved = 1;
    return 0;
}

int bodymix_restore(BodyMix* b) {
    if (!b->saved) return NLM_ERR_STATE;
    b->s = b->s_saved;
    orders_sync(b, b->o, b->o_saved);
    return 0;
}

size_t bodymix_memory(const BodyMix* b) {
    size_t m = sizeof *b;
    for (int k = 0; k < 2; k++) {
        const size_t S = (size_t)1 << b->o[k].bits, per = 4 + 1 + 1 + (size_t)b->o[k].K * 5;
        m += S * per * (b->o_saved[k].check ? 2 : 1);
    }
    return m;
}

/* the slot of context k, -1 when it has no list */
static int32_t order_find(const BmOrder* o, uint32_t h) {
    const uint32_t i = h >> (32 - o->bits);
    return o->n[i] && o->check[i] == h ? (int32_t)i : -1;
}

static void follower_add(BmOrder* o, DirtySlots* dirty, uint32_t h, uint32_t sym) {
    const size_t i = h >> (32 - o->bits), K = (size_t)o->K;
    dirty_add(dirty, i); /* for the next save/restore */
    uint32_t* ss = o->sym + i * K;
    uint8_t* cs = o->c + i * K;
    if (!o->n[i] || o->check[i] != h) o->check[i] = h, o->n[i] = 0, o->tot[i] = 0; /* a new context */
    int e = 0;
    while (e < o->n[i] && ss[e] != sym) e++;
    if (e == o->n[i]) {
        if (o->n[i] < o->K) {
            o->n[i]++;
        } else { /* full: the first entry of the smallest count gives its place */
            e = 0;
            for (int q = 1; q < o->K; q++)
                if (cs[q] < cs[e]) e = q;
            o->tot[i] = (uint8_t)(o->tot[i] - cs[e]);
        }
        ss[e] = sym, cs[e] = 0;
    }
    cs[e] = (uint8_t)(cs[e] + BM_INC);
    o->tot[i] = (uint8_t)(o->tot[i] + BM_INC);
    if (o->tot[i] > BM_L) { /* halve, rounding up: every entry stays */
        uint32_t tot = 0;
        for (int q = 0; q < o->n[i]; q++) cs[q] = (uint8_t)((cs[q] + 1) >> 1), tot += cs[q];
        o->tot[i] = (uint8_t)tot;
    }
}

static void recent_add(BmScalars* s, uint32_t sym) {
    uint32_t e = 0;
    while (e < s->rn && s->rsym[e] != sym) e++;
    if (e == s->rn) s->rsym[s->rn] = sym, s->rc[s->rn] = 0, s->rn++; /* room: see BM_RCAP */
    s->rc[e] = (uint16_t)(s->rc[e] + BM_RI);
    s->rtot += BM_RI;
}

void bodymix_push(BodyMix* b, int sym, int newsym, uint32_t id) {
    BmScalars* s = &b->s;
    if (sym >= 0) {
        for (int k = 0; k < 2; k++)
            if (s->npushed >= (uint32_t)k + 1) follower_add(&b->o[k], &b->dirty[k], ctx_hash(s, k), (uint32_t)sym);
        recent_add(s, (uint32_t)sym);
        if (sym == 0) recent_add(s, (uint32_t)newsym);
        if (s->rtot > BM_RL) { /* halve, rounding down, dropping the zeros, the others keeping their order */
            uint32_t m = 0, tot = 0;
            for (uint32_t q = 0; q < s->rn; q++) {
                uint16_t c = (uint16_t)(s->rc[q] >> 1);
                if (c) s->rsym[m] = s->rsym[q], s->rc[m] = c, tot += c, m++;
            }
            s->rn = m, s->rtot = tot;
        }
    }
    s->prev2 = s->prev1, s->prev1 = id;
    if (s->npushed < 2) s->npushed++;
}

static int bucket(uint32_t t) { return t == 0 ? 0 : t == 1 ? 1 : t < 4 ? 2 : 3; }

/* One expert's list for the symbol being coded: entries sym[0..n), counts c (8- or 16-bit), total tot. */
typedef struct {
    const uint32_t* sym;
    const uint8_t* c8;
    const uint16_t* c16;
    uint32_t n, tot;
} BmList;

static uint32_t list_count(const BmList* l, uint32_t i) { return l->c8 ? l->c8[i] : l->c16[i]; }

static uint32_t list_count_of(const BmList* l, uint32_t sym) {
    for (uint32_t i = 0; i < l->n; i++)
        if (l->sym[i] == sym) return list_count(l, i);
    return 0;
}

/* index of sym in the sorted cand[0..m), or -1 */
static int cand_index(const uint32_t* cand, int m, uint32_t sym) {
    int lo = 0, hi = m;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cand[mid] < sym) lo = mid + 1;
        else hi = mid;
    }
    return lo < m && cand[lo] == sym ? lo : -1;
}

/* stage B: the PPM-C counts with the escape and the candidates excluded */
typedef struct {
    const Fen* fw;
    const uint32_t* cand;
    int m;
} BmExcl;

static int excl_find(void* ctx, uint32_t t, int* sym, uint32_t* cum, uint32_t* f) {
    const BmExcl* x = (const BmExcl*)ctx;
    const Fen* fw = x->fw;
    uint32_t raw = t + fw->v[0], skipped = fw->v[0];
    for (int j = 0; j < x->m; j++) { /* step over every excluded body that starts at or before the target */
        if (fen_prefix(fw, (int)x->cand[j]) > raw) break;
        raw += fw->v[x->cand[j]], skipped += fw->v[x->cand[j]];
    }
    uint32_t c;
    const int i = fen_find(fw, raw, &c);
    if (i < 1 || i >= fw->n || cand_index(x->cand, x->m, (uint32_t)i) >= 0) return NLM_ERR_CORRUPT;
    *sym = i, *cum = c - skipped, *f = fw->v[i];
    return 0;
}

int bodymix_code(BodyMix* b, Rc* rc, const Fen* fw, int* sym, double* bits, int* candidate) {
    BmScalars* s = &b->s;
    const uint32_t n = (uint32_t)fw->n, T = fw->total;
    if (!rc->decoding && (*sym < 0 || (uint32_t)*sym >= n || fw->v[*sym] == 0)) return NLM_ERR_STATE;
    /* the experts present: 1 order 1, 2 order 2, 3 recency (0, the PPM-C counts, always) */
    BmList L[4];
    memset(L, 0, sizeof L);
    for (int k = 0; k < 2; k++) {
        const BmOrder* o = &b->o[k];
        const int32_t i = s->npushed >= (uint32_t)k + 1 ? order_find(o, ctx_hash(s, k)) : -1;
        if (i >= 0)
            L[1 + k].sym = o->sym + (size_t)i * (size_t)o->K, L[1 + k].c8 = o->c + (size_t)i * (size_t)o->K,
            L[1 + k].n = o->n[i], L[1 + k].tot = o->tot[i];
    }
    L[3].sym = s->rsym, L[3].c16 = s->rc, L[3].n = s->rn, L[3].tot = s->rtot;
    uint32_t* W = s->W[bucket(L[1].tot) * BM_BUCKETS + bucket(L[2].tot)];
    uint64_t ws = W[0], A[4] = {0, 0, 0, 0};
    for (int k = 1; k < 4; k++)
        if (L[k].tot) ws += W[k];
    for (int k = 0; k < 4; k++)
        if (k == 0 || L[k].tot) A[k] = ((uint64_t)W[k] << BM_SCALE) / ws;

    /* the candidates: every body symbol (1 <= x < n) of the three lists, sorted, distinct */
    uint32_t cand[BM_MAXCAND];
    int m = 0;
    for (int k = 1; k < 4; k++)
        for (uint32_t e = 0; e < L[k].n; e++) {
            const uint32_t x = L[k].sym[e];
            if (x < 1 || x >= n) continue;
            int p = m;
            while (p > 0 && cand[p - 1] > x) p--;
            if (p > 0 && cand[p - 1] == x) continue;
            memmove(cand + p + 1, cand + p, (size_t)(m - p) * sizeof *cand);
            cand[p] = x, m++;
        }

    /* stage A: [escape, cand..., other] */
    uint32_t fA[BM_MAXCAND + 2];
    uint32_t other = T - fw->v[0];
    fA[0] = 1 + (uint32_t)(A[0] * fw->v[0] / T);
    for (int j = 0; j < m; j++) fA[1 + j] = 1 + (uint32_t)(A[0] * fw->v[cand[j]] / T), other -= fw->v[cand[j]];
    for (int k = 1; k < 4; k++)
        for (uint32_t e = 0; e < L[k].n; e++) {
            const uint32_t x = L[k].sym[e];
            if (x >= n) continue;
            const uint32_t wgt = (uint32_t)(A[k] * list_count(&L[k], e) / L[k].tot);
            fA[x == 0 ? 0 : 1 + cand_index(cand, m, x)] += wgt;
        }
    fA[m + 1] = other ? 1 + (uint32_t)(A[0] * other / T) : 0;
    uint32_t FA = 0;
    for (int j = 0; j < m + 2; j++) FA += fA[j];

    int a = 0, err;
    if (!rc->decoding) {
        const int ci = *sym == 0 ? -1 : cand_index(cand, m, (uint32_t)*sym);
        a = *sym == 0 ? 0 : ci >= 0 ? 1 + ci : m + 1;
    }
    if ((err = rc_code_freqs(rc, fA, m + 2, FA, &a)) < 0) return err;
    int x;
    if (a == 0) {
        x = 0;
    } else if (a <= m) {
        x = (int)cand[a - 1];
    } else { /* stage B */
        BmExcl ex = {fw, cand, m};
        uint32_t cum = 0;
        x = *sym;
        if (!rc->decoding) {
            cum = fen_prefix(fw, x) - fw->v[0];
            for (int j = 0; j < m && cand[j] < (uint32_t)x; j++) cum -= fw->v[cand[j]];
        }
        if ((err = rc_code_cum(rc, other, &x, cum, rc->decoding ? 0 : fw->v[x], excl_find, &ex)) < 0) return err;
    }
    *sym = x;
    if (candidate) *candidate = a >= 1 && a <= m;
    if (bits) *bits += log2((double)FA / fA[a]) + (a == m + 1 ? log2((double)other / fw->v[x]) : 0.0);

    /* the weights move toward each expert's share of the coded symbol's weight */
    uint64_t part[4], S = 0;
    part[0] = A[0] * fw->v[x] / T;
    for (int k = 1; k < 4; k++) part[k] = L[k].tot ? A[k] * list_count_of(&L[k], (uint32_t)x) / L[k].tot : 0;
    for (int k = 0; k < 4; k++) S += part[k];
    if (!S) return 0;
    for (int k = 0; k < 4; k++) {
        if (k && !L[k].tot) continue; /* an absent expert keeps its weight */
        int64_t target = (int64_t)(part[k] * ws / S), d = target - (int64_t)W[k];
        int64_t step = d >= 0 ? d >> BM_RATE : -((-d + (1 << BM_RATE) - 1) >> BM_RATE); /* floor(d / 2^R) */
        int64_t nw = (int64_t)W[k] + step;
        W[k] = (uint32_t)(nw < BM_WMIN ? BM_WMIN : nw > BM_WMAX ? BM_WMAX : nw);
    }
    return 0;
}
