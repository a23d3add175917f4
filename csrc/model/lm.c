/* lm.c: what every model type shares (docs/format.md §2, §6): the immutable weights, one stream's state,
 * the input layer, the heads, the truncated-BPTT backward driver, the dynamic-evaluation update with lazy
 * decay, snapshot/rollback.  The model type's own layer (the body: elman.c, ...) is called through its
 * LmBodyOps (body.h).
 *
 * Forward (§2): logits from h = S[0..H) (S the body's state); after the token, the input
 * x = (E[w] + Ecase[case]) + Egap[gap] (D), then the body's step advances S.  Head products by kern_matvec
 * (16-lane canonical order); in a static stream with the integer forward the class and word heads (and the
 * body's products, body.h) by kern_matvec_q8 from int8 rows, h on its grid once per token (§2.6,
 * lm_set_qforward); in a dynamic stream in heads mode, whose schedule adapts the heads only (§6.5), the body's
 * products so.
 *
 * Segment (adaptive mode): lm_advance records for token t the state S_t it was predicted from, its
 * logits (class, the word logits of its class, case, gap) and its symbols.  The loss of token t is
 * −ln softmax(zc)[c] − ln softmax(zw)[w−a] − [case_coded] ln softmax(zk[0..2])[case] − ln softmax(zg)[gap].
 * Softmax for the backward: m = max (sequential), e_i = kern_exp(z_i − m), S = Σ e_i in ascending i,
 * p_i = e_i / S.  Backward runs t = T−1 down to 0 and accumulates, for each t, in this order:
 *   dS = dS_next; class head (dWc += dz⊗h, dbc += dz, dh += Wcᵀdz); word head (rows a..b of Wo/bo);
 *   case head (rows 0..2 of Uc, Bcase[w][0..2]) if coded; gap head (Ug, Bgap[w])   (dh = dS[0..H));
 *   if t > 0: the body's transition from token t−1 (bwd_token: dx and dS_next from dS);
 *             dE[w_{t−1}] += dx; dEcase[case_{t−1}] += dx; dEgap[gap_{t−1}] += dx.
 * S_0 (the state carried in) is a constant, so the transition of the segment's last token gets no gradient.
 * The weight gradients of the heads and the body are sums of outer products over the segment, i = T−1−t
 * ascending (kern_outer_acc_seq).
 *
 * Update (§6), step_t = lr / (ms_t + eps) (float), lim = lr·LM_CLIP (float), per parameter:
 *   th = (th − clamp(step_t·g, −lim, lim)) + decay·(th0 − th)        (kern_sgd_decay)
 * A stream's rates (lm_set_rates a, b; heads mode's a = 2, b = 1, §6.5) are step_t·a, lim·a and decay·b.
 * Dense tensors (Ecase, Egap, the body's, Wc, bc, Uc, Ug) are updated every segment (heads mode's schedule,
 * §6.5, lm_set_schedule: only Wc, bc, Uc, Ug, and of the big tables Wo/bo and Bcase/Bgap).  Big tables are
 * updated only in the rows the segment touched: E rows of the inputs w_0..w_{T−2}, Wo/bo rows of every
 * class predicted, Bcase/Bgap rows of every w_t (Bcase gets a zero gradient when the case was not coded).
 * Before its update a touched row catches up the k = seg_no − last − 1 updates it missed (decay only):
 *   th = th0 + (th − th0)·q_k  (fused with the step: kern_decay_sgd),   q_0 = 1, q_k = q_{k−1}·(1 − decay) (float), k capped at QCAP,
 * q_k below 2^−100 flushed to 0.  Rows not touched keep their stored value (the forward reads it as is).
 * seg_no counts non-empty segments since the reset (the first update is 1).
 *
 * Memory: LmWeights holds θ0 as stored (binary16 or float32, usually the caller's mapped file) plus a
 * float32 copy of the dense tensors.  A static Lm reads the dense tensors from that copy and the big tables'
 * rows (E, Wo, ...) from θ0 as stored.  A dynamic Lm keeps a float32
 * working copy of the dense tensors and copies a big-table row from θ0 only when a segment first touches
 * it (backward's touch pass, before any gradient is computed): rows of E and Bcase/Bgap by word id, Wo/bo a
 * whole class at a time (a class's rows are always touched together, so they share one catch-up count).
 * An untouched row holds θ0 exactly, which is what the full-copy formulation holds too, so the bits are
 * the same; memory grows with the rows a stream touches, never beyond one copy of the block.
 */
#include "../common/fpenv.h"
#include "lm.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kern.h"
#include "kn.h"

#define QCAP 4096
/* Gradient clipping: each parameter moves by at most lr * LM_CLIP per update (the normalised gradient is
 * clipped elementwise at ±16).  On dev (tools/dev_sample.py) clips of 1 and 4 cost 1–7% and 16 is neutral
 * at the tuned lr while it bounds the damage of an outlier segment; larger lr diverged with or without it. */
#define LM_CLIP 16.0f

struct LmWeights {
    const LmBodyOps* body;
    int V, D, H, C, SF, maxcs, seg_len;
    int param;                  /* the model type's parameter (NlmConfig.arch >> 8) */
    int nb, nt;                 /* body tensors, all tensors */
    int hd[LM_NHEAD];           /* tensor index of each head tensor */
    int dense_t[LM_MAX_TENSORS]; /* the dense tensors in the order of the dense layout: Ecase, Egap (adjacent),
                                    the body's, Wc, bc, Uc, Ug */
    int ndt;
    float decay;
    float lim; /* lr * LM_CLIP: the largest change of one parameter per update */
    float step[LM_MAX_TENSORS];
    float q[QCAP + 1];
    size_t np, off[LM_MAX_TENSORS + 1];
    size_t doff[LM_MAX_TENSORS]; /* offset of a dense tensor in the dense layout */
    size_t ndense;
    int half;            /* θ0 stored as binary16 (w16) or float32 (w32) */
    const uint16_t* w16; /* (np) */
    const float* w32;    /* (np) */
    void* own;           /* the block, when it had to be copied (misaligned or big-endian host) */
    float* dense;        /* (ndense) θ0 of the dense tensors as float32 */
    int32_t* cs;         /* (C+1) class_start */
    int32_t* cls;        /* (V) class of each id */
    Kn* kn;              /* the Kneser-Ney expert (§2.5), or NULL */
    /* the integer forward (§2.6; heads mode's body too, §6.5): Wc and the body's h_tensor and x_tensor, made
     * here; Wo's rows a class at a time, by the first stream that reads the class (qo_st[c]: 0 not made,
     * 1 being made, 2 ready), so a small input quantises only the classes it uses */
    LmQ8 qc, qb, qx, qo;
    int qb_rows, qx_rows;        /* rows of the body's h_tensor, x_tensor; 0 = the body has none */
    _Atomic unsigned char* qo_st; /* (C) */
    size_t bytes;
};

struct Lm {
    const LmWeights* w;
    int V, D, H, C, SF, adapt, seg_cap, maxcs, capO;
    int deep_every, shallow_emb; /* the adaptation schedule (lm_set_schedule); 1, 0 = every part every segment */
    float skip_p;                /* skip the update of a segment whose tokens' mean probability is >= this (0: never) */
    /* the update's rates (lm_set_rates, §6.5): step_t·a, lim·a, decay·b; a = b = 1 reads the weights' own */
    float step[LM_MAX_TENSORS];
    float lim, decay;
    const float* q;              /* (QCAP + 1) the catch-up factors of decay: the weights' own q, or qown */
    float* qown;                 /* (QCAP + 1) made by lm_set_rates when b > 1 */
    int frozen;                  /* lm_set_frozen: segments are dropped without backward or update (an estimate) */
    uint32_t skipped;            /* segments skipped since the reset (statistics) */
    int deep;                    /* the segment being closed adapts everything (else the heads, maybe E) */
    LmBody body; /* the body's scratch (lm_free must not read w: it may be freed first) */
    int qlevel;  /* lm_set_qforward: the integer forward asked for */
    int q8;      /* the heads' integer forward (static streams, §2.6) */
    int qbody;   /* the body's integer forward: static streams, and adaptive ones that never adapt the body (§6.5) */
    int hq_ok;   /* h16/hu8 hold the current h */
    int16_t* h16; /* (H) h on the activation grid */
    uint8_t* hu8; /* (H) h16 + 128 */
    float* qrow;  /* (H) a Wo row of θ0 as float32, to quantise */

