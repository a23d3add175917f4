/* elman.c: the Elman model: forward step, truncated-BPTT backward over a segment, the dynamic-evaluation
 * update with lazy decay, snapshot/rollback (codec/FORMAT.md §2, §6).
 *
 * Forward (§2): logits from the state h; after the token, x = (E[w] + Ecase[case]) + Egap[gap],
 * h' = tanh((Wx·x + Wh·h) + bh), products by kern_matvec (16-lane canonical order), tanh by kern_tanh_vec.
 *
 * Segment (adaptive mode): elman_advance records for token t the state s_t it was predicted from, its
 * logits (class, the word logits of its class, case, gap) and its symbols.  The loss of token t is
 * −ln softmax(zc)[c] − ln softmax(zw)[w−a] − [case_coded] ln softmax(zk[0..2])[case] − ln softmax(zg)[gap].
 * Softmax for the backward: m = max (sequential), e_i = kern_exp(z_i − m), S = Σ e_i in ascending i,
 * p_i = e_i / S.  Backward runs t = T−1 down to 0 and accumulates, for each t, in this order:
 *   dh = dh_next; class head (dWc += dz⊗s, dbc += dz, dh += Wcᵀdz); word head (rows a..b of Wo/bo);
 *   case head (rows 0..2 of Uc, Bc[w][0..2]) if coded; gap head (Ug, Bg[w]);
 *   if t > 0: da = dh·(1 − s_t·s_t); dWx += da⊗x_{t−1}; dWh += da⊗s_{t−1}; dbh += da;
 *             dx = Wxᵀda; dE[w_{t−1}] += dx; dEcase[case_{t−1}] += dx; dEgap[gap_{t−1}] += dx;
 *             dh_next = Whᵀda   (Wᵀd products by kern_matvec_t_acc: ascending rows).
 * s_0 (the state carried in) is a constant, so the transition of the segment's last token gets no gradient.
 *
 * Update (§6), step_t = lr / (ms_t + eps) (float), lim = lr·ELM_CLIP (float), per parameter:
 *   th = (th − clamp(step_t·g, −lim, lim)) + decay·(th0 − th)        (kern_sgd_decay)
 * Dense tensors (Ecase, Egap, Wx, Wh, bh, Wc, bc, Uc, Ug) are updated every segment.  Big tables are
 * updated only in the rows the segment touched: E rows of the inputs w_0..w_{T−2}, Wo/bo rows of every
 * class predicted, Bc/Bg rows of every w_t (Bc gets a zero gradient when the case was not coded).  Before
 * its update a touched row catches up the k = seg_no − last − 1 updates it missed (decay only):
 *   th = th0 + (th − th0)·q_k  (fused with the step: kern_decay_sgd),   q_0 = 1, q_k = q_{k−1}·(1 − decay) (float), k capped at QCAP,
 * q_k below 2^−100 flushed to 0.  Rows not touched keep their stored value (the forward reads it as is).
 * seg_no counts non-empty segments since the reset (the first update is 1).
 */
#include "../common/fpenv.h"
#include "elman.h"

#include <stdlib.h>
#include <string.h>

#include "../kernels/kern.h"

#define QCAP 4096
/* Gradient clipping: each parameter moves by at most lr * ELM_CLIP per update (the normalised gradient is
 * clipped elementwise at ±16).  On dev (tools/dev_sample.py) clips of 1 and 4 cost 1–7% and 16 is neutral
 * at the tuned lr while it bounds the damage of an outlier segment; larger lr diverged with or without it. */
#define ELM_CLIP 16.0f

struct Elman {
    int V, D, H, C, adapt, seg_cap, maxcs, capO;
    float decay;
    float lim; /* lr * ELM_CLIP: the largest change of one parameter per update */
    size_t np, off[ELM_NTENSORS + 1];
    float* p;  /* (np) working parameters */
    uint16_t* wo16; /* (V*H) Wo as binary16, static mode only and only when every Wo value is a binary16 */
    float* p0; /* (np) trained parameters (adaptive only) */
    float step[ELM_NTENSORS];
    int32_t* cs;  /* (C+1) class_start */
    int32_t* cls; /* (V) class of each id */
    float* h;     /* (H) */
    float *zc, *zw, *zk, *zg;
    int zc_ok, zw_c, zk_w, zg_w; /* logit caches: valid flag / argument, -1 = invalid */
    float *xbuf, *pre, *tmp;     /* (D) (H) (H) */

