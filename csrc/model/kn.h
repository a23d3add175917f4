/* model/kn.h: the interpolated Kneser-Ney word trigram expert of docs/format.md §2.5.
 *
 * Owns the KN tables of a model file (docs/model_format.md field 13a: the probabilities the trainer estimated,
 * stored, so the core only adds and multiplies them) and the class-factored distribution they give after
 * the two previous tokens (u, v):
 *     p2(w|v)   = a2(v,w) + g2[v]·p1[w]
 *     p3(w|u,v) = a3(uv,w) + g3(uv)·p2(w|v)        (an unseen context uv: g3 = 1, no a3 terms)
 * computed per class for the class symbol and per word inside one class for the word symbol, in the fixed
 * order §2.5 gives.  lm.c mixes it with the network (lm_class_logits / lm_word_logits).  Immutable once
 * built: shared by every stream like the weights.
 */
#ifndef NLM_MODEL_KN_H
#define NLM_MODEL_KN_H

#include <stddef.h>
#include <stdint.h>

typedef struct Kn Kn;

/* Parse and validate the section blob[0..n) (little-endian) for a model of V ids, C classes with class
 * starts cs[0..C] and the class of each id cls[0..V).  NULL and *err = NLM_ERR_CONFIG (a malformed section)
 * or NLM_ERR_NOMEM. */
Kn* kn_new(const uint8_t* blob, size_t n, int V, int C, const int32_t* cs, const int32_t* cls, int* err);
void kn_free(Kn* k);
size_t kn_memory(const Kn* k);
float kn_lambda(const Kn* k); /* the network's weight λ in the mixture (0 = the expert alone) */

/* pc (C): P(class c | u, v) = Σ over the class of p3, as §2.5 computes it. */
void kn_class_probs(const Kn* k, int u, int v, float* pc);
/* pw (b - a): p3(w | u, v) for w in [a, b) (one class). */
void kn_word_probs(const Kn* k, int u, int v, int a, int b, float* pw);

#endif /* NLM_MODEL_KN_H */
