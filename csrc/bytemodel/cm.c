/* bytemodel/cm.c: the adaptive byte model of docs/format.md §9 (bitwise context mixing, integers only).
 *
 * Owns every table and rule of the byte model; docs/format.md §9 is the same text in prose.  Per bit:
 *
 *   contexts   9 bit-history states: order 0 and 1 (direct tables), orders 2, 3, 4, 6, a word context,
 *              a column context and a sparse context (hashed nibble slots, 8-bit check, bucket of 4);
 *   inputs     x[k] = stretch(SM_k[state_k]) for the 9 contexts, the match model's stretch(SM_m[len, bit])
 *              (0 without a match), a bias 256, and (speller models only, §5.4) the PPM's prediction of
 *              the bit from an outside distribution (0 in byte-model runs): NIN values in 1/256 units;
 *   mixers     two weight sets, one selected by c0 (the bits of this byte so far), one by (match state, c1);
 *              t_j = clamp(Σ w_j[k] x[k] >> 16, ±2047), p_j = squash(t_j); the mix is squash((t_1 + t_2) / 2);
 *   APM        two stages over stretch(mix): by c0 and by (c0, c1), 33 interpolated buckets each;
 *              p = (2 mix + apm1 + apm2 ... see cm_predict), clamped to [1, 4095], coded with F = 4096.
 *
 * Update after the bit: states step through the bit-history machine, state maps move toward the bit at
 * rate 1/(n + 1.5) (n capped), mixer weights by err * x, the APM's two buckets toward the bit.
 *
 * Byte model 2 (docs/format.md §9.7, format 16 on; CM_MODEL_2): 12 hashed contexts (+ the line's first byte
 * with the column, the two bytes above, the column with c1, order 8); a run input per hashed context (the byte
 * that followed it last time and how often in a row, from a shared run table); four weight sets (+ by column
 * class and c0, by contexts seen and the low nibble of c1) over 32 lanes, mixed by a final learned mixer
 * selected by c0; a third APM by a hash of order 3.  Model 1 is the rest of this comment.
 *
 * Every table (squash, stretch, state machine, reciprocals) is computed here by integer code, so the
 * model is the same on every CPU and compiler by construction.
 *
 * Two uses: a run of byte-model blocks (cm_new, cm_code: a history of 2^s bytes, every byte coded) and the
 * byte-model speller (§5.4, cm_new_speller: fixed sizes, a ring history; cm_see appends a byte without
 * touching a table, cm_code_byte codes one, looking its contexts up first).
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "bytemodel/cm.h"
#include "kernels/kern.h" /* the mixers' integer kernels */

#include <stdlib.h>
#include <string.h>

/* CM_TABLES_MAPPED: a model's big tables are pages mapped from the system (table_new) on POSIX systems, except in
 * AddressSanitizer builds, which keep them on the C heap, where an overrun of a table is seen.  Where the tables'
 * memory comes from, never their contents. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CM_ASAN_BUILD 1
#endif
#endif
#if (defined(__unix__) || defined(__APPLE__)) && !defined(__SANITIZE_ADDRESS__) && !defined(CM_ASAN_BUILD)
#include <sys/mman.h>
#define CM_TABLES_MAPPED 1
#endif

/* ---- fixed design constants (format constants: docs/format.md §9.2) ---- */
enum {
    NH = 8,            /* model 1: hashed contexts o2 o3 o4 o6 word column sparse word0 */
    NH2 = 12,          /* model 2: + line-start/column, the two bytes above, column/o1, order 8 (§9.7) */
    NH_MAX = NH2,
    NIN_MAX = 2 * KERN_MIX_N, /* model 2's inputs: 14 contexts, match, bias, ext, 12 runs, 3 unused lanes */
    NINP = KERN_MIX_N, /* model 1's weight-set stride: inputs NIN.. are 0, so their weights never move */
    NINP2 = 2 * KERN_MIX_N, /* model 2's stride */
    M3_SETS = 12 * 256, /* model 2, mixer 3: column class x c0 */
    M4_SETS = 10 * 8 * 16, /* model 2, mixer 4: (contexts seen, match) x bit x low nibble of c1 */
    RUN_CAP = 15,      /* model 2: run counts above this share a state-map entry */
    APM3_BITS = 12,    /* model 2: rows of the order-3 APM */
    RUN_MAXBITS = 22,  /* model 2: entries of the run table, 2^min(s - 1, 22) */
    MIX2_LR = 2,       /* model 2's mixer step (MIX_LR, MIX_LR0 of model 1) */
    MIX2_LR0 = 12,
    FINAL_LR = 4,      /* model 2's final mixer: w += (t * err * FINAL_LR) >> 16 */
    SM_LIMIT = 1023,   /* state-map count cap */
    MATCH_MIN = 6,     /* bytes hashed to find a match */
    MATCH_VERIFY = 32, /* a candidate's length is counted back up to this */
    M2_SETS = 5 * 256, /* mixer 2: match state (0 none, 1..4 length class) x c1 */
    APM_N = 33,
    MIX_LR = 6,        /* mixer step: w += (x * err * lr) >> 18, lr = 16 MIX_LR + (MIX_LR0 << 16) / (pos / 16 + 4096) */
    MIX_LR0 = 16,
    W_INIT = 16384,    /* initial weight 0.25 */
    W_EXT_INIT = 49152, /* speller (§5.4): initial weight of the PPM input, 0.75 ... */
    W_SPELL_INIT = 4096, /* ... and of the others */
    W_MAX = 1 << 24,   /* weights are clamped to +-256.0 */
    CNT_MAX = 35,      /* bit-history counts are capped at 35 */
};

