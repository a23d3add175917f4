/* nlm.h: the only public header of the nlmcodec C core.
 *
 * The core turns a block of bytes into a range-coded payload and back, driven by a word-level Elman RNN
 * (class-factored softmax, case and gap heads), a spelling cache and an adaptive speller, or by the
 * byte model (integer context mixing, for what the word model does not code).  It knows nothing of
 * Python, files or frames: the Python layer (python/nlmcodec/_frame.py) owns the container, the block
 * table, the checksums and the choice between word-model, byte-model, lzma and stored blocks.
 *
 * Both bindings (Cython python/nlmcodec/_nlm_cy.pyx, cffi build_cffi.py) wrap exactly these functions.
 * Format: docs/format.md.  Module layout and dependency rule: csrc/README.md.
 *
 * Errors: functions returning int / int64_t return a negative NLM_ERR_* code on failure (see
 * nlm_error_name); the library never prints, never exits, never aborts on bad input.
 */
#ifndef NLM_H
#define NLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors: stable numbers, never reused ---- */
#define NLM_ERR_LIST(X)                                                   \
    X(NLM_OK, 0, "ok")                                                    \
    X(NLM_ERR_NOMEM, -1, "out of memory")                                 \
    X(NLM_ERR_CONFIG, -2, "invalid model configuration")                  \
    X(NLM_ERR_VOCAB, -3, "invalid vocabulary")                            \
    X(NLM_ERR_CORRUPT, -4, "corrupt payload")                             \
    X(NLM_ERR_DST_SIZE, -5, "decoded size does not match the block size") \
    X(NLM_ERR_CAPACITY, -6, "output buffer too small")                    \
    X(NLM_ERR_STATE, -7, "invalid call sequence")                         \
    X(NLM_ERR_SELFTEST, -8, "arithmetic self-test failed (non-IEEE floating point environment)") \
    X(NLM_ERR_UNSUPPORTED, -9, "input not codable by the word model")

enum {
#define NLM_X_ENUM(name, value, msg) name = value,
    NLM_ERR_LIST(NLM_X_ENUM)
#undef NLM_X_ENUM
};

/* Name and message of an error code ("unknown error" for codes not in the list). */
const char* nlm_error_name(int code);

/* Run-time arithmetic self-test (csrc/codec/selftest.c): a fixed tiny forward pass, quantisation and
 * range coding compared with stored bits.  NLM_OK, or NLM_ERR_SELFTEST when this build or machine does not
 * compute the format's arithmetic.  Runs once per process (thread-safe); nlm_codec_new calls it. */
int nlm_selftest(void);

/* ---- lexer (docs/format.md §1) ---- */
/* One token.  Body bytes are src[off, off+len) in their original case; the gap bytes (whitespace before
 * the body) are src[gap_off, gap_off+gap_len).  kind: 0 END, 1 WORD, 2 NUMBER, 3 SYMBOL. */
typedef struct {
    uint32_t off, len;         /* body, original bytes */
    uint32_t gap_off, gap_len; /* whitespace before the body */
    uint8_t kind;              /* NLM_KIND_* */
    uint8_t ccase;             /* 0 lower, 1 Capitalised, 2 UPPER, 3 verbatim */
    uint8_t gap;               /* gap symbol 0..7 (7 = literal run) */
    uint8_t pad;
} NlmLexToken;

#define NLM_KIND_END 0
#define NLM_KIND_WORD 1
#define NLM_KIND_NUMBER 2
#define NLM_KIND_SYMBOL 3
#define NLM_NCASE 4
#define NLM_NGAP 8
#define NLM_MAX_WORD 32
#define NLM_MAX_NUMBER 16

/* Lex src[0..n) into out[0..cap).  The last token is always END.  Returns the number of tokens, or
 * NLM_ERR_CAPACITY if cap is too small (n + 1 tokens always suffice). */
int64_t nlm_lex(const uint8_t* src, size_t n, NlmLexToken* out, size_t cap);

/* ---- model and codec context ---- */
typedef struct {
    int32_t V, D, H, C; /* vocabulary, embedding, hidden, classes; D and H multiples of 16 */
    int32_t seg_len;    /* dynamic evaluation: tokens per update segment (>= 1) */
    float lr;           /* dynamic evaluation step size */
    float decay;        /* decay toward the trained weights per update */
    float eps;          /* RMS normaliser floor */
    int32_t arch;       /* model type (docs/format.md §2.4): bits 0-7 NLM_ARCH_*, bits 8-15 its parameter
                           (NLM_ARCH_NPLM: the context, the number of previous tokens; 0 for the others) */
} NlmConfig;

