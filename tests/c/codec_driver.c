/* codec_driver.c: encode text with a random model through the public nlm.h API and print the payload.
 *
 * Used by tests/test_dual_build.py: the same driver is built against the scalar -O0 core (NLM_NO_SIMD)
 * and against the optimised dispatching core; the payloads must be byte-identical (docs/format.md §2:
 * the canonical arithmetic does not depend on the build).  It also decodes its own payload and checks
 * the round trip.  Every codec is configured for the current format in MODE with nlm_codec_reset_for.
 * Usage: codec_driver MODE SEED < text > payload   (MODE: 0 static, 1 dynamic, 2 heads; NLM_MODE_*)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlm.h"

float kern_half_to_float(uint16_t h);                /* csrc/kernels/kern.h */
int kern_float_to_half_exact(float f, uint16_t* h);

static uint64_t rng_state;
static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int main(int argc, char** argv) {
    int mode = argc > 1 ? atoi(argv[1]) : NLM_MODE_DYNAMIC;
    if (mode < NLM_MODE_STATIC || mode > NLM_MODE_HEADS) { fprintf(stderr, "MODE: 0, 1 or 2\n"); return 1; }
    int adapt = mode != NLM_MODE_STATIC; /* dynamic and heads mode code with an adaptive context */
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    static uint8_t text[1 << 22];
    size_t n = fread(text, 1, sizeof text, stdin);

    NlmConfig cfg = {.V = 300, .D = 32, .H = 48, .C = 17, .seg_len = 7, .lr = 0.01f, .decay = 0.001f, .eps = 1e-5f};
    size_t np = nlm_param_count(&cfg);
    float* params = malloc(sizeof(float) * np);
    /* k/1024 with |k| <= 307 is a binary16 value, as in a float16-stored model: the static mode then reads
     * Wo's rows through the binary16 path (kern_matvec_h), which must give the bits of the float path */
    for (size_t i = 0; i < np; i++) params[i] = (float)((int)(rng_next() % 615) - 307) / 1024.0f;
    for (uint32_t h = 0; h < 65536; h++) { /* exact binary16 <-> float32 round trip (NaNs excluded) */
        float f = kern_half_to_float((uint16_t)h);
        uint16_t back;
        if (f == f && (((h >> 10) & 31) != 31) && (!kern_float_to_half_exact(f, &back) || back != h)) {
            fprintf(stderr, "half round trip failed at %04x\n", h);
            return 5;
        }
    }
    float ms[14];
    for (int i = 0; i < 14; i++) ms[i] = 0.01f + 0.01f * (float)i;
    /* vocabulary: <unk>, <end>, then the 26 letters, "the", "and", digits, punctuation and pseudo-words */
    uint8_t blob[8192];
    size_t bl = 0;
    blob[bl++] = 0;
    blob[bl++] = 0;
    int V = 2;
    const char* fixed[] = {"the", "and", "of", "a", "to", "in", ",", ".", "'", "\"", ";", "!", "?", "-", "0", "1", "42"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        size_t L = strlen(fixed[i]);
        blob[bl++] = (uint8_t)L;
        memcpy(blob + bl, fixed[i], L);
        bl += L;
        V++;
    }
    while (V < cfg.V) { /* distinct pseudo-words "q" + base-26 digits */
        char w[8];
        int k = V, L = 0;
        w[L++] = 'q';
        do { w[L++] = (char)('a' + k % 26); k /= 26; } while (k);
        blob[bl++] = (uint8_t)L;
        memcpy(blob + bl, w, (size_t)L);
        bl += (size_t)L;
        V++;
    }
    int32_t cs[18];
    for (int c = 0; c <= cfg.C; c++) cs[c] = (int32_t)((long)c * cfg.V / cfg.C);
    const char* prime = "zebra\nquixotic\nxylophone\n";
    int err = 0;
    /* the same weights stored as binary16 (the product's layout: static mode reads E and Wo as stored) and
     * as float32: both models must code identically */
    uint16_t* p16 = malloc(2 * np);
    for (size_t i = 0; i < np; i++)
        if (!kern_float_to_half_exact(params[i], &p16[i])) { fprintf(stderr, "not binary16\n"); return 5; }
    /* ms and class_start are handed over as stored in a model file: little-endian (this driver runs on x86) */
    NlmModel* m16 = nlm_model_new(&cfg, p16, NLM_PARAM_F16, (const uint8_t*)ms, blob, bl, (const uint8_t*)cs,
                                  (const uint8_t*)prime, strlen(prime), &err);
    NlmModel* m32 = nlm_model_new(&cfg, params, NLM_PARAM_F32, (const uint8_t*)ms, blob, bl, (const uint8_t*)cs,
                                  (const uint8_t*)prime, strlen(prime), &err);
    if (!m16 || !m32) { fprintf(stderr, "model_new failed: %d\n", err); return 2; }
    NlmCodec* enc = nlm_codec_new(m16, adapt, &err);
    NlmCodec* dec = nlm_codec_new(m16, adapt, &err);
    NlmCodec* e32 = nlm_codec_new(m32, adapt, &err);
    if (!enc || !dec || !e32) { fprintf(stderr, "codec_new failed: %d\n", err); return 2; }
    if (nlm_codec_reset_for(enc, NLM_FORMAT_VERSION, mode) < 0 || nlm_codec_reset_for(dec, NLM_FORMAT_VERSION, mode) < 0
        || nlm_codec_reset_for(e32, NLM_FORMAT_VERSION, mode) < 0) {
        fprintf(stderr, "nlm_codec_reset_for(%d, %d) failed\n", NLM_FORMAT_VERSION, mode);
        return 2;
    }
    {
        int64_t a = nlm_encode_block(e32, text, n);
        size_t la;
        const uint8_t* oa = nlm_codec_output(e32, &la);
        uint8_t* keep = malloc(la + 1);
        memcpy(keep, oa, la);
        int64_t b = nlm_encode_block(enc, text, n);
        size_t lb;
        const uint8_t* ob = nlm_codec_output(enc, &lb);
        if (a < 0 || b < 0 || la != lb || memcmp(keep, ob, la) != 0) {
            fprintf(stderr, "binary16 and float32 storage of the same weights coded differently\n");
            return 6;
        }
        free(keep);
        nlm_codec_reset_for(enc, NLM_FORMAT_VERSION, mode); /* back to a group start */
    }
    /* two blocks, state carried across them */
    size_t half = n / 2;
    int64_t p1 = nlm_encode_block(enc, text, half);
    if (p1 < 0) { fprintf(stderr, "encode: %s\n", nlm_error_name((int)p1)); return 3; }
    size_t len1;
    const uint8_t* o1 = nlm_codec_output(enc, &len1);
    uint8_t* pay1 = malloc(len1 + 1);
    memcpy(pay1, o1, len1);
    int64_t p2 = nlm_encode_block(enc, text + half, n - half);
    if (p2 < 0) { fprintf(stderr, "encode: %s\n", nlm_error_name((int)p2)); return 3; }
    size_t len2;
    const uint8_t* o2 = nlm_codec_output(enc, &len2);
    uint8_t* back = malloc(n + 1);
    if (nlm_decode_block(dec, pay1, len1, back, half) < 0 || memcmp(back, text, half) != 0) { fprintf(stderr, "round trip 1 failed\n"); return 4; }
    if (nlm_decode_block(dec, o2, len2, back, n - half) < 0 || memcmp(back, text + half, n - half) != 0) { fprintf(stderr, "round trip 2 failed\n"); return 4; }
    double st[NLM_STAT_COUNT];
    nlm_codec_stats(enc, st, NLM_STAT_COUNT);
    fprintf(stderr, "tokens %.0f bytes %zu\n", st[NLM_STAT_TOKENS], len1 + len2);
    fwrite(pay1, 1, len1, stdout);
    fwrite(o2, 1, len2, stdout);
    nlm_codec_free(enc);
    nlm_codec_free(dec);
    nlm_codec_free(e32);
    nlm_model_free(m16);
    nlm_model_free(m32);
    free(params); free(p16); free(pay1); free(back);
    return 0;
}
