/* vector_driver.c: replay the golden vectors' word-model blocks through the public nlm.h API, on any
 * machine (the cross-architecture lane runs it under qemu-user on aarch64 and big-endian s390x).
 *
 * Input: blocks.bin written by .ci/cross/export_blocks.py on x86-64 (format in its docstring) and the
 * model files beside it.  For each vector: decode every block payload and compare with the decoded bytes,
 * then re-encode every block from those bytes and compare with the payload; both passes start from a
 * reset and reset where the frame layer did (group starts), each with nlm_codec_reset_for(version, mode) of
 * the vector's frame: the options of a format and mode come from the core's table alone.  A format-17 routed
 * block (docs/format.md §3.8) is decoded and re-encoded with its tracked group's run as the codec's router: the
 * run is started and fed the group's other bytes as the file says, once per pass.  One codec per
 * (model, static or adaptive), reused: dynamic and heads mode share one (reset_for reconfigures it).
 * The driver reads model files itself with explicit little-endian reads (load_model: the one function to
 * change when model creation changes), so a big-endian host gets the same numbers as x86-64.
 * Prints one line per vector (or "A=B" for vectors with identical blocks) with its time, and a summary; exit
 * 0 only when every byte matched.
 * Usage: vector_driver DIR/blocks.bin
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/selftest.h"
#include "kernels/kern.h" /* kern_half_to_float, kern_simd_level */
#include "nlm.h"

/* ---- little-endian reader over a byte buffer (bounds-checked; sets bad instead of reading past) ---- */
typedef struct {
    const uint8_t* p;
    size_t n, o;
    int bad;
} Rd;
static const uint8_t* rd_take(Rd* r, size_t k) {
    if (r->bad || k > r->n - r->o) { r->bad = 1; return NULL; }
    r->o += k;
    return r->p + r->o - k;
}
static uint32_t rd_u32(Rd* r) {
    const uint8_t* b = rd_take(r, 4);
    return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}
