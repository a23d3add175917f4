/* lstm.c: the LSTM body (codec/FORMAT.md §2.4): one layer of gated recurrence with a cell.
 *
 * Tensors (in the block after Egap): Wx (4H×D), Wh (4H×H), b (4H), rows in gate order i, f, g, o (H each).
 * State S = [h (H), c (H)].  Forward, one step from input x (D):
 *   a = (Wx·x + Wh·h) + b                              (4H; kern_matvec, 16-lane canonical order)
 *   i = σ(a_i), f = σ(a_f), o = σ(a_o), g = tanh(a_g),  σ(z) = 0.5·tanh(0.5·z) + 0.5
 *   c' = (f·c) + (i·g);  h' = o·tanh(c')                (tanh by kern_tanh_vec)
 * The forget gate's bias (b_f) is where training sets how long the cell remembers (train.py --forget-bias).
 * Backward of the transition that produced S_t = (h_t, c_t) from (S_{t-1}, x_{t-1}), given dh, dc:
 *   the gates are recomputed from S_{t-1} and x_{t-1} by the forward's own operations (same bits);
 *   τ = tanh(c_t);  do = dh·τ;  dc' = dc + (dh·o)·(1 − τ·τ);
 *   di = dc'·g;  dg = dc'·i;  df = dc'·c_{t-1};  dc_{t-1} = dc'·f;
 *   da_i = di·(i·(1 − i)), da_f = df·(f·(1 − f)), da_o = do·(o·(1 − o)), da_g = dg·(1 − g·g);
 *   db += da;  dx = Wxᵀda;  dh_{t-1} = Whᵀda   (kern_matvec_t_acc, ascending rows, from zero);
 *   over the segment: dWx = Σ_i da_i ⊗ x_i, dWh = Σ_i da_i ⊗ h_i (i = T−1−t ascending, kern_outer_acc_seq).
 */
#include "../common/fpenv.h"
#include "body.h"

#include <stdlib.h>
#include <string.h>

#include "../kernels/kern.h"

enum { WX, WH, B };

typedef struct {
    float *a, *tmp;   /* (4H) (4H) pre-activations */
    float* gate;      /* (4H) i, f, g, o */
    float* tc;        /* (H) tanh(c') */
    float* da;        /* (seg_cap × 4H) da of each transition, row i = token T-1-i (adaptive) */
    const float** pd; /* (seg_cap) */
} LstmScratch;

static const char* const NAMES[] = {"Wx", "Wh", "b"};

static void shapes(int D, int H, int param, size_t sz[]) {
    (void)param;
    sz[WX] = 4 * (size_t)H * (size_t)D;
    sz[WH] = 4 * (size_t)H * (size_t)H;
    sz[B] = 4 * (size_t)H;
}

static int state_floats(int D, int H, int param) {
    (void)param;
    (void)D;
    return 2 * H;
}

static void scratch_free(LmBody* b) {
    LstmScratch* s = b->mem;
    if (!s) return;
    free(s->a);
    free(s->tmp);
    free(s->gate);
    free(s->tc);
    free(s->da);
    free((void*)s->pd);
    free(s);
    b->mem = NULL;
}

static int scratch_new(LmBody* b, size_t* bytes) {
    size_t H = (size_t)b->H, S = (size_t)b->seg_cap;
    LstmScratch* s = calloc(1, sizeof *s);
    b->mem = s;
    if (!s) return -1;
    s->a = calloc(4 * H, 4);
    s->tmp = calloc(4 * H, 4);
    s->gate = calloc(4 * H, 4);
    s->tc = calloc(H, 4);
    if (b->adapt) {
        s->da = calloc(S * 4 * H, 4);
        s->pd = calloc(S, sizeof(float*));
    }
    if (!s->a || !s->tmp || !s->gate || !s->tc || (b->adapt && (!s->da || !s->pd))) {
        scratch_free(b);
        return -1;
    }
    *bytes += sizeof *s + 13 * H * 4 + (b->adapt ? S * 4 * H * 4 + S * sizeof(float*) : 0);
    return 0;
}