#define NLM_ARCH_ELMAN 0
#define NLM_ARCH_LSTM 1
#define NLM_ARCH_NPLM 2

/* Number of floats in the parameter block of docs/format.md §2 (0 for an invalid configuration). */
size_t nlm_param_count(const NlmConfig* cfg);

/* ---- the model: immutable, shared by every codec context, stream and thread ---- */
typedef struct NlmModel NlmModel;
#define NLM_PARAM_F32 0 /* parameter block stored as IEEE binary32 */
#define NLM_PARAM_F16 1 /* parameter block stored as IEEE binary16 */

/* Build a model from the pieces of a model file (docs/model_format.md), all little-endian as stored:
 *  params:        nlm_param_count(cfg) values of type dtype (NLM_PARAM_*).  Not copied when suitably aligned
 *                 on a little-endian host: the caller keeps these bytes alive and unchanged until
 *                 nlm_model_free (a mapped file is the intended use); otherwise copied.
 *  ms:            14 float32, the training RMS gradient of each tensor in §2 order (56 bytes; every model
 *                 type has 14 tensors).
 *  vocab_blob:    V bodies, each as one length byte then the bytes; ids in order.  Ids 0 and 1 (<unk>,
 *                 <end>) have length 0.
 *  class_start:   C + 1 int32 ids (4(C+1) bytes), class_start[0] = 0, class_start[C] = V, increasing.
 *  speller_prime: words separated by '\n', fed to the speller once here.
 * The weights are not checked for finiteness: the arithmetic is defined for every bit pattern (the
 * quantiser turns non-finite logits into valid frequencies), so a damaged model codes badly, never unsafely.
 * Returns NULL and sets *err on failure. */
NlmModel* nlm_model_new(const NlmConfig* cfg, const void* params, int dtype, const uint8_t* ms,
                        const uint8_t* vocab_blob, size_t vocab_blob_len, const uint8_t* class_start,
                        const uint8_t* speller_prime, size_t speller_prime_len, int* err);
/* Attach the model file's Kneser-Ney section (docs/model_format.md field 13a, docs/format.md §2.5; copied and
 * validated here) to a model no codec has been created on yet: every codec made on it afterwards codes with
 * the mixture of the network and the expert.  NLM_OK, NLM_ERR_CONFIG (a malformed section), NLM_ERR_NOMEM,
 * or NLM_ERR_STATE (the model already has one). */
int nlm_model_set_kn(NlmModel* m, const uint8_t* blob, size_t blob_len);
/* Free a model; every codec created from it must be freed first. */
void nlm_model_free(NlmModel* m);
/* Bytes the model allocated itself (the caller's parameter block excluded unless it had to be copied). */
size_t nlm_model_memory(const NlmModel* m);

typedef struct NlmCodec NlmCodec;

/* Create a codec context over a model (which must outlive it).  A static context (adapt 0) owns only its
 * activations, cache and speller state; a dynamic one (adapt 1) also the weights it adapts, copied from
 * the model as it touches them.  Returns NULL and sets *err on failure. */
NlmCodec* nlm_codec_new(const NlmModel* model, int adapt, int* err);
/* Bytes owned by the context (not the model). */
size_t nlm_codec_memory(const NlmCodec* c);
void nlm_codec_free(NlmCodec* c);

/* ---- frame formats and coding modes (docs/format.md §7 and its format policy) ----
 * A frame names its format version and mode; together they fix every option of its word-model blocks.  The
 * one table of what they mean is csrc/codec/formats.h: a C program that reads a frame's header configures a
 * codec with nlm_codec_reset_for and decodes its blocks. */
#define NLM_FORMAT_VERSION 17 /* the format this build writes */
#define NLM_FORMAT_OLDEST 13  /* the oldest it reads (formats 1-12: nlmcodec 0.1.0) */
#define NLM_MODE_STATIC 0     /* no adaptation (a context made with adapt 0) */
#define NLM_MODE_DYNAMIC 1    /* every part adapts (§6.3-§6.4; a context made with adapt 1) */
#define NLM_MODE_HEADS 2      /* the output heads adapt over the integer transition (§6.5; adapt 1) */
#define NLM_MAX_BLOCK_TOKENS 16384 /* the most tokens of a word-model block, END included (§3.5) */

