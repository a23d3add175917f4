/* speller/speller.c: spelling cache, character speller and literal-gap model (docs/format.md §5).
 *
 * Owns every model of unknown bodies and literal gaps; all integer counts, all deterministic.
 *
 * Spelling cache (§5.1, PPM-C): the distinct bodies sent as <unk> since the last reset (the group
 * start) in order of first appearance with counts c_i; symbol 0 (escape) has frequency u = number of
 * bodies (1 when u = 0), symbol i+1 frequency c_i; total n + max(u, 1).  A Fenwick tree gives cum/find
 * in O(log u); the encoder finds a body by hash.  After a hit c_i += 1; after an escape the body is
 * appended with c = 1.  When a hit makes the total exceed 2^28 every c_i becomes (c_i + 1) / 2 (the
 * escape keeps max(u, 1)).
 *
 * Speller (§5.2): order-4 PPM with full exclusions over 257 symbols (bytes 0..255, END = 256).  The
 * history of a body b_0..b_{k-1} is (BOW, b_0, ..., b_{k-1}); the context of order o at position p is the
 * last o symbols of the history (BOW = 256 marks the begin of a word), o <= min(4, p + 1).  Coding a
 * symbol: for o from the highest order down to 0, if the context exists and has a symbol not excluded,
 * code with PPM-D frequencies over its non-excluded symbols: symbol j gets 2c_j − 1, the escape gets d
 * (number of those symbols); a found symbol ends the search, an escape excludes the context's symbols.
 * The coded frequency vector is indexed by symbol value (bytes 0..255, END, then the escape), whatever
 * the order of the context's entry list.
 * Order −1: every non-excluded symbol frequency 1.  END is excluded at position 0 (bodies are not empty)
 * and not coded at position maxlen (implied).  Update (newly spelled bodies and the priming words only;
 * cache hits do not update): for every coded position, the symbol's count is incremented by SPELL_INC in the
 * contexts of order >= the order it was found at, creating contexts and entries as needed (update
 * exclusion); a context whose total exceeds SPELL_LIMIT has every count halved (rounded up).  Priming
 * feeds every word of the list once through the same update (with END after it when shorter than 32).
 *
 * Literal gaps (§5.3): order-1 over {' ', \t, \n, \r, \v, \f, END}; 7 contexts (previous byte of the run,
 * or start) × 7 counts starting at 1; END has frequency 0 at position 0 and is implied at maxlen; after
 * each coded symbol its count += GAP_INC; a context whose total exceeds GAP_LIMIT is halved (rounded up).
 *
 * Byte-model speller (§5.4): the bodies of the group in coding order, each followed by ' ', are the
 * history of a byte model (bytemodel/cm.c, speller sizes); known bodies and cache hits are only seen, an
 * escaped body is coded by it byte by byte up to the ' ' that ends it, with the PPM's distribution at that
 * position (sp_dist) as one more input of its mix; the PPM is updated as before.
 *
 * Tables: a hash of contexts (64-bit key = order << 40 | last o symbols, 9 bits each; open addressing, linear
 * probing) with a linked list of (symbol, count) entries in a pool, both flat arrays so that a reset is a
 * memcpy, and a save or a restore copies the 64-byte chunks written since the last one (pstate_sync).
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "speller/speller.h"

#include "bytemodel/cm.h" /* the byte-model speller (§5.4) */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The constants of the format (docs/format.md §5); none may be overridden at build time. */
#define SPELL_INC 1              /* count increment of the speller */
#define SPELL_LIMIT (1u << 16)   /* a speller context whose total exceeds this is halved */
#define GAP_INC 16
#define GAP_LIMIT (1u << 16)
#define CACHE_LIMIT (1u << 28)

#define NSYM 257 /* 256 bytes + END */
#define END 256
#define BOW 256
#define ORDER 4 /* measured on dev novel words: 3.16 bits/symbol vs 3.29 for order 3 */

typedef struct {
    uint64_t key; /* key + 1; 0 = empty slot */
    int32_t head; /* first entry in the pool, -1 none */
    uint32_t total;
    uint32_t distinct;
} PCtx;

typedef struct {
    uint16_t sym;
    uint16_t pad;
    uint32_t cnt;
    int32_t next;
} PSym;

typedef struct {
    PCtx* ctx;
    uint32_t ccap, cused; /* ccap a power of two */
    PSym* pool;
    uint32_t pcap, pused;
    uint32_t gap[7][7]; /* [previous: 0..5 byte, 6 start][symbol: 0..5 byte, 6 END] */
    uint32_t o0[NSYM];  /* the order-0 context's counts by symbol (0: absent), a dense copy for sp_dist */
    /* The working tables only (speller_save / speller_restore): which 64-byte chunks of ctx and pool were
     * written since the tables and their snapshot were last made equal, so that the next save or restore
     * copies those chunks, not megabytes.  NULL until the first such copy; a write outside them, or a grown
     * ctx, sets dirty_all (the next one copies everything). */
    uint64_t *cdirty, *pdirty;
    uint32_t cdwords, pdwords;
    int dirty_all;
} PState;

typedef struct {
    uint8_t (*body)[SPELLER_MAX_BODY];
    uint8_t* blen;
    int n, cap;        /* bodies */
    Fen fw;            /* element 0 escape, element i+1 body i */
    int32_t* hash;     /* body index + 1, 0 empty */
    uint32_t hcap;     /* power of two */
} Cache;

