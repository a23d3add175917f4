/* coder/rc.h: the range coder of docs/format.md §4 and the small tools to drive it.
 *
 * Owns: the encoder (RcEnc, with a growable output buffer it owns), the decoder (RcDec, reading a payload;
 * bytes past its end read as 0 and are counted), the mode-agnostic wrapper Rc used by the one token step
 * shared by encoder and decoder, and a Fenwick tree (Fen) for large adaptive alphabets (spelling cache).
 *
 * Coder: 56-bit window.  low is a uint64 with the carry at bit 56, an LZMA-style cache byte plus a count
 * of pending 0xFF bytes; range stays in [2^48, 2^56) by shifting out bytes.  A symbol (cum, f, F) with
 * 0 < f, cum + f <= F <= 2^30 does r = range / F; low += r*cum; range = r*f.  The decoder mirrors it with
 * target = code / r (a value >= F is a corrupt payload).  Flush: the pending bytes plus at most one
 * byte (see rc_enc_finish).  rc_dec_finish checks that the payload is exactly the canonical encoding of
 * what was decoded (length and final window), so truncated, extended and most corrupt payloads fail.
 *
 * Errors: functions return 0 or a negative NLM_ERR_* (nlm.h).  No allocation happens in the decoder.
 */
#ifndef NLM_CODER_RC_H
#define NLM_CODER_RC_H

#include <stddef.h>
#include <stdint.h>

#include "nlm.h"

#define RC_MAX_TOTAL (1u << 30) /* largest total F of one symbol */

typedef struct {
    uint8_t* buf;     /* output, owned (free with rc_enc_free) */
    size_t len, cap;  /* bytes written, allocated */
    uint64_t low;     /* [0, 2^57): window bits 0..55, carry at bit 56 */
    uint64_t range;   /* [2^48, 2^56) between symbols */
    uint64_t pending; /* bytes held back: the cache byte then pending-1 bytes 0xFF (0 = none yet) */
    uint8_t cache;
    int err;          /* sticky: NLM_ERR_NOMEM after a failed allocation */
    int sink;         /* RC_CODE: symbols are coded; RC_LOG: appended to ops instead (rc_enc_replay codes them
                       * later); RC_DISCARD: dropped (a step run for its state only: the measured line route, codec.c) */
    struct RcOp* ops; /* RC_LOG: the symbols logged, owned */
    size_t nops, ops_cap;
} RcEnc;

enum { RC_CODE = 0, RC_LOG = 1, RC_DISCARD = 2 };

/* A logged symbol: (cum, f, F), or a binary decision (F = 0, cum = the bit, f = p1). */
typedef struct RcOp {
    uint32_t cum, f, F;
} RcOp;

typedef struct {
    const uint8_t* src; /* payload (not owned) */
    size_t n;           /* payload length */
    size_t pos;         /* bytes consumed, including those past the end (read as 0) */
    uint64_t code;      /* value - low, inside the window; < range for a valid payload */
    uint64_t range;
    uint64_t low;       /* low mod 2^56, mirrored for rc_dec_finish */
    uint64_t r;         /* range / F of the pending rc_dec_target */
    int err;            /* sticky NLM_ERR_CORRUPT */
} RcDec;

/* ---- encoder ---- */
void rc_enc_init(RcEnc* e);                 /* empty encoder, no allocation yet */
void rc_enc_reset(RcEnc* e);                /* start a new payload, keep the buffer */
void rc_enc_free(RcEnc* e);
int rc_enc_encode(RcEnc* e, uint32_t cum, uint32_t f, uint32_t F);
/* Flush: emits the pending bytes and at most one more byte.  The payload is then e->buf[0..e->len).
 * A stream of N renormalisation shifts takes N or N + 1 bytes in all. */
int rc_enc_finish(RcEnc* e);

/* Code src's logged ops[from..to) (RC_LOG) with dst, an encoder in RC_CODE mode (dst may be src). */
int rc_enc_replay(RcEnc* dst, const RcEnc* src, size_t from, size_t to);
/* The information of ops[from..to) in 1/65536 bits, exactly (integer arithmetic: an encoder's choice made
 * on it is the same on every machine). */