    /* ---- segment (adaptive) ---- */
    int T;
    int32_t* segi; /* (seg_cap*5): w, class, case, gap, case_coded per token */
    float* segf;   /* (seg_cap*(H + C + maxcs + 12)) */
    float *sh, *szc, *szw, *szk, *szg;

    /* ---- gradient (adaptive) ---- */
    float* gd; /* dense tensors */
    float *gEcase, *gEgap, *gWx, *gWh, *gbh, *gWc, *gbc, *gUc, *gUg;
    float* gE;          /* (seg_cap × D) rows of lsE */
    float *gWo, *gbo;   /* (capO × H), (capO) rows of lsO */
    float *gBc, *gBg;   /* (seg_cap × 4), (seg_cap × 8) rows of lsB */
    uint32_t epoch;     /* bumped every backward; never restored */
    uint32_t *stE, *stO, *stB; /* (V) epoch of the last touch */
    int32_t *slE, *slO, *slB;  /* (V) slot in the compact gradient of a touched row */
    int32_t *lsE, *lsO, *lsB;  /* touched rows, in first-touch order */
    int nE, nO, nB;
    float *dh, *dhn, *dx, *zt; /* (H) (H) (D) (maxz) */
    /* per-token backward vectors, row i = token T-1-i (the order the outer products are summed in) */
    float *bzc, *bzw, *bzk, *bzg, *bda, *bx; /* (S×C) (S×maxcs) (S×4) (S×8) (S×H) (S×D) */
    const float **pd, **px;                  /* (S) pointer lists for kern_outer_acc_seq */
    uint32_t* stC;                           /* (C) epoch of the last grouping of a class */

    /* ---- lazy decay ---- */
    uint32_t seg_no;
    uint32_t* last; /* (3V): last update of E rows, Wo/bo rows, Bc/Bg rows */
    float* q;       /* (QCAP+1) */

    /* ---- snapshot ---- */
    int has_snap;
    float *s_p, *s_h, *s_segf;
    uint32_t* s_last;
    int32_t* s_segi;
    uint32_t s_seg_no;
    int s_T;

    size_t bytes;
};

void elman_tensor_offsets(const NlmConfig* cfg, size_t off[ELM_NTENSORS + 1]) {
    size_t V = (size_t)cfg->V, D = (size_t)cfg->D, H = (size_t)cfg->H, C = (size_t)cfg->C;
    size_t sz[ELM_NTENSORS] = {V * D, 4 * D, 8 * D, H * D, H * H, H, C * H, C, V * H, V, 4 * H, V * 4, 8 * H, V * 8};
    off[0] = 0;
    for (int t = 0; t < ELM_NTENSORS; t++) off[t + 1] = off[t] + sz[t];
}

static int config_ok(const NlmConfig* cfg) {
    if (!cfg) return 0;
    if (cfg->V < 2 || cfg->C < 1 || cfg->C > cfg->V) return 0;
    if (cfg->D <= 0 || cfg->H <= 0 || cfg->D % 16 || cfg->H % 16) return 0;
    if (cfg->V > (1 << 24) || cfg->D > 4096 || cfg->H > 4096) return 0;
    if (cfg->seg_len < 1 || cfg->seg_len > 65536) return 0;
    return 1;
}

size_t nlm_param_count(const NlmConfig* cfg) {
    if (!config_ok(cfg)) return 0;
    size_t off[ELM_NTENSORS + 1];
    elman_tensor_offsets(cfg, off);
    return off[ELM_NTENSORS];
}

static void* xalloc(Elman* m, size_t n) {
    if (n == 0) n = 1;
    void* p = calloc(1, n);
    if (p) m->bytes += n;
    return p;
}

static void invalidate(Elman* m) {
    m->zc_ok = 0;
    m->zw_c = -1;
    m->zk_w = -1;
    m->zg_w = -1;
}

void elman_free(Elman* m) {
    if (!m) return;
    void* ps[] = {m->p,   m->p0,  m->cs,  m->cls, m->h,   m->zc,  m->zw,  m->zk,  m->zg,   m->xbuf,  m->pre,
                  m->tmp, m->segi, m->segf, m->gd, m->gE,  m->gWo, m->gbo, m->gBc, m->gBg,  m->stE,   m->stO,
                  m->stB, m->slE, m->slO, m->slB, m->lsE, m->lsO, m->lsB, m->dh,  m->dhn,  m->dx,
                  m->zt,  m->bzc, m->bzw, m->bzk, m->bzg, m->bda, m->bx, (void*)m->pd, (void*)m->px, m->stC,
                  m->last, m->q,  m->s_p, m->s_h, m->s_segf, m->s_last, m->s_segi, m->wo16};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) free(ps[i]);
    free(m);
}