static uint16_t rd_u16(Rd* r) {
    const uint8_t* b = rd_take(r, 2);
    return b ? (uint16_t)(b[0] | b[1] << 8) : 0;
}
static uint8_t rd_u8(Rd* r) {
    const uint8_t* b = rd_take(r, 1);
    return b ? b[0] : 0;
}
static float rd_f32(Rd* r) {
    uint32_t u = rd_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint8_t* read_file(const char* path, size_t* n) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t* b = malloc(len > 0 ? (size_t)len : 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) { free(b); b = NULL; }
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* ---- model file (docs/model_format.md, versions 1 and 2) -> codec ---- */
/* Read the .nlmm at path (all fields little-endian) and create a codec in mode adapt.  NULL on failure
 * (the reason on stderr).  Validation is the core's (nlm_model_new) plus bounds. */
static NlmCodec* load_model(const char* path, int adapt) {
    size_t n;
    uint8_t* buf = read_file(path, &n);
    if (!buf) { fprintf(stderr, "cannot read %s\n", path); return NULL; }
    Rd r = {buf, n, 0, 0};
    NlmCodec* c = NULL;
    const uint8_t* magic = rd_take(&r, 8);
    uint32_t version = rd_u32(&r);
    NlmConfig cfg;
    cfg.V = (int32_t)rd_u32(&r), cfg.D = (int32_t)rd_u32(&r), cfg.H = (int32_t)rd_u32(&r);
    cfg.C = (int32_t)rd_u32(&r), cfg.seg_len = (int32_t)rd_u32(&r);
    cfg.lr = rd_f32(&r), cfg.decay = rd_f32(&r), cfg.eps = rd_f32(&r);
    uint32_t dtype = rd_u32(&r);
    uint32_t type = version == 2 ? rd_u32(&r) : NLM_ARCH_ELMAN; /* model format 2 names its type */
    cfg.arch = (int32_t)(type & 0xFFFFu);
    int has_kn = (type >> 16) & 1;                              /* bit 16: a Kneser-Ney section (13a) */
    if (r.bad || memcmp(magic, "\x89NLMM\r\n\x1a", 8) || (version != 1 && version != 2) || dtype > 1 || cfg.C < 1 ||
        cfg.C > cfg.V) {
        fprintf(stderr, "%s: not a version 1 or 2 model file\n", path);
        free(buf);
        return NULL;
    }
    uint32_t vlen = rd_u32(&r);
    const uint8_t* vocab = rd_take(&r, vlen);
    const uint8_t* cs = rd_take(&r, 4 * ((size_t)cfg.C + 1)); /* little-endian, as stored: the core reads it */
    const uint8_t* ms = rd_take(&r, 4 * 14);
    uint32_t plen = rd_u32(&r);
    const uint8_t* prime = rd_take(&r, plen);
    size_t np = nlm_param_count(&cfg);
    const uint8_t* params = rd_take(&r, np * (dtype == 1 ? 2 : 4)); /* read in place (binary16: any address) */
    uint32_t klen = has_kn ? rd_u32(&r) : 0;
    const uint8_t* kn = has_kn ? rd_take(&r, klen) : NULL;
    if (r.bad || !np) {
        fprintf(stderr, "%s: truncated model file\n", path);
        free(buf);
        return NULL;
    }
    int err = 0;
    /* the model and the file it reads live until the process ends (one per model file of the run) */
    NlmModel* m = nlm_model_new(&cfg, params, dtype == 1 ? NLM_PARAM_F16 : NLM_PARAM_F32, ms, vocab, vlen, cs,
                                prime, plen, &err);
    if (!m) {
        fprintf(stderr, "%s: nlm_model_new failed: %s (%d)\n", path, nlm_error_name(err), err);
        free(buf);
        return NULL;
    }
    if (has_kn && (err = nlm_model_set_kn(m, kn, klen)) != NLM_OK) {
        fprintf(stderr, "%s: nlm_model_set_kn failed: %s (%d)\n", path, nlm_error_name(err), err);
        free(buf);
        return NULL;
    }
    c = nlm_codec_new(m, adapt, &err);
    if (!c) fprintf(stderr, "%s: nlm_codec_new failed: %s (%d)\n", path, nlm_error_name(err), err);
    return c;
}

/* ---- replay ---- */
typedef struct {
    char model[64];
    int adapt;
    NlmCodec* c;
} Slot;
#define MAX_SLOTS 64 /* (model, static or adaptive) pairs of one run: a codec each */

typedef struct {
    uint8_t kind; /* 0 reset (nlm_codec_reset_for the vector's version and mode), 1 block, 2 track (start the run of
                   * size class `size`), 3 learn (the run is fed data[0..size)), 4 routed block */
    uint32_t size, plen;
    const uint8_t *payload, *data;
} Op;

/* Decode then re-encode the ops of one vector; 0 when every byte matched (the first difference on stderr). */
static int replay(NlmCodec* c, int version, int mode, const char* name, const Op* ops, uint32_t nops) {
    uint8_t* out = NULL;
    NlmByteCoder* run = NULL; /* a tracked group's run (ops 2 to 4), made at the first, restarted by each op 2 */
    for (int pass = 0; pass < 2; pass++) {
        int bi = 0;
        for (uint32_t k = 0; k < nops; k++) {
            const Op* op = &ops[k];
            if (op->kind == 2 && !run) {
                int err = 0;
                if (!(run = nlm_bytecoder_new(version, &err))) {
                    fprintf(stderr, "%s: nlm_bytecoder_new(%d) failed: %s\n", name, version, nlm_error_name(err));
                    free(out);
                    return 1;
                }
            }
            if (op->kind == 2 || op->kind == 3) {
                int rc = !run ? NLM_ERR_STATE : op->kind == 2 ? nlm_bytecoder_reset(run) : NLM_OK;
                if (rc == NLM_OK) rc = op->kind == 2 ? nlm_bytecoder_start(run, (int)op->size)
                                                     : nlm_bytecoder_feed(run, op->data, op->size);
                if (rc != NLM_OK) {
                    fprintf(stderr, "%s: the run's %s failed: %s\n", name, op->kind == 2 ? "start" : "feed",
                            nlm_error_name(rc));
                    free(out);
                    nlm_bytecoder_free(run);
                    return 1;
                }
                continue;
            }
            const int routed = op->kind == 4;
            if (routed && (!run || nlm_codec_set_router(c, run, op->plen ? op->payload[0] & 1 : 0) != NLM_OK)) {
                fprintf(stderr, "%s: block %d: nlm_codec_set_router failed\n", name, bi);
                free(out);
                nlm_bytecoder_free(run);
                return 1;
            }
            if (op->kind == 0) {
                int rc = nlm_codec_reset_for(c, version, mode);
                if (rc != NLM_OK) {
                    fprintf(stderr, "%s: nlm_codec_reset_for(%d, %d) failed: %s\n", name, version, mode,
                            nlm_error_name(rc));
                    free(out);
                    nlm_bytecoder_free(run);
                    return 1;
                }
                continue;
            }
            if (pass == 0) {
                out = realloc(out, op->size ? op->size : 1);
                int64_t got = nlm_decode_block(c, op->payload, op->plen, out, op->size);
                if (got != (int64_t)op->size || memcmp(out, op->data, op->size)) {
                    fprintf(stderr, "%s: block %d decodes differently (%lld)\n", name, bi, (long long)got);
                    free(out);
                    nlm_bytecoder_free(run);
                    return 1;
                }
            } else {
                int64_t got = nlm_encode_block(c, op->data, op->size);
                size_t len = 0;
                const uint8_t* p = got < 0 ? NULL : nlm_codec_output(c, &len);
                if (!p || len != op->plen || memcmp(p, op->payload, len)) {
                    size_t i = 0;
                    while (p && i < len && i < op->plen && p[i] == op->payload[i]) i++;
                    fprintf(stderr, "%s: block %d re-encodes differently (%zu bytes vs %u, first difference at %zu)\n",
                            name, bi, len, op->plen, i);
                    free(out);
                    nlm_bytecoder_free(run);
                    return 1;
                }
            }
            if (routed) nlm_codec_set_router(c, NULL, 0);
            bi++;
        }
    }
    free(out);
    nlm_bytecoder_free(run);
    return 0;
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* one line per vector, as it goes (slow under qemu) */
    if (argc != 2) { fprintf(stderr, "usage: vector_driver DIR/blocks.bin\n"); return 2; }
    size_t n;
    uint8_t* buf = read_file(argv[1], &n);
    if (!buf) { fprintf(stderr, "cannot read %s\n", argv[1]); return 2; }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", argv[1]);
    char* slash = strrchr(dir, '/');
    if (slash) slash[1] = 0; else dir[0] = 0;
    Rd r = {buf, n, 0, 0};
    const uint8_t* magic = rd_take(&r, 8);
    uint32_t nvec = rd_u32(&r);
    if (r.bad || memcmp(magic, "NLMVBLKS", 8)) { fprintf(stderr, "%s: not a blocks file\n", argv[1]); return 2; }
    printf("selftest %s digest %016llx simd level %d\n", nlm_selftest() == NLM_OK ? "ok" : "FAILED",
           (unsigned long long)nlm_selftest_digest(), kern_simd_level());
    Slot slots[MAX_SLOTS];
    int nslots = 0, failed = 0, nblocks = 0;
    size_t nbytes = 0;
    for (uint32_t v = 0; v < nvec; v++) {
        char name[256], model[64];
        uint16_t l = rd_u16(&r);
        const uint8_t* s = rd_take(&r, l);
        snprintf(name, sizeof name, "%.*s", s ? (int)l : 0, s ? (const char*)s : "");
        l = rd_u16(&r);
        s = rd_take(&r, l);
        snprintf(model, sizeof model, "%.*s", s ? (int)l : 0, s ? (const char*)s : "");
        int version = rd_u8(&r), mode = rd_u8(&r);
        int adapt = mode != NLM_MODE_STATIC; /* dynamic and heads mode code with an adaptive context */
        uint32_t nops = rd_u32(&r);
        if (r.bad || nops > (1u << 20)) { fprintf(stderr, "%s: corrupt blocks file\n", argv[1]); return 2; }
        Op* ops = calloc(nops ? nops : 1, sizeof *ops);
        int vb = 0;
        size_t vbytes = 0;
        for (uint32_t k = 0; k < nops; k++) {
            ops[k].kind = rd_u8(&r);
            if (ops[k].kind > 4) r.bad = 1;
            if (ops[k].kind == 2) ops[k].size = rd_u8(&r);
            if (ops[k].kind == 3) {
                ops[k].size = rd_u32(&r);
                ops[k].data = rd_take(&r, ops[k].size);
            }
            if (ops[k].kind != 1 && ops[k].kind != 4) continue;
            ops[k].size = rd_u32(&r);
            ops[k].plen = rd_u32(&r);
            ops[k].payload = rd_take(&r, ops[k].plen);
            ops[k].data = rd_take(&r, ops[k].size);
            vb++;
            vbytes += ops[k].size;
        }
        if (r.bad || mode > NLM_MODE_HEADS) { fprintf(stderr, "%s: corrupt blocks file\n", argv[1]); return 2; }
        NlmCodec* c = NULL;
        for (int i = 0; i < nslots; i++)
            if (!strcmp(slots[i].model, model) && slots[i].adapt == adapt) c = slots[i].c;
        if (!c && nslots == MAX_SLOTS) {
            fprintf(stderr, "more than %d (model, mode) pairs in %s: raise MAX_SLOTS\n", MAX_SLOTS, argv[1]);
            return 3;
        }
        if (!c) {
            char path[4400];
            snprintf(path, sizeof path, "%s%s", dir, model);
            if (!(c = load_model(path, adapt))) return 3;
            snprintf(slots[nslots].model, sizeof slots[nslots].model, "%s", model);
            slots[nslots].adapt = adapt;
            slots[nslots++].c = c;
        }
        clock_t t0 = clock();
        int bad = !c || replay(c, version, mode, name, ops, nops);
        static const char* const mode_names[] = {"static", "dynamic", "heads"};
        printf("%s %s (format %d, %s): %d blocks, %zu bytes, %.2f s\n", bad ? "MISMATCH" : "ok", name, version,
               mode_names[mode], vb, vbytes, (double)(clock() - t0) / CLOCKS_PER_SEC);
        failed += bad;
        nblocks += vb;
        nbytes += vbytes;
        free(ops);
    }
    for (int i = 0; i < nslots; i++) nlm_codec_free(slots[i].c);
    free(buf);
    printf("%u block sets (vectors), %d word-model blocks, %zu bytes: %s\n", nvec, nblocks, nbytes,
           failed ? "MISMATCH" : "decoded and re-encoded, byte-identical to x86-64");
    return failed ? 1 : 0;
}
