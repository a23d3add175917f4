/* nlm_lab.h: the codec's tuning switches, for tests and measurements only.
 *
 * Owns: the individual options that csrc/codec/formats.h combines into a (format, mode).  A product reads and
 * writes frames through nlm.h's nlm_codec_reset_for alone; these setters exist so that tests can pin one option
 * and benchmarks can measure a variant before it becomes a format.  A payload coded with a combination that is
 * no row of formats.h is in no format.  Each setter below resets the context.
 */
#ifndef NLM_LAB_H
#define NLM_LAB_H

#include "nlm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Back to the start of a group with the options set now: trained weights, h = 0, empty caches, primed speller. */
int nlm_codec_reset(NlmCodec* c);

/* Which speller codes the bodies the spelling cache escapes (docs/format.md §5): NLM_SPELLER_CM, the byte model
 * over the token stream, or NLM_SPELLER_PPM, the primed order-4 PPM alone.  0, NLM_ERR_CONFIG or NLM_ERR_NOMEM. */
#define NLM_SPELLER_PPM 0
#define NLM_SPELLER_CM 1
#define NLM_SPELLER_CM_ALL 2 /* the byte model also learns from every known word (measured, §5.4) */
int nlm_codec_set_speller(NlmCodec* c, int kind);
/* The token match flag (§3.4): level 0 off; 1 on, its probability from one APM; 2 from two APMs.  A level
 * outside 0..2 is NLM_ERR_STATE. */
int nlm_codec_set_match(NlmCodec* c, int level);
/* The most tokens (END included) one word-model block may hold (§3.5; nlm.h NLM_MAX_BLOCK_TOKENS), or 0: no bound but
 * the block size.  A block over it is refused by nlm_encode_block (NLM_ERR_UNSUPPORTED) and is corrupt to
 * nlm_decode_block, which stops at the bound.  Does not reset the context. */
int nlm_codec_set_max_tokens(NlmCodec* c, uint32_t n);
/* Whether the <end> that closes a block advances the network (§3.2 step 6): off, the next block of the group
 * goes on from the state after the block's last real token. */
int nlm_codec_set_end_advance(NlmCodec* c, int on);
/* The network's forward arithmetic (§2.6).  level 0: float products; 1: a static context takes the class head,
 * the word head and the body's products with h and x from int8 weights and activations on their grids, summed
 * exactly in integers; a dynamic context takes the body's products so while its schedule never adapts the body
 * (heads mode, §6.5) and keeps what it adapts in float.  A level outside 0..1 is NLM_ERR_STATE. */
int nlm_codec_set_forward(NlmCodec* c, int level);
/* The token cache (§3.6): the network's class and word distributions mixed with decayed counts of the group's
 * tokens.  level 0: off; 1: on; 2: on, and the spelling cache's symbol mixed with the group's unknown bodies as
 * tokens (the body mixer, §5.1.1).  It takes its contexts from the token match model, so it is used only while
 * the match flag is on.  A level outside 0..2 is NLM_ERR_STATE. */
int nlm_codec_set_cache(NlmCodec* c, int level);
/* The adaptation schedule of a dynamic context: every deep_every-th segment adapts everything, the others only
 * the heads, and with shallow_emb also the embeddings by a one-step gradient (lm.h lm_set_schedule); 0: never
 * deep; skip_permille p > 0 skips the update of a segment whose tokens' geometric-mean probability is at least
 * p/1000.  (1, 0, 0) is dynamic mode (§6.3-§6.4), (0, 0, 0) heads mode (§6.5).  NLM_ERR_STATE for a static
 * context or a value outside 0..1024 / 0..1 / {0, 63..1000}. */
int nlm_codec_set_schedule(NlmCodec* c, int deep_every, int shallow_emb, int skip_permille);
/* The update's rates of a dynamic context (§6.5): the trained step sizes and clip times a, the decay times b
 * (lm.h lm_set_rates).  NLM_ERR_STATE for a static context, a or b outside 1..16 or a decay times b of 1 or
 * more. */
int nlm_codec_set_rates(NlmCodec* c, int a, int b);

/* Measurement only (benchmarks/lm_in_mixer): the byte model's probability of every bit of src[0..n), read-only.  A
 * fresh byte model for a run of n bytes (the size class of n, at least CM_SIZE_MIN) predicts and learns the
 * bytes exactly as the byte-model block that starts such a run codes them (docs/format.md §9), without a coder:
 * p[8 i + k] := the 12-bit probability (1..4095 of 4096) it gave bit k (most significant first) of byte i, the
 * bit that occurred.  So sum(-log2(p / 4096)) is that block's payload in bits, up to the coder's rounding and
 * flush.  Nothing is coded and no codec changes.  0, NLM_ERR_UNSUPPORTED above 2^23 bytes or NLM_ERR_NOMEM. */
int nlm_lab_byte_costs(const uint8_t* src, size_t n, uint16_t* p);

/* Measurement only (benchmarks/lm_in_mixer): with on = 1 and the trace on (nlm_codec_trace), every later
 * nlm_encode_block also records, per traced token, the distributions the codec coded with: the C class
 * probabilities f_k / F of the class stage (docs/format.md §3.2 step 1: after adaptation and the token cache's
 * mix, before the match flag's exclusion of §3.4; recorded whether the flag hit or not), then the NLM_NGAP gap
 * probabilities g_i / G after gap blending (§3.3, step 5; in format 14 the gap mixer's input, §3.7, not what
 * codes the gap).  nlm_lab_trace_dists_records reads the last block's:
 * *n tokens (the trace's records, in order), *width = C + NLM_NGAP floats each.  on = 0 stops and frees them.
 * Reporting only: no coded byte changes.  0, or NLM_ERR_STATE without a codec. */
int nlm_lab_trace_dists(NlmCodec* c, int on);
const float* nlm_lab_trace_dists_records(const NlmCodec* c, size_t* n, size_t* width);

/* The line route of format 17 (docs/format.md §3.8) on a context of another format that has the gap mixer (formats
 * 14 on): on = 1 allows nlm_codec_set_router (nlm.h), as format 17's rows do; resets the context, and
 * nlm_codec_reset_for sets it as its format says.  For measurements of variants (benchmarks/lm_in_mixer). */
int nlm_codec_set_route(NlmCodec* c, int on);

#ifdef __cplusplus
}
#endif
#endif /* NLM_LAB_H */
