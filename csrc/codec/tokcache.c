/* codec/tokcache.c: the token cache (docs/format.md §3.6), integer arithmetic only.
 *
 * Owns the group's decayed counts of the tokens coded so far and the mixing of three experts made from
 * them with the network's quantised distribution.  Shapes: cnt1[V] (16-bit) with their class sums cls1[C]
 * and total tot1; per order k = 2, 3 a table of 2^TC_BITS_k slots, each the follower list of one context
 * (the previous k - 1 tokens): a 32-bit check, a total, up to TC_K_k (vocabulary id, count) entries; the
 * weights W[TC_SETS][4] (network, unigram, order 2, order 3) in 1/65536.
 *
 * The mixture, in 2^29 parts: A_k = floor(W_k * 2^29 / sum of the weights of the experts present), and per
 * count of a distribution of total t the rate R = floor(A_k * 2^32 / t), so a count x weighs
 * floor(x * R / 2^32) (one division per distribution, not one per symbol).  Class c gets 1 + the network's
 * weight of f_c + each expert's of its mass in c; word j of class c gets 1 + the weight of g_j at the rate
 * of X_c (the network's weight of the class) over G + each expert's of its count of the word.  Every term
 * is at most its A_k in total, so a stage's total stays below 2^30.
 */
#include "common/fpenv.h" /* first: FP contraction off (no float here; the rule is for every file) */
#include "codec/tokcache.h"
#include "codec/ctxhash.h" /* mix32 */
#include "codec/dirtyslots.h"
#include "kernels/kern.h"   /* kern_weigh, kern_weigh_acc, kern_sum_u32 */

#include <stdlib.h>
#include <string.h>

#include "nlm.h"

#define TC_INC 2           /* a follower's count step */
#define TC_L1 256          /* the unigram counts are halved when their total exceeds this */
#define TC_L2 30           /* a follower list's counts are halved when its total exceeds this */
#define TC_MIX_BITS 29     /* the mixture's scale: 2^29 parts */
#define TC_RATE 6          /* weights move 1/2^TC_RATE of the way to their responsibility */
#define TC_WMIN 655        /* no weight falls below this (1/100) */
#define TC_WMAX (1 << 20)
#define TC_BUCKETS 6       /* context totals 0, 1, 2-3, 4-7, 8-15, 16+ */
#define TC_SETS (TC_BUCKETS * TC_BUCKETS)
static const uint32_t TC_W0[4] = {55705, 3277, 3277, 3277}; /* 0.85, 0.05, 0.05, 0.05 */

typedef struct {
    int K, bits;        /* entries per slot; 2^bits slots */
    uint32_t* check;    /* [S] the context's hash */
    uint16_t* tot;      /* [S] sum of the counts (0: empty) */
    uint8_t* n;         /* [S] entries */
    uint32_t* w;        /* [S*K] vocabulary ids */
    uint16_t* c;        /* [S*K] counts */
} TcOrder;

typedef struct {
    uint32_t tot1, prev1, prev2, npushed;
    int32_t cur[2];     /* tokcache_begin: the slot of the order-2 / order-3 context, -1 when absent */
    int set;            /* tokcache_begin: the weight set */
    uint32_t ws;        /* sum of the present experts' weights */
    uint32_t A[4];      /* their shares in 2^29 parts (0: absent) */
    uint64_t R[4];      /* [1..3]: the experts' rates per count (A_k * 2^32 / their total; 0: absent); [0] unused:
                         * the network's rate depends on the stage's total (tokcache_mix_*) */
} TcScalars;

struct TokCache {
    int V, C;
    const int32_t* class_start;
    uint16_t* cls_of;   /* [V] */
    TcScalars s, s_saved;
    uint16_t* cnt1;     /* [V] */
    uint32_t* cls1;     /* [C] */
    uint32_t* mass;     /* [C] scratch, all 0 between calls: a follower list's counts per class */
    uint32_t W[TC_SETS][4];
    TcOrder o[2];
    /* snapshot */
    uint16_t* cnt1_saved;
    uint32_t* cls1_saved;
    uint32_t W_saved[TC_SETS][4];
    TcOrder o_saved[2];
    int saved;
    /* the order slots written since the last save or restore (their only writer is follower_add), so a save or
     * a restore copies those slots' entries in use instead of both tables (12 MB); all_dirty: every slot
     * (after a reset, and until the first copy) */
    DirtySlots dirty[2];
    int all_dirty;
};