    float* S;    /* (SF) the body's state; h = S[0..H) */
    float *zc, *zw, *zk, *zg;
    int zc_ok, zw_c, zk_w, zg_w; /* logit caches: valid flag / argument, -1 = invalid */
    float* xbuf;                 /* (D) */
    float *erow, *brow, *borow;  /* θ0 rows converted for reading: (D) (8) (maxcs) */
    /* ---- the Kneser-Ney mixture (§2.5; only with an expert) ---- */
    const Kn* kn;                /* w->kn when this state was made (an expert attached later is not used) */
    int ku, kv;                  /* the two previous tokens (1 = <end> after a reset) */
    float *qc, *qw, *pk;         /* (C) network class probabilities, (maxcs) scratch, (max(C, maxcs)) expert */
    float *mzc, *mzw;            /* (C) (maxcs) mixed logits */
    int mzc_ok, mzw_c, qc_ok;

    /* ---- adapted weights (adaptive) ---- */
    float* p;  /* (np) the block in float32: dense tensors always valid, a big-table row only once materialised */
    uint8_t *matE, *matB, *matC; /* (V) (V) (C): the row of E, of Bcase+Bgap, the class block of Wo+bo is in p */

    /* ---- segment (adaptive) ---- */
    int T;
    int32_t* segi; /* (seg_cap*5): w, class, case, gap, case_coded per token */
    float* segf;   /* (seg_cap*(SF + C + maxcs + 12)) */
    float *sS, *szc, *szw, *szk, *szg;

    /* ---- gradient (adaptive) ---- */
    float* gd; /* dense tensors, the dense layout */
    float* gE;          /* (seg_cap × D) rows of lsE */
    float *gWo, *gbo;   /* (capO × H), (capO) rows of lsO */
    float *gBc, *gBg;   /* (seg_cap × 4), (seg_cap × 8) rows of lsB */
    uint32_t epoch;     /* bumped every backward; never restored */
    uint32_t *stE, *stO, *stB; /* (V) epoch of the last touch */
    int32_t *slE, *slO, *slB;  /* (V) slot in the compact gradient of a touched row */
    int32_t *lsE, *lsO, *lsB;  /* touched rows, in first-touch order */
    int32_t* lsC;              /* (seg_cap) touched classes, in first-touch order */
    int nE, nO, nB, nC;
    float *dS, *dSn, *dx;      /* (SF) (SF) (D) */
    /* per-token backward vectors, row i = token T-1-i (the order the outer products are summed in) */
    float *bzc, *bzw, *bzk, *bzg, *bx; /* (S×C) (S×maxcs) (S×4) (S×8) (S×D) */
    const float **pd, **px;            /* (S) pointer lists for kern_outer_acc_seq */
    uint32_t* stC;                     /* (C) epoch of the last grouping of a class */

    /* ---- lazy decay ---- */
    uint32_t seg_no;
    uint32_t *lastE, *lastC, *lastB; /* (V) (C) (V): the last update of an E row, a class block, a Bcase/Bgap row */

    /* ---- snapshot: the dense tensors, the materialised rows, flags, counters, S and the segment ---- */
    int has_snap;
    float *s_p, *s_S, *s_segf;
    uint8_t *s_matE, *s_matB, *s_matC;
    uint32_t *s_lastE, *s_lastC, *s_lastB;
    int32_t* s_segi;
    uint32_t s_seg_no;
    int s_ku, s_kv;
    int s_T;

    size_t bytes;
};

/* ---- shapes ---- */

int lm_tensor_count(const LmBodyOps* body) { return LM_BODY + body->ntensors + LM_NHEAD; }

static int config_ok(const NlmConfig* cfg, const LmBodyOps* body) {
    if (!cfg || !body || body->ntensors < 0 || body->ntensors > LM_MAX_BODY_TENSORS) return 0;
    int param = cfg->arch >> 8;
    if (param < body->param_min || param > body->param_max) return 0;
    if (cfg->V < 2 || cfg->C < 1 || cfg->C > cfg->V) return 0;
    if (cfg->D <= 0 || cfg->H <= 0 || cfg->D % 16 || cfg->H % 16) return 0;
    if (cfg->V > (1 << 24) || cfg->D > 4096 || cfg->H > 4096) return 0;
    if (cfg->seg_len < 1 || cfg->seg_len > 65536) return 0;
    return 1;
}

void lm_tensor_offsets(const NlmConfig* cfg, const LmBodyOps* body, size_t off[LM_MAX_TENSORS + 1]) {
    memset(off, 0, sizeof(size_t) * (LM_MAX_TENSORS + 1));
    if (!config_ok(cfg, body)) return;
    size_t V = (size_t)cfg->V, D = (size_t)cfg->D, H = (size_t)cfg->H, C = (size_t)cfg->C;
    size_t sz[LM_MAX_TENSORS];
    int nb = body->ntensors, n = 0;
    sz[n++] = V * D, sz[n++] = 4 * D, sz[n++] = 8 * D;
    body->shapes(cfg->D, cfg->H, cfg->arch >> 8, sz + n);
    n += nb;
    size_t head[LM_NHEAD] = {C * H, C, V * H, V, 4 * H, V * 4, 8 * H, V * 8};
    for (int k = 0; k < LM_NHEAD; k++) sz[n++] = head[k];
    off[0] = 0;
    for (int t = 0; t < n; t++) off[t + 1] = off[t] + sz[t];
}

size_t lm_param_count(const NlmConfig* cfg, const LmBodyOps* body) {
    if (!config_ok(cfg, body)) return 0;
    size_t off[LM_MAX_TENSORS + 1];
    lm_tensor_offsets(cfg, body, off);
    return off[lm_tensor_count(body)];
}

const LmBodyOps* lm_body_for(int arch) {
    switch (arch & 0xff) {
    case NLM_ARCH_ELMAN: return &lm_body_elman;
    case NLM_ARCH_LSTM: return &lm_body_lstm;
    case NLM_ARCH_NPLM: return &lm_body_nplm;
    default: return NULL;
    }
}

size_t nlm_param_count(const NlmConfig* cfg) { return cfg ? lm_param_count(cfg, lm_body_for(cfg->arch)) : 0; }

/* Every array of the weights and of a stream starts on a 64-byte line, so the rows of the body's matrices and
 * of Wc (offsets and row lengths multiples of 16 floats: D, H % 16) never split a cache line in an AVX-512
 * load (split loads made the float32 matvecs slower than reading binary16). */
static void* walloc(size_t* bytes, size_t n, int zero) {
    n = (n + 63) & ~(size_t)63;
    if (n == 0) n = 64;
    void* p = aligned_alloc(64, n);
    if (p && zero) memset(p, 0, n);
    if (p) *bytes += n;
    return p;
}

/* θ0[o, o+n) as float32: a pointer into the block (float32 models) or converted into buf. */
static const float* theta0(const LmWeights* w, size_t o, size_t n, float* buf) {
    if (!w->half) return w->w32 + o;
    kern_half_to_float_vec(buf, w->w16 + o, n);
    return buf;
}

/* θ0[o, o+n) converted or copied into dst. */
static void theta0_into(const LmWeights* w, size_t o, size_t n, float* dst) {
    if (w->half) kern_half_to_float_vec(dst, w->w16 + o, n);
    else memcpy(dst, w->w32 + o, n * 4);
}

