/* lex.h: bytes -> tokens (docs/format.md §1) and the vocabulary hash (body bytes -> id).
 *
 * The lexer is the one place that decides how bytes become tokens; the codec (encoder) and the training
 * code (through the bindings) both call nlm_lex.  The decoder never lexes: it rebuilds bytes from
 * tokens with lex_gap_bytes and lex_recase, the exact inverses used here.
 */
#ifndef NLM_LEX_H
#define NLM_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "nlm.h" /* NlmLexToken, NLM_KIND_*, NLM_MAX_WORD */

/* Bytes of a fixed gap symbol 0..6 (symbol 7, literal, has no fixed bytes). *len set; returns pointer. */
const uint8_t* lex_gap_bytes(int gap, int* len);

/* Is b one of the six whitespace bytes? */
int lex_is_space(uint8_t b);

/* Lowercase ASCII letters of src[0..n) into dst (may alias). */
void lex_lower(uint8_t* dst, const uint8_t* src, int n);

/* Apply case 0/1/2 to a lowercased body in place (3 = verbatim: unchanged). */
void lex_recase(uint8_t* body, int n, int ccase);

/* Does the body contain an ASCII capital? (then its case is 3 and it is sent verbatim) */
int lex_has_upper(const uint8_t* body, int n);

/* Vocabulary: open-addressing hash of bodies (<= 255 bytes) -> id. */
typedef struct {
    uint32_t mask;      /* table size - 1 (power of two) */
    int32_t* slots;     /* [mask+1] id or -1 */
    const uint8_t** body; /* [V] pointer into blob */
    uint8_t* blen;      /* [V] */
    uint8_t* blob;      /* owned copy of the vocab blob */
    int32_t V;
} LexVocab;

/* Parse a blob of V (length byte, bytes) entries.  Returns 0 or NLM_ERR_VOCAB / NLM_ERR_NOMEM. */
int lex_vocab_init(LexVocab* v, const uint8_t* blob, size_t len, int32_t V);
void lex_vocab_free(LexVocab* v);
/* Id of a body, or 0 (<unk>) if absent.  Empty bodies are never looked up. */
int32_t lex_vocab_find(const LexVocab* v, const uint8_t* body, int n);

#endif