struct Speller {
    int kind;             /* SPELLER_PPM or SPELLER_CM */
    int learn_all;        /* CM: learn from every body (1) or from the spelled ones only (0) */
    CmModel* cm;          /* SPELLER_CM: the byte model over the token stream (§5.4) */
    CmModel* cm_saved;
    PState cur, own_primed, saved;
    const PState* primed; /* &own_primed, or the template's (speller_new_shared): read only */
    int cur_primed;       /* the working tables are the primed ones, unchanged: cur is not made (cur_state) */
    int saved_primed;     /* the snapshot is of the primed tables: saved was not made */
    Cache cache, cache_saved;
    int has_saved;
    int synced;           /* saved and cur were made equal by the last save or restore, and only cur has
                             changed since, in the chunks its dirty maps mark */
    uint32_t f[NSYM + 1]; /* scratch: frequencies of one PPM level, [NSYM] = escape */
};

/* ---------------- tables ---------------- */

static void pstate_free(PState* p) {
    free(p->ctx);
    free(p->pool);
    free(p->cdirty);
    free(p->pdirty);
    memset(p, 0, sizeof *p);
}

static void gap_init(PState* p) {
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++) p->gap[i][j] = 1;
}

static int pstate_init(PState* p) {
    memset(p, 0, sizeof *p);
    p->ccap = 1024;
    p->ctx = (PCtx*)calloc(p->ccap, sizeof *p->ctx);
    p->pcap = 4096;
    p->pool = (PSym*)malloc(p->pcap * sizeof *p->pool);
    if (!p->ctx || !p->pool) return NLM_ERR_NOMEM;
    gap_init(p);
    return 0;
}

static int pstate_copy(PState* d, const PState* s) {
    if (d->ccap != s->ccap) {
        PCtx* c = (PCtx*)realloc(d->ctx, s->ccap * sizeof *c);
        if (!c) return NLM_ERR_NOMEM;
        d->ctx = c;
        d->ccap = s->ccap;
    }
    if (d->pcap < s->pused) {
        PSym* q = (PSym*)realloc(d->pool, s->pcap * sizeof *q);
        if (!q) return NLM_ERR_NOMEM;
        d->pool = q;
        d->pcap = s->pcap;
    }
    memcpy(d->ctx, s->ctx, s->ccap * sizeof *d->ctx);
    if (s->pused) memcpy(d->pool, s->pool, s->pused * sizeof *d->pool);
    d->cused = s->cused;
    d->pused = s->pused;
    memcpy(d->gap, s->gap, sizeof d->gap);
    memcpy(d->o0, s->o0, sizeof d->o0);
    return 0;
}

/* ---- the chunks written since the last save / restore (speller_save) ---- */
#define CHUNK_SHIFT 6 /* 64-byte chunks: a block's spelled words write a few thousand places all over the
                        * tables, so nearly every 4 KiB chunk would be dirty */

static inline void mark_bytes(PState* p, uint64_t* map, uint32_t words, size_t off, size_t n) {
    if (!map) return; /* not tracked (the primed tables; the working ones before their first snapshot) */
    for (size_t k = off >> CHUNK_SHIFT; k <= (off + n - 1) >> CHUNK_SHIFT; k++) {
        if ((k >> 6) >= words) {
            p->dirty_all = 1;
            return;
        }
        map[k >> 6] |= (uint64_t)1 << (k & 63);
    }
}
static inline void mark_ctx(PState* p, const PCtx* c) {
    mark_bytes(p, p->cdirty, p->cdwords, (size_t)(c - p->ctx) * sizeof *c, sizeof *c);
}
static inline void mark_sym(PState* p, int32_t i) {
    mark_bytes(p, p->pdirty, p->pdwords, (size_t)i * sizeof(PSym), sizeof(PSym));
}

/* Maps covering p's ctx and pool as they are now, all clear. */
static int dirty_clear(PState* p) {
    uint32_t cw = (uint32_t)((((size_t)p->ccap * sizeof(PCtx) >> CHUNK_SHIFT) + 64) >> 6);
    uint32_t pw = (uint32_t)((((size_t)p->pcap * sizeof(PSym) >> CHUNK_SHIFT) + 64) >> 6);
    if (cw > p->cdwords) {
        uint64_t* m = (uint64_t*)realloc(p->cdirty, cw * 8);
        if (!m) return NLM_ERR_NOMEM;
        p->cdirty = m, p->cdwords = cw;
    }
    if (pw > p->pdwords) {
        uint64_t* m = (uint64_t*)realloc(p->pdirty, pw * 8);
        if (!m) return NLM_ERR_NOMEM;
        p->pdirty = m, p->pdwords = pw;
    }
    memset(p->cdirty, 0, (size_t)p->cdwords * 8);
    memset(p->pdirty, 0, (size_t)p->pdwords * 8);
    p->dirty_all = 0;
    return 0;
}

/* Copy the marked chunks of [0, n) bytes from s to d. */
static void copy_marked(uint8_t* d, const uint8_t* s, size_t n, const uint64_t* map, uint32_t words) {
    for (uint32_t w = 0; w < words; w++)
        for (uint64_t b = map[w]; b; b &= b - 1) {
            size_t k = (size_t)w * 64 + (size_t)__builtin_ctzll(b), o = k << CHUNK_SHIFT;
            if (o >= n) return;
            memcpy(d + o, s + o, (n - o) < ((size_t)1 << CHUNK_SHIFT) ? n - o : (size_t)1 << CHUNK_SHIFT);
        }
}

/* d := s, where d and s were equal at the last sync and since then only cur (d or s) changed, in the chunks
 * its maps mark (incremental), or everything (full: not synced, ctx grown, or a write outside the maps).
 * Afterwards the two are equal again and cur's maps are clear. */
