/* bytemodel/cm.h: the adaptive byte model (docs/format.md §9), internal interface.
 *
 * Owns: a bitwise context-mixing model of a byte stream in integer arithmetic only (no float anywhere,
 * so its predictions are the same on every CPU by construction): hashed bit-history statistics of
 * orders 1-6, a word context, a column context and a sparse context, a match model, two mixers whose
 * weight sets are selected by small contexts, and two APM stages.  Binary decisions are coded by the
 * range coder of coder/rc.h with 12-bit probabilities.
 *
 * One CmModel codes one run of byte-model blocks: cm_new with the run's size class (the payload's first
 * byte), then any number of cm_code calls, each one block, the state carried across them.
 */
#ifndef NLM_BYTEMODEL_CM_H
#define NLM_BYTEMODEL_CM_H

#include <stddef.h>
#include <stdint.h>

#include "coder/rc.h"

#define CM_SIZE_MIN 10 /* size class s: tables for runs of up to 2^s bytes (docs/format.md §9.1) */
#define CM_SIZE_MAX 23

typedef struct CmModel CmModel;

/* The byte models: 1 is docs/format.md §9.1-§9.5 (formats 13 to 15), 2 is §9.7 (format 16 on: more contexts,
 * confidence and run inputs, four mixers and a final one, a third APM).  The speller's is model 1. */
#define CM_MODEL_1 1
#define CM_MODEL_2 2

/* A fresh model (CM_MODEL_1 or CM_MODEL_2) for a run of at most 2^size bytes (CM_SIZE_MIN <= size <=
 * CM_SIZE_MAX; the format fixes every table size from it).  NULL and *err on failure. */
CmModel* cm_new(int size, int model, int* err);
void cm_free(CmModel* m);
/* The size class of a run of run_size bytes: the smallest s >= CM_SIZE_MIN with 2^s >= run_size, or -1
 * above 2^CM_SIZE_MAX. */
int cm_size_class(uint64_t run_size);
/* Bytes the model owns (allocated, touched or not). */
size_t cm_memory(const CmModel* m);

/* A speller model (speller/, docs/format.md §5.4): no run limit, its history a ring of 2^CM_SPELL_HBITS
 * bytes, its tables of fixed size.  It is fed the text a byte at a time: cm_code_byte codes one through
 * rc, cm_learn predicts and learns one without coding, cm_see only appends one to the history. */
#define CM_SPELL_HBITS 20
#define CM_SPELL_TBITS 16
#define CM_SPELL_MBITS 16
CmModel* cm_new_speller(int* err);
/* Back to the state cm_new / cm_new_speller made. */
void cm_reset(CmModel* m);
/* dst := src (two models made alike); NLM_ERR_STATE when their sizes differ. */
int cm_copy(CmModel* dst, const CmModel* src);
/* Encoder: codes *c; decoder: sets *c.  p (optional): the 12-bit probability of each coded bit, first bit
 * first (statistics).  ext (optional): a byte distribution as a tree of sums, ext[1] the total, ext[256 + c]
 * byte c's weight, ext[k] = ext[2k] + ext[2k + 1]: one more input of the mix.  0 or a negative NLM_ERR_*. */
int cm_code_byte(CmModel* m, Rc* rc, int* c, uint16_t* p, const uint64_t* ext);
void cm_learn(CmModel* m, int c);
void cm_see(CmModel* m, int c);
/* A hint, no state change: the bytes b[0..n) will be seen next (cm_see), so the match-table entries they
 * will read are fetched into the cache now, all at once. */
void cm_prefetch_seen(const CmModel* m, const uint8_t* b, int n);

/* hash64(x, salt) of docs/format.md §9.2 (also the gap mixer's context hash, codec/gapmixer.c). */
uint32_t cm_hash64(uint64_t x, uint32_t salt);

/* The integer logistic tables (docs/format.md §9.2): squash_t[4096] indexed by t + 2048, stretch_t[4096] by a
 * 12-bit p.  Also used by the token match model (codec/tokmatch.c). */
void cm_logistic_tables(int16_t* squash_t, int16_t* stretch_t);

/* Code n bytes: encoder (rc->decoding == 0) reads buf[0..n), decoder writes it.  Returns 0 or a
 * negative NLM_ERR_*; NLM_ERR_CORRUPT when the run would exceed 2^size bytes. */
int cm_code(CmModel* m, Rc* rc, uint8_t* buf, size_t n);

/* Predict and learn buf[0..n) exactly as cm_code codes them, without a coder: the bytes of a tracked group's
 * other blocks (docs/format.md §7.2, format 15).  Returns 0 or NLM_ERR_CORRUPT when the run would exceed
 * 2^size bytes. */
int cm_learn_block(CmModel* m, const uint8_t* buf, size_t n);

/* Measurement only (nlm_lab.h nlm_lab_byte_costs): predicts and learns buf[0..n) exactly as cm_code codes them,
 * without a coder, p[8 i + k] := the 12-bit probability of bit k (most significant first) of byte i, the bit
 * that occurred.  Returns 0 or NLM_ERR_CORRUPT when the run would exceed 2^size bytes. */
int cm_lab_costs(CmModel* m, const uint8_t* buf, size_t n, uint16_t* p);

#endif /* NLM_BYTEMODEL_CM_H */