Elman* elman_new(const NlmConfig* cfg, const float* params, const float* ms, const int32_t* class_start,
                 int adapt, int* err) {
    int e = NLM_ERR_CONFIG;
    Elman* m = NULL;
    if (!config_ok(cfg) || !params || !class_start || (adapt && !ms)) goto fail;
    e = NLM_ERR_VOCAB;
    if (class_start[0] != 0 || class_start[cfg->C] != cfg->V) goto fail;
    int maxcs = 0;
    for (int c = 0; c < cfg->C; c++) {
        int n = class_start[c + 1] - class_start[c];
        if (n <= 0) goto fail;
        if (n > maxcs) maxcs = n;
    }
    e = NLM_ERR_NOMEM;
    m = calloc(1, sizeof *m);
    if (!m) goto fail;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    m->V = cfg->V, m->D = cfg->D, m->H = cfg->H, m->C = cfg->C, m->adapt = adapt ? 1 : 0;
    m->seg_cap = cfg->seg_len, m->maxcs = maxcs, m->decay = cfg->decay;
    elman_tensor_offsets(cfg, m->off);
    m->np = m->off[ELM_NTENSORS];
    size_t V = (size_t)m->V, D = (size_t)m->D, H = (size_t)m->H, C = (size_t)m->C, S = (size_t)m->seg_cap;
    size_t maxz = C > (size_t)maxcs ? C : (size_t)maxcs;
    if (maxz < 8) maxz = 8;
    int ok = 1;
#define ALLOC(field, bytes) ok &= (m->field = xalloc(m, (bytes))) != NULL
    ALLOC(p, m->np * 4);
    ALLOC(cs, (C + 1) * 4);
    ALLOC(cls, V * 4);
    ALLOC(h, H * 4);
    ALLOC(zc, C * 4);
    ALLOC(zw, (size_t)maxcs * 4);
    ALLOC(zk, 4 * 4);
    ALLOC(zg, 8 * 4);
    ALLOC(xbuf, D * 4);
    ALLOC(pre, H * 4);
    ALLOC(tmp, H * 4);
    if (m->adapt) {
        size_t capO = S * (size_t)maxcs;
        if (capO > V) capO = V;
        m->capO = (int)capO;
        size_t ndense = (m->off[ELM_WO] - m->off[ELM_ECASE]) + 4 * H + 8 * H;
        ALLOC(p0, m->np * 4);
        ALLOC(segi, S * 5 * 4);
        ALLOC(segf, S * (H + C + (size_t)maxcs + 12) * 4);
        ALLOC(gd, ndense * 4);
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
        ALLOC(dh, H * 4);
        ALLOC(dhn, H * 4);
        ALLOC(dx, D * 4);
        ALLOC(zt, maxz * 4);
        ALLOC(bzc, S * C * 4);
        ALLOC(bzw, S * (size_t)maxcs * 4);
        ALLOC(bzk, S * 4 * 4);
        ALLOC(bzg, S * 8 * 4);
        ALLOC(bda, S * H * 4);
        ALLOC(bx, S * D * 4);
        ALLOC(pd, S * sizeof(float*));
        ALLOC(px, S * sizeof(float*));
        ALLOC(stC, C * 4);
        ALLOC(last, 3 * V * 4);
        ALLOC(q, (QCAP + 1) * 4);
    }
#undef ALLOC
    if (!ok) {
        nlm_fpenv_leave(&fe);
        goto fail;
    }
    memcpy(m->p, params, m->np * 4);
    if (!m->adapt) { /* models are stored as float16: keep a binary16 copy of Wo if it is exact */
        size_t nw = (size_t)m->V * (size_t)m->H;
        const float* wo = m->p + m->off[ELM_WO];
        m->wo16 = (uint16_t*)malloc(nw * 2);
        for (size_t i = 0; m->wo16 && i < nw; i++)
            if (!kern_float_to_half_exact(wo[i], &m->wo16[i])) {
                free(m->wo16);
                m->wo16 = NULL;
            }
    }
    memcpy(m->cs, class_start, (C + 1) * 4);
    for (int c = 0; c < m->C; c++)
        for (int w = class_start[c]; w < class_start[c + 1]; w++) m->cls[w] = c;
    if (m->adapt) {
        memcpy(m->p0, params, m->np * 4);
        for (int t = 0; t < ELM_NTENSORS; t++) {
            float den = ms[t] + cfg->eps;
            m->step[t] = den > 0.0f ? cfg->lr / den : 0.0f;
        }
        m->lim = cfg->lr * ELM_CLIP;
        float keep = 1.0f - cfg->decay;
        m->q[0] = 1.0f;
        for (int k = 1; k <= QCAP; k++) {
            float v = m->q[k - 1] * keep;
            m->q[k] = v < 0x1p-100f ? 0.0f : v;
        }
        m->sh = m->segf;
        m->szc = m->sh + S * H;
        m->szw = m->szc + S * C;
        m->szk = m->szw + S * (size_t)maxcs;
        m->szg = m->szk + S * 4;
        float* g = m->gd;
        size_t o = m->off[ELM_ECASE];
        m->gEcase = g + (m->off[ELM_ECASE] - o);
        m->gEgap = g + (m->off[ELM_EGAP] - o);
        m->gWx = g + (m->off[ELM_WX] - o);
        m->gWh = g + (m->off[ELM_WH] - o);
        m->gbh = g + (m->off[ELM_BH] - o);
        m->gWc = g + (m->off[ELM_WC] - o);
        m->gbc = g + (m->off[ELM_BC] - o);
        m->gUc = g + (m->off[ELM_WO] - o);
        m->gUg = m->gUc + 4 * H;
    }
    elman_reset(m);
    nlm_fpenv_leave(&fe);
    if (err) *err = NLM_OK;
    return m;
fail:
    elman_free(m);
    if (err) *err = e;
    return NULL;
}

