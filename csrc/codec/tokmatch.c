/* codec/tokmatch.c: the token match model (codec/FORMAT.md §3.4), integer arithmetic only.
 *
 * Owns the group's token history, the context hash table over it, the group's vocabulary of unknown
 * bodies and the flag's APM.  Shapes: hist[n] token ids; tab[2^TM_HBITS] positions; dict[TM_DICT] bodies
 * with an open-addressing index didx[2^TM_DBITS]; apm[TM_ROWS][TM_KNOTS] 16-bit probabilities.
 *
 * The match: after each token, if the current match did not continue, the last k tokens for each k of
 * TM_ORDERS (longest first) are hashed and looked up; a candidate is taken only if its k tokens are
 * really equal (no hash collision can predict).  The match length L is then the number of equal tokens
 * before the two positions (at most TM_LMAX), and grows by one with every correctly predicted token.
 * The flag's probability: an APM row chosen by (length bucket, unknown or vocabulary prediction), 33 knots
 * over stretch(q12) interpolated; the nearer knot moves toward the outcome by 1/2^TM_RATE.
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
#define TM_LB 20         /* length buckets: L < 16 itself, then 16 + min(3, floor(log2 L) - 4) */
#define TM_ROWS (TM_LB * 2)
#define TM_KNOTS 33
#define TM_RATE 4
#define TM_NO_ID 0xFFFFFFFFu

static const int TM_ORDERS[] = {4, 2, 1}; /* longest first */
#define TM_NORDERS ((int)(sizeof TM_ORDERS / sizeof TM_ORDERS[0]))

typedef struct {
    uint32_t n, ptr, len, ndict; /* ptr: position of the predicted token (0 = none) */
    int row, knot;               /* the APM entry tokmatch_p used */
} TmScalars;

struct TokMatch {
    int V;
    TmScalars s, s_saved;
    uint32_t* hist;
    uint8_t* gaps;              /* [cap] the gap symbol of each token of hist */
    uint32_t cap;
    uint32_t* tab;              /* [2^TM_HBITS] position + 0 (0 = empty: position 0 never follows a context) */
    uint32_t* didx;             /* [2^TM_DBITS] body index + 1 (0 = empty) */
    uint8_t (*dict)[NLM_MAX_WORD + 1]; /* [TM_DICT] length byte, then the body */
    uint16_t apm[TM_ROWS][TM_KNOTS];
    uint16_t apm_init[TM_KNOTS];
    int16_t squash_t[4096], stretch_t[4096];
    /* snapshot (tokmatch_save): the tables that are not append-only */
    uint32_t *tab_saved, *didx_saved;
    uint16_t apm_saved[TM_ROWS][TM_KNOTS];
    int saved;
};

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
    for (int j = 0; j < TM_KNOTS; j++) {
        int t = (j - 16) * 128; /* squash's argument range, as the byte model's APM rows (FORMAT.md §9.2) */
        if (t > 2047) t = 2047;
        if (t < -2047) t = -2047;
        m->apm_init[j] = (uint16_t)(m->squash_t[t + 2048] * 16);
    }
    tokmatch_reset(m);
    return m;
}

void tokmatch_free(TokMatch* m) {
    if (!m) return;
    free(m->hist);
    free(m->gaps);
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
    for (int r = 0; r < TM_ROWS; r++) memcpy(m->apm[r], m->apm_init, sizeof m->apm_init);
}

int tokmatch_save(TokMatch* m) {
    if (!m->tab_saved) m->tab_saved = (uint32_t*)malloc(sizeof(uint32_t) << TM_HBITS);
    if (!m->didx_saved) m->didx_saved = (uint32_t*)malloc(sizeof(uint32_t) << TM_DBITS);
    if (!m->tab_saved || !m->didx_saved) return NLM_ERR_NOMEM;
    memcpy(m->tab_saved, m->tab, sizeof(uint32_t) << TM_HBITS);
    memcpy(m->didx_saved, m->didx, sizeof(uint32_t) << TM_DBITS);
    memcpy(m->apm_saved, m->apm, sizeof m->apm);
    m->s_saved = m->s;
    m->saved = 1;
    return NLM_OK;
}

int tokmatch_restore(TokMatch* m) {
    if (!m->saved) return NLM_ERR_STATE;
    /* the history and the bodies are append-only: their first n / ndict entries are as they were */
    memcpy(m->tab, m->tab_saved, sizeof(uint32_t) << TM_HBITS);
    memcpy(m->didx, m->didx_saved, sizeof(uint32_t) << TM_DBITS);
    memcpy(m->apm, m->apm_saved, sizeof m->apm);
    m->s = m->s_saved;
    return NLM_OK;
}

size_t tokmatch_memory(const TokMatch* m) {
    if (!m) return 0;
    size_t b = sizeof *m + (size_t)m->cap * 4 + ((size_t)4 << TM_HBITS) + ((size_t)4 << TM_DBITS) +
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

static int len_bucket(uint32_t L) {
    if (L < 16) return (int)L;
    int lg = 31 - __builtin_clz(L); /* >= 4 */
    return 16 + (lg - 4 > 3 ? 3 : lg - 4);
}

int tokmatch_p(TokMatch* m, int q12, int unk) {
    if (q12 < 1) q12 = 1;
    if (q12 > 4095) q12 = 4095;
    int row = len_bucket(m->s.len) * 2 + (unk ? 1 : 0);
    int u = m->stretch_t[q12] + 2048; /* 0..4095 */
    int lo = u >> 7, f = u & 127;
    m->s.row = row;
    m->s.knot = lo + (f >= 64);
    int p = (m->apm[row][lo] * (128 - f) + m->apm[row][lo + 1] * f) >> 11; /* 16-bit -> 12 bits */
    if (p < 1) p = 1;
    if (p > 4095) p = 4095;
    return p;
}

void tokmatch_learn_flag(TokMatch* m, int hit) {
    uint16_t* a = &m->apm[m->s.row][m->s.knot];
    int target = hit ? 65535 : 0;
    int d = target - (int)*a;
    *a = (uint16_t)((int)*a + (d >= 0 ? d >> TM_RATE : ~((~d) >> TM_RATE))); /* floor(d / 2^TM_RATE) */
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
    } else {
        s->ptr = 0;
        s->len = 0;
    }
    if (s->n + 1 >= m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 4096;
        uint32_t* h = (uint32_t*)realloc(m->hist, sizeof(uint32_t) * nc);
        if (!h) return NLM_ERR_NOMEM;
        m->hist = h;
        uint8_t* g = (uint8_t*)realloc(m->gaps, nc);
        if (!g) return NLM_ERR_NOMEM;
        m->gaps = g;
        m->cap = nc;
    }
    /* positions start at 1: hist[0] is never a token, so 0 means "no match" and "empty slot" */
    m->hist[++s->n] = id;
    m->gaps[s->n] = (uint8_t)gap;
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
                if (L >= (uint32_t)k) s->ptr = cand, s->len = L;
            }
        }
        m->tab[h] = n + 1;
    }
    return NLM_OK;
}