struct CmModel {
    int size;                 /* size class s: the run has at most 2^s bytes (0: a speller model, no limit) */
    int model;                /* CM_MODEL_1 (§9.1-§9.5) or CM_MODEL_2 (§9.7) */
    int nh, nctx;             /* hashed contexts; + order 1 and order 0 */
    int in_match, in_bias, in_ext, in_run, nin; /* input indices: match, bias, the speller's PPM, model 2's runs
                                 (one per hashed context); inputs in use */
    int ninp;                 /* weight-set stride */
    int tbits, mbits;         /* log2 slots of the hashed table, log2 entries of the match table */
    uint32_t hmask;           /* history: a ring of hmask + 1 bytes (a run never wraps it) */
    uint8_t* slots;           /* 2^tbits slots of 16 bytes: [0] check, [1..15] nibble-tree states */
    uint8_t* o1;              /* order 1: 2^16 states, (c1 << 8) | c0 */
    uint8_t o0[256];          /* order 0: state by c0 */
    uint8_t* buf;             /* the last hmask + 1 bytes of the history */
    uint32_t* mt;             /* match table: last position after each MATCH_MIN-byte hash */
    uint8_t* mchk;            /* the byte before that position: a candidate whose byte differs from the
                                 newest byte fails its verification at once, so it is not read (a shortcut
                                 with the same result: docs/format.md §9.2 has no such table) */
    uint32_t pos;             /* bytes of history so far */
    uint32_t nlearn;          /* bytes the model has predicted and learned (the mixer's rate decays with it) */
    int stale;                /* the context slots of the next byte are not looked up yet (cm_see) */
    /* per-byte context */
    uint64_t c8;              /* last 8 bytes, newest in bits 0..7 */
    uint32_t c0;              /* 1 followed by the bits of this byte so far */
    int bit;                  /* bits of this byte done, 0..7 */
    int node;                 /* node of the current bit in its nibble slot (nibble_node) */
    uint32_t h[NH_MAX];       /* context hashes of this byte */
    uint8_t* cp[NH_MAX];      /* current slot of each hashed context */
    uint32_t word, pword;     /* hashes of the current and previous word */
    uint32_t line, pline;     /* start of this line and of the previous one */
    uint32_t mlen, mptr;      /* match length (0 none) and the position it predicts */
    int mmiss;                /* the match failed earlier in this byte */
    /* predictors */
    uint32_t sm[NIN_MAX][256]; /* state maps: p (22 bits) << 10 | count; sm[in_match] by (length bucket, bit),
                                 model 2's sm[in_run + i] by (run count, bit) */
    int32_t x[NIN_MAX];       /* inputs of the current bit (x[nin..] = 0) */
    int sidx[NIN_MAX];        /* state-map entry used per input (-1 none) */
    int32_t* w1;              /* mixer 1: 256 sets x NINP */
    int32_t* w2;              /* mixer 2: M2_SETS sets x NINP */
    int32_t* wsel1, *wsel2;   /* the selected sets */
    int t1, t2, pmix;         /* mixer outputs (stretch domain) and the mix (12-bit p) */
    /* model 2 (§9.7) */
    int32_t *w3, *w4;         /* mixers 3 and 4: M3_SETS, M4_SETS sets x NINP2 */
    int32_t *wsel3, *wsel4;
    int t3, t4;
    int32_t* wf;              /* final mixer: 256 sets (by c0) x 4 weights over t1..t4 */
    int32_t* wself;
    int tf;
    uint32_t* run;            /* run table: 2^rbits entries, check (16 bits) << 16 | byte << 8 | count */
    int rbits;
    uint32_t ridx[NH_MAX];    /* the run entry of each hashed context for this byte */
    int rbyte[NH_MAX], rcnt[NH_MAX]; /* its byte and count (0: none) */
    uint16_t* apm3;           /* 2^APM3_BITS rows x APM_N, by a hash of (order 3, c0); rows set when first used */
    uint8_t* apm3_set;
    int a3;
    const uint64_t* ext;      /* speller: the PPM's byte distribution as a tree of sums ([1] root, [256 + c]
                                 the bytes), or NULL */
    uint16_t* apm1;           /* 256 x APM_N, 16-bit p */
    uint16_t* apm2;           /* 65536 x APM_N; a row is written with its initial values when first used */
    uint8_t* apm2_set;        /* 65536 bits: the rows of apm2 in use */
    uint16_t apm_row[APM_N];  /* the initial row */
    int used;                 /* a byte was seen since the tables were last cleared */
    int a1, a2, aw;           /* APM buckets used (index of the lower one) and the weight of the upper */
    /* tables (integer-computed) */
    int16_t stretch_t[4096];  /* stretch(p) in 1/256 units, p in 12 bits */
    int16_t squash_t[4096];   /* squash(t) for t in [-2048, 2047] */
    uint8_t nex[256][2];      /* bit-history transitions */
    uint8_t n0[256], n1[256]; /* counts of each state */
    int32_t rec[SM_LIMIT + 1]; /* 2^16 / (n + 1.5) */
};

/* ---------------------------------------------------------------- integer tables */

/* e^(-1/256) in Q30, computed by an integer Taylor series (terms alternate and shrink by 1/256k). */
static uint64_t exp_step_q30(void) {
    /* Q62 accumulation: sum_{k>=0} (-1)^k / (256^k k!) */
    uint64_t one = 1ull << 62, term = one, sum = one;
    for (int k = 1; k < 12 && term; k++) {
        term = term / (256ull * (uint64_t)k);
        if (k & 1) sum -= term; else sum += term;
    }
    return (sum + (1ull << 31)) >> 32; /* Q30 */
}

/* The logistic tables shared with the token match model (codec/tokmatch.c): squash_t[t + 2048] for t in
 * [-2048, 2047] and stretch_t[p] for 12-bit p (docs/format.md §9.2). */
void cm_logistic_tables(int16_t* squash_t, int16_t* stretch_t) {
    /* squash(t) = 4096 / (1 + e^(-t/256)) for t >= 0 from powers of e^(-1/256); symmetric below 0. */
    uint64_t e1 = exp_step_q30(), e = 1ull << 30; /* e = e^(-t/256) in Q30 */
    for (int t = 0; t < 2048; t++) {
        uint64_t p = ((uint64_t)4096 << 30) / ((1ull << 30) + e); /* 2048..4095 */
        if (p > 4095) p = 4095;
        squash_t[2048 + t] = (int16_t)p;
        squash_t[2048 - t] = (int16_t)(4096 - p < 1 ? 1 : 4096 - p);
        e = (e * e1 + (1ull << 29)) >> 30;
    }
    squash_t[0] = 1;
    /* stretch(p) = the t whose squash is nearest above p: the inverse of squash, monotone. */
    int t = -2048;
    for (int p = 0; p < 4096; p++) {
        while (t < 2047 && squash_t[t + 2048] < p) t++;
        stretch_t[p] = (int16_t)t;
    }
}

static void build_tables(CmModel* m) {
    cm_logistic_tables(m->squash_t, m->stretch_t);
    /* Bit-history machine: states are count pairs (n0, n1), numbered in breadth-first order from (0, 0).
     * After bit y the count of y grows (capped at CNT_MAX) and the other is discounted: 0, 1 stay; 2, 3
     * become 2; n > 3 becomes n / 2 + 1. */
    uint8_t id[CNT_MAX + 1][CNT_MAX + 1];
    memset(id, 0xFF, sizeof id);
    int ns = 1, head = 0;
    m->n0[0] = m->n1[0] = 0;
    id[0][0] = 0;
    while (head < ns) {
        int a = m->n0[head], b = m->n1[head];
        for (int y = 0; y < 2; y++) {
            int na = a, nb = b;
            if (y) {
                nb = b < CNT_MAX ? b + 1 : CNT_MAX;
                na = a <= 1 ? a : a <= 3 ? 2 : a / 2 + 1;
            } else {
                na = a < CNT_MAX ? a + 1 : CNT_MAX;
                nb = b <= 1 ? b : b <= 3 ? 2 : b / 2 + 1;
            }
            if (id[na][nb] == 0xFF) { /* 254 states in all (docs/format.md §9.2) */
                id[na][nb] = (uint8_t)ns;
                m->n0[ns] = (uint8_t)na;
                m->n1[ns] = (uint8_t)nb;
                ns++;
            }
            m->nex[head][y] = id[na][nb];
        }
        head++;
    }
    for (int s = ns; s < 256; s++) { /* unreachable: map to themselves */
        m->n0[s] = m->n1[s] = 0;
        m->nex[s][0] = m->nex[s][1] = (uint8_t)s;
    }
    for (int n = 0; n <= SM_LIMIT; n++) m->rec[n] = (int32_t)((1u << 17) / (uint32_t)(2 * n + 3));
}