void elman_reset(Elman* m) {
    if (m->adapt) {
        memcpy(m->p, m->p0, m->np * 4);
        memset(m->last, 0, 3 * (size_t)m->V * 4);
    }
    m->seg_no = 0;
    m->T = 0;
    memset(m->h, 0, (size_t)m->H * 4);
    invalidate(m);
}

int elman_save(Elman* m) {
    size_t H = (size_t)m->H, S = (size_t)m->seg_cap;
    if (!m->s_h) m->s_h = xalloc(m, H * 4);
    if (m->adapt) {
        if (!m->s_p) m->s_p = xalloc(m, m->np * 4);
        if (!m->s_last) m->s_last = xalloc(m, 3 * (size_t)m->V * 4);
        if (!m->s_segi) m->s_segi = xalloc(m, S * 5 * 4);
        if (!m->s_segf) m->s_segf = xalloc(m, S * (H + (size_t)m->C + (size_t)m->maxcs + 12) * 4);
        if (!m->s_p || !m->s_last || !m->s_segi || !m->s_segf) return NLM_ERR_NOMEM;
    }
    if (!m->s_h) return NLM_ERR_NOMEM;
    memcpy(m->s_h, m->h, H * 4);
    if (m->adapt) {
        memcpy(m->s_p, m->p, m->np * 4);
        memcpy(m->s_last, m->last, 3 * (size_t)m->V * 4);
        memcpy(m->s_segi, m->segi, S * 5 * 4);
        memcpy(m->s_segf, m->segf, S * (H + (size_t)m->C + (size_t)m->maxcs + 12) * 4);
    }
    m->s_seg_no = m->seg_no;
    m->s_T = m->T;
    m->has_snap = 1;
    return NLM_OK;
}

int elman_restore(Elman* m) {
    size_t H = (size_t)m->H, S = (size_t)m->seg_cap;
    if (!m->has_snap) return NLM_ERR_STATE;
    memcpy(m->h, m->s_h, H * 4);
    if (m->adapt) {
        memcpy(m->p, m->s_p, m->np * 4);
        memcpy(m->last, m->s_last, 3 * (size_t)m->V * 4);
        memcpy(m->segi, m->s_segi, S * 5 * 4);
        memcpy(m->segf, m->s_segf, S * (H + (size_t)m->C + (size_t)m->maxcs + 12) * 4);
    }
    m->seg_no = m->s_seg_no;
    m->T = m->s_T;
    invalidate(m);
    return NLM_OK;
}

int elman_class_of(const Elman* m, int w) { return (w >= 0 && w < m->V) ? m->cls[w] : 0; }
int elman_class_start(const Elman* m, int c) { return (c >= 0 && c <= m->C) ? m->cs[c] : 0; }
const float* elman_hidden(const Elman* m) { return m->h; }
const float* elman_params(const Elman* m) { return m->p; }
size_t elman_memory(const Elman* m) { return m->bytes + sizeof *m; }

/* ---- forward ---- */

static void add_bias(float* z, const float* b, int n) {
    for (int i = 0; i < n; i++) z[i] = z[i] + b[i];
}

