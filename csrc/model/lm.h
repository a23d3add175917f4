/* lm.h: the one model interface of the core: an immutable model (weights, shapes, dynamic-evaluation
 * constants) of any model type, and one stream's state over it (docs/format.md §2, §6).
 *
 * An LmWeights is the trained model θ0, shared by every stream, context and thread; an Lm is one stream's
 * state over it: the body's state S (S[0..H) = h) and, in adaptive mode, the weights it has adapted, the
 * gradient buffers, the tokens of the current segment and the lazy-decay bookkeeping of the big tables.
 * The model type is a body (csrc/model/body.h: elman.c, ...); the input layer, the heads and the whole
 * dynamic-evaluation machinery are lm.c's and shared.  It knows nothing of coding: the codec step
 * (step_token in csrc/codec/codec.c) asks for logits, codes symbols with them, then records the coded
 * token with lm_advance and closes segments with lm_end_segment.  Every exported function runs under the
 * canonical FP environment (fpenv.h).
 *
 * Call sequence per token (logit getters may be called in any order, any number of times; each result is
 * valid until the next lm_* call that changes h, the weights or the same getter's argument):
 *     zc = lm_class_logits(m);            c = class of w
 *     zw = lm_word_logits(m, c, &n);      (w - class_start[c]) is coded over zw[0..n)
 *     zk = lm_case_logits(m, w);          zg = lm_gap_logits(m, w);
 *     lm_advance(m, w, ccase, gap, case_coded);
 *     every seg_len tokens and at the end of a block: lm_end_segment(m);
 * Dimensions: V vocabulary, D embedding, H hidden, C classes, T segment length (<= seg_len).
 *
 * The parameter block (§2): E (V×D), Ecase (4×D), Egap (8×D), the body's tensors, then the heads
 * Wc (C×H), bc (C), Wo (V×H), bo (V), Uc (4×H), Bcase (V×4), Ug (8×H), Bgap (V×8).
 */
#ifndef NLM_LM_H
#define NLM_LM_H

#include <stddef.h>
#include <stdint.h>

#include "../nlm.h"
#include "body.h"

/* Tensor indices in the block: the input layer, then the body's nb tensors, then the heads at
 * lm_head_index(nb, LM_WC ...). */
enum { LM_E, LM_ECASE, LM_EGAP, LM_BODY };
enum { LM_WC, LM_BC, LM_WO, LM_BO, LM_UC, LM_BCASE, LM_UG, LM_BGAP, LM_NHEAD };
#define lm_head_index(nb, k) (LM_BODY + (nb) + (k))
#define LM_MAX_TENSORS (LM_BODY + LM_MAX_BODY_TENSORS + LM_NHEAD)

typedef struct LmWeights LmWeights;
typedef struct Lm Lm;

/* The body of a model type code (NLM_ARCH_*), or NULL for an unknown code. */
const LmBodyOps* lm_body_for(int arch);

/* Number of tensors of a model type's block (the length of its ms list): 3 + body + 8. */
int lm_tensor_count(const LmBodyOps* body);
/* Offsets (in floats) of the tensors in the block, off[lm_tensor_count] = lm_param_count.  0 tensors and
 * a 0 count for an invalid configuration. */
size_t lm_param_count(const NlmConfig* cfg, const LmBodyOps* body);
void lm_tensor_offsets(const NlmConfig* cfg, const LmBodyOps* body, size_t off[LM_MAX_TENSORS + 1]);