static inline int squash(const CmModel* m, int t) {
    if (t > 2047) t = 2047;
    if (t < -2047) t = -2047;
    return m->squash_t[t + 2048];
}
static inline int stretch(const CmModel* m, int p) { return m->stretch_t[p]; }

/* ---------------------------------------------------------------- state maps */

static void sm_init(CmModel* m) {
    for (int k = 0; k < m->nctx; k++)
        for (int s = 0; s < 256; s++) {
            uint32_t a = m->n0[s], b = m->n1[s];
            uint32_t p22 = (uint32_t)((((uint64_t)(2 * b + 1)) << 22) / (2 * (a + b) + 2));
            m->sm[k][s] = p22 << 10;
        }
    for (int s = 0; s < 256; s++) m->sm[m->in_match][s] = (s & 1 ? 3u << 20 : 1u << 20) << 10; /* 3/4, 1/4 */
    for (int s = 0; s < 256; s++) m->sm[m->in_bias][s] = 0;
    for (int k = m->in_run; k < m->in_run + (m->model == CM_MODEL_2 ? m->nh : 0); k++) /* as the match model's */
        for (int s = 0; s < 256; s++) m->sm[k][s] = (s & 1 ? 3u << 20 : 1u << 20) << 10;
}

static inline int sm_p(const CmModel* m, int k, int s) { return (int)(m->sm[k][s] >> 20); }

static inline void sm_update(CmModel* m, int k, int s, int y) {
    uint32_t e = m->sm[k][s];
    int n = (int)(e & 1023);
    int32_t p22 = (int32_t)(e >> 10);
    int32_t target = y ? (1 << 22) - 1 : 0;
    p22 += (int32_t)kern_asr64((int64_t)(target - p22) * m->rec[n], 16);
    if (n < SM_LIMIT) n++;
    m->sm[k][s] = ((uint32_t)p22 << 10) | (uint32_t)n;
}

/* ---------------------------------------------------------------- hashing and slots */

static inline uint32_t hash64(uint64_t x, uint32_t salt) {
    x = (x + salt) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(x >> 32);
}

uint32_t cm_hash64(uint64_t x, uint32_t salt) { return hash64(x, salt); }

/* The slot of hash h: bucket of 4 slots at the top tbits of h (low 2 bits cleared), check = h's low byte.
 * A miss takes the slot whose first state has the smallest count and clears it. */
static uint8_t* slot_find(CmModel* m, uint32_t h) {
    uint32_t base = (h >> (32 - m->tbits)) & ~3u;
    uint8_t chk = (uint8_t)h;
    uint8_t* b = m->slots + (size_t)base * 16;
    for (int j = 0; j < 4; j++)
        if (b[j * 16] == chk) return b + j * 16;
    int best = 0, bp = 1 << 30;
    for (int j = 0; j < 4; j++) {
        uint8_t s = b[j * 16 + 1];
        int pr = m->n0[s] + m->n1[s];
        if (pr < bp) bp = pr, best = j;
    }
    uint8_t* s = b + best * 16;
    memset(s, 0, 16);
    s[0] = chk;
    return s;
}

/* The slots of the nh hashes hs[] into cp[]: every bucket is fetched first, so their cache misses overlap
 * (slot_find one after the other, in order: the same slots as without the prefetch). */
static void slots_find(CmModel* m, const uint32_t* hs) {
#if defined(__GNUC__)
    for (int i = 0; i < m->nh; i++)
        __builtin_prefetch(m->slots + (size_t)((hs[i] >> (32 - m->tbits)) & ~3u) * 16, 1);
#endif
    for (int i = 0; i < m->nh; i++) m->cp[i] = slot_find(m, hs[i]);
}

/* The match table's entry after the last bytes c8 (their low MATCH_MIN bytes hashed). */
static inline uint32_t match_slot(const CmModel* m, uint64_t c8) {
    return hash64(c8 & 0xFFFFFFFFFFFFull, 0x1234567u) >> (32 - m->mbits);
}

/* ---------------------------------------------------------------- the tables' memory */

/* A model's tables of at least this many bytes are mapped pages of their own (POSIX mmap): they go back to the
 * system when the model is freed, and come zeroed and untouched.  From the C heap, a process that decodes many small
 * frames (a byte-model run each, 5 to 103 MB of tables) kept the freed tables' pages: glibc serves blocks under its
 * adaptive mmap threshold from the heap and returns little of it (issue 42: RSS grew by hundreds of MB over 2,400
 * damaged frames).  A speed and memory setting only: the tables' contents do not depend on it. */
#define TABLE_MAPPED_MIN ((size_t)256 << 10)