static void class_logits(Elman* m) {
    if (m->zc_ok) return;
    kern_matvec(m->zc, m->p + m->off[ELM_WC], m->h, m->C, m->H);
    add_bias(m->zc, m->p + m->off[ELM_BC], m->C);
    m->zc_ok = 1;
}

static void word_logits(Elman* m, int c) {
    if (m->zw_c == c) return;
    int a = m->cs[c], n = m->cs[c + 1] - a;
    if (m->wo16) /* static, binary16-exact weights: same values, half the bytes read */
        kern_matvec_h(m->zw, m->wo16 + (size_t)a * m->H, m->h, n, m->H);
    else
        kern_matvec(m->zw, m->p + m->off[ELM_WO] + (size_t)a * m->H, m->h, n, m->H);
    add_bias(m->zw, m->p + m->off[ELM_BO] + a, n);
    m->zw_c = c;
}

static void case_logits(Elman* m, int w) {
    if (m->zk_w == w) return;
    kern_matvec(m->zk, m->p + m->off[ELM_UC], m->h, 4, m->H);
    add_bias(m->zk, m->p + m->off[ELM_BCASE] + (size_t)w * 4, 4);
    m->zk_w = w;
}

static void gap_logits(Elman* m, int w) {
    if (m->zg_w == w) return;
    kern_matvec(m->zg, m->p + m->off[ELM_UG], m->h, 8, m->H);
    add_bias(m->zg, m->p + m->off[ELM_BGAP] + (size_t)w * 8, 8);
    m->zg_w = w;
}

const float* elman_class_logits(Elman* m) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    class_logits(m);
    nlm_fpenv_leave(&fe);
    return m->zc;
}

const float* elman_word_logits(Elman* m, int c, int* n) {
    if (c < 0 || c >= m->C) c = 0;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    word_logits(m, c);
    nlm_fpenv_leave(&fe);
    if (n) *n = m->cs[c + 1] - m->cs[c];
    return m->zw;
}

const float* elman_case_logits(Elman* m, int w) {
    if (w < 0 || w >= m->V) w = 0;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    case_logits(m, w);
    nlm_fpenv_leave(&fe);
    return m->zk;
}

const float* elman_gap_logits(Elman* m, int w) {
    if (w < 0 || w >= m->V) w = 0;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    gap_logits(m, w);
    nlm_fpenv_leave(&fe);
    return m->zg;
}

/* x = (E[w] + Ecase[k]) + Egap[g]   (D) */
static void input_vec(const Elman* m, float* x, int w, int k, int g) {
    const float* e = m->p + m->off[ELM_E] + (size_t)w * m->D;
    const float* ec = m->p + m->off[ELM_ECASE] + (size_t)k * m->D;
    const float* eg = m->p + m->off[ELM_EGAP] + (size_t)g * m->D;
    for (int i = 0; i < m->D; i++) {
        float s = e[i] + ec[i];
        x[i] = s + eg[i];
    }
}

static int end_segment(Elman* m);

void elman_advance(Elman* m, int w, int ccase, int gap, int case_coded) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    if (w < 0 || w >= m->V) w = 0;
    ccase &= 3;
    gap &= 7;
    case_coded = (case_coded && ccase <= 2) ? 1 : 0;
    int H = m->H;
    if (m->adapt) {
        if (m->T >= m->seg_cap) end_segment(m);
        int t = m->T, c = m->cls[w];
        class_logits(m);
        word_logits(m, c);
        case_logits(m, w);
        gap_logits(m, w);
        int32_t* si = m->segi + (size_t)t * 5;
        si[0] = w, si[1] = c, si[2] = ccase, si[3] = gap, si[4] = case_coded;
        memcpy(m->sh + (size_t)t * H, m->h, (size_t)H * 4);
        memcpy(m->szc + (size_t)t * m->C, m->zc, (size_t)m->C * 4);
        memcpy(m->szw + (size_t)t * m->maxcs, m->zw, (size_t)(m->cs[c + 1] - m->cs[c]) * 4);
        memcpy(m->szk + (size_t)t * 4, m->zk, 16);
        memcpy(m->szg + (size_t)t * 8, m->zg, 32);
        m->T = t + 1;
    }
    input_vec(m, m->xbuf, w, ccase, gap);
    kern_matvec(m->pre, m->p + m->off[ELM_WX], m->xbuf, H, m->D);
    kern_matvec(m->tmp, m->p + m->off[ELM_WH], m->h, H, H);
    const float* bh = m->p + m->off[ELM_BH];
    for (int i = 0; i < H; i++) {
        float s = m->pre[i] + m->tmp[i];
        m->pre[i] = s + bh[i];
    }
    kern_tanh_vec(m->h, m->pre, H);
    invalidate(m);
    nlm_fpenv_leave(&fe);
}

