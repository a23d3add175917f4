/* codec/tokmatch.c: the token match model (docs/format.md §3.4), integer arithmetic only.
 *
 * Owns the group's token history, the context hash table over it, the group's vocabulary of unknown
 * bodies and the flag's probability model.  Shapes: hist[n] token ids, gaps[n] their gap symbols, flg[n]
 * their own flags; tab[2^TM_HBITS] positions; dict[TM_DICT] bodies with an open-addressing index
 * didx[2^TM_DBITS]; the flag's tables in TmFlag (16-bit APM knots, 8-bit knot counts, ist[2^TM_IBITS]).
 *
 * The match: after each token, if the current match did not continue, the last k tokens for each k of
 * TM_ORDERS (longest first) are hashed and looked up; a candidate is taken only if its k tokens are
 * really equal (no hash collision can predict).  The match length L is then the number of equal tokens
 * before the two positions (at most TM_LMAX), and grows by one with every correctly predicted token.
 *
 * The flag's probability (tokmatch_set_flag_model):
 *   model 1 (a measurement option; the formats' choice is in formats.h): one APM, a row per (length bucket,
 *     unknown or vocabulary prediction), 33 knots over stretch(q12) interpolated; the nearer knot moves toward
 *     the outcome by 1/2^TM6_RATE.
 *   model 2 (the format's): two APMs of 17 knots, averaged in the stretch domain.  APM "len": (length class,
 *     unknown or vocabulary, the flag the predicted token's earlier occurrence had itself); APM "run":
 *     (unknown or vocabulary, hits since the match began 0/1/2+, the predicted id's own recent flags).
 *     In each the nearer knot moves by 2/(2n + 3) of the way, n its count
 *     (docs/decisions/match-flag-apms.md).
 */
#include "common/fpenv.h" /* first: FP contraction off (no float here; the rule is for every file) */
#include "codec/tokmatch.h"
#include "codec/ctxhash.h" /* mix32 */

#include <stdlib.h>
#include <string.h>

#include "bytemodel/cm.h" /* cm_logistic_tables */
#include "nlm.h"

#define TM_HBITS 18      /* context table: 2^18 positions */
#define TM_DBITS 16      /* unknown-body index: 2^16 slots */
#define TM_DICT (1 << 15) /* at most 2^15 distinct unknown bodies per group */
#define TM_HIST_MAX (1u << 24)
#define TM_LMAX 64       /* longest verified length on a new match */
#define TM_NO_ID 0xFFFFFFFFu
/* flag model 1 (one APM; a measurement option) */
#define TM6_LB 20        /* length buckets: L < 16 itself, then 16 + min(3, floor(log2 L) - 4) */
#define TM6_ROWS (TM6_LB * 2)
#define TM6_KNOTS 33
#define TM6_RATE 4
/* flag model 2 (two APMs, the format's): 17 knots over stretch(q12), 256 apart, each with a count for its rate */
#define TM_KNOTS 17
#define TM_ROWS_LEN (8 * 2 * 3) /* length class x unknown x the earlier occurrence's own flag (none/hit/miss) */
#define TM_ROWS_RUN (2 * 3 * 4) /* unknown x hits since the match began (0, 1, 2+) x the predicted id's state */
#define TM_NMAX 255            /* a knot's count stops here: its rate stays 2/513 */
#define TM_IBITS 12            /* the predicted ids' states: 2^12 slots, hashed */

static const int TM_ORDERS[] = {4, 2, 1}; /* longest first */
#define TM_NORDERS ((int)(sizeof TM_ORDERS / sizeof TM_ORDERS[0]))

typedef struct {
    uint32_t n, ptr, len, ndict; /* ptr: position of the predicted token (0 = none) */
    uint32_t run;                /* hits since the current match began (capped at 255) */
    int row, knot, row2, knot2;  /* the APM entries tokmatch_p used (row2: model 2's APM "run") */
    uint32_t islot;              /* the predicted id's state slot tokmatch_p used */
    int flag;                    /* the current token's flag: 0 none, 1 hit, 2 miss (set by tokmatch_learn_flag) */
} TmScalars;

/* The flag's adaptive tables, both models (small: saved and restored whole). */
typedef struct {
    uint16_t apm6[TM6_ROWS][TM6_KNOTS];
    uint16_t apm_len[TM_ROWS_LEN][TM_KNOTS], apm_run[TM_ROWS_RUN][TM_KNOTS];
    uint8_t n_len[TM_ROWS_LEN][TM_KNOTS], n_run[TM_ROWS_RUN][TM_KNOTS];
    uint8_t ist[1 << TM_IBITS]; /* per predicted id (hashed): 0 unseen, 1 last a miss, 2 last a hit, 3 two+ hits */
} TmFlag;

