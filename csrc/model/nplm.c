/* nplm.c: the NPLM body (docs/format.md §2.4; Bengio et al. 2003 without direct connections): h is a tanh
 * layer over the embeddings of the last K tokens (K = the type's parameter, the context: n − 1 of an
 * n-gram), so the model remembers exactly K tokens and nothing else.
 *
 * Tensors (in the block after Egap): Wx (H×D) on the newest input, Wh (H×(K−1)D) on the K−1 older ones,
 * bh (H).  State S = [h (H), u ((K−1)·D)], u = the K−1 inputs before the newest, newest first (zero at a
 * reset).  Forward, one step from input x (D):
 *   a = (Wx·x + Wh·u) + bh;  h = tanh(a);  u = [x, u[0 : (K−2)·D]]        (kern_matvec, canonical order)
 * Backward of the transition that produced S_t from (S_{t-1}, x_{t-1}), given dh, du (= ∂L/∂S_t):
 *   da = dh·(1 − h_t·h_t);  dbh += da;
 *   dx = (0 + Wxᵀda) + du[0:D]                       (x_{t-1} is both the newest input and u_t's first slot)
 *   du_{t-1} = (0 + Whᵀda) + [du[D:(K−1)D], 0]       (u_t's slot k+1 is u_{t-1}'s slot k; the last is dropped)
 *   dh_{t-1} = 0                                    (h_{t-1} does not enter h_t)
 *   over the segment: dWx = Σ_i da_i ⊗ x_i, dWh = Σ_i da_i ⊗ u_i (i = T−1−t ascending, kern_outer_acc_seq).
 */
#include "../common/fpenv.h"
#include "body.h"

#include <string.h>

#include "../kernels/kern.h"

enum { WX, WH, BH };

static const char* const NAMES[] = {"Wx", "Wh", "bh"};

static void shapes(int D, int H, int K, size_t sz[]) {
    sz[WX] = (size_t)H * (size_t)D;
    sz[WH] = (size_t)H * (size_t)(K - 1) * (size_t)D;
    sz[BH] = (size_t)H;
}

static int state_floats(int D, int H, int K) { return H + (K - 1) * D; }

static int fwd_floats(int D, int H, int K) { /* pre, tmp */
    (void)D, (void)K;
    return 2 * H;
}

static int da_floats(int D, int H, int K) {
    (void)D, (void)K;
    return H;
}

/* S = [h, u] <- [tanh((Wx·x + Wh·u) + bh), [x, u without its last slot]] */
static void step(LmBody* b, const float* const* P, const float* x, float* S) {
    int H = b->H, D = b->D, nu = (b->param - 1) * b->D;
    float *h = S, *u = S + H, *pre = b->fwd, *tmp = b->fwd + H;
    kern_matvec(pre, P[WX], x, H, D);
    kern_matvec(tmp, P[WH], u, H, nu);
    kern_add3(pre, pre, tmp, P[BH], H); /* (Wx·x + Wh·u) + bh */
    kern_tanh_vec(h, pre, H);
    memmove(u + D, u, (size_t)(nu - D) * 4);
    memcpy(u, x, (size_t)D * 4);
}

static void bwd_begin(LmBody* b, float* const* G) { memset(G[BH], 0, (size_t)b->H * 4); }

static void bwd_token(LmBody* b, const float* const* P, float* const* G, int i, const float* S_t,
                      const float* S_prev, const float* x_prev, const float* dS, float* dx, float* dS_prev) {
    (void)S_prev;
    (void)x_prev;
    int H = b->H, D = b->D, nu = (b->param - 1) * b->D;
    const float *h = S_t, *dh = dS, *du = dS + H;
    float* da = b->da + (size_t)i * H;
    for (int j = 0; j < H; j++) {
        float s2 = h[j] * h[j];
        float u = 1.0f - s2;
        da[j] = dh[j] * u;
    }
    kern_add(G[BH], G[BH], da, H);
    memset(dx, 0, (size_t)D * 4);
    kern_matvec_t_acc(dx, P[WX], da, H, D);
    kern_add(dx, dx, du, D);
    if (!dS_prev) return; /* a one-step backward (lm_set_schedule) wants dx only */
    float *dh_prev = dS_prev, *du_prev = dS_prev + H;
    memset(dh_prev, 0, (size_t)H * 4);
    memset(du_prev, 0, (size_t)nu * 4);
    kern_matvec_t_acc(du_prev, P[WH], da, H, nu);
    kern_add(du_prev, du_prev, du + D, nu - D); /* the older slots move down by one */
}

static void bwd_finish(LmBody* b, float* const* G, int n, const float* const* S_prev, const float* const* x_prev) {
    int H = b->H, nu = (b->param - 1) * b->D;
    for (int i = 0; i < n; i++) b->pd[i] = b->da + (size_t)i * H, b->pu[i] = S_prev[i] + H;
    kern_outer_acc_seq(G[WX], b->pd, x_prev, n, H, b->D, 1);
    kern_outer_acc_seq(G[WH], b->pd, b->pu, n, H, nu, 1);
}

const LmBodyOps lm_body_nplm = {
    .name = "nplm",
    .ntensors = 3,
    .tensor_names = NAMES,
    .param_min = 2,
    .param_max = 16,
    .h_tensor = -1,
    .x_tensor = -1,
    .shapes = shapes,
    .state_floats = state_floats,
    .fwd_floats = fwd_floats,
    .da_floats = da_floats,
    .step = step,
    .bwd_begin = bwd_begin,
    .bwd_token = bwd_token,
    .bwd_finish = bwd_finish,
};
