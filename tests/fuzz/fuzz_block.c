/* fuzz_block.c: fuzz target of the C block decoders: the word model's (nlm_decode_block, docs/format.md
 * §3-§6) and the byte model's (nlm_bytecoder_decode, §9).
 *
 * Input: byte 0 bit 0 = adapt (dynamic mode), bit 1 = a byte-model block instead of a word-model block,
 * bit 2 with bit 0 = heads mode (only the heads adapt, §6.5), bit 3 = the oldest format this build reads
 * (NLM_FORMAT_OLDEST) instead of the newest (NLM_FORMAT_VERSION), bit 4 (a word-model block of the newest
 * format) = the first block of a tracked group, routed (§3.8): its router a run of size class 10 + bits 5-7
 * (10..17, so a block can take a small run past its size), bytes 1-2 = block size - 1 (little-endian,
 * so 1 to 65,536 bytes: the largest word-model block), the rest = the payload.  The codec is reset for that
 * format in its mode (nlm_codec_reset_for; that format's byte coder ends its run), then the payload is
 * decoded; the decoder must return the block size or NLM_ERR_CORRUPT / NLM_ERR_DST_SIZE, and never touch
 * memory it does not own (built with ASan + UBSan).
 *
 * The model is a dump of a real one (tests/fuzz/run_fuzz.py writes the tiny model's as tiny.fuzzmodel:
 * i32 V D H C seg_len, f32 lr decay eps, then the parameter block, the 14 ms floats, u32 length + vocabulary
 * blob, C+1 class starts, u32 length + speller priming list; little-endian), named by $NLM_FUZZ_MODEL.
 *
 * Two builds: clang -fsanitize=fuzzer,address,undefined (libFuzzer supplies main), or any compiler with
 * -DNLM_FUZZ_STANDALONE, whose main runs every file or directory given and then, with -runs=N, N inputs
 * made by mutating them (byte flips, overwrites, insertions, deletions, truncation, splices; a fixed
 * seed, -seed=S; at most -max_len=L bytes; stopping after -max_total_time=T seconds, the given files'
 * pass included), and prints the number of executions.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlm.h"

static NlmCodec* codecs[3]; /* indexed by NLM_MODE_*: static, dynamic, heads */
static NlmByteCoder* bytecoders[2]; /* the byte models of the oldest format read and of the newest */
static NlmByteCoder* router;        /* a routed block's run (the newest format's byte model) */
static uint8_t* dst;
static uint8_t* model_dump; /* the model file, kept: the model reads its priming list in place (and LeakSanitizer
                             * sees it reachable at exit, not leaked) */