static int host_little_endian(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* ---- the immutable model ---- */

void lm_weights_free(LmWeights* w) {
    if (!w) return;
    free(w->own);
    free(w->dense);
    free(w->cs);
    free(w->cls);
    kn_free(w->kn);
    LmQ8* qs[] = {&w->qc, &w->qb, &w->qx, &w->qo};
    for (int i = 0; i < 4; i++) free(qs[i]->w), free(qs[i]->rsum), free(qs[i]->mul);
    free((void*)w->qo_st);
    free(w);
}

int lm_weights_set_kn(LmWeights* w, const uint8_t* blob, size_t n) {
    if (!w || w->kn) return NLM_ERR_STATE;
    int e = NLM_OK;
    if (!(w->kn = kn_new(blob, n, w->V, w->C, w->cs, w->cls, &e))) return e;
    w->bytes += kn_memory(w->kn);
    return NLM_OK;
}

size_t lm_weights_memory(const LmWeights* w) { return w->bytes + sizeof *w; }

/* An LmQ8 of rows × cols, its int8 part allocated but not written (pages untouched until used). */
static int q8_alloc(LmWeights* w, LmQ8* q, size_t rows, int cols) {
    q->w = walloc(&w->bytes, rows * (size_t)cols, 0);
    q->rsum = walloc(&w->bytes, rows * 4, 0);
    q->mul = walloc(&w->bytes, rows * 4, 0);
    return q->w && q->rsum && q->mul;
}

static void q8_rows(const LmQ8* q, size_t r0, const float* W, size_t rows, int cols) {
    for (size_t r = 0; r < rows; r++)
        kern_quant_row(q->w + (r0 + r) * (size_t)cols, q->rsum + r0 + r, q->mul + r0 + r, W + r * (size_t)cols,
                       cols);
}

/* The integer forward's tables (§2.6): Wc and the body's h_tensor and x_tensor quantised now, Wo's storage for
 * later. */
static int q8_weights(LmWeights* w) {
    size_t H = (size_t)w->H, D = (size_t)w->D, C = (size_t)w->C;
    int ht = w->body->h_tensor, xt = w->body->x_tensor;
    if (ht >= 0) w->qb_rows = (int)((w->off[LM_BODY + ht + 1] - w->off[LM_BODY + ht]) / H);
    if (xt >= 0) w->qx_rows = (int)((w->off[LM_BODY + xt + 1] - w->off[LM_BODY + xt]) / D);
    if (!q8_alloc(w, &w->qc, C, w->H) || !q8_alloc(w, &w->qo, (size_t)w->V, w->H)) return 0;
    if (w->qb_rows && !q8_alloc(w, &w->qb, (size_t)w->qb_rows, w->H)) return 0;
    if (w->qx_rows && !q8_alloc(w, &w->qx, (size_t)w->qx_rows, w->D)) return 0;
    if (!(w->qo_st = walloc(&w->bytes, C, 1))) return 0;
    for (size_t c = 0; c < C; c++) atomic_init(&w->qo_st[c], 0);
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    q8_rows(&w->qc, 0, w->dense + w->doff[w->hd[LM_WC]], C, w->H);
    if (w->qb_rows) q8_rows(&w->qb, 0, w->dense + w->doff[LM_BODY + ht], (size_t)w->qb_rows, w->H);
    if (w->qx_rows) q8_rows(&w->qx, 0, w->dense + w->doff[LM_BODY + xt], (size_t)w->qx_rows, w->D);
    nlm_fpenv_leave(&fe);
    return 1;
}

/* q_0 = 1, q_k = q_{k-1}·(1 - decay) (float), flushed to 0 below 2^-100: the catch-up factors (§6). */
static void decay_table(float* q, float decay) {
    float keep = 1.0f - decay;
    q[0] = 1.0f;
    for (int k = 1; k <= QCAP; k++) {
        float v = q[k - 1] * keep;
        q[k] = v < 0x1p-100f ? 0.0f : v;
    }
}

LmWeights* lm_weights_new(const NlmConfig* cfg, const LmBodyOps* body, const void* params, int dtype,
                          const float* ms, const int32_t* class_start, int* err) {
    int e = NLM_ERR_CONFIG;
    LmWeights* w = NULL;
    if (!config_ok(cfg, body) || !params || !class_start || (dtype != NLM_PARAM_F16 && dtype != NLM_PARAM_F32))
        goto fail;
    e = NLM_ERR_VOCAB;
    if (class_start[0] != 0 || class_start[cfg->C] != cfg->V) goto fail;
    int maxcs = 0;
    for (int c = 0; c < cfg->C; c++) {
        int n = class_start[c + 1] - class_start[c];
        if (n <= 0) goto fail;
        if (n > maxcs) maxcs = n;
    }
    e = NLM_ERR_NOMEM;
    if (!(w = calloc(1, sizeof *w))) goto fail;
    w->body = body;
    w->V = cfg->V, w->D = cfg->D, w->H = cfg->H, w->C = cfg->C, w->maxcs = maxcs, w->seg_len = cfg->seg_len;
    w->param = cfg->arch >> 8;
    w->SF = body->state_floats(cfg->D, cfg->H, w->param);
    w->nb = body->ntensors;
    w->nt = lm_tensor_count(body);
    for (int k = 0; k < LM_NHEAD; k++) w->hd[k] = lm_head_index(w->nb, k);
    w->decay = cfg->decay;
    lm_tensor_offsets(cfg, body, w->off);
    w->np = w->off[w->nt];
    /* the dense tensors: Ecase, Egap (adjacent), the body's, Wc, bc, Uc, Ug */
    w->ndt = 0;
    w->dense_t[w->ndt++] = LM_ECASE;
    w->dense_t[w->ndt++] = LM_EGAP;
    for (int k = 0; k < w->nb; k++) w->dense_t[w->ndt++] = LM_BODY + k;
    w->dense_t[w->ndt++] = w->hd[LM_WC];
    w->dense_t[w->ndt++] = w->hd[LM_BC];
    w->dense_t[w->ndt++] = w->hd[LM_UC];
    w->dense_t[w->ndt++] = w->hd[LM_UG];
    size_t V = (size_t)w->V, C = (size_t)w->C;
    /* the block as stored, or a native-order copy when it cannot be read in place */
    w->half = dtype == NLM_PARAM_F16;
    size_t isz = w->half ? 2 : 4;
    const void* blk = params;
    /* binary16 is read at any address (kern_*_h); float32 needs 4-byte alignment */
    const int le = host_little_endian();
    if (!le || (!w->half && ((uintptr_t)params % 4) != 0)) {
        uint8_t* cp = walloc(&w->bytes, w->np * isz, 0);
        if (!cp) goto fail;
        memcpy(cp, params, w->np * isz);
        if (!le)
            for (size_t i = 0; i < w->np * isz; i += isz)
                for (size_t a = 0, b = isz - 1; a < b; a++, b--) {
                    uint8_t t = cp[i + a];
                    cp[i + a] = cp[i + b];
                    cp[i + b] = t;
                }
        w->own = cp;
        blk = cp;
    }
    if (w->half) w->w16 = (const uint16_t*)blk;
    else w->w32 = (const float*)blk;
    size_t o = 0;
    for (int i = 0; i < w->ndt; i++) {
        int t = w->dense_t[i];
        w->doff[t] = o;
        o += w->off[t + 1] - w->off[t];
    }
    w->ndense = o;
    int ok = (w->dense = walloc(&w->bytes, w->ndense * 4, 0)) != NULL;
    ok &= (w->cs = walloc(&w->bytes, (C + 1) * 4, 0)) != NULL;
    ok &= (w->cls = walloc(&w->bytes, V * 4, 0)) != NULL;
    if (!ok) goto fail;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    for (int i = 0; i < w->ndt; i++) {
        int t = w->dense_t[i];
        size_t n = w->off[t + 1] - w->off[t];
        if (w->half) kern_half_to_float_vec(w->dense + w->doff[t], w->w16 + w->off[t], n);
        else memcpy(w->dense + w->doff[t], w->w32 + w->off[t], n * 4);
    }
    for (int t = 0; t < w->nt; t++) {
        float den = (ms ? ms[t] : 0.0f) + cfg->eps;
        w->step[t] = (ms && den > 0.0f) ? cfg->lr / den : 0.0f;
    }
    w->lim = cfg->lr * LM_CLIP;
    decay_table(w->q, cfg->decay);
    nlm_fpenv_leave(&fe);
    memcpy(w->cs, class_start, (C + 1) * 4);
    for (int c = 0; c < w->C; c++)
        for (int r = class_start[c]; r < class_start[c + 1]; r++) w->cls[r] = c;
    if (!q8_weights(w)) goto fail;
    if (err) *err = NLM_OK;
    return w;
fail:
    lm_weights_free(w);
    if (err) *err = e;
    return NULL;
}

/* ---- one stream's state ---- */

static void invalidate(Lm* m) {
    m->hq_ok = 0;
    m->zc_ok = 0;
    m->zw_c = -1;
    m->zk_w = -1;
    m->zg_w = -1;
    m->mzc_ok = 0;
    m->mzw_c = -1;
    m->qc_ok = 0;
}

void lm_free(Lm* m) {
    if (!m) return;
    void* ps[] = {m->body.fwd, m->body.da, (void*)m->body.pd, (void*)m->body.pu, m->S,    m->zc,   m->zw,   m->zk,   m->zg,    m->xbuf,  m->erow,   m->brow,   m->borow,
                  m->h16, m->hu8, m->qrow, m->body.x16, m->body.xu8,
                  m->qc, m->qw, m->pk, m->mzc, m->mzw,
                  m->p,    m->matE, m->matB, m->matC,  m->segi,  m->segf,   m->gd,     m->gE,
                  m->gWo,  m->gbo,  m->gBc,  m->gBg,  m->stE,   m->stO,   m->stB,    m->slE,    m->slO,
                  m->slB,  m->lsE,  m->lsO,  m->lsB,  m->lsC,   m->dS,    m->dSn,    m->dx,     m->bzc,
                  m->bzw,  m->bzk,  m->bzg,  m->bx,   (void*)m->pd, (void*)m->px, m->stC, m->lastE, m->lastC,
                  m->lastB, m->s_p, m->s_S, m->s_segf, m->s_matE, m->s_matB, m->s_matC, m->s_lastE,
                  m->s_lastC, m->s_lastB, m->s_segi, m->qown};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) free(ps[i]);
    free(m);
}