/* ---- backward ---- */

/* p = softmax(z) over n: m = max, e = kern_exp(z - m), S = sum ascending, p = e / S. */
static void softmax(float* p, float* tmp, const float* z, int n) {
    float mx = z[0];
    for (int i = 1; i < n; i++)
        if (z[i] > mx) mx = z[i];
    for (int i = 0; i < n; i++) tmp[i] = z[i] - mx;
    kern_exp_vec(p, tmp, n);
    float s = 0.0f;
    for (int i = 0; i < n; i++) s = s + p[i];
    for (int i = 0; i < n; i++) p[i] = p[i] / s;
}

static int touch(uint32_t* st, int32_t* sl, int32_t* ls, int* n, uint32_t epoch, int r) {
    if (st[r] != epoch) {
        st[r] = epoch;
        sl[r] = *n;
        ls[(*n)++] = r;
        return 1;
    }
    return 0;
}

static void backward(Elman* m) {
    int T = m->T, H = m->H, D = m->D, C = m->C;
    const float* P = m->p;
    m->epoch++;
    if (m->epoch == 0) { /* wrapped: clear the stamps once every 2^32 segments */
        memset(m->stE, 0, (size_t)m->V * 4);
        memset(m->stO, 0, (size_t)m->V * 4);
        memset(m->stB, 0, (size_t)m->V * 4);
        memset(m->stC, 0, (size_t)m->C * 4);
        m->epoch = 1;
    }
    m->nE = m->nO = m->nB = 0;
    /* touch pass: build the row lists and zero their compact gradient rows */
    for (int t = 0; t < T; t++) {
        const int32_t* si = m->segi + (size_t)t * 5;
        int w = si[0], c = si[1];
        for (int r = m->cs[c]; r < m->cs[c + 1]; r++)
            if (touch(m->stO, m->slO, m->lsO, &m->nO, m->epoch, r)) m->gbo[m->slO[r]] = 0.0f;
            /* its gWo row is written (not accumulated) by the class's kern_outer_acc_seq below */
        if (touch(m->stB, m->slB, m->lsB, &m->nB, m->epoch, w)) {
            memset(m->gBc + (size_t)m->slB[w] * 4, 0, 16);
            memset(m->gBg + (size_t)m->slB[w] * 8, 0, 32);
        }
        if (t < T - 1 && touch(m->stE, m->slE, m->lsE, &m->nE, m->epoch, w))
            memset(m->gE + (size_t)m->slE[w] * D, 0, (size_t)D * 4);
    }
    /* gradients summed by loops; gWc, gUc, gUg, gWx, gWh are written by kern_outer_acc_seq(zero_first) */
    memset(m->gEcase, 0, 12 * (size_t)D * 4);
    memset(m->gbh, 0, (size_t)H * 4);
    memset(m->gbc, 0, (size_t)C * 4);
    memset(m->dhn, 0, (size_t)H * 4);

    const float *Wc = P + m->off[ELM_WC], *Wo = P + m->off[ELM_WO], *Uc = P + m->off[ELM_UC];
    const float *Ug = P + m->off[ELM_UG], *Wx = P + m->off[ELM_WX], *Wh = P + m->off[ELM_WH];
    float* dh = m->dh;
    for (int t = T - 1; t >= 0; t--) {
        int i = T - 1 - t;
        const int32_t* si = m->segi + (size_t)t * 5;
        int w = si[0], c = si[1], k = si[2], g = si[3], cc = si[4];
        const float* s = m->sh + (size_t)t * H;
        memcpy(dh, m->dhn, (size_t)H * 4);
        /* class head */
        float* pz = m->bzc + (size_t)i * C;
        softmax(pz, m->zt, m->szc + (size_t)t * C, C);
        pz[c] = pz[c] - 1.0f;
        for (int j = 0; j < C; j++) m->gbc[j] = m->gbc[j] + pz[j];
        kern_matvec_t_acc(dh, Wc, pz, C, H);
        /* word head, rows a..b */
        int a = m->cs[c], n = m->cs[c + 1] - a;
        pz = m->bzw + (size_t)i * m->maxcs;
        softmax(pz, m->zt, m->szw + (size_t)t * m->maxcs, n);
        pz[w - a] = pz[w - a] - 1.0f;
        for (int j = 0; j < n; j++) {
            int sl = m->slO[a + j];
            m->gbo[sl] = m->gbo[sl] + pz[j];
        }
        kern_matvec_t_acc(dh, Wo + (size_t)a * H, pz, n, H);
        /* case head over symbols 0..2 */
        int sb = m->slB[w];
        if (cc) {
            pz = m->bzk + (size_t)i * 4;
            softmax(pz, m->zt, m->szk + (size_t)t * 4, 3);
            pz[k] = pz[k] - 1.0f;
            for (int j = 0; j < 3; j++) m->gBc[(size_t)sb * 4 + j] = m->gBc[(size_t)sb * 4 + j] + pz[j];
            kern_matvec_t_acc(dh, Uc, pz, 3, H);
        }
        /* gap head */
        pz = m->bzg + (size_t)i * 8;
        softmax(pz, m->zt, m->szg + (size_t)t * 8, 8);
        pz[g] = pz[g] - 1.0f;
        for (int j = 0; j < 8; j++) m->gBg[(size_t)sb * 8 + j] = m->gBg[(size_t)sb * 8 + j] + pz[j];
        kern_matvec_t_acc(dh, Ug, pz, 8, H);
        if (t == 0) break;
        /* transition that produced s_t from token t-1 */
        float* da = m->bda + (size_t)i * H;
        for (int j = 0; j < H; j++) {
            float s2 = s[j] * s[j];
            float u = 1.0f - s2;
            da[j] = dh[j] * u;
        }
        const int32_t* sp = m->segi + (size_t)(t - 1) * 5;
        input_vec(m, m->bx + (size_t)i * D, sp[0], sp[2], sp[3]);
        for (int j = 0; j < H; j++) m->gbh[j] = m->gbh[j] + da[j];
        memset(m->dx, 0, (size_t)D * 4);
        kern_matvec_t_acc(m->dx, Wx, da, H, D);
        kern_axpy(m->gE + (size_t)m->slE[sp[0]] * D, 1.0f, m->dx, D);
        kern_axpy(m->gEcase + (size_t)sp[2] * D, 1.0f, m->dx, D);
        kern_axpy(m->gEgap + (size_t)sp[3] * D, 1.0f, m->dx, D);
        memset(m->dhn, 0, (size_t)H * 4);
        kern_matvec_t_acc(m->dhn, Wh, da, H, H);
    }
    /* weight gradients: sums of outer products over the tokens, i ascending (t descending) */
    const float **pd = m->pd, **px = m->px;
    for (int i = 0; i < T; i++) pd[i] = m->bzc + (size_t)i * C, px[i] = m->sh + (size_t)(T - 1 - i) * H;
    kern_outer_acc_seq(m->gWc, pd, px, T, C, H, 1);
    for (int i = 0; i < T; i++) pd[i] = m->bzg + (size_t)i * 8;
    kern_outer_acc_seq(m->gUg, pd, px, T, 8, H, 1);
    int nk = 0;
    for (int i = 0; i < T; i++)
        if (m->segi[(size_t)(T - 1 - i) * 5 + 4]) pd[nk] = m->bzk + (size_t)i * 4, px[nk++] = m->sh + (size_t)(T - 1 - i) * H;
    kern_outer_acc_seq(m->gUc, pd, px, nk, 3, H, 1);
    for (int i = 0; i + 1 < T; i++) pd[i] = m->bda + (size_t)i * H, px[i] = m->bx + (size_t)i * D;
    kern_outer_acc_seq(m->gWx, pd, px, T - 1, H, D, 1);
    for (int i = 0; i + 1 < T; i++) px[i] = m->sh + (size_t)(T - 2 - i) * H;
    kern_outer_acc_seq(m->gWh, pd, px, T - 1, H, H, 1);
    /* Wo rows, one class at a time (its rows have consecutive gradient slots) */
    for (int i = 0; i < T; i++) {
        int c = m->segi[(size_t)(T - 1 - i) * 5 + 1];
        if (m->stC[c] == m->epoch) continue;
        m->stC[c] = m->epoch;
        int nt = 0;
        for (int j = i; j < T; j++)
            if (m->segi[(size_t)(T - 1 - j) * 5 + 1] == c)
                pd[nt] = m->bzw + (size_t)j * m->maxcs, px[nt++] = m->sh + (size_t)(T - 1 - j) * H;
        int a = m->cs[c];
        kern_outer_acc_seq(m->gWo + (size_t)m->slO[a] * H, pd, px, nt, m->cs[c + 1] - a, H, 1);
    }
}

