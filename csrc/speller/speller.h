/* speller/speller.h: unknown bodies and literal gaps (docs/format.md §5).
 *
 * Owns the spelling cache (PPM-C over the bodies already sent as <unk> in this frame), the adaptive
 * order-4 character PPM speller (primed once from a word list), the literal-gap model and the byte-model
 * speller (bytemodel/cm.h over the stream of bodies, the PPM one of its inputs, §5.4).
 * All are integer models driving the range coder of coder/rc.h; nothing here touches floats on the
 * coding path (libm log2 only fills the optional statistics).
 */
#ifndef NLM_SPELLER_H
#define NLM_SPELLER_H

#include <stddef.h>
#include <stdint.h>

#include "coder/rc.h"

#define SPELLER_MAX_BODY 32   /* longest body the speller and the cache accept */
#define SPELLER_MAX_GAP 65535 /* longest literal whitespace run */

typedef struct Speller Speller; /* the speller, the spelling cache, the literal-gap model */

/* prime: words separated by '\n' (empty lines ignored, a word longer than 32 bytes is cut to 32), fed
 * to the character model once.  NULL on allocation failure. */
Speller* speller_new(const uint8_t* prime, size_t len);
/* A speller primed like tmpl, sharing tmpl's primed tables read-only (tmpl must outlive it and is never
 * written through it): what every codec context of one model uses, so priming runs once per model. */
Speller* speller_new_shared(const Speller* tmpl);
void speller_free(Speller* s);
/* Back to the just-primed state: primed speller, empty cache, fresh gap model.  Always succeeds (nothing
 * is copied: the speller reads the primed tables until its next update makes its own copy of them, so the
 * update that spells a body or a literal gap may fail with NLM_ERR_NOMEM). */
void speller_reset(Speller* s);
/* Snapshot / rollback of the adaptive state (speller, cache, gap model).  0 or a negative NLM_ERR_*
 * (NLM_ERR_NOMEM; NLM_ERR_STATE for a restore with no snapshot). */
int speller_save(Speller* s);
int speller_restore(Speller* s);

/* Which model spells escaped bodies: the primed order-4 PPM alone (§5.2; a measurement option, the formats'
 * choice is in formats.h) or the byte model over the token stream (§5.4, the format's).  A new speller is
 * SPELLER_PPM.  Set a kind, then reset. */
#define SPELLER_PPM 0
#define SPELLER_CM 1
#define SPELLER_CM_ALL 2 /* measurement only, in no format: the byte model learns from every body (§5.4) */
int speller_set_kind(Speller* s, int kind);
/* Every body the word model codes as a known word (SPELLER_CM: the byte model's history). */
void speller_see_body(Speller* s, const uint8_t* body, int n);

/* Code an unknown body (1..maxlen bytes, maxlen <= 32, any byte values) through the cache, and on
 * escape the speller.  Encoder: reads buf[0..*len).  Decoder: writes buf (>= maxlen bytes), sets *len.
 * *hit = 1 for a cache hit.  bits (optional): bits[0] += −log2 p of the cache symbol, bits[1] += −log2 p
 * of the spelling (statistics only).  Returns 0 or a negative NLM_ERR_*. */
int speller_code_unknown(Speller* s, Rc* rc, uint8_t* buf, int* len, int maxlen, int* hit, double* bits);
/* The same with the cache's symbol (0 = escape, i + 1 = the i-th cached body) coded by code_sym over the
 * cache's counts instead of by those counts alone (the body mixer, §5.1.1: codec/bodymix.c); code_sym NULL:
 * as above. */
typedef int (*SpellerSymCoder)(void* ctx, Rc* rc, const Fen* counts, int* sym, double* bits); /* bits as below */
int speller_code_unknown_with(Speller* s, Rc* rc, uint8_t* buf, int* len, int maxlen, SpellerSymCoder code_sym,
                              void* ctx, int* hit, double* bits);
/* The cache symbol of a body: i + 1 when it is the i-th cached body, 0 when it is not cached. */
int speller_body_symbol(const Speller* s, const uint8_t* body, int n);

/* Code a literal whitespace run (bytes in ' ' \t \n \r \v \f, 1..maxlen bytes, maxlen <= 65535) with
 * the adaptive order-1 model over the 6 bytes + END.  Encoder reads buf[0..*len); decoder writes buf
 * (>= maxlen bytes) and sets *len.  bits (optional): *bits += −log2 p.  0 or a negative NLM_ERR_*. */
int speller_code_gap(Speller* s, Rc* rc, uint8_t* buf, int* len, int maxlen, double* bits);

/* Statistics for tests: bytes of speller tables (current state) and number of cached bodies. */
size_t speller_table_bytes(const Speller* s);
int speller_cache_size(const Speller* s);

#endif /* NLM_SPELLER_H */