Lm* lm_new(const LmWeights* w, int adapt, int* err) {
    Lm* m = NULL;
    if (!w) {
        if (err) *err = NLM_ERR_CONFIG;
        return NULL;
    }
    if (!(m = calloc(1, sizeof *m))) goto fail;
    m->V = w->V, m->D = w->D, m->H = w->H, m->C = w->C, m->SF = w->SF, m->adapt = adapt ? 1 : 0;
    m->seg_cap = w->seg_len, m->maxcs = w->maxcs;
    m->body.D = w->D, m->body.H = w->H, m->body.param = w->param, m->body.seg_cap = w->seg_len;
    m->body.adapt = m->adapt;
    m->deep_every = 1, m->shallow_emb = 0, m->deep = 1; /* everything every segment (§6.3-§6.4) */
    memcpy(m->step, w->step, sizeof m->step);           /* the trained rates (lm_set_rates 1, 1) */
    m->lim = w->lim, m->decay = w->decay, m->q = w->q;
    m->w = w;
    size_t V = (size_t)m->V, D = (size_t)m->D, H = (size_t)m->H, C = (size_t)m->C, S = (size_t)m->seg_cap;
    size_t SF = (size_t)m->SF, maxcs = (size_t)m->maxcs;
    int ok = 1;
#define ALLOC(field, nb) ok &= (m->field = walloc(&m->bytes, (nb), 1)) != NULL
    ALLOC(body.fwd, (size_t)w->body->fwd_floats(w->D, w->H, w->param) * 4);
    ALLOC(S, SF * 4);
    ALLOC(zc, C * 4);
    ALLOC(zw, maxcs * 4);
    ALLOC(zk, 4 * 4);
    ALLOC(zg, 8 * 4);
    ALLOC(xbuf, D * 4);
    ALLOC(erow, D * 4);
    ALLOC(brow, 8 * 4);
    ALLOC(borow, maxcs * 4);
    ALLOC(h16, H * 2); /* the integer forward's grids: static streams, and the body of a heads-only one */
    ALLOC(hu8, H);
    ALLOC(body.x16, D * 2);
    ALLOC(body.xu8, D);
    if (!m->adapt) ALLOC(qrow, H * 4);
    m->kn = w->kn;
    if (m->kn) {
        ALLOC(qc, C * 4);
        ALLOC(qw, maxcs * 4);
        ALLOC(pk, (C > maxcs ? C : maxcs) * 4);
        ALLOC(mzc, C * 4);
        ALLOC(mzw, maxcs * 4);
    }
    if (m->adapt) {
        size_t capO = S * maxcs;
        if (capO > V) capO = V;
        m->capO = (int)capO;
        /* the working block: its pages are touched only as rows are materialised (not zeroed) */
        ok &= (m->p = walloc(&m->bytes, w->np * 4, 0)) != NULL;
        ALLOC(matE, V);
        ALLOC(matB, V);
        ALLOC(matC, C);
        ALLOC(segi, S * 5 * 4);
        ALLOC(segf, S * (SF + C + maxcs + 12) * 4);
        ALLOC(gd, w->ndense * 4);
        ALLOC(gE, S * D * 4);
        ALLOC(gWo, capO * H * 4);
        ALLOC(gbo, capO * 4);
        ALLOC(gBc, S * 4 * 4);
        ALLOC(gBg, S * 8 * 4);
        ALLOC(stE, V * 4);
        ALLOC(stO, V * 4);
        ALLOC(stB, V * 4);
        ALLOC(slE, V * 4);
        ALLOC(slO, V * 4);
        ALLOC(slB, V * 4);
        ALLOC(lsE, S * 4);
        ALLOC(lsO, capO * 4);
        ALLOC(lsB, S * 4);
        ALLOC(lsC, S * 4);
        ALLOC(dS, SF * 4);
        ALLOC(dSn, SF * 4);
        ALLOC(dx, D * 4);
        ALLOC(bzc, S * C * 4);
        ALLOC(bzw, S * maxcs * 4);
        ALLOC(bzk, S * 4 * 4);
        ALLOC(bzg, S * 8 * 4);
        ALLOC(bx, S * D * 4);
        ALLOC(pd, S * sizeof(float*));
        ALLOC(body.da, S * (size_t)w->body->da_floats(w->D, w->H, w->param) * 4);
        ALLOC(body.pd, S * sizeof(float*));
        ALLOC(body.pu, S * sizeof(float*));
        ALLOC(px, S * sizeof(float*));
        ALLOC(stC, C * 4);
        ALLOC(lastE, V * 4);
        ALLOC(lastC, C * 4);
        ALLOC(lastB, V * 4);
    }
#undef ALLOC
    if (!ok) goto fail;
    if (m->adapt) {
        m->sS = m->segf;
        m->szc = m->sS + S * SF;
        m->szw = m->szc + S * C;
        m->szk = m->szw + S * maxcs;
        m->szg = m->szk + S * 4;
    }
    lm_reset(m);
    if (err) *err = NLM_OK;
    return m;
fail:
    lm_free(m);
    if (err) *err = NLM_ERR_NOMEM;
    return NULL;
}

/* Dense tensor t as read by the forward and backward: the working copy (adaptive) or θ0 (static). */
static const float* dense(const Lm* m, int t) {
    return m->adapt ? m->p + m->w->off[t] : m->w->dense + m->w->doff[t];
}

/* The body's tensors as its forward and backward read them, and their gradients. */
static void body_tensors(const Lm* m, const float* P[LM_MAX_BODY_TENSORS]) {
    for (int k = 0; k < m->w->nb; k++) P[k] = dense(m, LM_BODY + k);
}

static void body_grads(const Lm* m, float* G[LM_MAX_BODY_TENSORS]) {
    for (int k = 0; k < m->w->nb; k++) G[k] = m->gd + m->w->doff[LM_BODY + k];
}

/* Rows of the big tables as read by the forward and backward (valid until the next call with the same
 * scratch buffer): the materialised row (adaptive) or θ0. */
static const float* e_row(Lm* m, int r, float* buf) {
    const LmWeights* w = m->w;
    size_t o = w->off[LM_E] + (size_t)r * m->D;
    if (m->adapt && m->matE[r]) return m->p + o;
    return theta0(w, o, (size_t)m->D, buf);
}

static const float* bcase_row(Lm* m, int r) {
    size_t o = m->w->off[m->w->hd[LM_BCASE]] + (size_t)r * 4;
    if (m->adapt && m->matB[r]) return m->p + o;
    return theta0(m->w, o, 4, m->brow);
}

static const float* bgap_row(Lm* m, int r) {
    size_t o = m->w->off[m->w->hd[LM_BGAP]] + (size_t)r * 8;
    if (m->adapt && m->matB[r]) return m->p + o;
    return theta0(m->w, o, 8, m->brow);
}

/* Copy θ0 into p for a row / class block the first time a segment touches it. */
static void mat_e(Lm* m, int r) {
    if (m->matE[r]) return;
    size_t o = m->w->off[LM_E] + (size_t)r * m->D;
    theta0_into(m->w, o, (size_t)m->D, m->p + o);
    m->matE[r] = 1;
}

static void mat_b(Lm* m, int r) {
    if (m->matB[r]) return;
    size_t o = m->w->off[m->w->hd[LM_BCASE]] + (size_t)r * 4;
    theta0_into(m->w, o, 4, m->p + o);
    o = m->w->off[m->w->hd[LM_BGAP]] + (size_t)r * 8;
    theta0_into(m->w, o, 8, m->p + o);
    m->matB[r] = 1;
}

static void mat_c(Lm* m, int c) {
    if (m->matC[c]) return;
    const LmWeights* w = m->w;
    size_t a = (size_t)w->cs[c], n = (size_t)(w->cs[c + 1] - w->cs[c]), H = (size_t)m->H;
    size_t o = w->off[w->hd[LM_WO]] + a * H;
    theta0_into(w, o, n * H, m->p + o);
    o = w->off[w->hd[LM_BO]] + a;
    theta0_into(w, o, n, m->p + o);
    m->matC[c] = 1;
}