/* Configure the context for the word-model blocks of frame format `version` in `mode` and reset it to the
 * start of a group (trained weights, h = 0, empty caches, primed speller): call it at every group start.
 * NLM_OK, NLM_ERR_STATE for a version this build does not read or a mode the context cannot code (static
 * mode needs a context made with adapt 0, dynamic and heads mode one made with adapt 1), or NLM_ERR_NOMEM. */
int nlm_codec_reset_for(NlmCodec* c, int version, int mode);

/* Whether the statistics (nlm_codec_stats) sum the information of the coded tokens' symbols (the *_BITS and
 * *_COST entries the token step adds, one log2 per symbol; on for a new context): off, those stay 0 and a
 * static token step is a few percent faster; the counts are kept either way, the speller's own sums too, and a
 * trace (nlm_codec_trace) sums everything whatever this says.  Never changes the bytes; does not reset. */
int nlm_codec_set_bit_stats(NlmCodec* c, int on);
/* Estimates only (the encoder's probe, python/nlmcodec/_encode.py): on != 0 stops a dynamic context's
 * updates, so what it codes until it is turned off costs static-mode time; the payload is then not one the
 * decoder can follow, so the caller saves before and restores after.  No effect on a static context. */
int nlm_codec_set_frozen(NlmCodec* c, int on);

/* Snapshot the adaptive state (weights, h, cache, speller); nlm_codec_restore returns to it and keeps it, so
 * any number of restores return to the same state until the next save.  The frame layer snapshots before
 * coding a block with the word model and restores when it picks a fallback block, so the decoder, which
 * never sees that attempt, stays in step (after a probe's restore it reuses the probe's snapshot). */
int nlm_codec_save(NlmCodec* c);
int nlm_codec_restore(NlmCodec* c);

/* Encode one block with the word model.  Returns the payload size (>= 0) and makes the payload
 * available through nlm_codec_output until the next call; negative on error.  NLM_ERR_UNSUPPORTED (the
 * block holds something the word model cannot code, e.g. a whitespace run over 65,535 bytes) is returned
 * before any state is touched; any other error leaves the state undefined (the caller restores or resets). */
int64_t nlm_encode_block(NlmCodec* c, const uint8_t* src, size_t n);
const uint8_t* nlm_codec_output(const NlmCodec* c, size_t* len);

/* Decode one block payload into exactly dst_len bytes.  Returns dst_len, or NLM_ERR_CORRUPT /
 * NLM_ERR_DST_SIZE when the payload does not decode to dst_len bytes. */
int64_t nlm_decode_block(NlmCodec* c, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len);

/* Statistics of everything coded since nlm_codec_reset, in bits (−log2 of the quantised probability of
 * each coded symbol; computed for reporting only, never fed back into coding).  out[NLM_STAT_*]. */
#define NLM_STAT_TOKENS 0
#define NLM_STAT_WORD_BITS 1      /* class + word stages of in-vocabulary tokens and <end> */
#define NLM_STAT_UNK_TOKENS 2     /* <unk> tokens (a match hit included) */
#define NLM_STAT_UNK_BITS 3       /* class + word stages of <unk> tokens */
#define NLM_STAT_CACHE_HITS 4
#define NLM_STAT_CACHE_BITS 5     /* cache symbol (hit or escape) */
#define NLM_STAT_SPELLED 6
#define NLM_STAT_SPELL_BITS 7     /* speller */
#define NLM_STAT_CASE_BITS 8
#define NLM_STAT_GAP_BITS 9       /* gap symbol + literal runs */
#define NLM_STAT_MATCH_PREDS 10   /* tokens the match model predicted (a flag was coded) */
#define NLM_STAT_MATCH_HITS 11    /* ... and the prediction was the token */
#define NLM_STAT_MATCH_BITS 12    /* the match flags */
#define NLM_STAT_MATCH_NET_COST 13 /* what the network's class + word stages would have cost the hits */
#define NLM_STAT_TC_U1 14        /* tokens the token cache's unigram gave a count (§3.6) */
#define NLM_STAT_TC_O2 15        /* ... its order-2 follower list */
#define NLM_STAT_TC_O3 16        /* ... its order-3 follower list */
#define NLM_STAT_TC_TOKENS 17    /* tokens the cache mixed for (every token while it is on) */
#define NLM_STAT_TC_NET_COST 18  /* what the network's own class + word distributions (without the cache and
                                  * the match exclusion) would have cost the tokens the class stage coded */
