/* fpenv.h: the floating-point environment guard of the C core (codec/FORMAT.md §2).
 *
 * Owns the compile-time refusal of builds that break IEEE float32 semantics (fast-math, x87 excess
 * precision) and the run-time save/set/restore of the SSE control register MXCSR around every exported
 * entry point that does float work: round-to-nearest, all exceptions masked, FTZ = 0, DAZ = 0 (0x1F80).
 * A host process that set flush-to-zero (a library linked with crtfastmath.o, an audio plugin, ...) must
 * not change the bytes we write.  On non-x86 targets the guard is a no-op (AArch64 FPCR: TODO).
 * Header only; include it first in every file that does float arithmetic on the coding path.
 */
#ifndef NLM_FPENV_H
#define NLM_FPENV_H

#include <float.h>

#if defined(__FAST_MATH__) || defined(_M_FP_FAST)
#error "nlmcodec: do not build with -ffast-math / -Ofast / /fp:fast (the format needs IEEE float32)"
#endif

/* FLT_EVAL_METHOD 0: float expressions are evaluated in float (SSE), not in x87 extended precision. */
_Static_assert(FLT_EVAL_METHOD == 0, "nlmcodec: FLT_EVAL_METHOD must be 0 (use SSE math, not -mfpmath=387)");

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
#else
typedef struct {
    int unused;
} NlmFpEnv;
static inline void nlm_fpenv_enter(NlmFpEnv* env) { env->unused = 0; }
static inline void nlm_fpenv_leave(const NlmFpEnv* env) { (void)env; }
#endif

#endif /* NLM_FPENV_H */