/* catch up the missed decays of one row (n floats at offset o), then the update step */
static void update_row(Elman* m, size_t o, const float* g, int n, float step, uint32_t last) {
    uint32_t k = m->seg_no - last - 1;
    if (k > 0)
        kern_decay_sgd(m->p + o, m->p0 + o, g, m->q[k > QCAP ? QCAP : k], step, m->decay, m->lim, n);
    else
        kern_sgd_decay(m->p + o, m->p0 + o, g, step, m->decay, m->lim, n);
}

static void update(Elman* m) {
    int H = m->H, D = m->D;
    float* p = m->p;
    const float* p0 = m->p0;
    static const int dense[] = {ELM_ECASE, ELM_EGAP, ELM_WX, ELM_WH, ELM_BH, ELM_WC, ELM_BC};
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++) {
        int t = dense[i];
        size_t o = m->off[t];
        kern_sgd_decay(p + o, p0 + o, m->gd + (o - m->off[ELM_ECASE]), m->step[t], m->decay, m->lim,
                       (int)(m->off[t + 1] - o));
    }
    kern_sgd_decay(p + m->off[ELM_UC], p0 + m->off[ELM_UC], m->gUc, m->step[ELM_UC], m->decay, m->lim, 4 * H);
    kern_sgd_decay(p + m->off[ELM_UG], p0 + m->off[ELM_UG], m->gUg, m->step[ELM_UG], m->decay, m->lim, 8 * H);
    uint32_t *lastE = m->last, *lastO = m->last + m->V, *lastB = m->last + 2 * (size_t)m->V;
    for (int i = 0; i < m->nE; i++) {
        int r = m->lsE[i];
        update_row(m, m->off[ELM_E] + (size_t)r * D, m->gE + (size_t)i * D, D, m->step[ELM_E], lastE[r]);
        lastE[r] = m->seg_no;
    }
    for (int i = 0; i < m->nO; i++) {
        int r = m->lsO[i];
        update_row(m, m->off[ELM_WO] + (size_t)r * H, m->gWo + (size_t)i * H, H, m->step[ELM_WO], lastO[r]);
        update_row(m, m->off[ELM_BO] + (size_t)r, m->gbo + i, 1, m->step[ELM_BO], lastO[r]);
        lastO[r] = m->seg_no;
    }
    for (int i = 0; i < m->nB; i++) {
        int r = m->lsB[i];
        update_row(m, m->off[ELM_BCASE] + (size_t)r * 4, m->gBc + (size_t)i * 4, 4, m->step[ELM_BCASE], lastB[r]);
        update_row(m, m->off[ELM_BGAP] + (size_t)r * 8, m->gBg + (size_t)i * 8, 8, m->step[ELM_BGAP], lastB[r]);
        lastB[r] = m->seg_no;
    }
}