void lm_reset(Lm* m) {
    if (m->adapt) {
        const LmWeights* w = m->w;
        for (int i = 0; i < w->ndt; i++) {
            int t = w->dense_t[i];
            memcpy(m->p + w->off[t], w->dense + w->doff[t], (w->off[t + 1] - w->off[t]) * 4);
        }
        memset(m->matE, 0, (size_t)m->V);
        memset(m->matB, 0, (size_t)m->V);
        memset(m->matC, 0, (size_t)m->C);
        memset(m->lastE, 0, (size_t)m->V * 4);
        memset(m->lastC, 0, (size_t)m->C * 4);
        memset(m->lastB, 0, (size_t)m->V * 4);
    }
    m->seg_no = 0;
    m->frozen = 0; /* an estimate never outlives a reset (lm_set_frozen) */
    m->skipped = 0;
    m->T = 0;
    m->ku = m->kv = 1;
    memset(m->S, 0, (size_t)m->SF * 4);
    invalidate(m);
}

/* ---- snapshot ---- */

/* Copy the adapted weights of src into dst (both np-float blocks): the dense tensors and every row that
 * matE/matB/matC mark as materialised.  Touches only those pages. */
static void copy_adapted(const Lm* m, float* dst, const float* src, const uint8_t* matE, const uint8_t* matB,
                         const uint8_t* matC) {
    const LmWeights* w = m->w;
    size_t D = (size_t)m->D, H = (size_t)m->H;
    size_t oE = w->off[LM_E], oBc = w->off[w->hd[LM_BCASE]], oBg = w->off[w->hd[LM_BGAP]];
    size_t oWo = w->off[w->hd[LM_WO]], obo = w->off[w->hd[LM_BO]];
    for (int i = 0; i < w->ndt; i++) {
        int t = w->dense_t[i];
        memcpy(dst + w->off[t], src + w->off[t], (w->off[t + 1] - w->off[t]) * 4);
    }
    for (int r = 0; r < m->V; r++) {
        if (matE[r]) memcpy(dst + oE + r * D, src + oE + r * D, D * 4);
        if (matB[r]) {
            memcpy(dst + oBc + (size_t)r * 4, src + oBc + (size_t)r * 4, 16);
            memcpy(dst + oBg + (size_t)r * 8, src + oBg + (size_t)r * 8, 32);
        }
    }
    for (int c = 0; c < m->C; c++) {
        if (!matC[c]) continue;
        size_t a = (size_t)w->cs[c], n = (size_t)(w->cs[c + 1] - w->cs[c]);
        memcpy(dst + oWo + a * H, src + oWo + a * H, n * H * 4);
        memcpy(dst + obo + a, src + obo + a, n * 4);
    }
}

static size_t segf_floats(const Lm* m) {
    return (size_t)m->seg_cap * ((size_t)m->SF + (size_t)m->C + (size_t)m->maxcs + 12);
}

/* The adaptive bookkeeping (flags, catch-up counters, the current segment) into the snapshot (to_snap 1)
 * or back from it (0). */
