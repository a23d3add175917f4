/* formats.h: the one table of what a frame format and coding mode mean to a block.
 *
 * Owns: the mapping (format version, mode) -> the codec options its word-model blocks are coded with and the
 * byte model of its byte-model blocks (docs/format.md §7.4 and the format policy).  Its readers:
 * nlm_codec_reset_for and nlm_format_routes (codec.c) and nlm_bytecoder_new (bytecodec.c, through
 * nlm_format_byte_model).  A released format's rows never change: a new format adds its own rows below the
 * frozen ones.
 */
#ifndef NLM_CODEC_FORMATS_H
#define NLM_CODEC_FORMATS_H

#include "nlm.h"
#include "bytemodel/cm.h"    /* CM_MODEL_* */
#include "speller/speller.h" /* SPELLER_CM */

typedef struct {
    int version, mode;    /* frame format version, NLM_MODE_* */
    int speller;          /* SPELLER_* that spells the bodies the spelling cache escapes (§5) */
    int match;            /* token match flag (§3.4): 0 off, 1 one APM, 2 two APMs */
    int cache;            /* token cache (§3.6): 0 off, 1 tokens, 2 tokens and the body mixer (§5.1.1) */
    uint32_t max_tokens;  /* most tokens of one block, END included (§3.5); 0 none */
    int end_advance;      /* a block's <end> advances the network (§3.2 step 6) */
    int forward;          /* 1: the integer forward products (§2.6) */
    int deep_every;       /* dynamic contexts: 1 everything adapts every segment (§6.3), 0 the heads only (§6.5) */
    int rate_a, rate_b;   /* dynamic contexts: trained step sizes times rate_a, decay times rate_b (§6.5) */
    int gap_mixer;        /* 0: the gap symbol coded with §3.3's blend, a literal run by §5.3; 1: both by the gap
                           * mixer (§3.7) */
    int byte_model;       /* CM_MODEL_* of the byte-model blocks (§9): 1 (§9.1-§9.5) or 2 (§9.7) */
    int route;            /* 1: a tracked group's word-model blocks start with a route byte and may have lines coded
                           * by the group's byte-model run (the line route, §3.8) */
} NlmFormatRow;

static const NlmFormatRow NLM_FORMATS[] = {
    /* format 13, the 1.0 format (frozen) */
    {13, NLM_MODE_STATIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 1, 1, 0, CM_MODEL_1, 0},
    {13, NLM_MODE_DYNAMIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 1, 1, 1, 0, CM_MODEL_1, 0},
    {13, NLM_MODE_HEADS, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 2, 1, 0, CM_MODEL_1, 0},
    /* format 14: format 13 with the gap mixer */
    {14, NLM_MODE_STATIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 1, 1, 1, CM_MODEL_1, 0},
    {14, NLM_MODE_DYNAMIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 1, 1, 1, 1, CM_MODEL_1, 0},
    {14, NLM_MODE_HEADS, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 2, 1, 1, CM_MODEL_1, 0},
    /* format 15: format 14's word-model blocks; tracked groups (§7.2, the frame layer) and the one-pass encoder (§7.4) */
    {15, NLM_MODE_STATIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 1, 1, 1, CM_MODEL_1, 0},
    {15, NLM_MODE_DYNAMIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 1, 1, 1, 1, CM_MODEL_1, 0},
    {15, NLM_MODE_HEADS, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 2, 1, 1, CM_MODEL_1, 0},
    /* format 16: format 15 with byte model 2 (§9.7) */
    {16, NLM_MODE_STATIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 1, 1, 1, CM_MODEL_2, 0},
    {16, NLM_MODE_DYNAMIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 1, 1, 1, 1, CM_MODEL_2, 0},
    {16, NLM_MODE_HEADS, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 2, 1, 1, CM_MODEL_2, 0},
    /* format 17: format 16 with the line route (§3.8) */
    {17, NLM_MODE_STATIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 1, 1, 1, CM_MODEL_2, 1},
    {17, NLM_MODE_DYNAMIC, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 1, 1, 1, 1, CM_MODEL_2, 1},
    {17, NLM_MODE_HEADS, SPELLER_CM, 2, 2, NLM_MAX_BLOCK_TOKENS, 0, 1, 0, 2, 1, 1, CM_MODEL_2, 1},
};

/* The byte model (CM_MODEL_*) of format version's byte-model blocks; 0 for a version not in the table. */
static inline int nlm_format_byte_model(int version) {
    for (size_t i = 0; i < sizeof NLM_FORMATS / sizeof NLM_FORMATS[0]; i++)
        if (NLM_FORMATS[i].version == version) return NLM_FORMATS[i].byte_model;
    return 0;
}

/* Whether format version's tracked groups route lines (§3.8): 1 or 0; -1 for a version not in the table. */
static inline int nlm_format_route(int version) {
    for (size_t i = 0; i < sizeof NLM_FORMATS / sizeof NLM_FORMATS[0]; i++)
        if (NLM_FORMATS[i].version == version) return NLM_FORMATS[i].route;
    return -1;
}

#endif /* NLM_CODEC_FORMATS_H */
