/* codec/bodymix.h: the grown vocabulary's pointer model of docs/format.md §5.1.1.
 *
 * Owns the experts that predict which of the group's unknown bodies comes next, as a token of the stream:
 * the followers (spelling-cache symbols) of the previous token and of the previous two, and the decayed
 * counts of the recently seen unknown bodies; their weights; and the coding of the spelling cache's symbol
 * (0 = escape, i + 1 = the i-th cached body) with the cache's PPM-C counts mixed with those experts.
 * Integer arithmetic only.
 *
 * The codec step (codec.c, step_token) calls:
 *     bodymix_code  -> in place of the cache's own PPM-C code (speller_code_unknown, when given the mixer)
 *     bodymix_push  -> after every token: an unknown body's symbol is counted, then the contexts move on
 * Context ids are the token match model's (vocabulary ids, V + k for the k-th distinct unknown body).
 */
#ifndef NLM_CODEC_BODYMIX_H
#define NLM_CODEC_BODYMIX_H

#include <stddef.h>
#include <stdint.h>

#include "coder/rc.h"

typedef struct BodyMix BodyMix;

BodyMix* bodymix_new(void); /* NULL on no memory */
void bodymix_free(BodyMix* b);
void bodymix_reset(BodyMix* b);
int bodymix_save(BodyMix* b);    /* 0, NLM_ERR_NOMEM */
int bodymix_restore(BodyMix* b); /* 0, NLM_ERR_STATE */
size_t bodymix_memory(const BodyMix* b);

/* Code the spelling cache's symbol *sym (encoder: given; decoder: set) over fw (v[0] the escape, v[i+1] the
 * i-th body's count), mixed with the experts; the weights learn.  Statistics only (may be NULL, never fed
 * back): *bits += -log2 p of the symbol, *candidate = 1 when it was one of the experts' bodies.  0 or a
 * negative NLM_ERR_*. */
int bodymix_code(BodyMix* b, Rc* rc, const Fen* fw, int* sym, double* bits, int* candidate);

/* After every token: sym >= 0 for an unknown body (the cache symbol it was coded or seen as: 0 for a new
 * body, whose own symbol is newsym; otherwise newsym is ignored), -1 for any other token; id its context
 * id. */
void bodymix_push(BodyMix* b, int sym, int newsym, uint32_t id);

#endif /* NLM_CODEC_BODYMIX_H */