struct TokMatch {
    int V;
    TmScalars s, s_saved;
    uint32_t* hist;
    uint8_t* gaps;              /* [cap] the gap symbol of each token of hist */
    uint8_t* flg;               /* [cap] each token's flag: 0 no prediction, 1 hit, 2 miss */
    uint32_t cap;
    uint32_t* tab;              /* [2^TM_HBITS] position + 0 (0 = empty: position 0 never follows a context) */
    uint32_t* didx;             /* [2^TM_DBITS] body index + 1 (0 = empty) */
    uint8_t (*dict)[NLM_MAX_WORD + 1]; /* [TM_DICT] length byte, then the body */
    int flag_model;             /* 1 one APM or 2 two APMs: tokmatch_set_flag_model */
    TmFlag f;
    uint16_t apm6_init[TM6_KNOTS], apm_init[TM_KNOTS];
    int16_t squash_t[4096], stretch_t[4096];
    /* snapshot (tokmatch_save): the tables that are not append-only */
    uint32_t *tab_saved, *didx_saved;
    TmFlag f_saved;
    int saved;
};

/* an APM row's initial knots: 16 * squash(clamp((j - center) * step, -2047, 2047)) for j = 0..n-1 */
static void knots_init(uint16_t* a, int n, int center, int step, const int16_t* squash_t) {
    for (int j = 0; j < n; j++) {
        int t = (j - center) * step;
        if (t > 2047) t = 2047;
        if (t < -2047) t = -2047;
        a[j] = (uint16_t)(squash_t[t + 2048] * 16);
    }
}

static uint32_t body_hash(const uint8_t* b, int n) {
    uint32_t h = 0x811C9DC5u;
    for (int i = 0; i < n; i++) h = (h ^ b[i]) * 0x01000193u;
    return h;
}

TokMatch* tokmatch_new(int V) {
    TokMatch* m = (TokMatch*)calloc(1, sizeof *m);
    if (!m) return NULL;
    m->V = V;
    m->tab = (uint32_t*)calloc((size_t)1 << TM_HBITS, sizeof(uint32_t));
    m->didx = (uint32_t*)calloc((size_t)1 << TM_DBITS, sizeof(uint32_t));
    m->dict = malloc((size_t)TM_DICT * sizeof *m->dict);
    if (!m->tab || !m->didx || !m->dict) { tokmatch_free(m); return NULL; }
    cm_logistic_tables(m->squash_t, m->stretch_t);
    /* squash's argument range, as the byte model's APM rows (docs/format.md §9.2) */
    knots_init(m->apm6_init, TM6_KNOTS, 16, 128, m->squash_t);
    knots_init(m->apm_init, TM_KNOTS, 8, 256, m->squash_t);
    m->flag_model = 2;
    tokmatch_reset(m);
    return m;
}

void tokmatch_free(TokMatch* m) {
    if (!m) return;
    free(m->hist);
    free(m->gaps);
    free(m->flg);
    free(m->tab);
    free(m->didx);
    free(m->dict);
    free(m->tab_saved);
    free(m->didx_saved);
    free(m);
}

void tokmatch_reset(TokMatch* m) {
    memset(&m->s, 0, sizeof m->s);
    memset(m->tab, 0, sizeof(uint32_t) << TM_HBITS);
    memset(m->didx, 0, sizeof(uint32_t) << TM_DBITS);
    TmFlag* f = &m->f;
    for (int r = 0; r < TM6_ROWS; r++) memcpy(f->apm6[r], m->apm6_init, sizeof m->apm6_init);
    for (int r = 0; r < TM_ROWS_LEN; r++) memcpy(f->apm_len[r], m->apm_init, sizeof m->apm_init);
    for (int r = 0; r < TM_ROWS_RUN; r++) memcpy(f->apm_run[r], m->apm_init, sizeof m->apm_init);
    memset(f->n_len, 0, sizeof f->n_len);
    memset(f->n_run, 0, sizeof f->n_run);
    memset(f->ist, 0, sizeof f->ist);
}

int tokmatch_set_flag_model(TokMatch* m, int model) {
    if (model != 1 && model != 2) return NLM_ERR_STATE;
    m->flag_model = model;
    tokmatch_reset(m);
    return NLM_OK;
}

int tokmatch_save(TokMatch* m) {
    if (!m->tab_saved) m->tab_saved = (uint32_t*)malloc(sizeof(uint32_t) << TM_HBITS);
    if (!m->didx_saved) m->didx_saved = (uint32_t*)malloc(sizeof(uint32_t) << TM_DBITS);
    if (!m->tab_saved || !m->didx_saved) return NLM_ERR_NOMEM;
    memcpy(m->tab_saved, m->tab, sizeof(uint32_t) << TM_HBITS);
    memcpy(m->didx_saved, m->didx, sizeof(uint32_t) << TM_DBITS);
    m->f_saved = m->f;
    m->s_saved = m->s;
    m->saved = 1;
    return NLM_OK;
}

