/* nplm.c: the NPLM body (codec/FORMAT.md §2.4; Bengio et al. 2003 without direct connections): h is a tanh
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

#include <stdlib.h>
#include <string.h>

#include "../kernels/kern.h"

enum { WX, WH, BH };

typedef struct {
    float *pre, *tmp;  /* (H) (H) */
    float* da;         /* (seg_cap × H) da of each transition, row i = token T-1-i (adaptive) */
    const float **pd, **pu; /* (seg_cap) */
} NplmScratch;

static const char* const NAMES[] = {"Wx", "Wh", "bh"};

static void shapes(int D, int H, int K, size_t sz[]) {
    sz[WX] = (size_t)H * (size_t)D;
    sz[WH] = (size_t)H * (size_t)(K - 1) * (size_t)D;
    sz[BH] = (size_t)H;
}

static int state_floats(int D, int H, int K) { return H + (K - 1) * D; }

static void scratch_free(LmBody* b) {
    NplmScratch* s = b->mem;
    if (!s) return;
    free(s->pre);
    free(s->tmp);
    free(s->da);
    free((void*)s->pd);
    free((void*)s->pu);
    free(s);
    b->mem = NULL;
}

static int scratch_new(LmBody* b, size_t* bytes) {
    size_t H = (size_t)b->H, S = (size_t)b->seg_cap;
    NplmScratch* s = calloc(1, sizeof *s);
    b->mem = s;
    if (!s) return -1;
    s->pre = calloc(H, 4);
    s->tmp = calloc(H, 4);
    if (b->adapt) {
        s->da = calloc(S * H, 4);
        s->pd = calloc(S, sizeof(float*));
        s->pu = calloc(S, sizeof(float*));
    }
    if (!s->pre || !s->tmp || (b->adapt && (!s->da || !s->pd || !s->pu))) {
        scratch_free(b);
        return -1;
    }
    *bytes += sizeof *s + 2 * H * 4 + (b->adapt ? S * H * 4 + 2 * S * sizeof(float*) : 0);
    return 0;
}

/* S = [h, u] <- [tanh((Wx·x + Wh·u) + bh), [x, u without its last slot]] */
static void step(LmBody* b, const float* const* P, const float* x, float* S) {
    NplmScratch* s = b->mem;
    int H = b->H, D = b->D, nu = (b->param - 1) * b->D;
    float *h = S, *u = S + H;
    kern_matvec(s->pre, P[WX], x, H, D);
    kern_matvec(s->tmp, P[WH], u, H, nu);
    kern_add3(s->pre, s->pre, s->tmp, P[BH], H); /* (Wx·x + Wh·u) + bh */
    kern_tanh_vec(h, s->pre, H);
    memmove(u + D, u, (size_t)(nu - D) * 4);
    memcpy(u, x, (size_t)D * 4);
}

static void bwd_begin(LmBody* b, float* const* G) { memset(G[BH], 0, (size_t)b->H * 4); }

static void bwd_token(LmBody* b, const float* const* P, float* const* G, int i, const float* S_t,
                      const float* S_prev, const float* x_prev, const float* dS, float* dx, float* dS_prev) {
    (void)S_prev;
    (void)x_prev;
    NplmScratch* sc = b->mem;
    int H = b->H, D = b->D, nu = (b->param - 1) * b->D;
    const float *h = S_t, *dh = dS, *du = dS + H;
    float* da = sc->da + (size_t)i * H;
    for (int j = 0; j < H; j++) {
        float s2 = h[j] * h[j];
        float u = 1.0f - s2;
        da[j] = dh[j] * u;
    }
    kern_add(G[BH], G[BH], da, H);
    memset(dx, 0, (size_t)D * 4);
    kern_matvec_t_acc(dx, P[WX], da, H, D);
    kern_add(dx, dx, du, D);
    float *dh_prev = dS_prev, *du_prev = dS_prev + H;
    memset(dh_prev, 0, (size_t)H * 4);
    memset(du_prev, 0, (size_t)nu * 4);
    kern_matvec_t_acc(du_prev, P[WH], da, H, nu);
    kern_add(du_prev, du_prev, du + D, nu - D); /* the older slots move down by one */
}

static void bwd_finish(LmBody* b, float* const* G, int n, const float* const* S_prev, const float* const* x_prev) {
    NplmScratch* sc = b->mem;
    int H = b->H, nu = (b->param - 1) * b->D;
    for (int i = 0; i < n; i++) sc->pd[i] = sc->da + (size_t)i * H, sc->pu[i] = S_prev[i] + H;
    kern_outer_acc_seq(G[WX], sc->pd, x_prev, n, H, b->D, 1);
    kern_outer_acc_seq(G[WH], sc->pd, sc->pu, n, H, nu, 1);
}

const LmBodyOps lm_body_nplm = {
    .name = "nplm",
    .ntensors = 3,
    .tensor_names = NAMES,
    .param_min = 2,
    .param_max = 16,
    .shapes = shapes,
    .state_floats = state_floats,
    .scratch_new = scratch_new,
    .scratch_free = scratch_free,
    .step = step,
    .bwd_begin = bwd_begin,
    .bwd_token = bwd_token,
    .bwd_finish = bwd_finish,
};