uint64_t rc_ops_cost(const RcEnc* e, size_t from, size_t to);
/* -log2(f / F) in 1/65536 bits, exactly (0 < f <= F <= 2^30). */
uint32_t rc_cost(uint32_t f, uint32_t F);

/* After rc_enc_finish: put one byte before the payload (a field of the block outside the coder's bytes). */
int rc_enc_prefix(RcEnc* e, uint8_t b);

/* ---- decoder ---- */
void rc_dec_init(RcDec* d, const uint8_t* src, size_t n);
/* Two-phase decode: rc_dec_target gives t in [0, F); the caller finds the symbol with
 * cum <= t < cum + f and calls rc_dec_update(cum, f) with the same F as the pending target. */
int rc_dec_target(RcDec* d, uint32_t F, uint32_t* t);
int rc_dec_update(RcDec* d, uint32_t cum, uint32_t f);
/* Bytes consumed past the end of the payload so far (0..7 at the end of a valid payload). */
size_t rc_dec_past_end(const RcDec* d);
/* After the last symbol: 0 if the payload is exactly the canonical encoding of the decoded symbols
 * (right length, right final bytes), else NLM_ERR_CORRUPT. */
int rc_dec_finish(RcDec* d);

/* ---- binary decisions (the byte model, docs/format.md §9) ----
 * The symbol (cum, f, F = 2^12) with bit 1 at [0, p1) and bit 0 at [p1, 2^12), 0 < p1 < 2^12: the same
 * arithmetic as rc_enc_encode / rc_dec_target + rc_dec_update with F = 4096, without the division. */
int rc_enc_bit(RcEnc* e, int bit, uint32_t p1);
int rc_dec_bit(RcDec* d, uint32_t p1, int* bit);

/* ---- mode-agnostic wrapper ---- */
typedef struct {
    int decoding;
    RcEnc enc;
    RcDec dec;
} Rc;

/* Code one symbol with frequencies f[0..n), total F (= Σf, 0 < F <= 2^30).  Zero frequencies are allowed
 * (those symbols cannot be coded).  Encoder: codes *sym.  Decoder: sets *sym.
 * Returns 0 or a negative NLM_ERR_*. */
int rc_code_freqs(Rc* rc, const uint32_t* f, int n, uint32_t F, int* sym);
/* Explicit cumulative interface: the encoder gives (cum, f); the decoder passes a callback that maps a
 * target t in [0, F) to its symbol and that symbol's (cum, f). */
typedef int (*RcFindFn)(void* ctx, uint32_t t, int* sym, uint32_t* cum, uint32_t* f);
int rc_code_cum(Rc* rc, uint32_t F, int* sym, uint32_t cum_enc, uint32_t f_enc, RcFindFn find, void* ctx);

/* ---- Fenwick tree over frequencies v[0..n) (growable) ---- */
typedef struct {
    uint32_t* v;    /* v[0..n): frequencies */
    uint32_t* t;    /* t[1..cap]: Fenwick sums */
    int n, cap;     /* cap a power of two, >= n */
    uint32_t total; /* Σ v */
} Fen;

void fen_init(Fen* fw);
void fen_free(Fen* fw);
void fen_clear(Fen* fw);                        /* n = 0, keep memory */
int fen_push(Fen* fw, uint32_t v);              /* append an element; 0 or NLM_ERR_NOMEM */
void fen_add(Fen* fw, int i, uint32_t delta);   /* v[i] += delta */
void fen_set_all(Fen* fw);                      /* rebuild t and total from v (after editing v) */
uint32_t fen_prefix(const Fen* fw, int i);      /* Σ v[0..i) */
int fen_find(const Fen* fw, uint32_t t, uint32_t* cum); /* i with cum(i) <= t < cum(i) + v[i] */
int fen_copy(Fen* dst, const Fen* src);         /* 0 or NLM_ERR_NOMEM */
/* Code one symbol of the alphabet 0..n) with frequencies v (total fw->total). */
int rc_code_fen(Rc* rc, const Fen* fw, int* sym);

#endif /* NLM_CODER_RC_H */
