/* elman.c: the Elman body (codec/FORMAT.md §2): one tanh recurrent layer, h' = tanh((Wx·x + Wh·h) + bh).
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

#include <stdlib.h>
#include <string.h>

#include "../kernels/kern.h"

enum { WX, WH, BH };

typedef struct {
    float *pre, *tmp;   /* (H) (H) forward scratch */
    float* da;          /* (seg_cap × H) da of each transition, row i = token T-1-i (adaptive) */
    const float** pd;   /* (seg_cap) */
} ElmanScratch;

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

static void scratch_free(LmBody* b) {
    ElmanScratch* s = b->mem;
    if (!s) return;
    free(s->pre);
    free(s->tmp);
    free(s->da);
    free((void*)s->pd);
    free(s);
    b->mem = NULL;
}

static int scratch_new(LmBody* b, size_t* bytes) {
    size_t H = (size_t)b->H, S = (size_t)b->seg_cap;
    ElmanScratch* s = calloc(1, sizeof *s);
    b->mem = s;
    if (!s) return -1;
    size_t n = 2 * H * 4 + (b->adapt ? S * H * 4 + S * sizeof(float*) : 0);
    s->pre = calloc(H, 4);
    s->tmp = calloc(H, 4);
    if (b->adapt) {
        s->da = calloc(S * H, 4);
        s->pd = calloc(S, sizeof(float*));
    }
    if (!s->pre || !s->tmp || (b->adapt && (!s->da || !s->pd))) {
        scratch_free(b);
        return -1;
    }
    *bytes += n + sizeof *s;
    return 0;
}

/* h (H) <- tanh((Wx·x + Wh·h) + bh) */
static void step(LmBody* b, const float* const* P, const float* x, float* h) {
    ElmanScratch* s = b->mem;
    int H = b->H;
    kern_matvec(s->pre, P[WX], x, H, b->D);
    kern_matvec(s->tmp, P[WH], h, H, H);
    kern_add3(s->pre, s->pre, s->tmp, P[BH], H); /* (Wx·x + Wh·h) + bh */
    kern_tanh_vec(h, s->pre, H);
}

static void bwd_begin(LmBody* b, float* const* G) { memset(G[BH], 0, (size_t)b->H * 4); }

static void bwd_token(LmBody* b, const float* const* P, float* const* G, int i, const float* s_t,
                      const float* s_prev, const float* x_prev, const float* dh, float* dx, float* dh_prev) {
    (void)s_prev;
    (void)x_prev;
    ElmanScratch* sc = b->mem;
    int H = b->H, D = b->D;
    float* da = sc->da + (size_t)i * H;
    for (int j = 0; j < H; j++) {
        float s2 = s_t[j] * s_t[j];
        float u = 1.0f - s2;
        da[j] = dh[j] * u;
    }
    kern_add(G[BH], G[BH], da, H);
    memset(dx, 0, (size_t)D * 4);
    kern_matvec_t_acc(dx, P[WX], da, H, D);
    memset(dh_prev, 0, (size_t)H * 4);
    kern_matvec_t_acc(dh_prev, P[WH], da, H, H);
}

static void bwd_finish(LmBody* b, float* const* G, int n, const float* const* s_prev, const float* const* x_prev) {
    ElmanScratch* sc = b->mem;
    int H = b->H, D = b->D;
    for (int i = 0; i < n; i++) sc->pd[i] = sc->da + (size_t)i * H;
    kern_outer_acc_seq(G[WX], sc->pd, x_prev, n, H, D, 1);
    kern_outer_acc_seq(G[WH], sc->pd, s_prev, n, H, H, 1);
}

const LmBodyOps lm_body_elman = {
    .name = "elman",
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
