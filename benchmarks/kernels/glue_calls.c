/* glue_calls.c: instructions of the model's glue loops as elman.c writes them today against the kernel
 * entry points added for them (kern_add, kern_add3, kern_softmax_xent, kern_sgd_decay_idx), at the default
 * model's sizes (D=128, H=256, C=192, classes of 128 words).  Per call group = what one token does:
 *   forward:  bias adds over C, 128, 4 and 8 logits; x = (E[w] + Ecase) + Egap (D); pre = (a + b) + bh (H)
 *   backward: softmax + "p[target] - 1" over C, 128, 3 and 8 logits; gbc += p (C); gbh += da (H)
 *   update:   NB one-float bias updates (bo rows), one call per float today
 * Each *_today / *_kern pair computes the same bits (checked here).  Run under callgrind, read the inclusive
 * Ir of each function (benchmarks/profile_step.md quotes the figures):
 *   gcc -O2 -g -ffp-contract=off -fno-fast-math -std=gnu11 -o /tmp/glue_calls benchmarks/kernels/glue_calls.c \
 *       csrc/kernels/kern.c csrc/kernels/kern_math.c -I csrc && \
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/glue.out /tmp/glue_calls && \
 *   callgrind_annotate --inclusive=yes /tmp/glue.out | grep -E '_(today|kern) '
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../csrc/kernels/kern.h"

enum { D = 128, H = 256, C = 192, NW = 128, NB = 100, REPS = 1000 };
static const int NS[4] = {C, NW, 3, 8};

static float zc[C], zw[NW], zk[4], zg[8], bc[C], bw[NW], bk[4], bg[8];
static float e[D], ec[D], eg[D], x[D], pre[H], tmp[H], bh[H], p[4][C], tz[C], gbc[C], gbh[H], da[H];
static float th[NB * 2], th0[NB * 2], gb[NB], qs[NB];
static int32_t idx[NB];

/* today's forms (elman.c add_bias, input_vec, the pre-activation loop, softmax, update_row on 1 float) */
__attribute__((noinline)) static void forward_today(void) {
    float* zs[4] = {zc, zw, zk, zg};
    const float* bs[4] = {bc, bw, bk, bg};
    for (int h = 0; h < 4; h++)
        for (int i = 0; i < (h == 2 ? 4 : NS[h]); i++) zs[h][i] = zs[h][i] + bs[h][i];
    for (int i = 0; i < D; i++) {
        float s = e[i] + ec[i];
        x[i] = s + eg[i];
    }
    for (int i = 0; i < H; i++) {
        float s = pre[i] + tmp[i];
        pre[i] = s + bh[i];
    }
}

__attribute__((noinline)) static void forward_kern(void) {
    kern_add(zc, zc, bc, C);
    kern_add(zw, zw, bw, NW);
    kern_add(zk, zk, bk, 4);
    kern_add(zg, zg, bg, 8);
    kern_add3(x, e, ec, eg, D);
    kern_add3(pre, pre, tmp, bh, H);
}

static void softmax_today(float* pz, const float* z, int n, int target) {
    float mx = z[0];
    for (int i = 1; i < n; i++)
        if (z[i] > mx) mx = z[i];
    for (int i = 0; i < n; i++) tz[i] = z[i] - mx;
    kern_exp_vec(pz, tz, n);
    float s = 0.0f;
    for (int i = 0; i < n; i++) s = s + pz[i];
    for (int i = 0; i < n; i++) pz[i] = pz[i] / s;
    pz[target] = pz[target] - 1.0f;
}

__attribute__((noinline)) static void backward_today(void) {
    const float* zs[4] = {zc, zw, zk, zg};
    for (int h = 0; h < 4; h++) softmax_today(p[h], zs[h], NS[h], 1);
    for (int j = 0; j < C; j++) gbc[j] = gbc[j] + p[0][j];
    for (int j = 0; j < H; j++) gbh[j] = gbh[j] + da[j];
}

__attribute__((noinline)) static void backward_kern(void) {
    const float* zs[4] = {zc, zw, zk, zg};
    for (int h = 0; h < 4; h++) kern_softmax_xent(p[h], zs[h], NS[h], 1);
    kern_add(gbc, gbc, p[0], C);
    kern_add(gbh, gbh, da, H);
}

__attribute__((noinline)) static void update_today(void) {
    for (int i = 0; i < NB; i++) {
        size_t j = (size_t)idx[i];
        if (qs[i] >= 0.0f)
            kern_decay_sgd(th + j, th0 + j, gb + i, qs[i], 0.5f, 0.01f, 0.25f, 1);
        else
            kern_sgd_decay(th + j, th0 + j, gb + i, 0.5f, 0.01f, 0.25f, 1);
    }
}

__attribute__((noinline)) static void update_kern(void) { kern_sgd_decay_idx(th, th0, gb, idx, qs, 0.5f, 0.01f, 0.25f, NB); }

static float rnd(unsigned* s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(int)(*s >> 9) * (1.0f / 4194304.0f) - 1.0f;
}

static void fill(unsigned seed) {
    unsigned s = seed;
    float* all[] = {zc, zw, zk, zg, bc, bw, bk, bg, e, ec, eg, pre, tmp, bh, gbc, gbh, da, th, th0, gb, qs};
    int ns[] = {C, NW, 4, 8, C, NW, 4, 8, D, D, D, H, H, H, C, H, H, 2 * NB, 2 * NB, NB, NB};
    for (int a = 0; a < (int)(sizeof ns / sizeof ns[0]); a++)
        for (int i = 0; i < ns[a]; i++) all[a][i] = rnd(&s) * 4.0f;
    for (int i = 0; i < NB; i++) idx[i] = 2 * i;
}

int main(void) {
    static float snap[6][2 * NB + 2 * C + 2 * H];
    for (int variant = 0; variant < 2; variant++) {
        fill(7);
        for (int r = 0; r < REPS; r++) {
            if (variant == 0) forward_today(), backward_today(), update_today();
            else forward_kern(), backward_kern(), update_kern();
        }
        float* s = snap[variant];
        memcpy(s, x, sizeof x), s += D;
        memcpy(s, pre, sizeof pre), s += H;
        memcpy(s, gbc, sizeof gbc), s += C;
        memcpy(s, th, sizeof th);
        memcpy(snap[2 + variant], p, sizeof p);
    }
    int same = !memcmp(snap[0], snap[1], sizeof snap[0]) && !memcmp(snap[2], snap[3], sizeof snap[2]);
    printf("simd level %d, %d reps: kernel results %s today's loops\n", kern_simd_level(), REPS,
           same ? "bit-identical to" : "DIFFER from");
    return same ? 0 : 1;
}
