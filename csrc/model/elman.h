/* elman.h: the word-level Elman model of codec/FORMAT.md §2 and its dynamic evaluation (§6).
 *
 * An ElmanWeights is the immutable trained model (θ0, shapes, dynamic-evaluation constants), shared by
 * every stream, context and thread; an Elman is one stream's state over it: the hidden state h and, in
 * adaptive mode, the weights it has adapted, the gradient buffer, the tokens of the current segment and
 * the lazy-decay bookkeeping of the big tables.  It knows nothing of coding: the codec step (step_token
 * in csrc/codec/codec.c) asks for logits, codes symbols with them, then records the coded token with
 * elman_advance and closes segments with elman_end_segment.  Every exported function runs under the
 * canonical FP environment (fpenv.h).
 *
 * Call sequence per token (logit getters may be called in any order, any number of times; each result is
 * valid until the next elman_* call that changes h, the weights or the same getter's argument):
 *     zc = elman_class_logits(m);            c = class of w
 *     zw = elman_word_logits(m, c, &n);      (w - class_start[c]) is coded over zw[0..n)
 *     zk = elman_case_logits(m, w);          zg = elman_gap_logits(m, w);
 *     elman_advance(m, w, ccase, gap, case_coded);
 *     every seg_len tokens and at the end of a block: elman_end_segment(m);
 * Dimensions: V vocabulary, D embedding, H hidden, C classes, T segment length (<= seg_len).
 */
#ifndef NLM_ELMAN_H
#define NLM_ELMAN_H

#include <stddef.h>
#include <stdint.h>

#include "../nlm.h"

/* Tensor indices in the parameter block, §2 order. */
enum {
    ELM_E, ELM_ECASE, ELM_EGAP, ELM_WX, ELM_WH, ELM_BH, ELM_WC, ELM_BC, ELM_WO, ELM_BO, ELM_UC, ELM_BCASE,
    ELM_UG, ELM_BGAP, ELM_NTENSORS
};

typedef struct ElmanWeights ElmanWeights;
typedef struct Elman Elman;

/* Offsets (in floats) of the 14 tensors in the block, off[ELM_NTENSORS] = nlm_param_count(cfg). */
void elman_tensor_offsets(const NlmConfig* cfg, size_t off[ELM_NTENSORS + 1]);

/* ---- the immutable model: trained weights θ0 and shapes, shared by any number of Elman states ----
 * params: nlm_param_count(cfg) values of the §2 block, little-endian, dtype NLM_PARAM_F16 (binary16) or
 * NLM_PARAM_F32.  The block is NOT copied when it is aligned for its type on a little-endian host: the
 * caller keeps it alive and unchanged until elman_weights_free (e.g. a mapped model file); otherwise a
 * copy is made (in native order).  Only the dense tensors (Ecase .. bc, Uc, Ug: ~0.2 M floats) are
 * converted to float32 here; the big tables (E, Wo, bo, Bc, Bg) are read as stored.  ms: 14 floats (the
 * training RMS gradient of each tensor).  class_start: C+1 ids (0 = first, V = last, strictly increasing).
 * Returns NULL and sets *err (NLM_ERR_CONFIG, NLM_ERR_VOCAB, NLM_ERR_NOMEM); err may be NULL.
 * After creation nothing writes to it: any number of threads may use one ElmanWeights at once. */
ElmanWeights* elman_weights_new(const NlmConfig* cfg, const void* params, int dtype, const float* ms,
                                const int32_t* class_start, int* err);
void elman_weights_free(ElmanWeights* w);
size_t elman_weights_memory(const ElmanWeights* w); /* bytes the model allocated (not the caller's block) */

/* ---- one stream's state over shared weights ----
 * Static (adapt 0): owns only h and the logit/activation buffers.  Dynamic (adapt 1): also the adapted
 * weights: a float32 copy of the dense tensors, and the rows of the big tables it has updated, copied
 * from θ0 the first time a segment touches them (E and Bc/Bg rows by word, Wo/bo rows a class at a time);
 * a row never touched reads θ0, which is exactly the value the row would hold (FORMAT.md §6).  w must
 * outlive the Elman.  Returns NULL and sets *err (NLM_ERR_NOMEM) on failure; err may be NULL. */
Elman* elman_new(const ElmanWeights* w, int adapt, int* err);
void elman_free(Elman* m);

void elman_reset(Elman* m);

/* Snapshot the full adaptive state (weights, lazy-decay counters, segment counter, h, current segment);
 * elman_restore returns to it (any number of times).  Return 0, NLM_ERR_NOMEM (save) or NLM_ERR_STATE
 * (restore without a snapshot). */
int elman_save(Elman* m);
int elman_restore(Elman* m);

int elman_class_of(const Elman* m, int w);
int elman_class_start(const Elman* m, int c); /* first id of class c; c = C gives V */

/* Logits from the current h (pointers into the model; see the validity rule above). */
const float* elman_class_logits(Elman* m);               /* (C) Wc·h + bc */
const float* elman_word_logits(Elman* m, int c, int* n); /* (n) Wo[a:b]·h + bo[a:b], n = b - a */
const float* elman_case_logits(Elman* m, int w);         /* (4) Uc·h + Bc[w] */
const float* elman_gap_logits(Elman* m, int w);          /* (8) Ug·h + Bg[w] */
const float* elman_hidden(const Elman* m);               /* (H) current h */

/* Record the token just coded and advance h: x = (E[w] + Ecase[ccase]) + Egap[gap],
 * h = tanh((Wx·x + Wh·h) + bh).  case_coded: 0 = case not coded, 1 = coded over symbols 0..2 (then
 * ccase must be 0..2).  In adaptive mode a segment holds at most seg_len tokens: if it is full, this call
 * first runs elman_end_segment (step_token in codec.c calls it itself every seg_len tokens).  Out-of-range
 * arguments are clamped (w to 0 = <unk>, ccase/gap masked) so the model never reads out of bounds. */
void elman_advance(Elman* m, int w, int ccase, int gap, int case_coded);

/* Adaptive: backward over the tokens recorded since the last call (truncated BPTT: the state before the
 * segment is a constant, the last token's transition gets no gradient), then one update step (§6);
 * nothing happens for an empty segment.  Static: just forgets the segment.  Returns 0. */
int elman_end_segment(Elman* m);

/* ---- debugging / tests ---- */
/* Dense gradient of the last segment (nlm_param_count floats; zero outside the rows it touched) into out. */
void elman_debug_grad(const Elman* m, float* out);
/* Current working parameters, the whole §2 block as float32 (nlm_param_count floats), into out. */
void elman_params(const Elman* m, float* out);
/* Bytes allocated by this state (not the shared weights; the snapshot once elman_save was called). */
size_t elman_memory(const Elman* m);

#endif /* NLM_ELMAN_H */