static void copy_flags(Lm* m, int to_snap) {
    size_t S = (size_t)m->seg_cap, V = (size_t)m->V, C = (size_t)m->C;
    struct { void *live, *snap; size_t n; } f[] = {
        {m->matE, m->s_matE, V},          {m->matB, m->s_matB, V},          {m->matC, m->s_matC, C},
        {m->lastE, m->s_lastE, V * 4},    {m->lastC, m->s_lastC, C * 4},    {m->lastB, m->s_lastB, V * 4},
        {m->segi, m->s_segi, S * 5 * 4},  {m->segf, m->s_segf, segf_floats(m) * 4}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        memcpy(to_snap ? f[i].snap : f[i].live, to_snap ? f[i].live : f[i].snap, f[i].n);
}

int lm_save(Lm* m) {
    size_t SF = (size_t)m->SF, S = (size_t)m->seg_cap, V = (size_t)m->V, C = (size_t)m->C;
    if (!m->s_S) m->s_S = walloc(&m->bytes, SF * 4, 1);
    if (!m->s_S) return NLM_ERR_NOMEM;
    if (m->adapt && !m->s_p) {
        m->s_p = walloc(&m->bytes, m->w->np * 4, 0); /* pages touched only for materialised rows */
        m->s_matE = walloc(&m->bytes, V, 1);
        m->s_matB = walloc(&m->bytes, V, 1);
        m->s_matC = walloc(&m->bytes, C, 1);
        m->s_lastE = walloc(&m->bytes, V * 4, 1);
        m->s_lastC = walloc(&m->bytes, C * 4, 1);
        m->s_lastB = walloc(&m->bytes, V * 4, 1);
        m->s_segi = walloc(&m->bytes, S * 5 * 4, 1);
        m->s_segf = walloc(&m->bytes, segf_floats(m) * 4, 1);
    }
    if (m->adapt && (!m->s_p || !m->s_matE || !m->s_matB || !m->s_matC || !m->s_lastE || !m->s_lastC ||
                     !m->s_lastB || !m->s_segi || !m->s_segf))
        return NLM_ERR_NOMEM;
    memcpy(m->s_S, m->S, SF * 4);
    if (m->adapt) {
        copy_adapted(m, m->s_p, m->p, m->matE, m->matB, m->matC);
        copy_flags(m, 1);
    }
    m->s_seg_no = m->seg_no;
    m->s_T = m->T;
    m->s_ku = m->ku, m->s_kv = m->kv;
    m->has_snap = 1;
    return NLM_OK;
}

int lm_restore(Lm* m) {
    if (!m->has_snap) return NLM_ERR_STATE;
    memcpy(m->S, m->s_S, (size_t)m->SF * 4);
    if (m->adapt) {
        /* rows materialised since the save fall back to θ0 through their flags */
        copy_adapted(m, m->p, m->s_p, m->s_matE, m->s_matB, m->s_matC);
        copy_flags(m, 0);
    }
    m->seg_no = m->s_seg_no;
    m->T = m->s_T;
    m->ku = m->s_ku, m->kv = m->s_kv;
    invalidate(m);
    return NLM_OK;
}

int lm_class_of(const Lm* m, int w) { return (w >= 0 && w < m->V) ? m->w->cls[w] : 0; }
int lm_class_start(const Lm* m, int c) { return (c >= 0 && c <= m->C) ? m->w->cs[c] : 0; }
const float* lm_hidden(const Lm* m) { return m->S; }
int lm_state_size(const Lm* m) { return m->SF; }
size_t lm_memory(const Lm* m) { return m->bytes + sizeof *m; }

void lm_params(const Lm* m, float* out) {
    const LmWeights* w = m->w;
    if (w->half) kern_half_to_float_vec(out, w->w16, w->np);
    else memcpy(out, w->w32, w->np * 4);
    if (m->adapt) copy_adapted(m, out, m->p, m->matE, m->matB, m->matC);
}

/* ---- the integer forward (static streams, §2.6; heads mode's body, §6.5) ---- */

/* Which products are integer, from the level asked for and the schedule: a static stream's heads and body
 * (§2.6); an adaptive stream's body when its schedule never adapts the body or the embeddings (heads only,
 * §6.5: the body's weights stay the trained ones), its heads float (they adapt). */
static void apply_qforward(Lm* m) {
    m->q8 = m->qlevel && !m->adapt;
    m->qbody = m->qlevel && (!m->adapt || (m->deep_every == 0 && !m->shallow_emb));
    m->body.qh = (m->qbody && m->w->qb_rows) ? &m->w->qb : NULL;
    m->body.qx = (m->qbody && m->w->qx_rows) ? &m->w->qx : NULL;
    m->body.h16 = m->h16, m->body.hu8 = m->hu8;
    invalidate(m);
}

int lm_set_qforward(Lm* m, int on) {
    m->qlevel = on ? 1 : 0;
    apply_qforward(m);
    return NLM_OK;
}

/* h = S[0..H) on the activation grid, once per h */
static void q8_act(Lm* m) {
    if (m->hq_ok) return;
    kern_quant_act(m->h16, m->hu8, m->S, m->H);
    m->hq_ok = 1;
}

/* Wo's rows of class c on the grid: made by the first stream that needs them; a stream that finds another
 * one making them waits (the rows of one class: microseconds) */
static void q8_class(Lm* m, int c) {
    const LmWeights* w = m->w;
    _Atomic unsigned char* st = &w->qo_st[c];
    if (atomic_load_explicit(st, memory_order_acquire) == 2) return;
    unsigned char expect = 0;
    if (atomic_compare_exchange_strong_explicit(st, &expect, 1, memory_order_acq_rel, memory_order_acquire)) {
        size_t H = (size_t)m->H;
        for (int r = w->cs[c]; r < w->cs[c + 1]; r++)
            q8_rows(&w->qo, (size_t)r, theta0(w, w->off[w->hd[LM_WO]] + (size_t)r * H, H, m->qrow), 1, m->H);
        atomic_store_explicit(st, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(st, memory_order_acquire) != 2) {
    }
}

/* ---- heads: forward ---- */

/* class head: zc (C) = Wc (C×H) · h + bc */
static void class_logits(Lm* m) {
    if (m->zc_ok) return;
    if (m->q8) {
        q8_act(m);
        const LmQ8* q = &m->w->qc;
        kern_matvec_q8(m->zc, q->w, q->rsum, q->mul, m->h16, m->hu8, m->C, m->H);
    } else {
        kern_matvec(m->zc, dense(m, m->w->hd[LM_WC]), m->S, m->C, m->H);
    }
    kern_add(m->zc, m->zc, dense(m, m->w->hd[LM_BC]), m->C);
    m->zc_ok = 1;
}

/* word head of class c: zw (n) = Wo[a:b] (n×H) · h + bo[a:b] */
static void word_logits(Lm* m, int c) {
    if (m->zw_c == c) return;
    const LmWeights* w = m->w;
    int a = w->cs[c], n = w->cs[c + 1] - a;
    size_t o = w->off[w->hd[LM_WO]] + (size_t)a * m->H, ob = w->off[w->hd[LM_BO]] + (size_t)a;
    const float* bo;
    if (m->adapt && m->matC[c]) {
        kern_matvec(m->zw, m->p + o, m->S, n, m->H);
        bo = m->p + ob;
    } else if (m->q8) {
        q8_act(m);
        q8_class(m, c);
        const LmQ8* q = &w->qo;
        kern_matvec_q8(m->zw, q->w + (size_t)a * m->H, q->rsum + a, q->mul + a, m->h16, m->hu8, n, m->H);
        bo = theta0(w, ob, (size_t)n, m->borow);
    } else {
        if (w->half) /* binary16 rows read as stored: the same values as converting them first */
            kern_matvec_h(m->zw, w->w16 + o, m->S, n, m->H);
        else
            kern_matvec(m->zw, w->w32 + o, m->S, n, m->H);
        bo = theta0(w, ob, (size_t)n, m->borow);
    }
    kern_add(m->zw, m->zw, bo, n);
    m->zw_c = c;
}

/* case head: zk (4) = Uc (4×H) · h + Bcase[w] */
static void case_logits(Lm* m, int w) {
    if (m->zk_w == w) return;
    kern_matvec(m->zk, dense(m, m->w->hd[LM_UC]), m->S, 4, m->H);
    kern_add(m->zk, m->zk, bcase_row(m, w), 4);
    m->zk_w = w;
}

/* gap head: zg (8) = Ug (8×H) · h + Bgap[w] */
static void gap_logits(Lm* m, int w) {
    if (m->zg_w == w) return;
    kern_matvec(m->zg, dense(m, m->w->hd[LM_UG]), m->S, 8, m->H);
    kern_add(m->zg, m->zg, bgap_row(m, w), 8);
    m->zg_w = w;
}

/* ---- the Kneser-Ney mixture (docs/format.md §2.5) ----
 * softmax for the mixture: mx = max z (sequential), e_i = kern_exp(z_i - mx), s = Σ e_i ascending,
 * q_i = e_i / s.  With λ the network's weight and p the expert's (kn.c):
 *   class c:        zc'[c] = kern_log(λ·q_c + (1 - λ)·P(c))
 *   word w of c:    t = λ·q_c;  zw'[w-a] = kern_log(t·q(w|c) + (1 - λ)·p3(w))
 * With λ = 0 the network's class and word logits are not computed (the terms are 0·q = 0 exactly). */
static void softmax_seq(float* q, const float* z, int n) {
    float mx = z[0];
    for (int i = 1; i < n; i++) mx = z[i] > mx ? z[i] : mx;
    float s = 0.0f;
    for (int i = 0; i < n; i++) s = s + (q[i] = kern_exp(z[i] - mx));
    for (int i = 0; i < n; i++) q[i] = q[i] / s;
}

static void net_class_probs(Lm* m) {
    if (m->qc_ok) return;
    class_logits(m);
    softmax_seq(m->qc, m->zc, m->C);
    m->qc_ok = 1;
}

static void mixed_class_logits(Lm* m) {
    if (m->mzc_ok) return;
    float lam = kn_lambda(m->kn), om = 1.0f - lam;
    kn_class_probs(m->kn, m->ku, m->kv, m->pk);
    if (lam > 0.0f) {
        net_class_probs(m);
        for (int c = 0; c < m->C; c++) m->mzc[c] = kern_log(lam * m->qc[c] + om * m->pk[c]);
    } else {
        for (int c = 0; c < m->C; c++) m->mzc[c] = kern_log(om * m->pk[c]);
    }
    m->mzc_ok = 1;
}

static void mixed_word_logits(Lm* m, int c) {
    if (m->mzw_c == c) return;
    float lam = kn_lambda(m->kn), om = 1.0f - lam;
    int a = m->w->cs[c], n = m->w->cs[c + 1] - a;
    kn_word_probs(m->kn, m->ku, m->kv, a, a + n, m->pk);
    if (lam > 0.0f) {
        net_class_probs(m);
        word_logits(m, c);
        softmax_seq(m->qw, m->zw, n);
        float t = lam * m->qc[c];
        for (int i = 0; i < n; i++) m->mzw[i] = kern_log(t * m->qw[i] + om * m->pk[i]);
    } else {
        for (int i = 0; i < n; i++) m->mzw[i] = kern_log(om * m->pk[i]);
    }
    m->mzw_c = c;
}

const float* lm_class_logits(Lm* m) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    if (m->kn) mixed_class_logits(m);
    else class_logits(m);
    nlm_fpenv_leave(&fe);
    return m->kn ? m->mzc : m->zc;
}

const float* lm_word_logits(Lm* m, int c, int* n) {
    if (c < 0 || c >= m->C) c = 0;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    if (m->kn) mixed_word_logits(m, c);
    else word_logits(m, c);
    nlm_fpenv_leave(&fe);
    if (n) *n = m->w->cs[c + 1] - m->w->cs[c];
    return m->kn ? m->mzw : m->zw;
}

const float* lm_case_logits(Lm* m, int w) {
    if (w < 0 || w >= m->V) w = 0;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    case_logits(m, w);
    nlm_fpenv_leave(&fe);
    return m->zk;
}

const float* lm_gap_logits(Lm* m, int w) {
    if (w < 0 || w >= m->V) w = 0;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    gap_logits(m, w);
    nlm_fpenv_leave(&fe);
    return m->zg;
}

/* ---- input layer ---- */

/* forward: x (D) = (E[w] + Ecase[k]) + Egap[g] */
static void input_vec(Lm* m, float* x, int w, int k, int g) {
    const float* e = e_row(m, w, m->erow);
    const float* ec = dense(m, LM_ECASE) + (size_t)k * m->D;
    const float* eg = dense(m, LM_EGAP) + (size_t)g * m->D;
    kern_add3(x, e, ec, eg, m->D);
}

/* backward: dE[w] += dx, dEcase[k] += dx, dEgap[g] += dx (E's row by its compact slot) */
static void input_backward(Lm* m, const float* dx, int w, int k, int g) {
    const LmWeights* W = m->w;
    int D = m->D;
    kern_axpy(m->gE + (size_t)m->slE[w] * D, 1.0f, dx, D);
    kern_axpy(m->gd + W->doff[LM_ECASE] + (size_t)k * D, 1.0f, dx, D);
    kern_axpy(m->gd + W->doff[LM_EGAP] + (size_t)g * D, 1.0f, dx, D);
}

static int end_segment(Lm* m);

void lm_advance(Lm* m, int w, int ccase, int gap, int case_coded) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    if (w < 0 || w >= m->V) w = 0;
    ccase &= 3;
    gap &= 7;
    case_coded = (case_coded && ccase <= 2) ? 1 : 0;
    const int32_t* cs = m->w->cs;
    if (m->adapt) {
        if (m->T >= m->seg_cap) end_segment(m);
        int t = m->T, c = m->w->cls[w];
        class_logits(m);
        word_logits(m, c);
        case_logits(m, w);
        gap_logits(m, w);
        int32_t* si = m->segi + (size_t)t * 5;
        si[0] = w, si[1] = c, si[2] = ccase, si[3] = gap, si[4] = case_coded;
        memcpy(m->sS + (size_t)t * m->SF, m->S, (size_t)m->SF * 4);
        memcpy(m->szc + (size_t)t * m->C, m->zc, (size_t)m->C * 4);
        memcpy(m->szw + (size_t)t * m->maxcs, m->zw, (size_t)(cs[c + 1] - cs[c]) * 4);
        memcpy(m->szk + (size_t)t * 4, m->zk, 16);
        memcpy(m->szg + (size_t)t * 8, m->zg, 32);
        m->T = t + 1;
    }
    input_vec(m, m->xbuf, w, ccase, gap);
    const float* P[LM_MAX_BODY_TENSORS];
    body_tensors(m, P);
    if (m->qbody) q8_act(m);
    m->w->body->step(&m->body, P, m->xbuf, m->S);
    m->ku = m->kv, m->kv = w;
    invalidate(m);
    nlm_fpenv_leave(&fe);
}