/* ---- the immutable model: trained weights θ0 and shapes, shared by any number of Lm states ----
 * params: lm_param_count(cfg, body) values of the block, little-endian, dtype NLM_PARAM_F16 (binary16) or
 * NLM_PARAM_F32.  The block is NOT copied when it is aligned for its type on a little-endian host: the
 * caller keeps it alive and unchanged until lm_weights_free (e.g. a mapped model file); otherwise a copy
 * is made (in native order).  Only the dense tensors (Ecase, Egap, the body's, Wc, bc, Uc, Ug) are
 * converted to float32 here; the big tables (E, Wo, bo, Bcase, Bgap) are read as stored.  The integer forward's int8
 * rows (§2.6) of Wc and the body's products are made here too; Wo's are made a class at a time, by the first
 * static stream that reads the class (V×H bytes reserved here, written only as classes are used).
 * ms: lm_tensor_count(body) floats (the training RMS gradient of each tensor).  class_start: C+1 ids
 * (0 = first, V = last, strictly increasing).  Returns NULL and sets *err (NLM_ERR_CONFIG, NLM_ERR_VOCAB,
 * NLM_ERR_NOMEM); err may be NULL.  After creation nothing writes to it but those class rows, each class once
 * under an atomic state (lm.c q8_class): any number of threads may use one LmWeights at once. */
LmWeights* lm_weights_new(const NlmConfig* cfg, const LmBodyOps* body, const void* params, int dtype,
                          const float* ms, const int32_t* class_start, int* err);
void lm_weights_free(LmWeights* w);
/* Attach the Kneser-Ney expert (kn.h; the model file's section 13a) before any Lm is made on w: from then
 * on lm_class_logits / lm_word_logits return the mixture of §2.5.  0, NLM_ERR_CONFIG (a malformed section),
 * NLM_ERR_NOMEM or NLM_ERR_STATE (w already has one). */
int lm_weights_set_kn(LmWeights* w, const uint8_t* blob, size_t n);
size_t lm_weights_memory(const LmWeights* w); /* bytes the model allocated (not the caller's block) */

/* ---- one stream's state over shared weights ----
 * Static (adapt 0): owns only S and the logit/activation buffers.  Dynamic (adapt 1): also the adapted
 * weights: a float32 copy of the dense tensors, and the rows of the big tables it has updated, copied
 * from θ0 the first time a segment touches them (E and Bcase/Bgap rows by word, Wo/bo rows a class at a
 * time); a row never touched reads θ0, which is exactly the value the row would hold (docs/format.md §6).
 * w must outlive the Lm.  Returns NULL and sets *err (NLM_ERR_NOMEM) on failure; err may be NULL. */
Lm* lm_new(const LmWeights* w, int adapt, int* err);
void lm_free(Lm* m);

void lm_reset(Lm* m);

/* Snapshot the full adaptive state (weights, lazy-decay counters, segment counter, S, current segment);
 * lm_restore returns to it (any number of times).  Return 0, NLM_ERR_NOMEM (save) or NLM_ERR_STATE
 * (restore without a snapshot). */
int lm_save(Lm* m);
int lm_restore(Lm* m);

int lm_class_of(const Lm* m, int w);
int lm_class_start(const Lm* m, int c); /* first id of class c; c = C gives V */

/* Logits from the current h (pointers into the state; see the validity rule above).  With a Kneser-Ney
 * expert (lm_weights_set_kn) the class and word logits are the mixture's (docs/format.md §2.5) after the two
 * previous tokens; the backward still uses the network's own. */
const float* lm_class_logits(Lm* m);               /* (C) Wc·h + bc */
const float* lm_word_logits(Lm* m, int c, int* n); /* (n) Wo[a:b]·h + bo[a:b], n = b - a */
const float* lm_case_logits(Lm* m, int w);         /* (4) Uc·h + Bcase[w] */
const float* lm_gap_logits(Lm* m, int w);          /* (8) Ug·h + Bgap[w] */
const float* lm_hidden(const Lm* m);               /* (H) current h: the first H floats of the state S */
int lm_state_size(const Lm* m);                    /* floats of the state S (Elman H, LSTM 2H) */

