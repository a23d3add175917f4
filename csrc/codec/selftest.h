/* codec/selftest.h: internal interface of the arithmetic self-test (selftest.c; nlm_selftest is in nlm.h).
 *
 * nlm_selftest_digest: the digest the self-test compares with its stored value, computed on this machine
 * in the canonical FP environment (the cross-architecture driver prints it to diagnose a mismatch).
 */
#ifndef NLM_CODEC_SELFTEST_H
#define NLM_CODEC_SELFTEST_H

#include <stdint.h>

uint64_t nlm_selftest_digest(void);

#endif /* NLM_CODEC_SELFTEST_H */