/* n bytes of a table, zeroed (zero) or with any content the model writes before it reads; NULL without memory. */
static void* table_new(size_t n, int zero) {
#ifdef CM_TABLES_MAPPED
    if (n >= TABLE_MAPPED_MIN) {
        void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
#endif
    return zero ? calloc(n, 1) : malloc(n);
}

/* A table of n bytes from table_new (or NULL). */
static void table_free(void* p, size_t n) {
    if (!p) return;
#ifdef CM_TABLES_MAPPED
    if (n >= TABLE_MAPPED_MIN) {
        munmap(p, n);
        return;
    }
#else
    (void)n;
#endif
    free(p);
}

/* The tables' sizes in bytes: one place for cm_alloc, cm_free, cm_copy and cm_memory. */
static size_t slots_bytes(const CmModel* m) { return (size_t)16 << m->tbits; }
static size_t hist_bytes(const CmModel* m) { return (size_t)m->hmask + 1; }
static size_t match_bytes(const CmModel* m) { return (size_t)4 << m->mbits; }
static size_t mchk_bytes(const CmModel* m) { return (size_t)1 << m->mbits; }
static size_t w1_bytes(const CmModel* m) { return sizeof(int32_t) * 256 * m->ninp; }
static size_t w2_bytes(const CmModel* m) { return sizeof(int32_t) * M2_SETS * m->ninp; }
static size_t w3_bytes(const CmModel* m) { return sizeof(int32_t) * M3_SETS * m->ninp; }
static size_t w4_bytes(const CmModel* m) { return sizeof(int32_t) * M4_SETS * m->ninp; }
static size_t run_bytes(const CmModel* m) { return (size_t)4 << m->rbits; }
enum {
    O1_BYTES = 65536,
    APM1_BYTES = sizeof(uint16_t) * 256 * APM_N,
    APM2_BYTES = sizeof(uint16_t) * 65536 * APM_N,
    APM2_SET_BYTES = 65536 / 8,
    WF_BYTES = sizeof(int32_t) * 256 * 4,
    APM3_BYTES = sizeof(uint16_t) * APM_N << APM3_BITS,
    APM3_SET_BYTES = (1 << APM3_BITS) / 8,
};

/* ---------------------------------------------------------------- model */

/* Every adaptive table to its initial content, the history empty. */
static void cm_clear(CmModel* m) {
    if (m->used) { /* fresh tables come zeroed from table_new, untouched (a small run costs little) */
        memset(m->slots, 0, slots_bytes(m));
        memset(m->o1, 0, O1_BYTES);
        memset(m->mt, 0, match_bytes(m));
        memset(m->mchk, 0, mchk_bytes(m));
        memset(m->apm2_set, 0, APM2_SET_BYTES);
        if (m->model == CM_MODEL_2) {
            memset(m->run, 0, run_bytes(m));
            memset(m->apm3_set, 0, APM3_SET_BYTES);
        }
        m->used = 0;
    }
    memset(m->o0, 0, sizeof m->o0);
    m->pos = m->nlearn = 0;
    m->c8 = 0;
    m->bit = m->node = 0;
    m->word = m->pword = 0;
    m->mlen = m->mptr = 0;
    m->mmiss = m->stale = 0;
    memset(m->h, 0, sizeof m->h); /* a fresh model's: the first byte's second nibble uses h = 0 */
    sm_init(m);
    const int32_t wi = m->size ? W_INIT : W_SPELL_INIT;
    /* a set's initial weights: model 1 wi for the inputs up to the PPM's (W_EXT_INIT for it); model 2 (four
     * sets mixed, more inputs) wi / 2 for those, wi / 4 for its run inputs; 0 for the unused lanes */
    int32_t w0[NIN_MAX];
    const int32_t wc = m->model == CM_MODEL_2 ? wi / 2 : wi;
    for (int k = 0; k < m->ninp; k++)
        w0[k] = k == m->in_ext ? W_EXT_INIT : k < m->in_ext ? wc : k < m->nin ? wc / 2 : 0;
    for (int i = 0; i < 256 * m->ninp; i++) m->w1[i] = w0[i % m->ninp];
    for (int i = 0; i < M2_SETS * m->ninp; i++) m->w2[i] = w0[i % m->ninp];
    if (m->model == CM_MODEL_2) {
        for (int i = 0; i < M3_SETS * m->ninp; i++) m->w3[i] = w0[i % m->ninp];
        for (int i = 0; i < M4_SETS * m->ninp; i++) m->w4[i] = w0[i % m->ninp];
        for (int i = 0; i < 256 * 4; i++) m->wf[i] = 1 << 14; /* 1/4 each */
        memset(m->ridx, 0, sizeof m->ridx);
        memset(m->rcnt, 0, sizeof m->rcnt);
        memset(m->rbyte, 0, sizeof m->rbyte);
    }
    memset(m->x, 0, sizeof m->x);
    for (int j = 0; j < APM_N; j++) m->apm_row[j] = (uint16_t)(squash(m, (j - 16) * 128) * 16);
    for (int c = 0; c < 256; c++) memcpy(m->apm1 + (size_t)c * APM_N, m->apm_row, sizeof m->apm_row);
    m->c0 = 1;
    m->line = m->pline = 0;
    for (int i = 0; i < m->nh; i++) m->cp[i] = slot_find(m, hash64(0, (uint32_t)i + 1));
}

static CmModel* cm_alloc(int size, int model, int hbits, int tbits, int mbits, int* err) {
    CmModel* m = (CmModel*)calloc(1, sizeof *m);
    if (!m) goto nomem;
    m->size = size;
    m->model = model;
    m->nh = model == CM_MODEL_2 ? NH2 : NH;
    m->nctx = m->nh + 2;
    m->in_match = m->nctx;
    m->in_bias = m->nctx + 1;
    m->in_ext = m->nctx + 2;
    m->in_run = m->nctx + 3;
    m->nin = m->in_run + (model == CM_MODEL_2 ? m->nh : 0);
    m->ninp = model == CM_MODEL_2 ? NINP2 : NINP;
    m->tbits = tbits;
    m->mbits = mbits;
    m->hmask = (uint32_t)(((uint64_t)1 << hbits) - 1);
    m->slots = (uint8_t*)table_new(slots_bytes(m), 1);
    m->o1 = (uint8_t*)table_new(O1_BYTES, 1);
    m->buf = (uint8_t*)table_new(hist_bytes(m), 0);
    m->mt = (uint32_t*)table_new(match_bytes(m), 1);
    m->mchk = (uint8_t*)table_new(mchk_bytes(m), 1);
    m->apm2_set = (uint8_t*)table_new(APM2_SET_BYTES, 1);
    m->w1 = (int32_t*)table_new(w1_bytes(m), 0);
    m->w2 = (int32_t*)table_new(w2_bytes(m), 0);
    m->apm1 = (uint16_t*)table_new(APM1_BYTES, 0);
    m->apm2 = (uint16_t*)table_new(APM2_BYTES, 0);
    if (!m->slots || !m->o1 || !m->buf || !m->mt || !m->mchk || !m->w1 || !m->w2 || !m->apm1 || !m->apm2 || !m->apm2_set)
        goto nomem;
    if (model == CM_MODEL_2) {
        m->rbits = size - 1 < RUN_MAXBITS ? size - 1 : RUN_MAXBITS;
        m->w3 = (int32_t*)table_new(w3_bytes(m), 0);
        m->w4 = (int32_t*)table_new(w4_bytes(m), 0);
        m->wf = (int32_t*)table_new(WF_BYTES, 0);
        m->run = (uint32_t*)table_new(run_bytes(m), 1);
        m->apm3 = (uint16_t*)table_new(APM3_BYTES, 0);
        m->apm3_set = (uint8_t*)table_new(APM3_SET_BYTES, 1);
        if (!m->w3 || !m->w4 || !m->wf || !m->run || !m->apm3 || !m->apm3_set) goto nomem;
    }
    build_tables(m);
    cm_clear(m);
    return m;
nomem:
    cm_free(m);
    *err = NLM_ERR_NOMEM;
    return NULL;
}

CmModel* cm_new(int size, int model, int* err) {
    if (size < CM_SIZE_MIN || size > CM_SIZE_MAX) {
        *err = NLM_ERR_CORRUPT;
        return NULL;
    }
    if (model != CM_MODEL_1 && model != CM_MODEL_2) {
        *err = NLM_ERR_STATE;
        return NULL;
    }
    return cm_alloc(size, model, size, size + 3 < 22 ? size + 3 : 22, size - 2, err);
}

CmModel* cm_new_speller(int* err) {
    return cm_alloc(0, CM_MODEL_1, CM_SPELL_HBITS, CM_SPELL_TBITS, CM_SPELL_MBITS, err);
}

void cm_reset(CmModel* m) { cm_clear(m); }

int cm_copy(CmModel* dst, const CmModel* src) {
    if (dst->tbits != src->tbits || dst->mbits != src->mbits || dst->hmask != src->hmask || dst->model != src->model)
        return NLM_ERR_STATE;
    /* everything but the table pointers, then the tables; cp[] and the selected sets point into src */
    uint8_t *slots = dst->slots, *o1 = dst->o1, *buf = dst->buf;
    uint32_t* mt = dst->mt;
    uint8_t* mchk = dst->mchk;
    int32_t *w1 = dst->w1, *w2 = dst->w2;
    uint16_t *apm1 = dst->apm1, *apm2 = dst->apm2;
    uint8_t* apm2_set = dst->apm2_set;
    int32_t *w3 = dst->w3, *w4 = dst->w4, *wf = dst->wf;
    uint32_t* run = dst->run;
    uint16_t* apm3 = dst->apm3;
    uint8_t* apm3_set = dst->apm3_set;
    *dst = *src;
    dst->w3 = w3, dst->w4 = w4, dst->wf = wf, dst->run = run, dst->apm3 = apm3, dst->apm3_set = apm3_set;
    dst->slots = slots, dst->o1 = o1, dst->buf = buf, dst->mt = mt, dst->mchk = mchk, dst->w1 = w1, dst->w2 = w2;
    dst->apm1 = apm1, dst->apm2 = apm2, dst->apm2_set = apm2_set;
    memcpy(dst->slots, src->slots, slots_bytes(src));
    memcpy(dst->o1, src->o1, O1_BYTES);
    memcpy(dst->buf, src->buf, hist_bytes(src));
    memcpy(dst->mt, src->mt, match_bytes(src));
    memcpy(dst->mchk, src->mchk, mchk_bytes(src));
    memcpy(dst->w1, src->w1, w1_bytes(src));
    memcpy(dst->w2, src->w2, w2_bytes(src));
    memcpy(dst->apm1, src->apm1, APM1_BYTES);
    memcpy(dst->apm2_set, src->apm2_set, APM2_SET_BYTES);
    for (int r = 0; r < 65536; r++) /* only the rows in use hold values */
        if (src->apm2_set[r >> 3] >> (r & 7) & 1)
            memcpy(dst->apm2 + (size_t)r * APM_N, src->apm2 + (size_t)r * APM_N, sizeof src->apm_row);
    for (int i = 0; i < src->nh; i++) dst->cp[i] = dst->slots + (src->cp[i] - src->slots);
    dst->wsel1 = dst->w1 + (src->wsel1 ? src->wsel1 - src->w1 : 0);
    dst->wsel2 = dst->w2 + (src->wsel2 ? src->wsel2 - src->w2 : 0);
    if (src->model == CM_MODEL_2) {
        memcpy(dst->w3, src->w3, w3_bytes(src));
        memcpy(dst->w4, src->w4, w4_bytes(src));
        memcpy(dst->wf, src->wf, WF_BYTES);
        memcpy(dst->run, src->run, run_bytes(src));
        memcpy(dst->apm3_set, src->apm3_set, APM3_SET_BYTES);
        for (size_t r = 0; r < (size_t)1 << APM3_BITS; r++)
            if (src->apm3_set[r >> 3] >> (r & 7) & 1)
                memcpy(dst->apm3 + r * APM_N, src->apm3 + r * APM_N, sizeof src->apm_row);
        dst->wsel3 = dst->w3 + (src->wsel3 ? src->wsel3 - src->w3 : 0);
        dst->wsel4 = dst->w4 + (src->wsel4 ? src->wsel4 - src->w4 : 0);
        dst->wself = dst->wf + (src->wself ? src->wself - src->wf : 0);
    }
    return 0;
}

void cm_free(CmModel* m) {
    if (!m) return;
    table_free(m->slots, slots_bytes(m));
    table_free(m->o1, O1_BYTES);
    table_free(m->buf, hist_bytes(m));
    table_free(m->mt, match_bytes(m));
    table_free(m->mchk, mchk_bytes(m));
    table_free(m->w1, w1_bytes(m));
    table_free(m->w2, w2_bytes(m));
    table_free(m->apm1, APM1_BYTES);
    table_free(m->apm2, APM2_BYTES);
    table_free(m->apm2_set, APM2_SET_BYTES);
    table_free(m->w3, w3_bytes(m));
    table_free(m->w4, w4_bytes(m));
    table_free(m->wf, WF_BYTES);
    table_free(m->run, run_bytes(m));
    table_free(m->apm3, APM3_BYTES);
    table_free(m->apm3_set, APM3_SET_BYTES);
    free(m);
}

int cm_size_class(uint64_t run_size) {
    int s = CM_SIZE_MIN;
    while (s < CM_SIZE_MAX && ((uint64_t)1 << s) < run_size) s++;
    return ((uint64_t)1 << s) < run_size ? -1 : s;
}

size_t cm_memory(const CmModel* m) {
    size_t b = sizeof *m + slots_bytes(m) + O1_BYTES + hist_bytes(m) + match_bytes(m) + mchk_bytes(m) + w1_bytes(m)
               + w2_bytes(m) + APM1_BYTES + APM2_BYTES + APM2_SET_BYTES;
    if (m->model == CM_MODEL_2)
        b += w3_bytes(m) + w4_bytes(m) + WF_BYTES + run_bytes(m) + APM3_BYTES + APM3_SET_BYTES;
    return b;
}

/* Node of the current bit inside its nibble slot: 1, 2-3, 4-7, 8-15. */
static inline int nibble_node(const CmModel* m) {
    return m->bit < 4 ? (int)m->c0 : (int)((m->c0 & ((1u << (m->bit - 4)) - 1)) | (1u << (m->bit - 4)));
}

static inline int apm_p(uint16_t* a, int idx, int w) {
    return (a[idx] * (128 - w) + a[idx + 1] * w) >> 11; /* 16-bit p -> 12 bits */
}

/* Model 2's third APM row: a hash of (order 3, c0). */
static inline size_t apm3_row(const CmModel* m) {
    return ((hash64(m->c8 & 0xFFFFFF, 77) >> 14) ^ (m->c0 * 0x9E5u)) & (((size_t)1 << APM3_BITS) - 1);
}

/* P(next bit = 1) in 12 bits. */
static void cm_ctx(CmModel* m);
static int cm_predict2(CmModel* m, int msel);

static int cm_predict(CmModel* m) {
    if (m->stale) cm_ctx(m);
#if defined(__GNUC__)
    { /* the second APM's row (4.3 MB of rows: a cache miss) is read after the mixing: fetch it now */
        const uint16_t* r = m->apm2 + (size_t)((((m->c8 & 0xFF) << 8) | m->c0)) * APM_N;
        __builtin_prefetch(r);
        __builtin_prefetch(r + APM_N - 1);
        if (m->model == CM_MODEL_2) { /* and model 2's third */
            const uint16_t* r3 = m->apm3 + apm3_row(m) * APM_N;
            __builtin_prefetch(r3);
            __builtin_prefetch(r3 + APM_N - 1);
        }
    }
#endif
    int node = m->node = nibble_node(m);
    int32_t* x = m->x;
    const int nh = m->nh, in_match = m->in_match;
    for (int i = 0; i < nh; i++) {
        int s = m->cp[i][node];
        m->sidx[i] = s;
        x[i] = stretch(m, sm_p(m, i, s));
    }
    int s1 = m->o1[((m->c8 & 0xFF) << 8) | m->c0];
    m->sidx[nh] = s1;
    x[nh] = stretch(m, sm_p(m, nh, s1));
    int s0 = m->o0[m->c0];
    m->sidx[nh + 1] = s0;
    x[nh + 1] = stretch(m, sm_p(m, nh + 1, s0));
    /* match model: the bit the earlier occurrence had here, while this byte still agrees with it */
    int msel = 0;
    m->sidx[in_match] = -1;
    x[in_match] = 0;
    if (m->mlen > 0 && !m->mmiss) {
        int eb = m->buf[m->mptr & m->hmask];
        if (((uint32_t)(eb | 256) >> (8 - m->bit)) == m->c0) {
            int ebit = (eb >> (7 - m->bit)) & 1;
            uint32_t l = m->mlen;
            int lb = l < 16 ? (int)l : 16 + (int)((l - 16) >> 3 < 15 ? (l - 16) >> 3 : 15);
            int s = lb * 2 + ebit;
            m->sidx[in_match] = s;
            x[in_match] = stretch(m, sm_p(m, in_match, s));
            msel = 1 + (l < 8 ? 0 : l < 16 ? 1 : l < 32 ? 2 : 3);
        } else {
            m->mmiss = 1;
        }
    }
    x[m->in_bias] = 256;
    m->sidx[m->in_bias] = -1;
    m->sidx[m->in_ext] = -1;
    x[m->in_ext] = 0;
    if (m->ext) {
        uint64_t all = m->ext[m->c0], one = m->ext[2 * m->c0 + 1];
        int pe = all ? (int)((one * 4096 + all / 2) / all) : 2048;
        x[m->in_ext] = stretch(m, pe < 1 ? 1 : pe > 4095 ? 4095 : pe);
    }
    if (m->model == CM_MODEL_2) return cm_predict2(m, msel);
    /* mixers */
    m->wsel1 = m->w1 + (size_t)m->c0 * NINP;
    m->wsel2 = m->w2 + ((size_t)msel * 256 + (m->c8 & 0xFF)) * NINP;
    int64_t d1, d2; /* Σ w x over the inputs */
    kern_mix2_dot(&d1, &d2, m->wsel1, m->wsel2, x);
    int t1 = (int)kern_asr64(d1, 16), t2 = (int)kern_asr64(d2, 16);
    if (t1 > 2047) t1 = 2047;
    if (t1 < -2047) t1 = -2047;
    if (t2 > 2047) t2 = 2047;
    if (t2 < -2047) t2 = -2047;
    m->t1 = t1;
    m->t2 = t2;
    int t = (t1 + t2) / 2;
    m->pmix = squash(m, t);
    /* APM stages over stretch(mix) */
    int u = t + 2048; /* 1..4095 */
    int lo = u >> 7, w = u & 127;
    m->aw = w;
    m->a1 = (int)m->c0 * APM_N + lo;
    int row = (int)(((m->c8 & 0xFF) << 8) | m->c0);
    if (!(m->apm2_set[row >> 3] >> (row & 7) & 1)) {
        memcpy(m->apm2 + (size_t)row * APM_N, m->apm_row, sizeof m->apm_row);
        m->apm2_set[row >> 3] |= (uint8_t)(1u << (row & 7));
    }
    m->a2 = row * APM_N + lo;
    int pa = apm_p(m->apm1, m->a1, w), pb = apm_p(m->apm2, m->a2, w);
    int p = (m->pmix + 3 * ((pa + pb) >> 1) + 2) >> 2;
    if (p < 1) p = 1;
    if (p > 4095) p = 4095;
    return p;
}

static inline void apm_update(uint16_t* a, int idx, int w, int y) {
    int j = idx + (w >= 64);
    int target = y ? 65535 : 0;
    a[j] = (uint16_t)(a[j] + kern_asr64(target - a[j], 6));
}

static inline int clamp2047(int t) { return t > 2047 ? 2047 : t < -2047 ? -2047 : t; }

/* An APM row, written with its initial values when first used (set: a bit per row). */
static inline void apm_row_touch(CmModel* m, uint16_t* a, uint8_t* set, size_t row) {
    if (!(set[row >> 3] >> (row & 7) & 1)) {
        memcpy(a + row * APM_N, m->apm_row, sizeof m->apm_row);
        set[row >> 3] |= (uint8_t)(1u << (row & 7));
    }
}

/* Model 2 (docs/format.md §9.7), after model 1's inputs: the run inputs, four mixers, the final mixer and
 * three APM stages. */
static int cm_predict2(CmModel* m, int msel) {
    int32_t* x = m->x;
    const int nh = m->nh;
    /* runs: the byte that followed this context last time, while this byte still agrees with it */
    for (int i = 0; i < nh; i++) {
        int k = m->in_run + i;
        m->sidx[k] = -1;
        x[k] = 0;
        if (m->rcnt[i] > 0 && (((uint32_t)m->rbyte[i] | 256) >> (8 - m->bit)) == m->c0) {
            int eb = (m->rbyte[i] >> (7 - m->bit)) & 1;
            int s = (m->rcnt[i] < RUN_CAP ? m->rcnt[i] : RUN_CAP) * 2 + eb;
            m->sidx[k] = s;
            x[k] = stretch(m, sm_p(m, k, s));
        }
    }
    /* weight sets: c0; (match, c1); (column class, c0); (contexts seen, bit, low nibble of c1) */
    int seen = 0;
    for (int i = 0; i < 4; i++) seen += m->cp[i][m->node] != 0;
    if (m->mlen > 0) seen += 5;
    uint32_t col = m->pos - m->line;
    int cb = col < 8 ? (int)col : col < 16 ? 8 : col < 32 ? 9 : col < 64 ? 10 : 11;
    const int ninp = m->ninp;
    m->wsel1 = m->w1 + (size_t)m->c0 * ninp;
    m->wsel2 = m->w2 + ((size_t)msel * 256 + (m->c8 & 0xFF)) * ninp;
    m->wsel3 = m->w3 + ((size_t)cb * 256 + m->c0) * ninp;
    m->wsel4 = m->w4 + ((size_t)(seen * 8 + m->bit) * 16 + (m->c8 & 0xF)) * ninp;
    int64_t d1 = 0, d2 = 0, d3 = 0, d4 = 0;
    for (int k = 0; k < ninp; k += KERN_MIX_N) { /* exact int64 sums: the chunks add in any order */
        int64_t a, b;
        kern_mix2_dot(&a, &b, m->wsel1 + k, m->wsel2 + k, x + k);
        d1 += a, d2 += b;
        kern_mix2_dot(&a, &b, m->wsel3 + k, m->wsel4 + k, x + k);
        d3 += a, d4 += b;
    }
    m->t1 = clamp2047((int)kern_asr64(d1, 16));
    m->t2 = clamp2047((int)kern_asr64(d2, 16));
    m->t3 = clamp2047((int)kern_asr64(d3, 16));
    m->t4 = clamp2047((int)kern_asr64(d4, 16));
    m->wself = m->wf + (size_t)m->c0 * 4;
    int64_t df = (int64_t)m->wself[0] * m->t1 + (int64_t)m->wself[1] * m->t2 + (int64_t)m->wself[2] * m->t3
                 + (int64_t)m->wself[3] * m->t4;
    int t = m->tf = clamp2047((int)kern_asr64(df, 16));
    m->pmix = squash(m, t);
    /* APM stages over stretch(mix): by c0, by (c0, c1), by a hash of (order 3, c0) */
    int u = t + 2048;
    int lo = u >> 7, w = u & 127;
    m->aw = w;
    m->a1 = (int)m->c0 * APM_N + lo;
    size_t row = (size_t)(((m->c8 & 0xFF) << 8) | m->c0);
    apm_row_touch(m, m->apm2, m->apm2_set, row);
    m->a2 = (int)row * APM_N + lo;
    size_t row3 = apm3_row(m);
    apm_row_touch(m, m->apm3, m->apm3_set, row3);
    m->a3 = (int)row3 * APM_N + lo;
    int pa = apm_p(m->apm1, m->a1, w), pb = apm_p(m->apm2, m->a2, w), pc = apm_p(m->apm3, m->a3, w);
    int p = (2 * m->pmix + 3 * pa + 3 * pb + 8 * pc + 8) >> 4;
    return p < 1 ? 1 : p > 4095 ? 4095 : p;
}

/* Model 2's learning after bit y, beyond model 1's state maps of the contexts and the match model. */
static void cm_update2(CmModel* m, int y) {
    for (int k = m->in_run; k < m->in_run + m->nh; k++)
        if (m->sidx[k] >= 0) sm_update(m, k, m->sidx[k], y);
    int lr = (MIX2_LR << 4) + (int)(((uint32_t)MIX2_LR0 << 16) / ((m->nlearn >> 4) + 4096));
    int e1 = ((y << 12) - squash(m, m->t1)) * lr, e2 = ((y << 12) - squash(m, m->t2)) * lr;
    int e3 = ((y << 12) - squash(m, m->t3)) * lr, e4 = ((y << 12) - squash(m, m->t4)) * lr;
    for (int k = 0; k < m->ninp; k += KERN_MIX_N) {
        kern_mix2_train(m->wsel1 + k, m->wsel2 + k, m->x + k, e1, e2, 18, W_MAX);
        kern_mix2_train(m->wsel3 + k, m->wsel4 + k, m->x + k, e3, e4, 18, W_MAX);
    }
    int ef = ((y << 12) - squash(m, m->tf)) * FINAL_LR;
    const int tj[4] = {m->t1, m->t2, m->t3, m->t4};
    for (int j = 0; j < 4; j++) {
        int64_t v = m->wself[j] + kern_asr64((int64_t)tj[j] * ef, 16);
        m->wself[j] = (int32_t)(v > W_MAX ? W_MAX : v < -W_MAX ? -W_MAX : v);
    }
    apm_update(m->apm1, m->a1, m->aw, y);
    apm_update(m->apm2, m->a2, m->aw, y);
    apm_update(m->apm3, m->a3, m->aw, y);
}

static void cm_update(CmModel* m, int y) {
    int node = m->node;
    const int nh = m->nh;
    /* states and state maps */
    for (int i = 0; i < nh; i++) {
        sm_update(m, i, m->sidx[i], y);
        m->cp[i][node] = m->nex[m->sidx[i]][y];
    }
    sm_update(m, nh, m->sidx[nh], y);
    m->o1[((m->c8 & 0xFF) << 8) | m->c0] = m->nex[m->sidx[nh]][y];
    sm_update(m, nh + 1, m->sidx[nh + 1], y);
    m->o0[m->c0] = m->nex[m->sidx[nh + 1]][y];
    if (m->sidx[m->in_match] >= 0) sm_update(m, m->in_match, m->sidx[m->in_match], y);
    if (m->model == CM_MODEL_2) {
        cm_update2(m, y);
        goto next_bit;
    }
    /* mixers: w += x * err * lr, err in 12 bits */
    int lr = (MIX_LR << 4) + (int)(((uint32_t)MIX_LR0 << 16) / ((m->nlearn >> 4) + 4096));
    int e1 = ((y << 12) - squash(m, m->t1)) * lr, e2 = ((y << 12) - squash(m, m->t2)) * lr;
    /* w = clamp(w + floor(x e / 2^18), +-W_MAX) (the clamp: reached only by data that drives one input to
     * saturation for a long time): |x| < 2^11 and |e| < 2^21, so |x e| < 2^32 */
    kern_mix2_train(m->wsel1, m->wsel2, m->x, e1, e2, 18, W_MAX);
    apm_update(m->apm1, m->a1, m->aw, y);
    apm_update(m->apm2, m->a2, m->aw, y);
next_bit:
    m->c0 = (m->c0 << 1) | (uint32_t)y;
    m->bit++;
    if (m->bit == 4) {
        uint32_t hs[NH_MAX], hc = hash64(m->c0, 0x5bd1e995u);
        for (int i = 0; i < nh; i++) hs[i] = m->h[i] ^ hc;
        slots_find(m, hs);
    }
}

static inline int is_letter(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 128; }

/* A byte c joins the history: the last bytes, word, line and match model (no table is touched). */
static void cm_hist(CmModel* m, int c) {
    const uint32_t mask = m->hmask;
    if (m->model == CM_MODEL_2) /* the run table learns the byte, context by context in order */
        for (int i = 0; i < m->nh; i++) {
            uint32_t* e = &m->run[m->ridx[i]];
            uint32_t chk = m->h[i] & 0xFFFF;
            if (*e >> 16 == chk && (*e >> 8 & 0xFF) == (uint32_t)c) {
                if ((*e & 0xFF) < 255) (*e)++;
            } else {
                *e = chk << 16 | (uint32_t)c << 8 | 1;
            }
        }
    m->used = 1;
    uint32_t pos = m->pos;
    m->buf[pos & mask] = (uint8_t)c;
    m->pos = ++pos;
    m->c8 = (m->c8 << 8) | (uint64_t)c;
    m->c0 = 1;
    m->bit = 0;
    m->mmiss = 0;
    /* word and line */
    if (is_letter(c)) {
        int lc = c >= 'A' && c <= 'Z' ? c + 32 : c;
        m->word = (m->word + (uint32_t)lc + 1) * 0x2F0F3A55u;
    } else if (m->word) {
        m->pword = m->word;
        m->word = 0;
    }
    if (c == '\n') {
        m->pline = m->line;
        m->line = pos;
    }
    /* match model */
    if (m->mlen > 0) {
        if (m->buf[m->mptr & mask] == (uint8_t)c && m->mptr + 1 < pos) {
            m->mlen++;
            m->mptr++;
        } else {
            m->mlen = 0;
        }
    }
    if (pos >= MATCH_MIN) {
        uint32_t hm = match_slot(m, m->c8);
        if (m->mlen == 0) {
            uint32_t cand = m->mt[hm];
            /* mchk[hm] is byte cand - 1 while it is in the ring: the loop below would stop at l = 0 */
            if (cand > 0 && m->mchk[hm] == (uint8_t)c) {
                uint32_t l = 0;
                /* only bytes still in the ring are compared (a run never wraps it, so there it is every byte) */
                while (l < MATCH_VERIFY && l < cand && pos - cand + l <= mask &&
                       m->buf[(cand - 1 - l) & mask] == m->buf[(pos - 1 - l) & mask])
                    l++;
                if (l >= MATCH_MIN) {
                    m->mlen = l;
                    m->mptr = cand;
                }
            }
        }
        m->mt[hm] = pos;
        m->mchk[hm] = (uint8_t)c;
    }
}

/* The contexts of the next byte: hashes and slots (replacing a slot on a miss). */
static void cm_ctx(CmModel* m) {
    m->stale = 0;
    uint32_t pos = m->pos;
    uint64_t c8 = m->c8;
    uint32_t col = pos - m->line;
    uint32_t ap = m->pline + col; /* the byte above, when the previous line has one and it is in the ring */
    uint32_t above = ap < m->line && pos - ap - 1 <= m->hmask ? m->buf[ap & m->hmask] : 0;
    uint64_t ctx[NH_MAX] = {
        c8 & 0xFFFF,
        c8 & 0xFFFFFF,
        c8 & 0xFFFFFFFF,
        c8 & 0xFFFFFFFFFFFFull,
        ((uint64_t)m->word << 32) | (m->pword ^ (m->word ? 0 : (uint32_t)(c8 & 0xFF) << 24)),
        ((uint64_t)above << 8) | (c8 & 0xFF),
        (c8 >> 8) & 0xFFFF,
        (uint64_t)m->word << 8 | (c8 & 0xFF),
    };
    if (m->model == CM_MODEL_2) {
        uint32_t ls = m->line; /* the line's first byte (256 at its start), the byte after the one above */
        uint32_t first = pos > ls ? m->buf[ls & m->hmask] : 256;
        uint32_t above2 = ap + 1 < m->line && pos - ap - 2 <= m->hmask ? m->buf[(ap + 1) & m->hmask] : 0;
        ctx[8] = ((uint64_t)first << 40) | ((uint64_t)(col < 32 ? col : 32) << 16) | (c8 & 0xFFFF);
        ctx[9] = ((uint64_t)above << 16) | ((uint64_t)above2 << 8) | (c8 & 0xFFFF) << 24;
        ctx[10] = ((uint64_t)(col < 64 ? col : 64) << 8) | (c8 & 0xFF);
        ctx[11] = c8;
    }
    for (int i = 0; i < m->nh; i++) m->h[i] = hash64(ctx[i], (uint32_t)(i + 1) * 0x3C6EF372u);
    slots_find(m, m->h);
    if (m->model == CM_MODEL_2)
        for (int i = 0; i < m->nh; i++) {
            m->ridx[i] = m->h[i] >> (32 - m->rbits);
            uint32_t e = m->run[m->ridx[i]];
            int hit = e >> 16 == (m->h[i] & 0xFFFF);
            m->rbyte[i] = hit ? (int)(e >> 8 & 0xFF) : 0;
            m->rcnt[i] = hit ? (int)(e & 0xFF) : 0;
        }
}

/* A byte c is done: history, then the contexts of the next byte. */
static void cm_byte(CmModel* m, int c) {
    cm_hist(m, c);
    cm_ctx(m);
}

/* The 8 binary decisions of one byte through rc (or, rc NULL, predicted and learned only). */
static int cm_bits(CmModel* m, Rc* rc, int* cp, uint16_t* pcoded) {
    m->used = 1; /* the tables change from the first bit on, even if coding fails */
    int c = rc && rc->decoding ? 0 : *cp;
    for (int b = 7; b >= 0; b--) {
        int p = cm_predict(m);
        int y;
        int err = 0;
        if (rc && rc->decoding) {
            err = rc_dec_bit(&rc->dec, (uint32_t)p, &y);
            c = (c << 1) | y;
        } else {
            y = (c >> b) & 1;
            if (rc) err = rc_enc_bit(&rc->enc, y, (uint32_t)p);
        }
        if (err) return err;
        if (pcoded) pcoded[7 - b] = (uint16_t)(y ? p : 4096 - p);
        cm_update(m, y);
    }
    m->nlearn++;
    *cp = c & 0xFF;
    return 0;
}

int cm_code_byte(CmModel* m, Rc* rc, int* c, uint16_t* p, const uint64_t* ext) {
    m->ext = ext;
    int err = cm_bits(m, rc, c, p);
    m->ext = NULL;
    if (err) return err;
    cm_hist(m, *c);
    m->stale = 1;
    return 0;
}

void cm_learn(CmModel* m, int c) {
    cm_bits(m, NULL, &c, NULL); /* cannot fail without a coder */
    cm_hist(m, c);
    m->stale = 1;
}

void cm_prefetch_seen(const CmModel* m, const uint8_t* b, int n) {
#if defined(__GNUC__)
    uint64_t c8 = m->c8;
    for (int i = 0; i < n; i++) { /* the hash cm_hist computes after byte b[i] */
        c8 = (c8 << 8) | b[i];
        uint32_t hm = match_slot(m, c8);
        __builtin_prefetch(&m->mt[hm]);
        __builtin_prefetch(&m->mchk[hm]);
    }
#else
    (void)m, (void)b, (void)n;
#endif
}

void cm_see(CmModel* m, int c) {
    cm_hist(m, c);
    m->stale = 1;
}

int cm_code(CmModel* m, Rc* rc, uint8_t* buf, size_t n) {
    if ((uint64_t)m->pos + n > ((uint64_t)1 << m->size)) return NLM_ERR_CORRUPT;
    if (m->size == 0) return NLM_ERR_STATE; /* a speller model codes bytes one at a time */
    for (size_t i = 0; i < n; i++) {
        int c = rc->decoding ? 0 : buf[i];
        int err = cm_bits(m, rc, &c, NULL);
        if (err) return err;
        if (rc->decoding) {
            buf[i] = (uint8_t)c;
            if (rc_dec_past_end(&rc->dec) > 7) return NLM_ERR_CORRUPT; /* beyond any valid payload */
        }
        cm_byte(m, c);
    }
    return 0;
}

int cm_learn_block(CmModel* m, const uint8_t* buf, size_t n) {
    if ((uint64_t)m->pos + n > ((uint64_t)1 << m->size)) return NLM_ERR_CORRUPT;
    if (m->size == 0) return NLM_ERR_STATE;
    for (size_t i = 0; i < n; i++) { /* cm_code's steps with no coder: the same state after */
        int c = buf[i];
        cm_bits(m, NULL, &c, NULL);
        cm_byte(m, c);
    }
    return 0;
}

int cm_lab_costs(CmModel* m, const uint8_t* buf, size_t n, uint16_t* p) {
    if ((uint64_t)m->pos + n > ((uint64_t)1 << m->size)) return NLM_ERR_CORRUPT;
    if (m->size == 0) return NLM_ERR_STATE;
    for (size_t i = 0; i < n; i++) { /* cm_code's steps with no coder: the same predictions */
        int c = buf[i];
        cm_bits(m, NULL, &c, p + 8 * i);
        cm_byte(m, c);
    }
    return 0;
}