static const int TC_K[2] = {32, 16};
static const int TC_BITS[2] = {15, 16};

static int order_alloc(TcOrder* o, int K, int bits) {
    size_t S = (size_t)1 << bits;
    o->K = K, o->bits = bits;
    o->check = (uint32_t*)malloc(S * 4);
    o->tot = (uint16_t*)malloc(S * 2);
    o->n = (uint8_t*)malloc(S);
    o->w = (uint32_t*)malloc(S * (size_t)K * 4);
    o->c = (uint16_t*)malloc(S * (size_t)K * 2);
    return o->check && o->tot && o->n && o->w && o->c;
}

/* The slot of context hash h: its top bits. */
static size_t slot_of(const TcOrder* o, uint32_t h) { return h >> (32 - o->bits); }

static void order_free(TcOrder* o) {
    free(o->check), free(o->tot), free(o->n), free(o->w), free(o->c);
}

static void order_copy(TcOrder* dst, const TcOrder* src) {
    size_t S = (size_t)1 << src->bits, K = (size_t)src->K;
    memcpy(dst->check, src->check, S * 4);
    memcpy(dst->tot, src->tot, S * 2);
    memcpy(dst->n, src->n, S);
    memcpy(dst->w, src->w, S * K * 4);
    memcpy(dst->c, src->c, S * K * 2);
}

TokCache* tokcache_new(int V, int C, const int32_t* class_start) {
    TokCache* t = (TokCache*)calloc(1, sizeof *t);
    if (!t) return NULL;
    t->V = V, t->C = C, t->class_start = class_start;
    t->cls_of = (uint16_t*)malloc(sizeof(uint16_t) * (size_t)V);
    t->cnt1 = (uint16_t*)malloc(sizeof(uint16_t) * (size_t)V);
    t->cls1 = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)C);
    t->mass = (uint32_t*)calloc((size_t)C, sizeof(uint32_t));
    int ok = t->cls_of && t->cnt1 && t->cls1 && t->mass && C <= 65536;
    for (int k = 0; k < 2 && ok; k++) {
        ok = order_alloc(&t->o[k], TC_K[k], TC_BITS[k]);
        ok = dirty_init(&t->dirty[k], (size_t)1 << TC_BITS[k]) && ok;
    }
    if (!ok) {
        tokcache_free(t);
        return NULL;
    }
    for (int c = 0; c < C; c++)
        for (int32_t w = class_start[c]; w < class_start[c + 1]; w++) t->cls_of[w] = (uint16_t)c;
    tokcache_reset(t);
    return t;
}

void tokcache_free(TokCache* t) {
    if (!t) return;
    free(t->cls_of), free(t->cnt1), free(t->cls1), free(t->mass);
    free(t->cnt1_saved), free(t->cls1_saved);
    for (int k = 0; k < 2; k++) order_free(&t->o[k]), order_free(&t->o_saved[k]), dirty_free(&t->dirty[k]);
    free(t);
}

void tokcache_reset(TokCache* t) {
    memset(&t->s, 0, sizeof t->s);
    memset(t->cnt1, 0, sizeof(uint16_t) * (size_t)t->V);
    memset(t->cls1, 0, sizeof(uint32_t) * (size_t)t->C);
    for (int k = 0; k < 2; k++) {
        memset(t->o[k].n, 0, (size_t)1 << t->o[k].bits);
        memset(t->o[k].tot, 0, (size_t)2 << t->o[k].bits);
    }
    t->all_dirty = 1;
    for (int i = 0; i < TC_SETS; i++) memcpy(t->W[i], TC_W0, sizeof TC_W0);
}

/* Make dst's orders hold src's (save: cur -> saved; restore: saved -> cur): every table when all_dirty, else
 * the slots written since the last copy, each its check, total, count and its n entries in use (a slot's
 * entries beyond n are never read: follower_add writes an entry before it counts it).  Then no slot is
 * dirty. */
