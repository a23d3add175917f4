/* codec/bytecodec.c: the nlm.h entry points of the byte model (nlm_bytecoder_*): payloads of byte-model
 * blocks (docs/format.md §9.1) around bytemodel/cm.c.
 *
 * Owns the payload layout of a byte-model block: one byte, 0 to continue the run of the previous
 * byte-model block of the group or a size class s (CM_SIZE_MIN..CM_SIZE_MAX) to start a fresh model for
 * a run of at most 2^s bytes; then the range-coder bytes of the block's bits (flushed per block, checked
 * canonical by the decoder); and a tracked group's run (formats 15 and 16, §7.2): started by the group, fed the
 * bytes of its other blocks.
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */

#include <stdlib.h>
#include <string.h>

#include "bytemodel/cm.h"
#include "codec/bytecodec.h"
#include "codec/formats.h" /* nlm_format_byte_model */
#include "coder/rc.h"
#include "nlm.h"
#include "nlm_lab.h"

struct NlmByteCoder {
    int model;  /* CM_MODEL_* of the frame's format (formats.h) */
    CmModel* m; /* the run in progress, NULL between runs */
    Rc rc;
    uint8_t* out; /* encoder output: the run byte then the range-coder bytes */
    size_t out_len, out_cap;
};

NlmByteCoder* nlm_bytecoder_new(int version, int* err) {
    int model = nlm_format_byte_model(version);
    if (!model) {
        *err = NLM_ERR_STATE;
        return NULL;
    }
    NlmByteCoder* b = (NlmByteCoder*)calloc(1, sizeof *b);
    if (!b) {
        *err = NLM_ERR_NOMEM;
        return NULL;
    }
    b->model = model;
    rc_enc_init(&b->rc.enc);
    return b;
}

void nlm_bytecoder_free(NlmByteCoder* b) {
    if (!b) return;
    cm_free(b->m);
    rc_enc_free(&b->rc.enc);
    free(b->out);
    free(b);
}

int nlm_bytecoder_reset(NlmByteCoder* b) {
    cm_free(b->m);
    b->m = NULL;
    return 0;
}

size_t nlm_bytecoder_memory(const NlmByteCoder* b) {
    return sizeof *b + (b->m ? cm_memory(b->m) : 0) + b->rc.enc.cap + b->out_cap;
}

static int start_run(NlmByteCoder* b, int s) {
    int err = 0;
    cm_free(b->m);
    b->m = cm_new(s, b->model, &err);
    return b->m ? 0 : err;
}

/* Bytes coded between two checks of a capped encode (a speed setting: the payload does not depend on it). */
#define CAP_CHUNK 4096

/* A capped encode whose payload reached its cap: no payload, the run ended. */
static int64_t at_cap(NlmByteCoder* b) {
    nlm_bytecoder_reset(b);
    b->out_len = 0;
    return 0;
}

int64_t nlm_bytecoder_encode(NlmByteCoder* b, const uint8_t* src, size_t n, uint64_t run_size, uint64_t cap) {
    int s = 0, err = 0;
    if (run_size) {
        s = cm_size_class(run_size);
        if (s < 0) return NLM_ERR_STATE;
        if ((err = start_run(b, s))) return err;
    } else if (!b->m) {
        return NLM_ERR_STATE;
    }
    if (n == 0) return NLM_ERR_STATE;
    b->rc.decoding = 0;
    rc_enc_reset(&b->rc.enc);
    /* with a cap, stop as soon as the payload is known to reach it: bytes written and held back are never
     * taken back, so 1 + len + pending is at most the final size */
    for (size_t i = 0; i < n && !err; i += CAP_CHUNK) {
        size_t k = n - i < CAP_CHUNK ? n - i : CAP_CHUNK;
        err = cm_code(b->m, &b->rc, (uint8_t*)src + i, k);
        if (!err && cap && 1 + b->rc.enc.len + b->rc.enc.pending >= cap) return at_cap(b);
    }
    if (!err) err = rc_enc_finish(&b->rc.enc);
    if (err) {
        nlm_bytecoder_reset(b); /* the run's state is undefined after an error */
        return err == NLM_ERR_CORRUPT ? NLM_ERR_STATE : err;
    }
    if (cap && 1 + b->rc.enc.len >= cap) return at_cap(b);
    size_t need = 1 + b->rc.enc.len;
    if (need > b->out_cap) {
        uint8_t* o = (uint8_t*)realloc(b->out, need);
        if (!o) {
            nlm_bytecoder_reset(b);
            return NLM_ERR_NOMEM;
        }
        b->out = o;
        b->out_cap = need;
    }
    b->out[0] = (uint8_t)s;
    memcpy(b->out + 1, b->rc.enc.buf, b->rc.enc.len);
    b->out_len = need;
    return (int64_t)need;
}

int nlm_bytecoder_start(NlmByteCoder* b, int s) {
    if (s < CM_SIZE_MIN || s > CM_SIZE_MAX) return NLM_ERR_CORRUPT;
    return start_run(b, s);
}

int nlm_bytecoder_feed(NlmByteCoder* b, const uint8_t* src, size_t n) {
    if (!b->m) return NLM_ERR_STATE;
    int err = cm_learn_block(b->m, src, n);
    if (err) nlm_bytecoder_reset(b);
    return err;
}

CmModel* bytecoder_run(NlmByteCoder* b) { return b ? b->m : NULL; }

const uint8_t* nlm_bytecoder_output(const NlmByteCoder* b, size_t* len) {
    *len = b->out_len;
    return b->out;
}

int64_t nlm_bytecoder_decode(NlmByteCoder* b, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len) {
    if (n < 1 || dst_len == 0) return NLM_ERR_CORRUPT;
    int s = src[0], err;
    if (s) {
        if (s < CM_SIZE_MIN || s > CM_SIZE_MAX) return NLM_ERR_CORRUPT;
        if ((err = start_run(b, s))) return err;
    } else if (!b->m) {
        return NLM_ERR_CORRUPT; /* continues a run that was never started */
    }
    Rc rc;
    memset(&rc, 0, sizeof rc);
    rc.decoding = 1;
    rc_dec_init(&rc.dec, src + 1, n - 1);
    err = cm_code(b->m, &rc, dst, dst_len);
    if (!err) err = rc_dec_finish(&rc.dec);
    if (err) {
        nlm_bytecoder_reset(b);
        return err == NLM_ERR_NOMEM ? err : NLM_ERR_CORRUPT;
    }
    return (int64_t)dst_len;
}

/* Measurement only (nlm_lab.h): every bit's probability under a fresh byte model of the format this build
 * writes for a run of n bytes. */
int nlm_lab_byte_costs(const uint8_t* src, size_t n, uint16_t* p) {
    int s = cm_size_class(n);
    if (s < 0) return NLM_ERR_UNSUPPORTED;
    int err = 0;
    CmModel* m = cm_new(s, nlm_format_byte_model(NLM_FORMAT_VERSION), &err);
    if (!m) return err;
    err = cm_lab_costs(m, src, n, p);
    cm_free(m);
    return err;
}