static int pstate_sync(PState* d, const PState* s, PState* cur, int synced) {
    if (!synced || cur->dirty_all || !cur->cdirty || d->ccap != s->ccap) {
        int err = pstate_copy(d, s);
        return err ? err : dirty_clear(cur);
    }
    if (d->pcap < s->pused) {
        PSym* q = (PSym*)realloc(d->pool, s->pcap * sizeof *q);
        if (!q) return NLM_ERR_NOMEM;
        d->pool = q;
        d->pcap = s->pcap;
    }
    copy_marked((uint8_t*)d->ctx, (const uint8_t*)s->ctx, (size_t)s->ccap * sizeof *s->ctx, cur->cdirty,
                cur->cdwords);
    copy_marked((uint8_t*)d->pool, (const uint8_t*)s->pool, (size_t)s->pused * sizeof *s->pool, cur->pdirty,
                cur->pdwords);
    d->cused = s->cused;
    d->pused = s->pused;
    memcpy(d->gap, s->gap, sizeof d->gap);
    memcpy(d->o0, s->o0, sizeof d->o0);
    return dirty_clear(cur);
}

/* The working tables.  A fresh or reset speller works on the primed tables themselves until its first update
 * (cur_primed): the copy into cur (megabytes for a default model) is made then, by make_cur, so a context
 * that spells nothing never copies them, and a reset or a save of an unchanged speller copies nothing.  The
 * primed tables' gap counts are gap_init's (priming updates only the contexts): a fresh gap model. */
static const PState* cur_state(const Speller* s) { return s->cur_primed ? s->primed : &s->cur; }

static int make_cur(Speller* s) {
    if (!s->cur_primed) return 0;
    s->synced = 0; /* cur is remade: the snapshot is no longer its earlier self */
    int err = pstate_copy(&s->cur, s->primed);
    if (!err) s->cur_primed = 0;
    return err;
}

/* Lay each context's list out contiguously in the pool, in its order (the primed tables, once): the walks
 * of sp_dist and sp_code_sym then read consecutive entries instead of chasing links across the pool.
 * Only pool indices change: every list keeps its order and its entries, so nothing coded changes. */
static int pstate_compact(PState* p) {
    PSym* q = (PSym*)malloc((p->pcap ? p->pcap : 1) * sizeof *q);
    if (!q) return NLM_ERR_NOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->ccap; i++) {
        PCtx* c = &p->ctx[i];
        if (!c->key || c->head < 0) continue;
        int32_t e = c->head;
        c->head = (int32_t)n;
        for (; e >= 0; e = p->pool[e].next) {
            q[n] = p->pool[e];
            q[n].next = p->pool[e].next >= 0 ? (int32_t)(n + 1) : -1;
            n++;
        }
    }
    free(p->pool);
    p->pool = q;
    return n == p->pused ? 0 : NLM_ERR_STATE; /* every entry is on exactly one list */
}

static inline uint32_t hash64(uint64_t x) {
    x ^= x >> 31;
    x *= 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return (uint32_t)(x >> 32);
}

static inline uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static PCtx* ctx_find(const PState* p, uint64_t key) {
    uint32_t m = p->ccap - 1, i = hash64(key) & m;
    for (;;) {
        PCtx* c = &p->ctx[i];
        if (c->key == key + 1) return c;
        if (c->key == 0) return NULL;
        i = (i + 1) & m;
    }
}

static int ctx_grow(PState* p) {
    uint32_t ncap = p->ccap * 2;
    PCtx* nc = (PCtx*)calloc(ncap, sizeof *nc);
    if (!nc) return NLM_ERR_NOMEM;
    for (uint32_t i = 0; i < p->ccap; i++) {
        if (!p->ctx[i].key) continue;
        uint32_t j = hash64(p->ctx[i].key - 1) & (ncap - 1);
        while (nc[j].key) j = (j + 1) & (ncap - 1);
        nc[j] = p->ctx[i];
    }
    free(p->ctx);
    p->ctx = nc;
    p->ccap = ncap;
    p->dirty_all = 1; /* every entry moved */
    return 0;
}

static PCtx* ctx_get(PState* p, uint64_t key, int* err) {
    PCtx* c = ctx_find(p, key);
    if (c) return c;
    if ((p->cused + 1) * 2 > p->ccap && (*err = ctx_grow(p))) return NULL;
    uint32_t m = p->ccap - 1, i = hash64(key) & m;
    while (p->ctx[i].key) i = (i + 1) & m;
    c = &p->ctx[i];
    c->key = key + 1;
    c->head = -1;
    c->total = 0;
    c->distinct = 0;
    p->cused++;
    mark_ctx(p, c);
    return c;
}

/* Context key of order o at position pos of body b (history BOW, b_0, ...). */
static inline uint64_t ctx_key(const uint8_t* b, int pos, int o) {
    uint64_t k = (uint64_t)o << 40;
    for (int i = 1; i <= o; i++) {
        int hp = pos - i; /* index in b; -1 = BOW */
        uint64_t v = hp >= 0 ? b[hp] : BOW;
        k |= v << (9 * (i - 1));
    }
    return k;
}


/* Index of sym in c's list, or -1; *prev: the entry before it (-1: it is the head).  The order of a list
 * never changes what is coded (frequencies are laid out by symbol value, sums are of integers), so ctx_add
 * keeps each list most-recently-used first, which makes the walks short. */
static int32_t ctx_sym_idx(const PState* p, const PCtx* c, int sym, int32_t* prev) {
    int32_t t = -1;
    for (int32_t e = c->head; e >= 0; e = p->pool[e].next) {
        if (p->pool[e].sym == sym) {
            *prev = t;
            return e;
        }
        t = e;
    }
    *prev = -1;
    return -1;
}

/* Add inc to sym in c: at entry idx (after prev) when it is there (idx >= 0), else as a new entry; either
 * way the entry moves to the head of the list. */