static void orders_sync(TokCache* t, TcOrder* dst, const TcOrder* src) {
    for (int k = 0; k < 2; k++) {
        const size_t K = (size_t)src[k].K;
        if (!t->all_dirty)
            for (uint32_t q = 0; q < t->dirty[k].n; q++) {
                const size_t i = t->dirty[k].list[q];
                const int n = src[k].n[i];
                dst[k].check[i] = src[k].check[i], dst[k].tot[i] = src[k].tot[i], dst[k].n[i] = (uint8_t)n;
                memcpy(dst[k].w + i * K, src[k].w + i * K, (size_t)n * 4);
                memcpy(dst[k].c + i * K, src[k].c + i * K, (size_t)n * 2);
            }
        else
            order_copy(&dst[k], &src[k]);
        dirty_clear(&t->dirty[k]);
    }
    t->all_dirty = 0;
}

int tokcache_save(TokCache* t) {
    if (!t->cnt1_saved) t->cnt1_saved = (uint16_t*)malloc(sizeof(uint16_t) * (size_t)t->V);
    if (!t->cls1_saved) t->cls1_saved = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)t->C);
    if (!t->cnt1_saved || !t->cls1_saved) return NLM_ERR_NOMEM;
    for (int k = 0; k < 2; k++)
        if (!t->o_saved[k].check && !order_alloc(&t->o_saved[k], TC_K[k], TC_BITS[k])) {
            order_free(&t->o_saved[k]);
            memset(&t->o_saved[k], 0, sizeof t->o_saved[k]);
            return NLM_ERR_NOMEM;
        }
    memcpy(t->cnt1_saved, t->cnt1, sizeof(uint16_t) * (size_t)t->V);
    memcpy(t->cls1_saved, t->cls1, sizeof(uint32_t) * (size_t)t->C);
    memcpy(t->W_saved, t->W, sizeof t->W);
    orders_sync(t, t->o_saved, t->o);
    t->s_saved = t->s;
    t->saved = 1;
    return NLM_OK;
}

int tokcache_restore(TokCache* t) {
    if (!t->saved) return NLM_ERR_STATE;
    memcpy(t->cnt1, t->cnt1_saved, sizeof(uint16_t) * (size_t)t->V);
    memcpy(t->cls1, t->cls1_saved, sizeof(uint32_t) * (size_t)t->C);
    memcpy(t->W, t->W_saved, sizeof t->W);
    orders_sync(t, t->o, t->o_saved);
    t->s = t->s_saved;
    return NLM_OK;
}

size_t tokcache_memory(const TokCache* t) {
    if (!t) return 0;
    size_t b = sizeof *t + (size_t)t->V * 4 + (size_t)t->C * 12;
    for (int k = 0; k < 2; k++) {
        size_t o = ((size_t)1 << t->o[k].bits) * (7 + (size_t)t->o[k].K * 6);
        b += (t->o_saved[k].check ? 2 * o : o) + ((size_t)5 << t->o[k].bits);
    }
    if (t->cnt1_saved) b += (size_t)t->V * 2 + (size_t)t->C * 4;
    return b;
}

/* The context hash of order 2 (the previous token) or 3 (the previous two). */
static uint32_t ctx_hash(const TcScalars* s, int k) {
    return k == 0 ? mix32(2u * 0x9E3779B1u, s->prev1) : mix32(mix32(3u * 0x9E3779B1u, s->prev2), s->prev1);
}

static int bucket(uint32_t tot) {
    int b = 0;
    while (b < TC_BUCKETS - 1 && tot >= (1u << b)) b++;
    return b; /* 0, 1, 2-3, 4-7, 8-15, 16+ */
}

void tokcache_begin(TokCache* t) {
    TcScalars* s = &t->s;
    uint32_t tot[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        s->cur[k] = -1;
        if (s->npushed < (uint32_t)k + 1) continue;
        const uint32_t h = ctx_hash(s, k);
        const size_t i = slot_of(&t->o[k], h);
        if (t->o[k].n[i] && t->o[k].check[i] == h) s->cur[k] = (int32_t)i, tot[k] = t->o[k].tot[i];
    }
    s->set = bucket(tot[0]) * TC_BUCKETS + bucket(tot[1]);
    const uint32_t* W = t->W[s->set];
    int present[4] = {1, s->tot1 > 0, s->cur[0] >= 0, s->cur[1] >= 0};
    s->ws = 0;
    for (int k = 0; k < 4; k++) s->ws += present[k] ? W[k] : 0;
    for (int k = 0; k < 4; k++) s->A[k] = present[k] ? (uint32_t)(((uint64_t)W[k] << TC_MIX_BITS) / s->ws) : 0;
    s->R[1] = s->A[1] ? ((uint64_t)s->A[1] << 32) / s->tot1 : 0;
    for (int k = 0; k < 2; k++) s->R[2 + k] = s->A[2 + k] ? ((uint64_t)s->A[2 + k] << 32) / tot[k] : 0;
}

