/* bigalloc.h: allocation of the core's large hash tables (megabytes written at random places).
 *
 * Owns one decision: where the kernel offers transparent huge pages on request (Linux, THP mode "madvise" or
 * "always"), a table of 2 MiB or more is aligned to 2 MiB and advised MADV_HUGEPAGE, so filling it takes one
 * page fault per 2 MiB instead of one per 4 KiB.  A fresh process's first compress() of a text touches most
 * of the token cache's follower lists and of their snapshot (4 x 6.3 MB), and their 4 KiB faults were about
 * a third of that call's page faults.  Memory only: no value read or written changes, so the bytes cannot.
 * Elsewhere, or for smaller tables, it is malloc.  The memory is not zeroed (aligned_alloc may hand back
 * freed heap memory, so zeroing would be a memset of the whole table: the callers that need zeros keep
 * calloc, which gets them from the kernel lazily).  Free with nlm_big_free.
 */
#ifndef NLM_BIGALLOC_H
#define NLM_BIGALLOC_H

#include <stddef.h>
#include <stdlib.h>

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || defined(__s390x__) || \
                           defined(__powerpc64__))
#define NLM_BIG_HUGE 1
/* <sys/mman.h> declares madvise only outside strict ISO C (we build with -std=c11); the kernel's value of
 * MADV_HUGEPAGE on these architectures (asm-generic/mman-common.h) */
extern int madvise(void* addr, size_t len, int advice);
#define NLM_MADV_HUGEPAGE 14
#define NLM_HUGE_SIZE ((size_t)2 << 20)
#endif

/* n bytes, not initialised; NULL when out of memory */
static inline void* nlm_big_alloc(size_t n) {
#ifdef NLM_BIG_HUGE
    if (n >= NLM_HUGE_SIZE) {
        size_t r = (n + NLM_HUGE_SIZE - 1) / NLM_HUGE_SIZE * NLM_HUGE_SIZE;
        void* p = aligned_alloc(NLM_HUGE_SIZE, r);
        if (!p) return NULL;
        (void)madvise(p, r, NLM_MADV_HUGEPAGE); /* a hint: refused (THP off, old kernel) changes nothing */
        return p;
    }
#endif
    return malloc(n ? n : 1);
}

static inline void nlm_big_free(void* p) { free(p); }

#endif /* NLM_BIGALLOC_H */