int tokmatch_restore(TokMatch* m) {
    if (!m->saved) return NLM_ERR_STATE;
    /* the history and the bodies are append-only: their first n / ndict entries are as they were */
    memcpy(m->tab, m->tab_saved, sizeof(uint32_t) << TM_HBITS);
    memcpy(m->didx, m->didx_saved, sizeof(uint32_t) << TM_DBITS);
    m->f = m->f_saved;
    m->s = m->s_saved;
    return NLM_OK;
}

size_t tokmatch_memory(const TokMatch* m) {
    if (!m) return 0;
    size_t b = sizeof *m + (size_t)m->cap * 6 + ((size_t)4 << TM_HBITS) + ((size_t)4 << TM_DBITS) +
               (size_t)TM_DICT * sizeof *m->dict;
    if (m->tab_saved) b += (size_t)4 << TM_HBITS;
    if (m->didx_saved) b += (size_t)4 << TM_DBITS;
    return b;
}

int tokmatch_predict(const TokMatch* m, int32_t* w, const uint8_t** body, int* blen) {
    if (!m->s.ptr) return 0;
    uint32_t id = m->hist[m->s.ptr];
    if (id == TM_NO_ID) return 0;
    if (id < (uint32_t)m->V) {
        *w = (int32_t)id;
        *body = NULL;
        *blen = 0;
    } else {
        const uint8_t* d = m->dict[id - (uint32_t)m->V];
        *w = 0;
        *blen = d[0];
        *body = d + 1;
    }
    return 1;
}

static int len_bucket6(uint32_t L) {
    if (L < 16) return (int)L;
    int lg = 31 - __builtin_clz(L); /* >= 4 */
    return 16 + (lg - 4 > 3 ? 3 : lg - 4);
}

/* model 2's length class: L < 4 itself, 4-7: 4, 8-15: 5, 16-63: 6, 64+: 7 */
static int len_class(uint32_t L) { return L < 4 ? (int)L : L < 8 ? 4 : L < 16 ? 5 : L < 64 ? 6 : 7; }

/* a 17-knot row at u (256 per knot): 16-bit knots -> 12 bits, clamped to [1, 4095] */
static int apm_read(const uint16_t* a, int u) {
    int lo = u >> 8, f = u & 255;
    int p = (a[lo] * (256 - f) + a[lo + 1] * f) >> 12;
    return p < 1 ? 1 : p > 4095 ? 4095 : p;
}

static int flag_p6(TokMatch* m, int u, int unk) {
    const int row = len_bucket6(m->s.len) * 2 + (unk ? 1 : 0);
    const int lo = u >> 7, f = u & 127;
    m->s.row = row;
    m->s.knot = lo + (f >= 64);
    int p = (m->f.apm6[row][lo] * (128 - f) + m->f.apm6[row][lo + 1] * f) >> 11; /* 16-bit -> 12 bits */
    return p < 1 ? 1 : p > 4095 ? 4095 : p;
}

static int flag_p10(TokMatch* m, int u, int unk) {
    const uint32_t id = m->hist[m->s.ptr];
    m->s.islot = (id * 0x9E3779B1u) >> (32 - TM_IBITS);
    m->s.row = (len_class(m->s.len) * 2 + (unk ? 1 : 0)) * 3 + m->flg[m->s.ptr];
    m->s.row2 = ((unk ? 1 : 0) * 3 + (m->s.run < 2 ? (int)m->s.run : 2)) * 4 + m->f.ist[m->s.islot];
    m->s.knot = m->s.knot2 = (u >> 8) + ((u & 255) >= 128);
    const int p1 = apm_read(m->f.apm_len[m->s.row], u), p2 = apm_read(m->f.apm_run[m->s.row2], u);
    const int t = (m->stretch_t[p1] + m->stretch_t[p2]) >> 1; /* floor; -2048 when both are stretch(1) */
    return m->squash_t[(t < -2047 ? -2047 : t) + 2048]; /* squash clamps its argument (docs/format.md §9.2) */
}

int tokmatch_p(TokMatch* m, int q12, int unk) {
    if (q12 < 1) q12 = 1;
    if (q12 > 4095) q12 = 4095;
    const int u = m->stretch_t[q12] + 2048; /* 1..4095 */
    return m->flag_model == 1 ? flag_p6(m, u, unk) : flag_p10(m, u, unk);
}

/* model 2's knot update: 2/(2n + 3) of the way to the outcome, C division (toward zero) */
static void knot_learn(uint16_t* a, uint8_t* n, int hit) {
    const int d = (hit ? 65535 : 0) - (int)*a;
    *a = (uint16_t)((int)*a + 2 * d / (2 * (int)*n + 3));
    if (*n < TM_NMAX) (*n)++;
}