static int ctx_add(PState* p, PCtx* c, int sym, uint32_t inc, int32_t idx, int32_t prev) {
    if (idx < 0) {
        if (p->pused == p->pcap) {
            uint32_t ncap = p->pcap * 2;
            PSym* q = (PSym*)realloc(p->pool, ncap * sizeof *q);
            if (!q) return NLM_ERR_NOMEM;
            p->pool = q;
            p->pcap = ncap;
        }
        idx = (int32_t)p->pused++;
        PSym* e = &p->pool[idx];
        e->sym = (uint16_t)sym;
        e->pad = 0;
        e->cnt = 0;
        e->next = c->head;
        c->head = idx;
        c->distinct++;
    } else if (prev >= 0) {
        p->pool[prev].next = p->pool[idx].next;
        p->pool[idx].next = c->head;
        c->head = idx;
        mark_sym(p, prev);
    }
    p->pool[idx].cnt += inc;
    c->total += inc;
    mark_sym(p, idx);
    mark_ctx(p, c);
    const int order0 = c->key == 1; /* key + 1 of the order-0 context (key 0) */
    if (order0) p->o0[sym] = p->pool[idx].cnt;
    if (c->total > SPELL_LIMIT) {
        uint32_t tot = 0;
        for (int32_t t = c->head; t >= 0; t = p->pool[t].next) {
            p->pool[t].cnt = (p->pool[t].cnt + 1) / 2;
            mark_sym(p, t);
            tot += p->pool[t].cnt;
            if (order0) p->o0[p->pool[t].sym] = p->pool[t].cnt;
        }
        c->total = tot;
    }
    return 0;
}

/* Update with symbol sym at position pos of b (the contexts of order >= the found order).  Each list is
 * walked once: the search for the found order remembers where sym is (pool indices, which survive the
 * table growth of ctx_get). */
static int sp_update(PState* p, const uint8_t* b, int pos, int sym) {
    int maxo = pos + 1 < ORDER ? pos + 1 : ORDER;
    int32_t idx[ORDER + 1], prev[ORDER + 1];
    PCtx* found[ORDER + 1];
    int lo = -1;
    for (int o = maxo; o >= 0 && lo < 0; o--) {
        PCtx* c = found[o] = ctx_find(p, ctx_key(b, pos, o));
        idx[o] = prev[o] = -1;
        if (c && (idx[o] = ctx_sym_idx(p, c, sym, &prev[o])) >= 0) lo = o;
    }
    if (lo < 0) lo = 0;
    const uint32_t ccap = p->ccap; /* the found pointers stay valid until ctx_get grows the table */
    for (int o = maxo; o >= lo; o--) {
        int err = 0;
        PCtx* c = (found[o] && p->ccap == ccap) ? found[o] : ctx_get(p, ctx_key(b, pos, o), &err);
        if (!c) return err ? err : NLM_ERR_NOMEM;
        if ((err = ctx_add(p, c, sym, SPELL_INC, idx[o], prev[o]))) return err;
    }
    return 0;
}

/* Priming (speller_new) updates with a few hundred thousand symbols, and the list walks of sp_update, each
 * link a cache miss in a pool that grows in arrival order, were most of a model's load time.  While it primes,
 * an index of (context, symbol) -> pool entry finds an entry in one probe instead.  The counts, totals,
 * halvings and entries made are sp_update's, in the same order; only the lists' order differs (no entry moves
 * to the front), which nothing coded depends on (see ctx_sym_idx) and which pstate_compact then fixes. */
typedef struct {
    uint64_t* key; /* pair key + 1; 0 = empty */
    int32_t* val;  /* the pool entry */
    uint32_t cap, used;
} PairIdx;

/* a context key is below 2^43 (order << 40 | four 9-bit symbols), so key << 9 | sym is unique */
static inline uint64_t pair_key(uint64_t ctx, int sym) { return ((ctx << 9) | (uint64_t)sym) + 1; }

static int32_t pair_find(const PairIdx* x, uint64_t k) {
    for (uint32_t m = x->cap - 1, i = hash64(k) & m;; i = (i + 1) & m) {
        if (x->key[i] == k) return x->val[i];
        if (x->key[i] == 0) return -1;
    }
}

static int pair_put(PairIdx* x, uint64_t k, int32_t v) {
    if ((x->used + 1) * 2 > x->cap) {
        PairIdx n = {(uint64_t*)calloc((size_t)x->cap * 2, 8), (int32_t*)malloc((size_t)x->cap * 2 * 4), x->cap * 2,
                     x->used};
        if (!n.key || !n.val) {
            free(n.key), free(n.val);
            return NLM_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < x->cap; i++) {
            if (!x->key[i]) continue;
            uint32_t j = hash64(x->key[i]) & (n.cap - 1);
            while (n.key[j]) j = (j + 1) & (n.cap - 1);
            n.key[j] = x->key[i], n.val[j] = x->val[i];
        }
        free(x->key), free(x->val);
        *x = n;
    }
    uint32_t m = x->cap - 1, i = hash64(k) & m;
    while (x->key[i]) i = (i + 1) & m;
    x->key[i] = k, x->val[i] = v;
    x->used++;
    return 0;
}

/* sp_update with the index (x holds every (context, symbol) entry of p) */
static int sp_update_indexed(PState* p, PairIdx* x, const uint8_t* b, int pos, int sym) {
    int maxo = pos + 1 < ORDER ? pos + 1 : ORDER;
    uint64_t key[ORDER + 1];
    int32_t ent[ORDER + 1];
    int lo = -1;
    for (int o = maxo; o >= 0 && lo < 0; o--) {
        key[o] = ctx_key(b, pos, o);
        if ((ent[o] = pair_find(x, pair_key(key[o], sym))) >= 0) lo = o;
    }
    if (lo < 0) lo = 0;
    for (int o = maxo; o >= lo; o--) {
        int err = 0;
        PCtx* c = ctx_get(p, key[o], &err);
        if (!c) return err ? err : NLM_ERR_NOMEM;
        if ((err = ctx_add(p, c, sym, SPELL_INC, ent[o], -1))) return err;
        if (ent[o] < 0 && (err = pair_put(x, pair_key(key[o], sym), c->head))) return err; /* new: at the head */
    }
    return 0;
}