/* ---- backward ---- */

static int touch(uint32_t* st, int32_t* sl, int32_t* ls, int* n, uint32_t epoch, int r) {
    if (st[r] != epoch) {
        st[r] = epoch;
        sl[r] = *n;
        ls[(*n)++] = r;
        return 1;
    }
    return 0;
}

static void backward(Lm* m) {
    int T = m->T, H = m->H, D = m->D, C = m->C, SF = m->SF;
    const LmWeights* W = m->w;
    const LmBodyOps* body = W->body;
    const int32_t* cs = W->cs;
    float* gd = m->gd;
    float *gWc = gd + W->doff[W->hd[LM_WC]], *gbc = gd + W->doff[W->hd[LM_BC]];
    float *gUc = gd + W->doff[W->hd[LM_UC]], *gUg = gd + W->doff[W->hd[LM_UG]];
    m->epoch++;
    if (m->epoch == 0) { /* wrapped: clear the stamps once every 2^32 segments */
        memset(m->stE, 0, (size_t)m->V * 4);
        memset(m->stO, 0, (size_t)m->V * 4);
        memset(m->stB, 0, (size_t)m->V * 4);
        memset(m->stC, 0, (size_t)m->C * 4);
        m->epoch = 1;
    }
    m->nE = m->nO = m->nB = m->nC = 0;
    const int deep = m->deep, adapt_e = deep || m->shallow_emb;
    /* touch pass: build the row lists, zero their compact gradient rows, and materialise the rows (copy θ0
     * into p the first time the stream touches them) so that everything below reads and updates p */
    for (int t = 0; t < T; t++) {
        const int32_t* si = m->segi + (size_t)t * 5;
        int w = si[0], c = si[1];
        if (m->stO[cs[c]] != m->epoch) m->lsC[m->nC++] = c, mat_c(m, c);
        for (int r = cs[c]; r < cs[c + 1]; r++)
            if (touch(m->stO, m->slO, m->lsO, &m->nO, m->epoch, r)) m->gbo[m->slO[r]] = 0.0f;
            /* its gWo row is written (not accumulated) by the class's kern_outer_acc_seq below */
        if (touch(m->stB, m->slB, m->lsB, &m->nB, m->epoch, w)) {
            memset(m->gBc + (size_t)m->slB[w] * 4, 0, 16);
            memset(m->gBg + (size_t)m->slB[w] * 8, 0, 32);
            mat_b(m, w);
        }
        if (t < T - 1 && adapt_e && touch(m->stE, m->slE, m->lsE, &m->nE, m->epoch, w)) {
            memset(m->gE + (size_t)m->slE[w] * D, 0, (size_t)D * 4);
            mat_e(m, w);
        }
    }
    /* gradients summed by loops; gWc, gUc, gUg and the body's outer products are written by
     * kern_outer_acc_seq(zero_first) */
    memset(gd + W->doff[LM_ECASE], 0, 12 * (size_t)D * 4); /* Ecase and Egap are adjacent */
    memset(gbc, 0, (size_t)C * 4);
    memset(m->dSn, 0, (size_t)SF * 4);
    const float* P[LM_MAX_BODY_TENSORS];
    float* G[LM_MAX_BODY_TENSORS];
    body_tensors(m, P);
    body_grads(m, G);
    body->bwd_begin(&m->body, G);

    const float *Wc = dense(m, W->hd[LM_WC]), *Wo = m->p + W->off[W->hd[LM_WO]], *Uc = dense(m, W->hd[LM_UC]);
    const float* Ug = dense(m, W->hd[LM_UG]);
    float* dh = m->dS; /* dS[0..H): the gradient with respect to h */
    for (int t = T - 1; t >= 0; t--) {
        int i = T - 1 - t;
        const int32_t* si = m->segi + (size_t)t * 5;
        int w = si[0], c = si[1], k = si[2], g = si[3], cc = si[4];
        /* a shallow segment does not chain the state's gradient: dS is token t's own (one-step) */
        if (deep)
            memcpy(m->dS, m->dSn, (size_t)SF * 4);
        else
            memset(m->dS, 0, (size_t)SF * 4);
        float* dhh = adapt_e ? dh : NULL; /* heads-only: no gradient into h at all */
        /* class head */
        float* pz = m->bzc + (size_t)i * C;
        kern_head_backward(dhh, gbc, pz, m->szc + (size_t)t * C, Wc, C, H, c);
        /* word head, rows a..b */
        int a = cs[c], n = cs[c + 1] - a;
        pz = m->bzw + (size_t)i * m->maxcs;
        /* the class's rows have consecutive gradient slots */
        kern_head_backward(dhh, m->gbo + m->slO[a], pz, m->szw + (size_t)t * m->maxcs, Wo + (size_t)a * H, n, H,
                           w - a);
        /* case head over symbols 0..2 */
        int sb = m->slB[w];
        if (cc) {
            pz = m->bzk + (size_t)i * 4;
            kern_head_backward(dhh, m->gBc + (size_t)sb * 4, pz, m->szk + (size_t)t * 4, Uc, 3, H, k);
        }
        /* gap head */
        pz = m->bzg + (size_t)i * 8;
        kern_head_backward(dhh, m->gBg + (size_t)sb * 8, pz, m->szg + (size_t)t * 8, Ug, 8, H, g);
        if (t == 0 || !adapt_e) continue;
        /* the body's transition that produced S_t from token t-1 */
        const int32_t* sp = m->segi + (size_t)(t - 1) * 5;
        float* x = m->bx + (size_t)i * D;
        input_vec(m, x, sp[0], sp[2], sp[3]);
        body->bwd_token(&m->body, P, G, i, m->sS + (size_t)t * SF, m->sS + (size_t)(t - 1) * SF, x, m->dS, m->dx,
                        deep ? m->dSn : NULL);
        input_backward(m, m->dx, sp[0], sp[2], sp[3]);
    }
    /* weight gradients: sums of outer products over the tokens, i ascending (t descending) */
    const float **pd = m->pd, **px = m->px;
    for (int i = 0; i < T; i++) pd[i] = m->bzc + (size_t)i * C, px[i] = m->sS + (size_t)(T - 1 - i) * SF;
    kern_outer_acc_seq(gWc, pd, px, T, C, H, 1);
    for (int i = 0; i < T; i++) pd[i] = m->bzg + (size_t)i * 8;
    kern_outer_acc_seq(gUg, pd, px, T, 8, H, 1);
    int nk = 0;
    for (int i = 0; i < T; i++)
        if (m->segi[(size_t)(T - 1 - i) * 5 + 4])
            pd[nk] = m->bzk + (size_t)i * 4, px[nk++] = m->sS + (size_t)(T - 1 - i) * SF;
    kern_outer_acc_seq(gUc, pd, px, nk, 3, H, 1);
    /* the body's: S_prev[i] and x_prev[i] of token T-2-i */
    if (deep) {
        for (int i = 0; i + 1 < T; i++) pd[i] = m->sS + (size_t)(T - 2 - i) * SF, px[i] = m->bx + (size_t)i * D;
        body->bwd_finish(&m->body, G, T - 1, pd, px);
    }
    /* Wo rows, one class at a time (its rows have consecutive gradient slots) */
    for (int i = 0; i < T; i++) {
        int c = m->segi[(size_t)(T - 1 - i) * 5 + 1];
        if (m->stC[c] == m->epoch) continue;
        m->stC[c] = m->epoch;
        int nt = 0;
        for (int j = i; j < T; j++)
            if (m->segi[(size_t)(T - 1 - j) * 5 + 1] == c)
                pd[nt] = m->bzw + (size_t)j * m->maxcs, px[nt++] = m->sS + (size_t)(T - 1 - j) * SF;
        int a = cs[c];
        kern_outer_acc_seq(m->gWo + (size_t)m->slO[a] * H, pd, px, nt, cs[c + 1] - a, H, 1);
    }
}

/* ---- the update (§6) ---- */

/* The update of the n parameters at offset o of the block (th = p + o, gradient g) that last moved at update
 * `last`: catch up the k = seg_no - last - 1 decays they missed, then the step (one elementwise kernel: any
 * grouping of rows gives the same bits).  θ0 is read as stored (binary16 or float32). */