/* The gates of a step from (h, x): s->gate = [σ(a_i), σ(a_f), tanh(a_g), σ(a_o)] */
static void gates(LmBody* b, const float* const* P, const float* x, const float* h) {
    LstmScratch* s = b->mem;
    int H = b->H, H4 = 4 * b->H;
    kern_matvec(s->a, P[WX], x, H4, b->D);
    kern_matvec(s->tmp, P[WH], h, H4, H);
    kern_add3(s->a, s->a, s->tmp, P[B], H4); /* (Wx·x + Wh·h) + b */
    for (int j = 0; j < H4; j++) s->tmp[j] = 0.5f * s->a[j];
    kern_tanh_vec(s->gate, s->tmp, H4);      /* tanh(0.5·a): the sigmoids' */
    for (int j = 0; j < H4; j++) s->gate[j] = 0.5f * s->gate[j] + 0.5f;
    kern_tanh_vec(s->gate + 2 * H, s->a + 2 * H, H); /* g = tanh(a_g) over its σ */
}

/* S = [h, c] <- [o·tanh(c'), c' = (f·c) + (i·g)] */
static void step(LmBody* b, const float* const* P, const float* x, float* S) {
    LstmScratch* s = b->mem;
    int H = b->H;
    float *h = S, *c = S + H;
    gates(b, P, x, h);
    const float *gi = s->gate, *gf = s->gate + H, *gg = s->gate + 2 * H, *go = s->gate + 3 * H;
    for (int j = 0; j < H; j++) {
        float fc = gf[j] * c[j];
        float ig = gi[j] * gg[j];
        c[j] = fc + ig;
    }
    kern_tanh_vec(s->tc, c, H);
    for (int j = 0; j < H; j++) h[j] = go[j] * s->tc[j];
}

static void bwd_begin(LmBody* b, float* const* G) { memset(G[B], 0, 4 * (size_t)b->H * 4); }

static void bwd_token(LmBody* b, const float* const* P, float* const* G, int i, const float* S_t,
                      const float* S_prev, const float* x_prev, const float* dS, float* dx, float* dS_prev) {
    LstmScratch* s = b->mem;
    int H = b->H, D = b->D, H4 = 4 * b->H;
    const float *c_t = S_t + H, *c_prev = S_prev + H, *dh = dS, *dc = dS + H;
    gates(b, P, x_prev, S_prev);
    kern_tanh_vec(s->tc, c_t, H);
    const float *gi = s->gate, *gf = s->gate + H, *gg = s->gate + 2 * H, *go = s->gate + 3 * H;
    float* da = s->da + (size_t)i * H4;
    float* dc_prev = dS_prev + H;
    for (int j = 0; j < H; j++) {
        float tau = s->tc[j];
        float d_o = dh[j] * tau;
        float u = 1.0f - tau * tau;
        float dct = dc[j] + (dh[j] * go[j]) * u;
        float di = dct * gg[j], dg = dct * gi[j], df = dct * c_prev[j];
        dc_prev[j] = dct * gf[j];
        da[j] = di * (gi[j] * (1.0f - gi[j]));
        da[H + j] = df * (gf[j] * (1.0f - gf[j]));
        da[2 * H + j] = dg * (1.0f - gg[j] * gg[j]);
        da[3 * H + j] = d_o * (go[j] * (1.0f - go[j]));
    }
    kern_add(G[B], G[B], da, H4);
    memset(dx, 0, (size_t)D * 4);
    kern_matvec_t_acc(dx, P[WX], da, H4, D);
    memset(dS_prev, 0, (size_t)H * 4);
    kern_matvec_t_acc(dS_prev, P[WH], da, H4, H);
}

static void bwd_finish(LmBody* b, float* const* G, int n, const float* const* S_prev, const float* const* x_prev) {
    LstmScratch* s = b->mem;
    int H4 = 4 * b->H;
    for (int i = 0; i < n; i++) s->pd[i] = s->da + (size_t)i * H4;
    kern_outer_acc_seq(G[WX], s->pd, x_prev, n, H4, b->D, 1);
    kern_outer_acc_seq(G[WH], s->pd, S_prev, n, H4, b->H, 1); /* h_{t-1} = S_prev[0..H) */
}

const LmBodyOps lm_body_lstm = {
    .name = "lstm",
    .ntensors = 3,
    .tensor_names = NAMES,
    .param_min = 0,
    .param_max = 0,
    .shapes = shapes,
    .state_floats = state_floats,
    .scratch_new = scratch_new,
    .scratch_free = scratch_free,
    .step = step,
    .bwd_begin = bwd_begin,
    .bwd_token = bwd_token,
    .bwd_finish = bwd_finish,
};