/* The rate of a share A over a distribution of total t, and the weight of a count x <= t at rate R
 * (x * R <= A * 2^32 < 2^62). */
static uint64_t rate(uint32_t A, uint32_t t) { return ((uint64_t)A << 32) / t; }

uint32_t tokcache_mix_classes(TokCache* t, const uint32_t* f, uint32_t F, uint32_t* out) {
    const TcScalars* s = &t->s;
    const int C = t->C;
    kern_weigh_acc(out, f, rate(s->A[0], F), C, 1); /* out[c] = 1 + kern_weigh(f[c], R0) */
    if (s->A[1]) kern_weigh_acc(out, t->cls1, s->R[1], C, 0);
    for (int k = 0; k < 2; k++) {
        if (s->cur[k] < 0) continue;
        const TcOrder* o = &t->o[k];
        const size_t i = (size_t)s->cur[k], K = (size_t)o->K;
        uint32_t* m = t->mass; /* all 0 between calls: only the classes of the list's entries are touched */
        uint16_t touched[32];
        int nt = 0;
        for (int e = 0; e < o->n[i]; e++) {
            int c = t->cls_of[o->w[i * K + (size_t)e]];
            if (!m[c]) touched[nt++] = (uint16_t)c;
            m[c] += o->c[i * K + (size_t)e];
        }
        for (int q = 0; q < nt; q++) out[touched[q]] += kern_weigh(m[touched[q]], s->R[2 + k]), m[touched[q]] = 0;
    }
    return kern_sum_u32(out, C);
}

uint32_t tokcache_mix_words(const TokCache* t, int cls, const uint32_t* f, uint32_t F, const uint32_t* g,
                            uint32_t G, uint32_t* out) {
    const TcScalars* s = &t->s;
    const int32_t s0 = t->class_start[cls], n = t->class_start[cls + 1] - s0;
    const uint32_t X = kern_weigh(f[cls], rate(s->A[0], F)); /* the network's weight of the class */
    const uint64_t Rx = rate(X, G);
    kern_weigh_acc(out, g, Rx, n, 1); /* out[j] = 1 + kern_weigh(g[j], Rx) */
    if (s->A[1])
        for (int j = 0; j < n; j++) out[j] += kern_weigh(t->cnt1[s0 + j], s->R[1]);
    for (int k = 0; k < 2; k++) {
        if (s->cur[k] < 0) continue;
        const TcOrder* o = &t->o[k];
        const size_t i = (size_t)s->cur[k], K = (size_t)o->K;
        for (int e = 0; e < o->n[i]; e++) {
            uint32_t w = o->w[i * K + (size_t)e];
            if (t->cls_of[w] == cls) out[w - (uint32_t)s0] += kern_weigh(o->c[i * K + (size_t)e], s->R[2 + k]);
        }
    }
    return kern_sum_u32(out, n);
}

static uint32_t follower_count(const TcOrder* o, int32_t slot, uint32_t w) {
    if (slot < 0) return 0;
    const size_t K = (size_t)o->K, i = (size_t)slot;
    for (int e = 0; e < o->n[i]; e++)
        if (o->w[i * K + (size_t)e] == w) return o->c[i * K + (size_t)e];
    return 0;
}

