/* fpenv_probe.c: the FP environment guard (csrc/common/fpenv.h) against a hostile host environment.
 *
 * Sets round-toward-zero and flush-to-zero the way a host process might (x86: MXCSR RZ|FTZ|DAZ; AArch64:
 * FPCR RMode = RZ, FZ; elsewhere: fesetround(FE_TOWARDZERO)), checks that this environment really changes
 * float results (a subnormal product, a rounded sum), then that the self-test digest computed through the
 * guard is the canonical one and that the host's environment is back afterwards.  Run natively by
 * tests/test_selftest.py and under qemu-aarch64 / qemu-s390x by .ci/cross/lane.py.  Exit 0 = all held.
 */
#include <fenv.h>
#include <stdio.h>
#include <string.h>

#include "codec/selftest.h"
#include "common/fpenv.h"
#include "nlm.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#define HOSTILE "MXCSR round-toward-zero + FTZ + DAZ"
static unsigned long long env_get(void) { return _mm_getcsr() & ~0x3Fu; }
static void env_hostile(void) { _mm_setcsr(0x1F80u | 0x6000u | 0x8000u | 0x0040u); }
#elif defined(__aarch64__)
#define HOSTILE "FPCR RMode round-toward-zero + FZ"
static unsigned long long env_get(void) { return nlm_fpcr_get(); }
static void env_hostile(void) { nlm_fpcr_set((3ull << 22) | (1ull << 24)); }
#else
#define HOSTILE "fesetround(FE_TOWARDZERO)"
static unsigned long long env_get(void) { return (unsigned long long)fegetround(); }
static void env_hostile(void) { fesetround(FE_TOWARDZERO); }
#endif

int main(void) {
    static volatile float a = 1.5e-20f, b = 3.0e-20f, one = 1.0f, third = 0.333333343f;
    float sub0 = a * b, sum0 = one + third * 1e-7f;
    uint64_t canon = nlm_selftest_digest();
    env_hostile();
    unsigned long long hostile = env_get();
    float sub1 = a * b, sum1 = one + third * 1e-7f;
    int changes = memcmp(&sub0, &sub1, 4) != 0 || memcmp(&sum0, &sum1, 4) != 0;
    uint64_t guarded = nlm_selftest_digest();
    int st = nlm_selftest();
    unsigned long long after = env_get();
    printf("hostile env (%s) changes float results: %s\n", HOSTILE, changes ? "yes" : "NO");
    printf("self-test digest canonical %016llx, under the hostile env %016llx, nlm_selftest %d\n",
           (unsigned long long)canon, (unsigned long long)guarded, st);
    printf("host env restored after the call: %s\n", after == hostile ? "yes" : "NO");
    int ok = changes && guarded == canon && st == NLM_OK && after == hostile;
    printf("%s\n", ok ? "FPENV OK" : "FPENV FAILED");
    return ok ? 0 : 1;
}
