/* lstm.c: the LSTM body (docs/format.md §2.4): one layer of gated recurrence with a cell.
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

#include <string.h>

#include "../kernels/kern.h"

enum { WX, WH, B };

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

/* forward scratch: a (4H), tmp (4H), gate (4H: i, f, g, o), tc (H: tanh(c')) */
static int fwd_floats(int D, int H, int param) {
    (void)D, (void)param;
    return 13 * H;
}

static int da_floats(int D, int H, int param) {
    (void)D, (void)param;
    return 4 * H;
}

#define A(b) ((b)->fwd)
#define TMP(b) ((b)->fwd + 4 * (b)->H)
#define GATE(b) ((b)->fwd + 8 * (b)->H)
#define TC(b) ((b)->fwd + 12 * (b)->H)

/* The gates of a step from (h, x): GATE = [σ(a_i), σ(a_f), tanh(a_g), σ(a_o)] */
static void gates(LmBody* b, const float* const* P, const float* x, const float* h) {
    int H = b->H, H4 = 4 * b->H;
    float *a = A(b), *tmp = TMP(b), *gate = GATE(b);
    body_matvec_x(b, a, P[WX], x, H4); /* float, or the integer products (§2.6): static stream, heads mode */
    body_matvec_h(b, tmp, P[WH], h, H4);
    kern_add3(a, a, tmp, P[B], H4); /* (Wx·x + Wh·h) + b */
    for (int j = 0; j < H4; j++) tmp[j] = 0.5f * a[j];
    kern_tanh_vec(gate, tmp, 2 * H);                   /* tanh(0.5·a) of i and f */
    kern_tanh_vec(gate + 3 * H, tmp + 3 * H, H);       /* and of o */
    for (int j = 0; j < H4; j++) gate[j] = 0.5f * gate[j] + 0.5f;
    kern_tanh_vec(gate + 2 * H, a + 2 * H, H);         /* g = tanh(a_g), over what the loop wrote there */
}

/* S = [h, c] <- [o·tanh(c'), c' = (f·c) + (i·g)] */
static void step(LmBody* b, const float* const* P, const float* x, float* S) {
    int H = b->H;
    float *h = S, *c = S + H, *tc = TC(b);
    gates(b, P, x, h);
    const float *gi = GATE(b), *gf = gi + H, *gg = gi + 2 * H, *go = gi + 3 * H;
    for (int j = 0; j < H; j++) {
        float fc = gf[j] * c[j];
        float ig = gi[j] * gg[j];
        c[j] = fc + ig;
    }
    kern_tanh_vec(tc, c, H);
    for (int j = 0; j < H; j++) h[j] = go[j] * tc[j];
}

static void bwd_begin(LmBody* b, float* const* G) { memset(G[B], 0, 4 * (size_t)b->H * 4); }

static void bwd_token(LmBody* b, const float* const* P, float* const* G, int i, const float* S_t,
                      const float* S_prev, const float* x_prev, const float* dS, float* dx, float* dS_prev) {
    int H = b->H, D = b->D, H4 = 4 * b->H;
    const float *c_t = S_t + H, *c_prev = S_prev + H, *dh = dS, *dc = dS + H;
    float* tc = TC(b);
    gates(b, P, x_prev, S_prev);
    kern_tanh_vec(tc, c_t, H);
    const float *gi = GATE(b), *gf = gi + H, *gg = gi + 2 * H, *go = gi + 3 * H;
    float* da = b->da + (size_t)i * H4;
    float* dc_prev = dS_prev ? dS_prev + H : NULL; /* NULL: a one-step backward (dx only) */
    for (int j = 0; j < H; j++) {
        float tau = tc[j];
        float d_o = dh[j] * tau;
        float u = 1.0f - tau * tau;
        float dct = dc[j] + (dh[j] * go[j]) * u;
        float di = dct * gg[j], dg = dct * gi[j], df = dct * c_prev[j];
        if (dc_prev) dc_prev[j] = dct * gf[j];
        da[j] = di * (gi[j] * (1.0f - gi[j]));
        da[H + j] = df * (gf[j] * (1.0f - gf[j]));
        da[2 * H + j] = dg * (1.0f - gg[j] * gg[j]);
        da[3 * H + j] = d_o * (go[j] * (1.0f - go[j]));
    }
    kern_add(G[B], G[B], da, H4);
    memset(dx, 0, (size_t)D * 4);
    kern_matvec_t_acc(dx, P[WX], da, H4, D);
    if (!dS_prev) return;
    memset(dS_prev, 0, (size_t)H * 4);
    kern_matvec_t_acc(dS_prev, P[WH], da, H4, H);
}

static void bwd_finish(LmBody* b, float* const* G, int n, const float* const* S_prev, const float* const* x_prev) {
    int H4 = 4 * b->H;
    for (int i = 0; i < n; i++) b->pd[i] = b->da + (size_t)i * H4;
    kern_outer_acc_seq(G[WX], b->pd, x_prev, n, H4, b->D, 1);
    kern_outer_acc_seq(G[WH], b->pd, S_prev, n, H4, b->H, 1); /* h_{t-1} = S_prev[0..H) */
}

const LmBodyOps lm_body_lstm = {
    .name = "lstm",
    .ntensors = 3,
    .tensor_names = NAMES,
    .param_min = 0,
    .param_max = 0,
    .h_tensor = WH,
    .x_tensor = WX,
    .shapes = shapes,
    .state_floats = state_floats,
    .fwd_floats = fwd_floats,
    .da_floats = da_floats,
    .step = step,
    .bwd_begin = bwd_begin,
    .bwd_token = bwd_token,
    .bwd_finish = bwd_finish,
};