static int end_segment(Elman* m) {
    if (m->adapt && m->T > 0) {
        backward(m);
        m->seg_no++;
        update(m);
        invalidate(m);
    }
    m->T = 0;
    return NLM_OK;
}

int elman_end_segment(Elman* m) {
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    int r = end_segment(m);
    nlm_fpenv_leave(&fe);
    return r;
}

void elman_debug_grad(const Elman* m, float* out) {
    memset(out, 0, m->np * 4);
    if (!m->adapt) return;
    int H = m->H, D = m->D;
    size_t o = m->off[ELM_ECASE];
    memcpy(out + o, m->gd, (m->off[ELM_WO] - o) * 4);
    memcpy(out + m->off[ELM_UC], m->gUc, 4 * (size_t)H * 4);
    memcpy(out + m->off[ELM_UG], m->gUg, 8 * (size_t)H * 4);
    for (int i = 0; i < m->nE; i++)
        memcpy(out + m->off[ELM_E] + (size_t)m->lsE[i] * D, m->gE + (size_t)i * D, (size_t)D * 4);
    for (int i = 0; i < m->nO; i++) {
        memcpy(out + m->off[ELM_WO] + (size_t)m->lsO[i] * H, m->gWo + (size_t)i * H, (size_t)H * 4);
        out[m->off[ELM_BO] + m->lsO[i]] = m->gbo[i];
    }
    for (int i = 0; i < m->nB; i++) {
        memcpy(out + m->off[ELM_BCASE] + (size_t)m->lsB[i] * 4, m->gBc + (size_t)i * 4, 16);
        memcpy(out + m->off[ELM_BGAP] + (size_t)m->lsB[i] * 8, m->gBg + (size_t)i * 8, 32);
    }
}