void tokcache_learn(TokCache* t, int cls, int j, const uint32_t* f, uint32_t F, uint32_t gj, uint32_t G, double* st) {
    TcScalars* s = &t->s;
    const uint32_t w = (uint32_t)(t->class_start[cls] + j);
    uint64_t part[4];
    part[0] = kern_weigh(gj, rate(kern_weigh(f[cls], rate(s->A[0], F)), G));
    part[1] = kern_weigh(t->cnt1[w], s->R[1]);
    for (int k = 0; k < 2; k++) part[2 + k] = kern_weigh(follower_count(&t->o[k], s->cur[k], w), s->R[2 + k]);
    if (st) {
        st[0] += part[1] > 0, st[1] += part[2] > 0, st[2] += part[3] > 0;
        st[3] += 1;
    }
    const uint64_t S = part[0] + part[1] + part[2] + part[3];
    if (!S) return;
    uint32_t* W = t->W[s->set];
    for (int k = 0; k < 4; k++) {
        if (!s->A[k]) continue; /* an absent expert keeps its weight */
        int64_t target = (int64_t)(part[k] * s->ws / S), d = target - (int64_t)W[k];
        int64_t step = d >= 0 ? d >> TC_RATE : -((-d + (1 << TC_RATE) - 1) >> TC_RATE); /* floor(d / 2^R) */
        int64_t nw = (int64_t)W[k] + step;
        W[k] = (uint32_t)(nw < TC_WMIN ? TC_WMIN : nw > TC_WMAX ? TC_WMAX : nw);
    }
}

/* Count w after context h, whose slot is i = slot_of(o, h). */
static void follower_add(TcOrder* o, size_t i, uint32_t h, uint32_t w) {
    const size_t K = (size_t)o->K;
    uint32_t* ws = o->w + i * K;
    uint16_t* cs = o->c + i * K;
    if (!o->n[i] || o->check[i] != h) o->check[i] = h, o->n[i] = 0, o->tot[i] = 0; /* a new context */
    int e = 0;
    while (e < o->n[i] && ws[e] != w) e++;
    if (e == o->n[i]) {
        if (o->n[i] < o->K) {
            o->n[i]++;
        } else { /* full: the first entry of the smallest count gives its place */
            e = 0;
            for (int q = 1; q < o->K; q++)
                if (cs[q] < cs[e]) e = q;
            o->tot[i] = (uint16_t)(o->tot[i] - cs[e]);
        }
        ws[e] = w, cs[e] = 0;
    }
    cs[e] = (uint16_t)(cs[e] + TC_INC);
    o->tot[i] = (uint16_t)(o->tot[i] + TC_INC);
    if (o->tot[i] > TC_L2) { /* halve, dropping the entries that reach 0, the others keeping their order */
        int m = 0;
        uint32_t tot = 0;
        for (int q = 0; q < o->n[i]; q++) {
            uint16_t c = (uint16_t)(cs[q] >> 1);
            if (c) ws[m] = ws[q], cs[m] = c, tot += c, m++;
        }
        o->n[i] = (uint8_t)m, o->tot[i] = (uint16_t)tot;
    }
}

void tokcache_push(TokCache* t, int32_t w, uint32_t id) {
    TcScalars* s = &t->s;
    t->cnt1[w]++, t->cls1[t->cls_of[w]]++;
    if (++s->tot1 > TC_L1) { /* halve every count (rounding down) */
        s->tot1 = 0;
        for (int c = 0; c < t->C; c++) {
            uint32_t sum = 0;
            for (int32_t v = t->class_start[c]; v < t->class_start[c + 1]; v++) sum += (t->cnt1[v] >>= 1);
            t->cls1[c] = sum, s->tot1 += sum;
        }
    }
    for (int k = 0; k < 2; k++)
        if (s->npushed >= (uint32_t)k + 1) {
            const uint32_t h = ctx_hash(s, k);
            const size_t i = slot_of(&t->o[k], h);
            dirty_add(&t->dirty[k], i); /* for the next save/restore */
            follower_add(&t->o[k], i, h, (uint32_t)w);
        }
    s->prev2 = s->prev1, s->prev1 = id;
    if (s->npushed < 2) s->npushed++;
    /* the next token's slots, fetched while the network computes its distributions (no value changes) */
    for (int k = 0; k < 2; k++) {
        const TcOrder* o = &t->o[k];
        const size_t i = slot_of(o, ctx_hash(s, k)), K = (size_t)o->K;
        __builtin_prefetch(&o->check[i]);
        __builtin_prefetch(&o->tot[i]);
        __builtin_prefetch(&o->n[i]);
        for (size_t b = 0; b < K * 4; b += 64) __builtin_prefetch((const uint8_t*)(o->w + i * K) + b);
        for (size_t b = 0; b < K * 2; b += 64) __builtin_prefetch((const uint8_t*)(o->c + i * K) + b);
    }
}