/* Update with every position of body b (END after it when shorter than maxlen); x: priming's index, or NULL. */
static int sp_update_body(PState* p, PairIdx* x, const uint8_t* b, int len, int maxlen) {
    for (int i = 0; i <= len && i < maxlen + (len < maxlen); i++) {
        const int sym = i < len ? b[i] : END;
        int err = x ? sp_update_indexed(p, x, b, i, sym) : sp_update(p, b, i, sym);
        if (err) return err;
    }
    return 0;
}

static double lg(uint32_t F, uint32_t f) { return log2((double)F / (double)f); }

/* Code one symbol (0..256) at position pos of b.  Encoder: *sym given; decoder: *sym set. */
static int sp_code_sym(Speller* s, Rc* rc, const uint8_t* b, int pos, int* sym, double* bits) {
    const PState* p = cur_state(s);
    uint8_t excl[NSYM];
    uint32_t* f = s->f;
    memset(excl, 0, sizeof excl);
    if (pos == 0) excl[END] = 1;
    int maxo = pos + 1 < ORDER ? pos + 1 : ORDER;
    int err;
    for (int o = maxo; o >= 0; o--) {
        const PCtx* c = ctx_find(p, ctx_key(b, pos, o));
        if (!c) continue;
        uint32_t tot = 0, d = 0;
        for (int32_t e = c->head; e >= 0; e = p->pool[e].next) {
            int y = p->pool[e].sym;
            if (excl[y]) continue;
            f[y] = 2 * p->pool[e].cnt - 1; /* PPM-D */
            tot += f[y];
            d++;
        }
        if (d == 0) continue;
        f[NSYM] = d;
        uint32_t F = tot + d;
        int x = NSYM;
        if (!rc->decoding && f[*sym] && !excl[*sym]) x = *sym;
        /* f[] entries of symbols not in this context must be 0: they are cleared below */
        err = rc_code_freqs(rc, f, NSYM + 1, F, &x);
        if (!err && bits) bits[0] += lg(F, f[x]);
        for (int32_t e = c->head; e >= 0; e = p->pool[e].next) {
            f[p->pool[e].sym] = 0;
            excl[p->pool[e].sym] = 1;
        }
        f[NSYM] = 0;
        if (err) return err;
        if (x != NSYM) {
            *sym = x;
            return 0;
        }
    }
    uint32_t F = 0;
    for (int i = 0; i < NSYM; i++) F += (f[i] = !excl[i]);
    if (F == 0) return NLM_ERR_CORRUPT;
    int x = *sym;
    if (!rc->decoding && !f[x]) return NLM_ERR_STATE;
    err = rc_code_freqs(rc, f, NSYM, F, &x);
    if (!err && bits) bits[0] += lg(F, 1);
    memset(f, 0, sizeof s->f);
    if (err) return err;
    *sym = x;
    return 0;
}

/* The contexts of orders 1..maxo at position pos (NULL where absent), their slots and the start of their
 * lists fetched into the cache together first, so the misses overlap (the tables are cold: the word model's
 * weights pass through the cache between two spelled bytes). */
static void sp_find_all(const PState* p, const uint8_t* b, int pos, int maxo, const PCtx** cs) {
    uint64_t keys[ORDER + 1];
    for (int o = 1; o <= maxo; o++) {
        keys[o] = ctx_key(b, pos, o);
#if defined(__GNUC__)
        __builtin_prefetch(&p->ctx[hash64(keys[o]) & (p->ccap - 1)]);
#endif
    }
    for (int o = 1; o <= maxo; o++) {
        cs[o] = ctx_find(p, keys[o]);
#if defined(__GNUC__)
        if (cs[o] && cs[o]->head >= 0) { /* a compacted list: its first entries are consecutive */
            const char* e = (const char*)&p->pool[cs[o]->head];
            uint32_t nb = cs[o]->distinct * (uint32_t)sizeof(PSym);
            for (uint32_t k = 0; k < nb && k < 4 * 64; k += 64) __builtin_prefetch(e + k);
        }
#endif
    }
}

/* The speller's distribution of the symbol at position pos of b (what sp_code_sym would code with), as a
 * tree of sums over bytes for the byte model (§5.4): END is the byte ' ' that ends a body there.  Mass in
 * units of 2^-40, integers only: at each order, from the highest, q = mass / F, a non-excluded symbol y
 * gets q * f_y and the mass becomes q * d; order -1 shares what is left equally. */
static void sp_dist(Speller* s, const uint8_t* b, int pos, uint64_t* tree) {
    const PState* p = cur_state(s);
    uint8_t excl[NSYM];
    uint64_t* leaf = tree + 256;
    memset(excl, 0, sizeof excl);
    memset(tree, 0, 512 * sizeof *tree);
    if (pos == 0) excl[END] = 1;
    uint64_t mass = (uint64_t)1 << 40;
    uint16_t sym[NSYM];
    uint32_t cnt[NSYM];
    int maxo = pos + 1 < ORDER ? pos + 1 : ORDER;
    const PCtx* cs[ORDER + 1];
    sp_find_all(p, b, pos, maxo, cs);
    for (int o = maxo; o >= 0; o--) {
        int d = 0; /* the level's non-excluded symbols: its list walked once; order 0 from its dense copy */
        if (o > 0) {
            const PCtx* c = cs[o];
            for (int32_t e = c ? c->head : -1; e >= 0; e = p->pool[e].next)
                if (!excl[p->pool[e].sym]) sym[d] = p->pool[e].sym, cnt[d++] = p->pool[e].cnt;
        } else {
            for (int y = 0; y < NSYM; y++)
                if (p->o0[y] && !excl[y]) sym[d] = (uint16_t)y, cnt[d++] = p->o0[y];
        }
        if (d == 0) continue;
        uint64_t tot = (uint64_t)d;
        for (int k = 0; k < d; k++) tot += 2 * (uint64_t)cnt[k] - 1;
        const uint64_t q = mass / tot; /* one division per order */
        for (int k = 0; k < d; k++) {
            leaf[sym[k] == END ? ' ' : sym[k]] += q * (2 * (uint64_t)cnt[k] - 1);
            excl[sym[k]] = 1;
        }
        mass = q * (uint64_t)d;
    }
    int left = 0;
    for (int y = 0; y < NSYM; y++) left += !excl[y];
    if (left)
        for (int y = 0; y < NSYM; y++)
            if (!excl[y]) leaf[y == END ? ' ' : y] += mass / (uint64_t)left;
    for (int k = 255; k >= 1; k--) tree[k] = tree[2 * k] + tree[2 * k + 1];
}