/* Record the token just coded and advance the body: x = (E[w] + Ecase[ccase]) + Egap[gap], then the
 * body's step (Elman: h = tanh((Wx·x + Wh·h) + bh)).  case_coded: 0 = case not coded, 1 = coded over
 * symbols 0..2 (then ccase must be 0..2).  In adaptive mode a segment holds at most seg_len tokens: if it
 * is full, this call first runs lm_end_segment (step_token in codec.c calls it itself every seg_len
 * tokens).  Out-of-range arguments are clamped (w to 0 = <unk>, ccase/gap masked) so the model never reads
 * out of bounds. */
void lm_advance(Lm* m, int w, int ccase, int gap, int case_coded);

/* Adaptive: backward over the tokens recorded since the last call (truncated BPTT: the state before the
 * segment is a constant, the last token's transition gets no gradient), then one update step (§6);
 * nothing happens for an empty segment.  Static: just forgets the segment.  Returns 0. */
int lm_end_segment(Lm* m);
/* Which parts a dynamic stream adapts (issue 11's cheaper adaptation; (1, 0, 0) is dynamic mode, (0, 0, 0)
 * heads mode (§6.5), the others measurements; the frame's version and flags decide): segment
 * n (1, 2, ...) is deep when deep_every is 1, or n is a multiple of deep_every > 1; never when it is 0.  A
 * deep segment is the update above.  Any other one updates the heads only (Wc, bc, Wo, bo, Uc, Bcase, Ug,
 * Bgap; no gradient into h, no BPTT) and, with shallow_emb, also E, Ecase and Egap by one step of the
 * body's backward from each token's own head gradient (not chained through the state).  skip_permille
 * p > 0: a segment whose tokens' geometric-mean p(class)·p(word) is at least p/1000 is not learned from at
 * all (no backward, no update, not counted by seg_no).  The default, 1, 0, 0, is dynamic mode; with 0, 0, p
 * (heads mode, §6.5, for p = 0) the body never adapts, so its products are integer at qforward level 1.
 * NLM_ERR_STATE for a static state or a value outside 0..1024 / 0..1 / {0, 63..1000}. */
int lm_set_schedule(Lm* m, int deep_every, int shallow_emb, int skip_permille);
/* The update's rates of a dynamic stream (heads mode's a = 2, b = 1, §6.5): step_t·a and lim·a (float) for the
 * trained step_t = lr/(ms_t + eps) and lim = lr·LM_CLIP, decay·b (float) and its catch-up factors q_k from
 * 1 − decay·b.  1, 1 (the default of a new state) is the trained rates, bit for bit.  Kept across lm_reset.
 * NLM_ERR_STATE for a static state, a or b outside 1..16 or decay·b >= 1; NLM_ERR_NOMEM. */
int lm_set_rates(Lm* m, int a, int b);
uint32_t lm_skipped(const Lm* m);
/* The integer forward (docs/format.md §2.6): on = in a static state the class head, the word head and the
 * body's products with h and x (Elman, LSTM: Wh·h, Wx·x) from int8 weights and activations on their grids
 * (kern_q8.c); in an adaptive state the body's products only, and only while the schedule never adapts the
 * body (lm_set_schedule (0, 0, p); heads mode for p = 0, §6.5).  The case and gap heads and the biases stay
 * float.  Off (every product in float) is a measurement option; the formats' choice is in formats.h. */
int lm_set_qforward(Lm* m, int on); /* segments skip_permille skipped since the reset */
/* on: every segment ends without backward or update, so an adaptive stream codes as a static one from its
 * current weights (an estimate that the caller rolls back with lm_restore; not part of any snapshot). */
void lm_set_frozen(Lm* m, int on);

/* ---- debugging / tests ---- */
/* Dense gradient of the last segment (lm_param_count floats; zero outside the rows it touched) into out. */
void lm_debug_grad(const Lm* m, float* out);
/* Current working parameters, the whole block as float32 (lm_param_count floats), into out. */
void lm_params(const Lm* m, float* out);
/* Bytes allocated by this state (not the shared weights; the snapshot once lm_save was called). */
size_t lm_memory(const Lm* m);

#endif /* NLM_LM_H */