#define NLM_STAT_BM_CANDIDATES 19 /* cache symbols (hits and escapes) the body mixer's experts named (§5.1.1) */
#define NLM_STAT_SEGMENTS 20      /* dynamic: segments closed (learned from or skipped) */
#define NLM_STAT_SKIPPED 21       /* ... of which an adaptation schedule's skip_permille skipped */
#define NLM_STAT_ROUTE_LINES 22   /* the line route (§3.8), encoder: lines of the routed blocks */
#define NLM_STAT_ROUTE_RUN_LINES 23 /* ... that the run coded from their start */
#define NLM_STAT_ROUTE_SPLIT_LINES 24 /* ... that the run coded from a later token (the word model the tokens before) */
#define NLM_STAT_ROUTE_RUN_BYTES 25 /* ... the bytes the run coded */
#define NLM_STAT_ROUTE_BITS 26    /* ... the route bits coded (their information) */
#define NLM_STAT_ROUTE_WORD_BITS 27 /* ... what the word model's coding of every line would have cost, in bits (the
                                     * encoder's yardstick for the route; always summed) */
#define NLM_STAT_ROUTE_CODED_BITS 28 /* ... what the chosen codings cost, route bits included, in bits (always) */
#define NLM_STAT_COUNT 29
int nlm_codec_stats(const NlmCodec* c, double* out, size_t n);

/* ---- per-token trace (reporting only: never changes a coded byte) ----
 * nlm_codec_trace(c, 1) makes every later nlm_encode_block record one NlmTraceRec per token it codes,
 * readable through nlm_codec_trace_records until the next nlm_encode_block (which replaces them); a
 * block refused with NLM_ERR_UNSUPPORTED leaves 0 records.  nlm_codec_trace(c, 0) stops and frees the
 * buffer.  Off by default; nlm_decode_block never records.  Bits are −log2(f/F) of the quantised
 * frequencies actually coded (the same numbers nlm_codec_stats sums).  A block's records add up to its
 * payload size in bits minus the coder's rounding and flush. */
#define NLM_PART_CLASS 0 /* class stage of an in-vocabulary token or <end> */
#define NLM_PART_WORD 1  /* word-in-class stage of an in-vocabulary token or <end> */
#define NLM_PART_UNK 2   /* class + word stages of <unk> (then NLM_PART_CLASS/WORD are 0) */
#define NLM_PART_CACHE 3 /* spelling-cache symbol (hit or escape) */
#define NLM_PART_SPELL 4 /* character speller */
#define NLM_PART_CASE 5  /* case symbol */
#define NLM_PART_GAP 6   /* gap symbol + literal run */
#define NLM_PART_MATCH 7 /* the token match flag (§3.4) */
#define NLM_PART_ROUTE 8 /* the line route's bits before the token (§3.8) */
#define NLM_PART_RUN 9   /* the token's bytes the group's run coded (§3.8: a line, or the end of one, the run coded;
                          * the '\n' that ends such a line and the whitespace before it count to the next token) */
#define NLM_NPART 10
#define NLM_TRACE_TOPK 3
#define NLM_TRACE_CACHE_HIT 1 /* flags: the <unk> body came from the spelling cache */
#define NLM_TRACE_CASE_CODED 2 /* flags: a case symbol was coded */
#define NLM_TRACE_MATCH_HIT 4  /* flags: the token was the match model's prediction (no class/word stage) */
#define NLM_TRACE_RUN 8        /* flags: the token's body was coded by the group's run (§3.8; the word model's parts 0) */
typedef struct {
    uint32_t off, len;  /* the token's bytes in the block: src[off, off+len) = gap then body */
    int32_t word;       /* word id coded: 0 <unk>, 1 <end>, else in-vocabulary */
    uint8_t kind;       /* NLM_KIND_* */
    uint8_t ccase;      /* 0 lower, 1 Capitalised, 2 UPPER, 3 verbatim */
    uint8_t gap;        /* gap symbol 0..7 */
    uint8_t flags;      /* NLM_TRACE_* */
    double bits[NLM_NPART]; /* bits of each part, NLM_PART_* */
    /* The model's best guesses, restricted to the class actually coded: the NLM_TRACE_TOPK most probable
     * words of that class, p = p(class) * p(word | class) from the quantised frequencies; id -1 = none
     * (also on a match hit, which codes no class). */
    int32_t top_id[NLM_TRACE_TOPK];
    float top_p[NLM_TRACE_TOPK];
} NlmTraceRec;
int nlm_codec_trace(NlmCodec* c, int on);
const NlmTraceRec* nlm_codec_trace_records(const NlmCodec* c, size_t* n);

