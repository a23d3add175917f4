/* body.h: what a model type implements, the "body" between the input embedding and the heads
 * (docs/format.md §2).
 *
 * Every model type shares the input layer x_t = (E[w_t] + Ecase[case_t]) + Egap[gap_t] (D) and the heads
 * that read the vector h (H): class, word (class-factored), case and gap (csrc/model/lm.c).  The body maps
 * the inputs seen so far to h.  It carries a state S from token to token (S_floats floats, S[0..H) = h,
 * all zeros after a reset), and owns a list of dense tensors stored in the parameter block between Egap
 * and Wc.  A body keeps no other state between tokens: everything a snapshot must restore lives in S, so
 * lm.c saves and restores streams without asking the body.
 *
 * The dynamic-evaluation machinery (the segment record, the heads' backward, the input layer's row
 * gradients, the RMS-normalised step with decay toward θ0, lazy rows, clipping, snapshots) is lm.c's and
 * the same for every body.  A body provides one forward function (one step) and a backward split in three
 * calls per segment, for the tokens t = T-1 down to 1 (truncated BPTT, docs/format.md §6):
 *     bwd_begin(b, G)                                  zero what bwd_token accumulates by addition
 *     bwd_token(b, P, G, i, S_t, S_prev, x_prev, dS, dx, dS_prev)   for each t, i = T-1-t ascending
 *     bwd_finish(b, G, n, S_prev_list, x_prev_list)    the weight gradients (sums over the segment)
 * dS (S_floats) is the loss gradient with respect to S_t (the heads' contribution already added); the body
 * writes the gradient with respect to x_{t-1} into dx (D) and with respect to S_{t-1} into dS_prev
 * (S_floats); dS_prev NULL (a shallow segment's one-step backward, lm.h lm_set_schedule) asks for dx only.
 * Tensors: P[k] the k-th body tensor as the forward reads it (the stream's working copy or
 * θ0), G[k] its gradient.  The bits of every result are part of the format: a body's arithmetic is fixed
 * operation by operation (kernels with the canonical order, csrc/kernels/kern.h).
 */
#ifndef NLM_BODY_H
#define NLM_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "../kernels/kern.h"

#define LM_MAX_BODY_TENSORS 8

typedef struct LmBodyOps LmBodyOps;

/* A matrix [rows][cols] on the integer forward's grid (kern_quant_row; docs/format.md §2.6): int8 rows, their
 * sums and their rescale factors. */
typedef struct {
    int8_t* w;     /* (rows × cols) */
    int32_t* rsum; /* (rows) */
    float* mul;    /* (rows) */
} LmQ8;

/* One stream's scratch for a body, allocated by lm.c from the sizes the body declares; its contents are
 * valid only inside one call.  param: the model type's parameter (NlmConfig.arch >> 8; the NPLM's context,
 * 0 for the others). */
typedef struct {
    int D, H, param, seg_cap, adapt;
    float* fwd;             /* (fwd_floats) */
    float* da;              /* (seg_cap × da_floats) adaptive: the pre-activation gradient of each transition */
    const float **pd, **pu; /* (seg_cap) adaptive: pointer lists for kern_outer_acc_seq */
    /* the integer forward (a static stream, or heads mode, lm_set_qforward): the body's h_tensor and x_tensor on
     * their grids (NULL = the float product); h = S[0..H) on the activation grid, current whenever step is
     * called; x16/xu8 (D) scratch for the input on its grid */
    const LmQ8 *qh, *qx;
    const int16_t* h16;
    const uint8_t* hu8;
    int16_t* x16;
    uint8_t* xu8;
} LmBody;

struct LmBodyOps {
    const char* name;                                    /* model type, as in a model file */
    int ntensors;                                        /* body tensors (<= LM_MAX_BODY_TENSORS) */
    const char* const* tensor_names;                     /* (ntensors) */
    int param_min, param_max;                            /* the range of the type's parameter */
    int h_tensor;  /* the body tensor whose product reads h = S[0..H) (rows × H), which the integer forward
                      quantises (§2.6); -1 for none */
    int x_tensor;  /* the body tensor whose product reads the input x (rows × D), likewise; -1 for none */
    void (*shapes)(int D, int H, int param, size_t sz[]); /* floats of each body tensor */
    int (*state_floats)(int D, int H, int param);        /* S_floats */
    int (*fwd_floats)(int D, int H, int param);          /* forward scratch */
    int (*da_floats)(int D, int H, int param);           /* pre-activation floats of one transition */
    /* forward: S (S_floats, in/out) advanced by the input x (D) */
    void (*step)(LmBody* b, const float* const* P, const float* x, float* S);
    void (*bwd_begin)(LmBody* b, float* const* G);
    void (*bwd_token)(LmBody* b, const float* const* P, float* const* G, int i, const float* S_t,
                      const float* S_prev, const float* x_prev, const float* dS, float* dx, float* dS_prev);
    /* n = T-1 transitions; S_prev[i], x_prev[i]: the state and input of token T-2-i */
    void (*bwd_finish)(LmBody* b, float* const* G, int n, const float* const* S_prev, const float* const* x_prev);
};

/* A body's products with h and with x (docs/format.md §2.3, §2.6): y (rows) = W·h or W·x in float, or, with
 * the integer forward (b->qh / b->qx set: a static stream, or heads mode), from the int8 rows: W·h with h on
 * the grid 1/127 (lm.c keeps b->h16/hu8 current), W·x with x on its own grid, then each row times the grid's
 * scale xs. */
static inline void body_matvec_h(const LmBody* b, float* y, const float* W, const float* h, int rows) {
    if (b->qh) kern_matvec_q8(y, b->qh->w, b->qh->rsum, b->qh->mul, b->h16, b->hu8, rows, b->H);
    else kern_matvec(y, W, h, rows, b->H);
}

static inline void body_matvec_x(const LmBody* b, float* y, const float* W, const float* x, int rows) {
    if (!b->qx) {
        kern_matvec(y, W, x, rows, b->D);
        return;
    }
    const float xs = kern_quant_vec(b->x16, b->xu8, x, b->D);
    kern_matvec_q8(y, b->qx->w, b->qx->rsum, b->qx->mul, b->x16, b->xu8, rows, b->D);
    for (int j = 0; j < rows; j++) y[j] = y[j] * xs;
}

/* The model types of the core. */
extern const LmBodyOps lm_body_elman; /* elman.c */
extern const LmBodyOps lm_body_lstm;  /* lstm.c */
extern const LmBodyOps lm_body_nplm;  /* nplm.c */

#endif /* NLM_BODY_H */
