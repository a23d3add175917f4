/* codec/tokmatch.h: the token match model of docs/format.md §3.4.
 *
 * Owns the per-group history of coded tokens, the longest-earlier-occurrence search over it, the stream's
 * own vocabulary of unknown words (a word spelled once gets a token id of this group, so a repeat is
 * predicted as a token), and the secondary estimation that turns the network's probability of the predicted
 * token and the match's context into the probability of the match flag (two APMs in the format, one as a
 * measurement option: tokmatch_set_flag_model).  Integer arithmetic only.
 *
 * Per token the codec step (codec.c, step_token) calls, in this order:
 *     tokmatch_predict  -> is there a predicted token (vocabulary id, or an unknown word's body)?
 *     tokmatch_p        -> the 12-bit probability that the token is the predicted one, from q12 (the
 *                          network's quantised probability of it) and the match length
 *     (code the flag; then tokmatch_learn_flag)
 *     tokmatch_push     -> the token coded, whichever way; updates the match and the history
 * Token ids in the history: 1..V-1 vocabulary ids (1 = <end>), V + k the k-th distinct unknown body of the
 * group, TM_NO_ID an unknown body once the group's table of them is full (never predicted).
 */
#ifndef NLM_CODEC_TOKMATCH_H
#define NLM_CODEC_TOKMATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct TokMatch TokMatch;

/* V: the model's vocabulary size.  NULL on allocation failure. */
TokMatch* tokmatch_new(int V);
void tokmatch_free(TokMatch* m);
/* Forget the group: empty history, no unknown bodies, fresh APMs. */
void tokmatch_reset(TokMatch* m);
/* The flag's probability model (docs/format.md §3.4): 1 one APM (a measurement option; the formats' choice
 * is in formats.h), 2 two APMs (the format's, and the default of a new TokMatch).  Resets; another value is
 * NLM_ERR_STATE. */
int tokmatch_set_flag_model(TokMatch* m, int model);
/* Snapshot / return to it (0, or NLM_ERR_NOMEM / NLM_ERR_STATE). */
int tokmatch_save(TokMatch* m);
int tokmatch_restore(TokMatch* m);

/* 1 and the prediction (*w >= 1 a vocabulary id; *w == 0 an unknown word with body[0..*blen)), or 0. */
int tokmatch_predict(const TokMatch* m, int32_t* w, const uint8_t** body, int* blen);
/* P(flag = 1) in 12 bits (1..4095) for the current prediction; q12: the network's probability of the
 * predicted token in 12 bits (clamped to 1..4095); unk: the prediction is an unknown word (w == 0).
 * Remembers what tokmatch_learn_flag updates. */
int tokmatch_p(TokMatch* m, int q12, int unk);
void tokmatch_learn_flag(TokMatch* m, int hit);
/* Record the coded token (w >= 1, or w == 0 with its body).  0 or NLM_ERR_NOMEM. */
int tokmatch_push(TokMatch* m, int32_t w, const uint8_t* body, int blen, int gap);
/* The gap symbol of the predicted token's earlier occurrence (call only when tokmatch_predict gave 1). */
int tokmatch_gap(const TokMatch* m);
/* The id of the token recorded last (the token cache's context id, §3.6); 2^32 - 1 (TM_NO_ID) before the first. */
uint32_t tokmatch_last_id(const TokMatch* m);
/* Bytes allocated. */
size_t tokmatch_memory(const TokMatch* m);

#endif /* NLM_CODEC_TOKMATCH_H */
