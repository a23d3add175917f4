/* fpenv.h: the floating-point environment guard of the C core (docs/format.md §2).
 *
 * Owns, for every translation unit of the core (each .c file includes this header first):
 *  - floating-point contraction off by pragma (no fused multiply-add), in the spelling each compiler
 *    honours: clang `STDC FP_CONTRACT OFF`, GCC `GCC optimize("fp-contract=off")` (GCC ignores the STDC
 *    pragma), MSVC `fp_contract(off)`.  build_flags.py also passes -ffp-contract=off; the pragma keeps a
 *    build that forgets the flag (clang contracts by default, GCC with -std=gnu11) deterministic.  Only
 *    clang's -ffp-contract=fast overrides it (documented: it disregards pragmas), which tests/test_build.py
 *    uses as its deliberately contracting build;
 *  - the compile-time refusal of builds that break IEEE float32 semantics (fast-math, x87 excess precision);
 *  - the run-time save/set/restore of the FP control register around every exported entry point that does
 *    float work: round-to-nearest, exceptions masked (no traps), no flush-to-zero / denormals-are-zero.
 *    x86: MXCSR = 0x1F80.  AArch64: FPCR = 0 (RMode RN, FZ = FZ16 = 0, DN = 0, AHP = 0, traps off,
 *    FEAT_AFP AH = FIZ = 0).  Elsewhere (s390x, ppc64, ...): the C99 rounding mode, set to FE_TONEAREST
 *    (those targets have no flush-to-zero in their default user mode).
 *  - the feature-test macro _DEFAULT_SOURCE, which must come before any system header: glibc's POSIX names under
 *    -std=c11 (MAP_ANON for bytemodel/cm.c's mapped tables).
 * A host process that changed the environment (a library linked with crtfastmath.o, an audio plugin, ...)
 * must not change the bytes we write; csrc/codec/selftest.c checks the result at codec creation.
 */
#ifndef NLM_FPENV_H
#define NLM_FPENV_H

#define _DEFAULT_SOURCE 1 /* before any system header (see above) */

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#elif defined(_MSC_VER)
#pragma fp_contract(off)
#endif

#include <float.h>
#include <stdint.h>

#if defined(__FAST_MATH__) || defined(_M_FP_FAST)
#error "nlmcodec: do not build with -ffast-math / -Ofast / /fp:fast (the format needs IEEE float32)"
#endif

/* float expressions must be evaluated in float (SSE, NEON, ...), not in x87 extended precision.
 * FLT_EVAL_METHOD 16 (GCC with AVX512-FP16) means _Float16 is evaluated as _Float16 and float as float:
 * the core never does _Float16 arithmetic (binary16 weights are converted bit-exactly), so it is safe. */
_Static_assert(FLT_EVAL_METHOD == 0 || FLT_EVAL_METHOD == 16,
               "nlmcodec: FLT_EVAL_METHOD must be 0 (use SSE math, not -mfpmath=387)");

#define NLM_MXCSR_CANON 0x1F80u /* RN, all exceptions masked, FTZ = 0, DAZ = 0 */

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#include <xmmintrin.h>
typedef struct {
    unsigned int saved;
} NlmFpEnv;

/* Save MXCSR and switch to the canonical environment.  The six sticky status bits are ignored. */
static inline void nlm_fpenv_enter(NlmFpEnv* env) {
    env->saved = _mm_getcsr();
    if ((env->saved & ~0x3Fu) != NLM_MXCSR_CANON) _mm_setcsr(NLM_MXCSR_CANON);
}

/* Restore the caller's MXCSR (its control bits; our status bits are dropped). */
static inline void nlm_fpenv_leave(const NlmFpEnv* env) {
    if ((env->saved & ~0x3Fu) != NLM_MXCSR_CANON) _mm_setcsr(env->saved);
}
#elif defined(__aarch64__)
typedef struct {
    uint64_t saved;
} NlmFpEnv;

#define NLM_FPCR_CANON 0u /* RMode = RN, FZ = FZ16 = 0, DN = 0, AHP = 0, trap enables 0, AH = FIZ = 0 */
static inline uint64_t nlm_fpcr_get(void) {
    uint64_t v;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(v) : : "memory");
    return v;
}
static inline void nlm_fpcr_set(uint64_t v) { __asm__ __volatile__("msr fpcr, %0" : : "r"(v) : "memory"); }

static inline void nlm_fpenv_enter(NlmFpEnv* env) {
    env->saved = nlm_fpcr_get();
    if (env->saved != NLM_FPCR_CANON) nlm_fpcr_set(NLM_FPCR_CANON);
}
static inline void nlm_fpenv_leave(const NlmFpEnv* env) {
    if (env->saved != NLM_FPCR_CANON) nlm_fpcr_set(env->saved);
}
#else
#include <fenv.h>
typedef struct {
    int saved;
} NlmFpEnv;
static inline void nlm_fpenv_enter(NlmFpEnv* env) {
    env->saved = fegetround();
    if (env->saved != FE_TONEAREST) fesetround(FE_TONEAREST);
}
static inline void nlm_fpenv_leave(const NlmFpEnv* env) {
    if (env->saved != FE_TONEAREST && env->saved >= 0) fesetround(env->saved);
}
#endif

#endif /* NLM_FPENV_H */