/* Spell a body with the speller (no update).  Encoder: b[0..*len).  Decoder: fills b, sets *len. */
static int sp_spell(Speller* s, Rc* rc, uint8_t* b, int* len, int maxlen, double* bits) {
    int n = rc->decoding ? maxlen : *len;
    int pos;
    for (pos = 0; pos < maxlen; pos++) {
        int sym = rc->decoding ? 0 : (pos < n ? b[pos] : END);
        int err = sp_code_sym(s, rc, b, pos, &sym, bits);
        if (err) return err;
        if (sym == END) break;
        b[pos] = (uint8_t)sym;
    }
    if (rc->decoding) *len = pos;
    return 0;
}

/* ---------------- cache ---------------- */

static void cache_free(Cache* c) {
    free(c->body);
    free(c->blen);
    free(c->hash);
    fen_free(&c->fw);
    memset(c, 0, sizeof *c);
}

static uint32_t body_hash(const uint8_t* b, int n) {
    uint32_t h = 2166136261u ^ (uint32_t)n;
    for (int i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
    return hash32(h);
}

static void cache_clear(Cache* c) {
    c->n = 0;
    fen_clear(&c->fw);
    if (c->hash) memset(c->hash, 0, c->hcap * sizeof *c->hash);
    if (c->fw.cap) fen_push(&c->fw, 1); /* escape, cannot fail: capacity exists */
}

static int cache_init(Cache* c) {
    memset(c, 0, sizeof *c);
    fen_init(&c->fw);
    c->hcap = 1024;
    c->hash = (int32_t*)calloc(c->hcap, sizeof *c->hash);
    if (!c->hash) return NLM_ERR_NOMEM;
    return fen_push(&c->fw, 1);
}

static int cache_lookup(const Cache* c, const uint8_t* b, int n) {
    uint32_t m = c->hcap - 1, i = body_hash(b, n) & m;
    for (;;) {
        int32_t v = c->hash[i];
        if (!v) return -1;
        if (c->blen[v - 1] == n && !memcmp(c->body[v - 1], b, (size_t)n)) return v - 1;
        i = (i + 1) & m;
    }
}

static void hash_insert(int32_t* h, uint32_t hcap, uint32_t hv, int32_t v) {
    uint32_t i = hv & (hcap - 1);
    while (h[i]) i = (i + 1) & (hcap - 1);
    h[i] = v;
}

static int cache_append(Cache* c, const uint8_t* b, int n) {
    if (c->n == c->cap) {
        int ncap = c->cap ? c->cap * 2 : 256;
        void* nb = realloc(c->body, (size_t)ncap * SPELLER_MAX_BODY);
        if (!nb) return NLM_ERR_NOMEM;
        c->body = (uint8_t(*)[SPELLER_MAX_BODY])nb;
        uint8_t* nl = (uint8_t*)realloc(c->blen, (size_t)ncap);
        if (!nl) return NLM_ERR_NOMEM;
        c->blen = nl;
        c->cap = ncap;
    }
    if ((uint32_t)(c->n + 1) * 2 > c->hcap) {
        uint32_t ncap = c->hcap * 2;
        int32_t* nh = (int32_t*)calloc(ncap, sizeof *nh);
        if (!nh) return NLM_ERR_NOMEM;
        for (int i = 0; i < c->n; i++) hash_insert(nh, ncap, body_hash(c->body[i], c->blen[i]), i + 1);
        free(c->hash);
        c->hash = nh;
        c->hcap = ncap;
    }
    int err = fen_push(&c->fw, 1);
    if (err) return err;
    memset(c->body[c->n], 0, SPELLER_MAX_BODY);
    memcpy(c->body[c->n], b, (size_t)n);
    c->blen[c->n] = (uint8_t)n;
    hash_insert(c->hash, c->hcap, body_hash(b, n), c->n + 1);
    c->n++;
    if (c->n > 1) fen_add(&c->fw, 0, 1); /* escape frequency u (1 when u <= 1) */
    return 0;
}

static void cache_hit(Cache* c, int i) {
    fen_add(&c->fw, i + 1, 1);
    if (c->fw.total > CACHE_LIMIT) {
        for (int k = 1; k < c->fw.n; k++) c->fw.v[k] = (c->fw.v[k] + 1) / 2;
        fen_set_all(&c->fw);
    }
}

static int cache_copy(Cache* d, const Cache* s) {
    if (d->cap < s->n) {
        void* nb = realloc(d->body, (size_t)s->cap * SPELLER_MAX_BODY);
        if (!nb) return NLM_ERR_NOMEM;
        d->body = (uint8_t(*)[SPELLER_MAX_BODY])nb;
        uint8_t* nl = (uint8_t*)realloc(d->blen, (size_t)s->cap);
        if (!nl) return NLM_ERR_NOMEM;
        d->blen = nl;
        d->cap = s->cap;
    }
    if (d->hcap != s->hcap) {
        int32_t* nh = (int32_t*)realloc(d->hash, s->hcap * sizeof *nh);
        if (!nh) return NLM_ERR_NOMEM;
        d->hash = nh;
        d->hcap = s->hcap;
    }
    if (s->n) {
        memcpy(d->body, s->body, (size_t)s->n * SPELLER_MAX_BODY);
        memcpy(d->blen, s->blen, (size_t)s->n);
    }
    memcpy(d->hash, s->hash, s->hcap * sizeof *d->hash);
    d->n = s->n;
    return fen_copy(&d->fw, &s->fw);
}

/* ---------------- public ---------------- */

Speller* speller_new(const uint8_t* prime, size_t len) {
    PairIdx x = {NULL, NULL, 0, 0};
    Speller* s = (Speller*)calloc(1, sizeof *s);
    if (!s) return NULL;
    s->primed = &s->own_primed;
    if (pstate_init(&s->cur) || pstate_init(&s->own_primed) || pstate_init(&s->saved) || cache_init(&s->cache) ||
        cache_init(&s->cache_saved))
        goto fail;
    x.cap = 4096;
    if (!(x.key = (uint64_t*)calloc(x.cap, 8)) || !(x.val = (int32_t*)malloc((size_t)x.cap * 4))) goto fail;
    size_t i = 0;
    while (prime && i < len) {
        size_t j = i;
        while (j < len && prime[j] != '\n') j++;
        size_t n = j - i;
        if (n > SPELLER_MAX_BODY) n = SPELLER_MAX_BODY;
        if (n && sp_update_body(&s->own_primed, &x, prime + i, (int)n, SPELLER_MAX_BODY)) goto fail;
        i = j + 1;
    }
    free(x.key), free(x.val);
    x.key = NULL, x.val = NULL;
    if (pstate_compact(&s->own_primed)) goto fail;
    s->cur_primed = 1;
    return s;
fail:
    free(x.key), free(x.val);
    speller_free(s);
    return NULL;
}

Speller* speller_new_shared(const Speller* tmpl) {
    Speller* s = (Speller*)calloc(1, sizeof *s);
    if (!s) return NULL;
    s->primed = tmpl->primed;
    if (pstate_init(&s->cur) || pstate_init(&s->own_primed) || pstate_init(&s->saved) || cache_init(&s->cache) ||
        cache_init(&s->cache_saved)) {
        speller_free(s);
        return NULL;
    }
    s->cur_primed = 1;
    return s;
}

void speller_free(Speller* s) {
    if (!s) return;
    cm_free(s->cm);
    cm_free(s->cm_saved);
    pstate_free(&s->cur);
    pstate_free(&s->own_primed);
    pstate_free(&s->saved);
    cache_free(&s->cache);
    cache_free(&s->cache_saved);
    free(s);
}

void speller_reset(Speller* s) {
    s->cur_primed = 1; /* back to the primed tables; cur is made again from them at the first update */
    s->synced = 0;
    cache_clear(&s->cache);
    if (s->kind == SPELLER_CM) cm_reset(s->cm);
}

int speller_set_kind(Speller* s, int kind) {
    if (kind != SPELLER_PPM && kind != SPELLER_CM && kind != SPELLER_CM_ALL) return NLM_ERR_CONFIG;
    if (kind != SPELLER_PPM && !s->cm) {
        int err = NLM_ERR_NOMEM;
        if (!(s->cm = cm_new_speller(&err))) return err;
    }
    s->learn_all = kind == SPELLER_CM_ALL;
    s->kind = kind == SPELLER_PPM ? SPELLER_PPM : SPELLER_CM;
    return 0;
}

int speller_save(Speller* s) {
    s->saved_primed = s->cur_primed;
    int err = s->cur_primed ? 0 : pstate_sync(&s->saved, &s->cur, &s->cur, s->synced);
    s->synced = !s->cur_primed && !err;
    if (!err) err = cache_copy(&s->cache_saved, &s->cache);
    if (!err && s->kind == SPELLER_CM) {
        if (!s->cm_saved && !(s->cm_saved = cm_new_speller(&err))) err = err < 0 ? err : NLM_ERR_NOMEM;
        if (!err) err = cm_copy(s->cm_saved, s->cm);
    }
    s->has_saved = !err;
    return err;
}

int speller_restore(Speller* s) {
    if (!s->has_saved) return NLM_ERR_STATE;
    int err = 0;
    if (s->saved_primed) s->cur_primed = 1;
    else if (!(err = pstate_sync(&s->cur, &s->saved, &s->cur, s->synced))) s->cur_primed = 0;
    s->synced = !s->cur_primed && !err;
    if (!err) err = cache_copy(&s->cache, &s->cache_saved);
    if (!err && s->kind == SPELLER_CM) err = s->cm_saved ? cm_copy(s->cm, s->cm_saved) : NLM_ERR_STATE;
    return err;
}

/* Index of a whitespace byte in §5.3's order, or -1 (bodies never hold whitespace). */
static int ws_index(uint8_t b) {
    switch (b) {
    case ' ': return 0;
    case '\t': return 1;
    case '\n': return 2;
    case '\r': return 3;
    case '\v': return 4;
    case '\f': return 5;
    }
    return -1;
}

/* The token stream the byte-model speller sees (§5.4): every body as sent, each followed by one ' '. */
static void cm_pass(Speller* s, int c) {
    if (s->learn_all) cm_learn(s->cm, c); else cm_see(s->cm, c);
}

static void cm_feed(Speller* s, const uint8_t* b, int n) {
    if (!s->learn_all) cm_prefetch_seen(s->cm, b, n);
    for (int i = 0; i < n; i++) cm_pass(s, b[i]);
    cm_pass(s, ' ');
}

void speller_see_body(Speller* s, const uint8_t* b, int n) {
    if (s->kind == SPELLER_CM) cm_feed(s, b, n);
}

static double bit_cost(const uint16_t* p, int n) {
    double t = 0;
    for (int i = 0; i < n; i++) t += log2(4096.0 / (double)p[i]);
    return t;
}

/* Spell a body with the byte model: its bytes, then ' ' unless it has maxlen bytes (then ' ' is only
 * fed); a body byte is never whitespace, so the decoder stops at the ' '. */
static int cm_spell(Speller* s, Rc* rc, uint8_t* b, int* len, int maxlen, double* bits) {
    int n = rc->decoding ? maxlen : *len;
    uint16_t p[8];
    uint64_t tree[512];
    int pos, err;
    for (pos = 0; pos <= maxlen; pos++) {
        if (pos == maxlen) { /* implied end */
            cm_pass(s, ' ');
            break;
        }
        int c = rc->decoding ? 0 : (pos < n ? b[pos] : ' ');
        if (!rc->decoding && pos < n && ws_index((uint8_t)c) >= 0) return NLM_ERR_STATE;
        sp_dist(s, b, pos, tree);
        if ((err = cm_code_byte(s->cm, rc, &c, bits ? p : NULL, tree))) return err;
        if (bits) bits[0] += bit_cost(p, 8);
        if (c == ' ' && pos > 0) break;
        if (ws_index((uint8_t)c) >= 0) return NLM_ERR_CORRUPT;
        b[pos] = (uint8_t)c;
    }
    if (rc->decoding) *len = pos;
    return 0;
}

int speller_body_symbol(const Speller* s, const uint8_t* body, int n) {
    return n < 1 || n > SPELLER_MAX_BODY ? 0 : cache_lookup(&s->cache, body, n) + 1;
}

int speller_code_unknown(Speller* s, Rc* rc, uint8_t* buf, int* len, int maxlen, int* hit, double* bits) {
    return speller_code_unknown_with(s, rc, buf, len, maxlen, NULL, NULL, hit, bits);
}

int speller_code_unknown_with(Speller* s, Rc* rc, uint8_t* buf, int* len, int maxlen, SpellerSymCoder code_sym,
                              void* ctx, int* hit, double* bits) {
    if (maxlen < 1 || maxlen > SPELLER_MAX_BODY) return NLM_ERR_STATE;
    if (!rc->decoding && (*len < 1 || *len > maxlen)) return NLM_ERR_STATE;
    Cache* c = &s->cache;
    int sym = 0;
    if (!rc->decoding) {
        int i = cache_lookup(c, buf, *len);
        sym = i + 1;
    }
    int err = code_sym ? code_sym(ctx, rc, &c->fw, &sym, bits) : rc_code_fen(rc, &c->fw, &sym);
    if (err) return err;
    if (sym < 0 || sym >= c->fw.n || !c->fw.v[sym]) return NLM_ERR_CORRUPT;
    if (bits && !code_sym) bits[0] += lg(c->fw.total, c->fw.v[sym]);
    if (sym > 0) {
        int i = sym - 1;
        if (rc->decoding) {
            if (c->blen[i] > maxlen) return NLM_ERR_CORRUPT;
            *len = c->blen[i];
            memcpy(buf, c->body[i], (size_t)*len);
        }
        cache_hit(c, i);
        if (hit) *hit = 1;
        if (s->kind == SPELLER_CM) cm_feed(s, buf, *len);
        return 0;
    }
    if (hit) *hit = 0;
    if (s->kind == SPELLER_CM) {
        if ((err = cm_spell(s, rc, buf, len, maxlen, bits ? bits + 1 : NULL))) return err;
    } else {
        if ((err = sp_spell(s, rc, buf, len, maxlen, bits ? bits + 1 : NULL))) return err;
    }
    if (rc->decoding && cache_lookup(c, buf, *len) >= 0) return NLM_ERR_CORRUPT; /* escape to a cached body */
    if ((err = make_cur(s)) || (err = sp_update_body(&s->cur, NULL, buf, *len, maxlen))) return err;
    return cache_append(c, buf, *len);
}


static const uint8_t WS_BYTES[6] = {' ', '\t', '\n', '\r', '\v', '\f'};

int speller_code_gap(Speller* s, Rc* rc, uint8_t* buf, int* len, int maxlen, double* bits) {
    if (maxlen < 1 || maxlen > SPELLER_MAX_GAP) return NLM_ERR_STATE;
    int n = rc->decoding ? maxlen : *len;
    if (!rc->decoding) {
        if (n < 1 || n > maxlen) return NLM_ERR_STATE;
        for (int i = 0; i < n; i++)
            if (ws_index(buf[i]) < 0) return NLM_ERR_STATE;
    }
    int prev = 6, pos, err;
    if ((err = make_cur(s))) return err;
    for (pos = 0; pos < maxlen; pos++) {
        uint32_t* g = s->cur.gap[prev];
        uint32_t f[7];
        uint32_t F = 0;
        for (int j = 0; j < 7; j++) F += (f[j] = g[j]);
        if (pos == 0) F -= f[6], f[6] = 0;
        int x = rc->decoding ? 0 : (pos < n ? ws_index(buf[pos]) : 6);
        err = rc_code_freqs(rc, f, 7, F, &x);
        if (err) return err;
        if (bits) *bits += lg(F, f[x]);
        g[x] += GAP_INC;
        uint32_t tot = 0;
        for (int j = 0; j < 7; j++) tot += g[j];
        if (tot > GAP_LIMIT)
            for (int j = 0; j < 7; j++) g[j] = (g[j] + 1) / 2;
        if (x == 6) break;
        buf[pos] = WS_BYTES[x];
        prev = x;
    }
    if (rc->decoding) *len = pos;
    return 0;
}

size_t speller_table_bytes(const Speller* s) {
    const PState* p = cur_state(s);
    return p->ccap * sizeof(PCtx) + p->pused * sizeof(PSym);
}

int speller_cache_size(const Speller* s) { return s->cache.n; }