void tokmatch_learn_flag(TokMatch* m, int hit) {
    if (m->flag_model == 1) {
        uint16_t* a = &m->f.apm6[m->s.row][m->s.knot];
        int d = (hit ? 65535 : 0) - (int)*a;
        *a = (uint16_t)((int)*a + (d >= 0 ? d >> TM6_RATE : ~((~d) >> TM6_RATE))); /* floor(d / 2^TM6_RATE) */
    } else {
        knot_learn(&m->f.apm_len[m->s.row][m->s.knot], &m->f.n_len[m->s.row][m->s.knot], hit);
        knot_learn(&m->f.apm_run[m->s.row2][m->s.knot2], &m->f.n_run[m->s.row2][m->s.knot2], hit);
        uint8_t* st = &m->f.ist[m->s.islot];
        *st = (uint8_t)(hit ? (*st >= 2 ? 3 : 2) : 1);
    }
    m->s.flag = hit ? 1 : 2;
}

/* The id of an unknown body: its index in the group's table, added if new (TM_NO_ID when full). */
static uint32_t unknown_id(TokMatch* m, const uint8_t* body, int blen) {
    uint32_t mask = (1u << TM_DBITS) - 1, i = body_hash(body, blen) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t e = m->didx[i];
        if (!e) break;
        const uint8_t* d = m->dict[e - 1];
        if (d[0] == blen && !memcmp(d + 1, body, (size_t)blen)) return (uint32_t)m->V + e - 1;
    }
    if (m->s.ndict >= TM_DICT) return TM_NO_ID; /* the index stays at most half full */
    uint32_t k = m->s.ndict++;
    m->dict[k][0] = (uint8_t)blen;
    memcpy(m->dict[k] + 1, body, (size_t)blen);
    m->didx[i] = k + 1;
    return (uint32_t)m->V + k;
}

static uint32_t ctx_hash(const uint32_t* last, int k) {
    uint32_t h = (uint32_t)k * 0x9E3779B1u;
    for (int i = 0; i < k; i++) h = mix32(h, last[i]);
    return h >> (32 - TM_HBITS);
}

int tokmatch_gap(const TokMatch* m) { return m->gaps[m->s.ptr]; }

uint32_t tokmatch_last_id(const TokMatch* m) { return m->s.n ? m->hist[m->s.n] : TM_NO_ID; }

int tokmatch_push(TokMatch* m, int32_t w, const uint8_t* body, int blen, int gap) {
    TmScalars* s = &m->s;
    if (s->n + 1 >= TM_HIST_MAX) return NLM_OK; /* a full history: the model stops (no prediction) */
    uint32_t id = w >= 1 ? (uint32_t)w : unknown_id(m, body, blen);
    if (s->ptr && m->hist[s->ptr] == id && id != TM_NO_ID) {
        s->ptr++;
        if (s->len < 65535) s->len++;
        if (s->run < 255) s->run++;
    } else {
        s->ptr = 0;
        s->len = 0;
        s->run = 0;
    }
    const uint8_t flag = (uint8_t)s->flag;
    s->flag = 0;
    if (s->n + 1 >= m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 4096;
        uint32_t* h = (uint32_t*)realloc(m->hist, sizeof(uint32_t) * nc);
        if (!h) return NLM_ERR_NOMEM;
        m->hist = h;
        uint8_t* g = (uint8_t*)realloc(m->gaps, nc);
        if (!g) return NLM_ERR_NOMEM;
        m->gaps = g;
        uint8_t* fl = (uint8_t*)realloc(m->flg, nc);
        if (!fl) return NLM_ERR_NOMEM;
        m->flg = fl;
        m->cap = nc;
    }
    /* positions start at 1: hist[0] is never a token, so 0 means "no match" and "empty slot" */
    m->hist[++s->n] = id;
    m->gaps[s->n] = (uint8_t)gap;
    m->flg[s->n] = flag;
    const uint32_t n = s->n;
    for (int o = 0; o < TM_NORDERS; o++) {
        int k = TM_ORDERS[o];
        if (n < (uint32_t)k) continue;
        const uint32_t* last = &m->hist[n - (uint32_t)k + 1];
        uint32_t h = ctx_hash(last, k);
        if (!s->ptr) {
            uint32_t cand = m->tab[h]; /* the position that followed an earlier occurrence */
            if (cand > (uint32_t)k && cand <= n) {
                uint32_t L = 0;
                while (L < TM_LMAX && cand - 1 - L >= 1 && m->hist[cand - 1 - L] == m->hist[n - L] &&
                       m->hist[n - L] != TM_NO_ID)
                    L++;
                if (L >= (uint32_t)k) s->ptr = cand, s->len = L, s->run = 0;
            }
        }
        m->tab[h] = n + 1;
    }
    return NLM_OK;
}
