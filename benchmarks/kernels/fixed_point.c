/* fixed_point.c: speed of integer fixed-point matvecs against the float kernel (issue 11's evaluation; format 11
 * adopted the int8 form for static streams, csrc/kernels/kern_q8.c, whose kernels differ from these sketches).
 *
 * y[r] = Σ_k W[r][k]·x[k] for the default model's shapes (V=24576, D=128, H=256, C=192, classes of ~128
 * words): per token one class head (192×256), one class's word rows (128×256), Wx (256×128) and Wh
 * (256×256), i.e. 147,456 multiply-adds.  Three forms: the codec's float kern_matvec (best SIMD path,
 * canonical order), int16 weights × int16 activations with vpmaddwd (AVX2 and AVX-512BW; int32 sums are
 * exact in any order), int8 weights × uint8 activations with vpdpbusd (AVX512-VNNI).  CPU time, best of
 * 7 runs (the machine is shared).
 *
 * Build and run (from the repository root):
 *   gcc -O2 -ffp-contract=off -fno-fast-math -std=gnu11 -o /tmp/fixed_point benchmarks/kernels/fixed_point.c \
 *       csrc/kernels/kern.c csrc/kernels/kern_math.c && /tmp/fixed_point
 */
#include <immintrin.h>
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

__attribute__((target("avx2"))) static void mv_i16_avx2(int32_t* y, const int16_t* W, const int16_t* x, int rows,
                                                        int cols) {
    for (int r = 0; r < rows; r++) {
        const int16_t* w = W + (size_t)r * cols;
        __m256i a = _mm256_setzero_si256(), b = a;
        for (int i = 0; i < cols; i += 32) {
            a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(w + i)),
                                                      _mm256_loadu_si256((const __m256i*)(x + i))));
            b = _mm256_add_epi32(b, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i*)(w + i + 16)),
                                                      _mm256_loadu_si256((const __m256i*)(x + i + 16))));
        }
        a = _mm256_add_epi32(a, b);
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
        y[r] = _mm_cvtsi128_si32(t);
    }
}

__attribute__((target("avx512bw"))) static void mv_i16_avx512(int32_t* y, const int16_t* W, const int16_t* x,
                                                              int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const int16_t* w = W + (size_t)r * cols;
        __m512i a = _mm512_setzero_si512();
        for (int i = 0; i < cols; i += 32)
            a = _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_loadu_si512(w + i), _mm512_loadu_si512(x + i)));
        y[r] = _mm512_reduce_add_epi32(a);
    }
}

__attribute__((target("avx512f,avx512vnni"))) static void mv_i8_vnni(int32_t* y, const int8_t* W, const uint8_t* x,
                                                                      int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const int8_t* w = W + (size_t)r * cols;
        __m512i a = _mm512_setzero_si512();
        for (int i = 0; i < cols; i += 64)
            a = _mm512_dpbusd_epi32(a, _mm512_loadu_si512(x + i), _mm512_loadu_si512(w + i));
        y[r] = _mm512_reduce_add_epi32(a);
    }
}

/* the four per-token products of the default model: rows x cols */
static const int SH[4][2] = {{192, 256}, {128, 256}, {256, 128}, {256, 256}};

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 3000;
    size_t maxn = 256 * 256;
    float *Wf = malloc(4 * maxn * 4), *xf = malloc(256 * 4), *yf = malloc(256 * 4);
    int16_t *W16 = malloc(4 * maxn * 2), *x16 = malloc(256 * 2);
    int8_t* W8 = malloc(4 * maxn);
    uint8_t* x8 = malloc(256);
    int32_t* yi = malloc(256 * 4);
    for (size_t i = 0; i < 4 * maxn; i++) {
        Wf[i] = (float)((int)(i * 2654435761u % 2001) - 1000) * 1e-4f;
        W16[i] = (int16_t)((int)(i * 2654435761u % 60001) - 30000);
        W8[i] = (int8_t)((int)(i * 2654435761u % 255) - 127);
    }
    for (int i = 0; i < 256; i++) xf[i] = (float)(i % 17) * 0.05f, x16[i] = (int16_t)(i * 97 % 30000), x8[i] = (uint8_t)(i * 7);
    const char* names[4] = {"float kern_matvec (best path)", "int16 vpmaddwd AVX2", "int16 vpmaddwd AVX-512BW",
                            "int8 vpdpbusd AVX512-VNNI"};
    int ok[4] = {1, __builtin_cpu_supports("avx2"), __builtin_cpu_supports("avx512bw"),
                 __builtin_cpu_supports("avx512vnni")};
    double best[4];
    volatile int64_t sink = 0;
    for (int v = 0; v < 4; v++) {
        best[v] = 1e30;
        if (!ok[v]) continue;
        for (int run = 0; run < 7; run++) {
            double t0 = now();
            for (int rep = 0; rep < reps; rep++)
                for (int s = 0; s < 4; s++) {
                    int R = SH[s][0], K = SH[s][1];
                    size_t o = (size_t)s * maxn;
                    if (v == 0) kern_matvec(yf, Wf + o, xf, R, K), sink += (int64_t)yf[0];
                    if (v == 1) mv_i16_avx2(yi, W16 + o, x16, R, K), sink += yi[0];
                    if (v == 2) mv_i16_avx512(yi, W16 + o, x16, R, K), sink += yi[0];
                    if (v == 3) mv_i8_vnni(yi, W8 + o, x8, R, K), sink += yi[0];
                }
            double t = now() - t0;
            if (t < best[v]) best[v] = t;
        }
    }
    printf("per token (147,456 multiply-adds), best of 7 x %d tokens; float SIMD level %d\n", reps,
           kern_simd_level());
    for (int v = 0; v < 4; v++) {
        if (!ok[v]) {
            printf("| %s | not supported on this CPU |\n", names[v]);
            continue;
        }
        printf("| %s | %.2f us/token | %.2fx |\n", names[v], 1e6 * best[v] / reps, best[0] / best[v]);
    }
    return (int)(sink & 0);
}