/* ---- the byte model (docs/format.md §9): blocks that the word model does not code ----
 * An integer context-mixing model of bytes (csrc/bytemodel/cm.c), the same on every CPU by construction.
 * A run of consecutive byte-model blocks of a group shares one model: the first block of a run starts it
 * (its payload says for how many bytes at most), the next ones continue it. */
typedef struct NlmByteCoder NlmByteCoder;
/* The byte model of frame format version (formats.h: formats 13 to 15 model 1, §9.1-§9.5; 16 on model 2, §9.7).
 * NULL and *err = NLM_ERR_STATE for a version this build does not read. */
NlmByteCoder* nlm_bytecoder_new(int version, int* err);
void nlm_bytecoder_free(NlmByteCoder* b);
/* End the run in progress (group start): the next block must start a run. */
int nlm_bytecoder_reset(NlmByteCoder* b);
/* Bytes owned (the model of the run in progress included, touched or not). */
size_t nlm_bytecoder_memory(const NlmByteCoder* b);
/* Encode one block of n > 0 bytes.  run_size > 0: start a new run of run_size bytes in all (this block
 * first; at most 2^23, else NLM_ERR_STATE); 0: continue the run.  Returns the payload size and makes the payload available through
 * nlm_bytecoder_output until the next call; negative on error (the run is then ended).  cap > 0 (an
 * estimate that only needs to know whether the payload is below cap bytes): returns 0, and ends the run,
 * when the payload is cap bytes or more, in which case the coding may stop before the end of the block
 * (the payload of a smaller block is the same as without a cap). */
int64_t nlm_bytecoder_encode(NlmByteCoder* b, const uint8_t* src, size_t n, uint64_t run_size, uint64_t cap);
const uint8_t* nlm_bytecoder_output(const NlmByteCoder* b, size_t* len);
/* Decode one block payload into exactly dst_len bytes: dst_len, or NLM_ERR_CORRUPT (the run is then ended). */
int64_t nlm_bytecoder_decode(NlmByteCoder* b, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len);
/* A tracked group (format 15, docs/format.md §7.2): start a run of size class s (10..23, else NLM_ERR_CORRUPT)
 * with no block; feed it the n bytes of a block it does not code (they are predicted and learnt as if coded).
 * feed: 0, NLM_ERR_STATE without a run, NLM_ERR_CORRUPT past the run's 2^s bytes (the run is then ended). */
int nlm_bytecoder_start(NlmByteCoder* b, int s);
int nlm_bytecoder_feed(NlmByteCoder* b, const uint8_t* src, size_t n);

/* The line route (format 17, docs/format.md §3.8).  nlm_codec_set_router(c, b, lines): the context's next
 * word-model blocks belong to a tracked group whose run is b's (started with nlm_bytecoder_start); NULL: they do
 * not (every group start: nlm_codec_reset_for clears it).  With b, each block's payload starts with its route
 * byte (the encoder writes `lines`, 0 or 1; the decoder reads it): 0, the block's tokens are coded as without a
 * router; 1, each line of the block is coded by the word model or by b's run, each line's choice in the payload.
 * Either way the block's bytes are learnt by b's run in order (the caller does not feed them).  NLM_ERR_STATE for
 * a context whose format has no route (formats.h).  nlm_codec_route_byte_payload: after an encode with a router,
 * the payload of a byte-model block continuing b's run that codes the same bytes (the run's coding of the whole
 * block, made alongside): the encoder's other candidate, valid until the next encode; NULL when the last encode
 * had no router. */
int nlm_codec_set_router(NlmCodec* c, NlmByteCoder* b, int lines);
/* Whether frame format `version`'s tracked groups route lines (§3.8; formats.h's route column): 1 or 0, or
 * NLM_ERR_STATE for a version this build does not read.  The frame layer asks it, never a version number. */
int nlm_format_routes(int version);
const uint8_t* nlm_codec_route_byte_payload(const NlmCodec* c, size_t* len);

#ifdef __cplusplus
}
#endif
#endif /* NLM_H */