static void* read_file(const char* path, size_t* n) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t* b = malloc(cap);
    size_t k;
    while (b && (k = fread(b + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    *n = len;
    return b;
}

static int take(const uint8_t** p, const uint8_t* end, void* out, size_t n) {
    if ((size_t)(end - *p) < n) return 0;
    memcpy(out, *p, n);
    *p += n;
    return 1;
}

static void load_model(void) {
    const char* path = getenv("NLM_FUZZ_MODEL");
    size_t n = 0;
    uint8_t* b = model_dump = path ? read_file(path, &n) : NULL;
    if (!b) {
        fprintf(stderr, "fuzz_block: set NLM_FUZZ_MODEL to a model dump (tests/fuzz/run_fuzz.py writes one)\n");
        exit(2);
    }
    const uint8_t *p = b, *end = b + n;
    NlmConfig cfg = {0}; /* arch 0: the dump is of the tiny Elman model */
    uint32_t vlen, plen;
    int ok = take(&p, end, &cfg.V, 4) && take(&p, end, &cfg.D, 4) && take(&p, end, &cfg.H, 4) &&
             take(&p, end, &cfg.C, 4) && take(&p, end, &cfg.seg_len, 4) && take(&p, end, &cfg.lr, 4) &&
             take(&p, end, &cfg.decay, 4) && take(&p, end, &cfg.eps, 4);
    size_t np = ok ? nlm_param_count(&cfg) : 0;
    float* params = ok ? malloc(sizeof(float) * np) : NULL;
    float ms[14];
    ok = ok && params && take(&p, end, params, sizeof(float) * np) && take(&p, end, ms, sizeof ms) &&
         take(&p, end, &vlen, 4) && (size_t)(end - p) >= vlen;
    const uint8_t* vocab = p;
    p += ok ? vlen : 0;
    int32_t* cs = ok ? malloc(sizeof(int32_t) * ((size_t)cfg.C + 1)) : NULL;
    ok = ok && cs && take(&p, end, cs, sizeof(int32_t) * ((size_t)cfg.C + 1)) && take(&p, end, &plen, 4) &&
         (size_t)(end - p) >= plen;
    if (!ok) {
        fprintf(stderr, "fuzz_block: %s is not a model dump\n", path);
        exit(2);
    }
    /* the dump holds native (x86: little-endian) float32 / int32, as the core takes them; the model reads the
     * parameter block in place, so params (and the priming list inside b) live as long as the process */
    int err = 0;
    NlmModel* model = nlm_model_new(&cfg, params, NLM_PARAM_F32, (const uint8_t*)ms, vocab, vlen,
                                    (const uint8_t*)cs, p, plen, &err);
    if (!model) {
        fprintf(stderr, "fuzz_block: nlm_model_new failed: %s\n", nlm_error_name(err));
        exit(2);
    }
    for (int mode = NLM_MODE_STATIC; mode <= NLM_MODE_HEADS; mode++) {
        codecs[mode] = nlm_codec_new(model, mode != NLM_MODE_STATIC, &err);
        if (!codecs[mode]) {
            fprintf(stderr, "fuzz_block: nlm_codec_new failed: %s\n", nlm_error_name(err));
            exit(2);
        }
    }
    free(cs);
    for (int i = 0; i < 2; i++) {
        bytecoders[i] = nlm_bytecoder_new(i ? NLM_FORMAT_VERSION : NLM_FORMAT_OLDEST, &err);
        if (!bytecoders[i]) {
            fprintf(stderr, "fuzz_block: nlm_bytecoder_new failed: %s\n", nlm_error_name(err));
            exit(2);
        }
    }
    if (!(router = nlm_bytecoder_new(NLM_FORMAT_VERSION, &err))) {
        fprintf(stderr, "fuzz_block: nlm_bytecoder_new failed: %s\n", nlm_error_name(err));
        exit(2);
    }
    dst = malloc(1 << 16);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (!codecs[0]) load_model();
    if (size < 3) return 0;
    int mode = (data[0] & 1) ? ((data[0] >> 2) & 1 ? NLM_MODE_HEADS : NLM_MODE_DYNAMIC) : NLM_MODE_STATIC;
    NlmCodec* c = codecs[mode];
    int byte_model = (data[0] >> 1) & 1;
    size_t dst_len = (size_t)(data[1] | (data[2] << 8)) + 1;
    const int oldest = (data[0] >> 3) & 1, version = oldest ? NLM_FORMAT_OLDEST : NLM_FORMAT_VERSION;
    NlmByteCoder* bytecoder = bytecoders[!oldest];
    if ((byte_model ? nlm_bytecoder_reset(bytecoder) : nlm_codec_reset_for(c, version, mode)) < 0) abort();
    const int routed = !byte_model && !oldest && (data[0] >> 4) & 1;
    if (routed && (nlm_bytecoder_reset(router) < 0 || nlm_bytecoder_start(router, 10 + (data[0] >> 5)) < 0 ||
                   nlm_codec_set_router(c, router, 0) < 0))
        abort();
    /* the payload is copied to a buffer of its exact size, so ASan sees any read past its end */
    size_t n = size - 3;
    uint8_t* src = malloc(n ? n : 1);
    memcpy(src, data + 3, n);
    int64_t r = byte_model ? nlm_bytecoder_decode(bytecoder, src, n, dst, dst_len)
                           : nlm_decode_block(c, src, n, dst, dst_len);
    free(src);
    if (routed) nlm_codec_set_router(c, NULL, 0);
    if (r != (int64_t)dst_len && r != NLM_ERR_CORRUPT && r != NLM_ERR_DST_SIZE) {
        fprintf(stderr, "fuzz_block: %s returned %lld (%s)\n", byte_model ? "nlm_bytecoder_decode" : "nlm_decode_block",
                (long long)r, nlm_error_name((int)r));
        abort();
    }
    return 0;
}

#ifdef NLM_FUZZ_STANDALONE
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

static uint64_t rng = 1;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint8_t** seeds;
static size_t* seed_len;
static size_t nseeds, seed_cap;

static void add_seed(const char* path) {
    size_t n;
    uint8_t* b = read_file(path, &n);
    if (!b) return;
    if (nseeds == seed_cap) {
        seed_cap = seed_cap ? 2 * seed_cap : 64;
        seeds = realloc(seeds, seed_cap * sizeof *seeds);
        seed_len = realloc(seed_len, seed_cap * sizeof *seed_len);
    }
    seeds[nseeds] = b;
    seed_len[nseeds++] = n;
}

static void add_path(const char* path) {
    struct stat st;
    if (stat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
        add_seed(path);
        return;
    }
    DIR* d = opendir(path);
    struct dirent* e;
    char buf[4096];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(buf, sizeof buf, "%s/%s", path, e->d_name);
        add_seed(buf);
    }
    if (d) closedir(d);
}

/* One mutation of seed s into out (capacity cap); returns the new length. */
static size_t mutate(const uint8_t* s, size_t n, uint8_t* out, size_t cap) {
    if (n > cap) n = cap;
    memcpy(out, s, n);
    int k = 1 + (int)(next() % 4);
    for (int j = 0; j < k; j++) {
        size_t at = n ? (size_t)(next() % n) : 0;
        switch (next() % 7) {
        case 0: if (n) out[at] ^= (uint8_t)(1u << (next() % 8)); break;             /* bit flip */
        case 1: if (n) out[at] = (uint8_t)next(); break;                              /* byte */
        case 2: if (n < cap) { memmove(out + at + 1, out + at, n - at); out[at] = (uint8_t)next(); n++; } break;
        case 3: if (n) { memmove(out + at, out + at + 1, n - at - 1); n--; } break;   /* delete */
        case 4: n = at; break;                                                        /* truncate */
        case 5: { /* splice: the tail of another seed */
            size_t o = (size_t)(next() % nseeds), m = seed_len[o], from = m ? (size_t)(next() % m) : 0;
            size_t len = m - from < cap - at ? m - from : cap - at;
            memcpy(out + at, seeds[o] + from, len);
            n = at + len;
            break;
        }
        default: if (n > 3) out[1 + next() % 2] = (uint8_t)next(); break;             /* block size */
        }
    }
    return n;
}

int main(int argc, char** argv) {
    long long runs = 0;
    size_t max_len = 1 << 17;
    long long max_time = 0;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-max_total_time=", 16)) max_time = atoll(argv[i] + 16);
        if (!strncmp(argv[i], "-runs=", 6)) runs = atoll(argv[i] + 6);
        else if (!strncmp(argv[i], "-max_len=", 9)) max_len = (size_t)atoll(argv[i] + 9);
        else if (!strncmp(argv[i], "-seed=", 6)) rng = strtoull(argv[i] + 6, NULL, 10);
        else if (argv[i][0] != '-') add_path(argv[i]);
    }
    long long execs = 0;
    time_t t0 = time(NULL); /* -max_total_time bounds the seeds' pass too (a short CI run on a loaded machine) */
    for (size_t i = 0; i < nseeds && !(max_time > 0 && time(NULL) - t0 >= max_time); i++, execs++)
        LLVMFuzzerTestOneInput(seeds[i], seed_len[i]);
    if (runs > 0 && !nseeds) {
        fprintf(stderr, "fuzz_block: -runs needs at least one seed file\n");
        return 2;
    }
    static uint8_t buf[1 << 17];
    if (max_len > sizeof buf) max_len = sizeof buf;
    for (long long r = 0; r < runs; r++, execs++) {
        if (max_time > 0 && (r & 255) == 0 && time(NULL) - t0 >= max_time) break;
        size_t s = (size_t)(next() % nseeds);
        size_t n = mutate(seeds[s], seed_len[s], buf, max_len);
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_block standalone: %lld executions (%zu seeds), no finding\n", execs, nseeds);
    return 0;
}
#endif