static void update_rows(Lm* m, size_t o, const float* g, size_t n, float step, uint32_t last) {
    const LmWeights* w = m->w;
    uint32_t k = m->seg_no - last - 1;
    float* th = m->p + o;
    if (w->half) {
        if (k > 0) kern_decay_sgd_h(th, w->w16 + o, g, m->q[k > QCAP ? QCAP : k], step, m->decay, m->lim, (int)n);
        else kern_sgd_decay_h(th, w->w16 + o, g, step, m->decay, m->lim, (int)n);
    } else {
        if (k > 0) kern_decay_sgd(th, w->w32 + o, g, m->q[k > QCAP ? QCAP : k], step, m->decay, m->lim, (int)n);
        else kern_sgd_decay(th, w->w32 + o, g, step, m->decay, m->lim, (int)n);
    }
}

static void update(Lm* m) {
    const LmWeights* W = m->w;
    size_t H = (size_t)m->H, D = (size_t)m->D;
    float* p = m->p;
    int tWo = W->hd[LM_WO], tbo = W->hd[LM_BO], tBc = W->hd[LM_BCASE], tBg = W->hd[LM_BGAP];
    const int nb = W->nb, adapt_e = m->deep || m->shallow_emb;
    for (int i = 0; i < W->ndt; i++) {
        int t = W->dense_t[i];
        if (!m->deep && t >= LM_BODY && t < LM_BODY + nb) continue; /* the body: deep segments only */
        if (!adapt_e && (t == LM_ECASE || t == LM_EGAP)) continue;
        float* th = p + W->off[t];
        const float* g = m->gd + W->doff[t];
        int n = (int)(W->off[t + 1] - W->off[t]);
        if (W->half) /* θ0 as stored: half the bytes of the float32 copy, the same values */
            kern_sgd_decay_h(th, W->w16 + W->off[t], g, m->step[t], m->decay, m->lim, n);
        else
            kern_sgd_decay(th, W->w32 + W->off[t], g, m->step[t], m->decay, m->lim, n);
    }
    for (int i = 0; i < m->nE; i++) {
        int r = m->lsE[i];
        size_t o = W->off[LM_E] + (size_t)r * D;
        update_rows(m, o, m->gE + (size_t)i * D, D, m->step[LM_E], m->lastE[r]);
        m->lastE[r] = m->seg_no;
    }
    /* Wo and bo a class at a time: its rows have consecutive gradient slots and one catch-up count */
    for (int i = 0; i < m->nC; i++) {
        int c = m->lsC[i], a = W->cs[c];
        size_t n = (size_t)(W->cs[c + 1] - a), sl = (size_t)m->slO[a];
        size_t o = W->off[tWo] + (size_t)a * H;
        update_rows(m, o, m->gWo + sl * H, n * H, m->step[tWo], m->lastC[c]);
        o = W->off[tbo] + (size_t)a;
        update_rows(m, o, m->gbo + sl, n, m->step[tbo], m->lastC[c]);
        m->lastC[c] = m->seg_no;
    }
    for (int i = 0; i < m->nB; i++) {
        int r = m->lsB[i];
        size_t o = W->off[tBc] + (size_t)r * 4;
        update_rows(m, o, m->gBc + (size_t)i * 4, 4, m->step[tBc], m->lastB[r]);
        o = W->off[tBg] + (size_t)r * 8;
        update_rows(m, o, m->gBg + (size_t)i * 8, 8, m->step[tBg], m->lastB[r]);
        m->lastB[r] = m->seg_no;
    }
}

/* Whether the segment's tokens were easy: the geometric mean of p(class)·p(word) over them is at least
 * skip_p, tested as Π (p_t / skip_p) >= 1 (float, t ascending; T <= seg_len keeps it finite for skip_p >=
 * 1/16).  The probabilities are the backward's softmax (kern_softmax_xent, target entry + 1). */
static int segment_easy(Lm* m) {
    const int32_t* cs = m->w->cs;
    float prod = 1.0f;
    for (int t = 0; t < m->T; t++) {
        const int32_t* si = m->segi + (size_t)t * 5;
        int w = si[0], c = si[1], a = cs[c], n = cs[c + 1] - a;
        kern_softmax_xent(m->bzc, m->szc + (size_t)t * m->C, m->C, c);
        kern_softmax_xent(m->bzw, m->szw + (size_t)t * m->maxcs, n, w - a);
        float pc = m->bzc[c] + 1.0f, pw = m->bzw[w - a] + 1.0f;
        prod = prod * ((pc * pw) / m->skip_p);
    }
    return prod >= 1.0f;
}

static int end_segment(Lm* m) {
    if (m->frozen) { /* an estimate the caller rolls back (lm_set_frozen): no backward, no update */
        m->T = 0;
        return NLM_OK;
    }
    if (m->adapt && m->T > 0 && m->skip_p > 0.0f && segment_easy(m)) {
        m->skipped++;
        m->T = 0; /* no backward, no update: the segment does not count (seg_no unchanged) */
        return NLM_OK;
    }
    if (m->adapt && m->T > 0) {
        /* segment seg_no + 1 is deep when the schedule says so (every deep_every-th; never for 0) */
        m->deep = m->deep_every == 1 || (m->deep_every > 1 && (m->seg_no + 1) % (uint32_t)m->deep_every == 0);
        backward(m);
        m->seg_no++;
        update(m);
        invalidate(m);
    }
    m->T = 0;
    return NLM_OK;
}

int lm_set_schedule(Lm* m, int deep_every, int shallow_emb, int skip_permille) {
    if (!m->adapt || deep_every < 0 || deep_every > 1024 || (shallow_emb != 0 && shallow_emb != 1) ||
        skip_permille < 0 || skip_permille > 1000 || (skip_permille > 0 && skip_permille < 63))
        return NLM_ERR_STATE;
    m->deep_every = deep_every, m->shallow_emb = shallow_emb;
    m->skip_p = (float)skip_permille / 1000.0f;
    apply_qforward(m);
    return NLM_OK;
}

int lm_set_rates(Lm* m, int a, int b) {
    const LmWeights* w = m->w;
    if (!m->adapt || a < 1 || a > 16 || b < 1 || b > 16) return NLM_ERR_STATE;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    float decay = w->decay * (float)b;
    if (!(decay < 1.0f)) {
        nlm_fpenv_leave(&fe);
        return NLM_ERR_STATE;
    }
    if (b > 1 && !m->qown && !(m->qown = malloc((QCAP + 1) * sizeof *m->qown))) {
        nlm_fpenv_leave(&fe);
        return NLM_ERR_NOMEM;
    }
    for (int t = 0; t < w->nt; t++) m->step[t] = w->step[t] * (float)a;
    m->lim = w->lim * (float)a;
    m->decay = decay;
    if (b > 1) decay_table(m->qown, decay);
    m->q = b > 1 ? m->qown : w->q;
    nlm_fpenv_leave(&fe);
    return NLM_OK;
}

uint32_t lm_skipped(const Lm* m) { return m->skipped; }

void lm_set_frozen(Lm* m, int on) { m->frozen = on ? 1 : 0; }

int lm_end_segment(Lm* m) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    int r = end_segment(m);
    nlm_fpenv_leave(&fe);
    return r;
}

void lm_debug_grad(const Lm* m, float* out) {
    const LmWeights* W = m->w;
    memset(out, 0, W->np * 4);
    if (!m->adapt) return;
    int H = m->H, D = m->D;
    size_t oWo = W->off[W->hd[LM_WO]], obo = W->off[W->hd[LM_BO]];
    size_t oBc = W->off[W->hd[LM_BCASE]], oBg = W->off[W->hd[LM_BGAP]];
    for (int i = 0; i < W->ndt; i++) {
        int t = W->dense_t[i];
        memcpy(out + W->off[t], m->gd + W->doff[t], (W->off[t + 1] - W->off[t]) * 4);
    }
    for (int i = 0; i < m->nE; i++)
        memcpy(out + W->off[LM_E] + (size_t)m->lsE[i] * D, m->gE + (size_t)i * D, (size_t)D * 4);
    for (int i = 0; i < m->nO; i++) {
        memcpy(out + oWo + (size_t)m->lsO[i] * H, m->gWo + (size_t)i * H, (size_t)H * 4);
        out[obo + m->lsO[i]] = m->gbo[i];
    }
    for (int i = 0; i < m->nB; i++) {
        memcpy(out + oBc + (size_t)m->lsB[i] * 4, m->gBc + (size_t)i * 4, 16);
        memcpy(out + oBg + (size_t)m->lsB[i] * 8, m->gBg + (size_t)i * 8, 32);
    }
}
