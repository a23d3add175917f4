/* update_kernel.c: speed of the dynamic update's kernel (kern_sgd_decay_h, codec/FORMAT.md §6.4) by the number
 * of parameters it steps: does the update wait on memory or on its arithmetic?  16,384 parameters fit in L1,
 * 150,000 are the default model's dense tensors (what one segment's update steps), 4,000,000 come from memory.
 * CPU time, best of 7 runs of a loop over the same buffers; ns per parameter.
 *
 * Build and run (from the repository root):
 *   gcc -O2 -ffp-contract=off -fno-fast-math -std=gnu11 -o /tmp/update_kernel benchmarks/kernels/update_kernel.c \
 *       csrc/kernels/kern.c csrc/kernels/kern_math.c -lm && /tmp/update_kernel
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../csrc/kernels/kern.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
    const int sizes[] = {16384, 150000, 4000000};
    printf("SIMD level %d (0 scalar, 1 SSE2, 2 AVX2, 3 AVX-512)\n", kern_simd_level());
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int n = sizes[s];
        float* th = aligned_alloc(64, (size_t)n * 4);
        float* g = aligned_alloc(64, (size_t)n * 4);
        uint16_t* th0 = aligned_alloc(64, (size_t)n * 2 + 64);
        if (!th || !g || !th0) return 1;
        for (int i = 0; i < n; i++) {
            th[i] = 0.01f * (float)(i % 100 - 50);
            g[i] = 0.001f * (float)(i % 7 - 3);
            th0[i] = 0x2e66; /* binary16 0.1 */
        }
        const long reps = 400000000L / n; /* about 4e8 parameters per run */
        double best = 1e30;
        for (int run = 0; run < 7; run++) {
            double t = now();
            for (long r = 0; r < reps; r++) kern_sgd_decay_h(th, th0, g, 1e-4f, 1e-5f, 4e-3f, n);
            t = now() - t;
            if (t < best) best = t;
        }
        printf("kern_sgd_decay_h, %9d parameters: %.3f ns per parameter (%.1f us per call)\n", n,
               1e9 * best / ((double)reps * n), 1e6 * best / (double)reps);
        free(th), free(g), free(th0);
    }
    return 0;
}
