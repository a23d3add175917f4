/* elman.c: the Elman body (docs/format.md §2): one tanh recurrent layer, h' = tanh((Wx·x + Wh·h) + bh).
 *
 * Tensors (in the block after Egap): Wx (H×D), Wh (H×H), bh (H).  State S = h (H floats).
 * Forward, one step from input x (D):  pre = Wx·x;  tmp = Wh·h;  pre = (pre + tmp) + bh;  h = tanh(pre)
 *   (products by kern_matvec, 16-lane canonical order; tanh by kern_tanh_vec).
 * Backward of the transition that produced s_t from (s_{t-1}, x_{t-1}), given dh = ∂L/∂s_t:
 *   da = dh·(1 − s_t·s_t);  dbh += da;  dx = Wxᵀda;  dh_{t-1} = Whᵀda   (Wᵀd products by kern_matvec_t_acc:
 *   ascending rows, from zero);
 *   then over the segment: dWx = Σ_i da_i ⊗ x_i, dWh = Σ_i da_i ⊗ s_i (i = T−1−t ascending,
 *   kern_outer_acc_seq).
 */
#include "../common/fpenv.h"
#include "body.h"

#include <string.h>

#include "../kernels/kern.h"

enum { WX, WH, BH };

static const char* const NAMES[] = {"Wx", "Wh", "bh"};

static void shapes(int D, int H, int param, size_t sz[]) {
    (void)param;
    sz[WX] = (size_t)H * (size_t)D;
    sz[WH] = (size_t)H * (size_t)H;
    sz[BH] = (size_t)H;
}

static int state_floats(int D, int H, int param) {
    (void)param;
    (void)D;
    return H;
}

static int fwd_floats(int D, int H, int param) { /* pre, tmp */
    (void)D, (void)param;
    return 2 * H;
}

static int da_floats(int D, int H, int param) {
    (void)D, (void)param;
    return H;
}

/* h (H) <- tanh((Wx·x + Wh·h) + bh) */
static void step(LmBody* b, const float* const* P, const float* x, float* h) {
    int H = b->H;
    float *pre = b->fwd, *tmp = b->fwd + H;
    body_matvec_x(b, pre, P[WX], x, H); /* float, or the integer products (§2.6): static stream, heads mode */
    body_matvec_h(b, tmp, P[WH], h, H);
    kern_add3(pre, pre, tmp, P[BH], H); /* (Wx·x + Wh·h) + bh */
    kern_tanh_vec(h, pre, H);
}

static void bwd_begin(LmBody* b, float* const* G) { memset(G[BH], 0, (size_t)b->H * 4); }

static void bwd_token(LmBody* b, const float* const* P, float* const* G, int i, const float* s_t,
                      const float* s_prev, const float* x_prev, const float* dh, float* dx, float* dh_prev) {
    (void)s_prev;
    (void)x_prev;
    int H = b->H, D = b->D;
    float* da = b->da + (size_t)i * H;
    for (int j = 0; j < H; j++) {
        float s2 = s_t[j] * s_t[j];
        float u = 1.0f - s2;
        da[j] = dh[j] * u;
    }
    kern_add(G[BH], G[BH], da, H);
    memset(dx, 0, (size_t)D * 4);
    kern_matvec_t_acc(dx, P[WX], da, H, D);
    if (!dh_prev) return; /* a one-step backward (lm_set_schedule) wants dx only */
    memset(dh_prev, 0, (size_t)H * 4);
    kern_matvec_t_acc(dh_prev, P[WH], da, H, H);
}

static void bwd_finish(LmBody* b, float* const* G, int n, const float* const* s_prev, const float* const* x_prev) {
    int H = b->H, D = b->D;
    for (int i = 0; i < n; i++) b->pd[i] = b->da + (size_t)i * H;
    kern_outer_acc_seq(G[WX], b->pd, x_prev, n, H, D, 1);
    kern_outer_acc_seq(G[WH], b->pd, s_prev, n, H, H, 1);
}

const LmBodyOps lm_body_elman = {
    .name = "elman",
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
