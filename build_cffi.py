"""cffi (API mode) binding of the C core.  The cdef below mirrors csrc/nlm.h (the only public header).

Sources and compiler flags come from build_flags.py, the one build definition (setup.py uses it too).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # build backends do not put the source dir on sys.path

from cffi import FFI

from build_flags import CORE_SOURCES, DEFINE_MACROS, EXTRA_COMPILE_ARGS, INCLUDE_DIRS

CDEF = """
typedef int32_t nlm_status;
const char* nlm_error_name(int code);

/* lexer */
typedef struct {
    uint32_t off; uint32_t len; uint32_t gap_off; uint32_t gap_len;
    uint8_t kind; uint8_t ccase; uint8_t gap; uint8_t pad;
} NlmLexToken;
int64_t nlm_lex(const uint8_t* src, size_t n, NlmLexToken* out, size_t cap);

/* model + codec context */
typedef struct NlmCodec NlmCodec;
typedef struct NlmModel NlmModel;
typedef struct {
    int32_t V, D, H, C;
    int32_t seg_len;
    float lr, decay, eps;
    int32_t arch;
} NlmConfig;
size_t nlm_param_count(const NlmConfig* cfg);
NlmModel* nlm_model_new(const NlmConfig* cfg, const void* params, int dtype, const uint8_t* ms,
                        const uint8_t* vocab_blob, size_t vocab_blob_len, const uint8_t* class_start,
                        const uint8_t* speller_prime, size_t speller_prime_len, int* err);
int nlm_model_set_kn(NlmModel* m, const uint8_t* blob, size_t blob_len);
void nlm_model_free(NlmModel* m);
size_t nlm_model_memory(const NlmModel* m);
NlmCodec* nlm_codec_new(const NlmModel* model, int adapt, int* err);
size_t nlm_codec_memory(const NlmCodec* c);
void nlm_codec_free(NlmCodec* c);
int nlm_codec_reset(NlmCodec* c);
int nlm_codec_set_speller(NlmCodec* c, int kind);
int nlm_codec_set_match(NlmCodec* c, int level);
int nlm_codec_set_cache(NlmCodec* c, int level);
int nlm_codec_set_schedule(NlmCodec* c, int deep_every, int shallow_emb, int skip_permille);
int nlm_codec_set_rates(NlmCodec* c, int a, int b);
int nlm_codec_set_frozen(NlmCodec* c, int on);
int nlm_codec_set_max_tokens(NlmCodec* c, uint32_t n);
int nlm_codec_set_end_advance(NlmCodec* c, int on);
int nlm_codec_set_forward(NlmCodec* c, int level);
int nlm_codec_set_bit_stats(NlmCodec* c, int on);
int nlm_codec_save(NlmCodec* c);
int nlm_codec_restore(NlmCodec* c);
int64_t nlm_encode_block(NlmCodec* c, const uint8_t* src, size_t n);
const uint8_t* nlm_codec_output(const NlmCodec* c, size_t* len);
int64_t nlm_decode_block(NlmCodec* c, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len);
int nlm_codec_stats(const NlmCodec* c, double* out, size_t n);

/* per-token trace */
typedef struct {
    uint32_t off, len;
    int32_t word;
    uint8_t kind, ccase, gap, flags;
    double bits[8];
    int32_t top_id[3];
    float top_p[3];
} NlmTraceRec;
int nlm_codec_trace(NlmCodec* c, int on);
const NlmTraceRec* nlm_codec_trace_records(const NlmCodec* c, size_t* n);
typedef struct NlmByteCoder NlmByteCoder;
NlmByteCoder* nlm_bytecoder_new(int* err);
void nlm_bytecoder_free(NlmByteCoder* b);
int nlm_bytecoder_reset(NlmByteCoder* b);
size_t nlm_bytecoder_memory(const NlmByteCoder* b);
int64_t nlm_bytecoder_encode(NlmByteCoder* b, const uint8_t* src, size_t n, uint64_t run_size, uint64_t cap);
const uint8_t* nlm_bytecoder_output(const NlmByteCoder* b, size_t* len);
int64_t nlm_bytecoder_decode(NlmByteCoder* b, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len);
"""

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "nlmcodec._nlm_cffi",
    '#include "nlm.h"',
    sources=CORE_SOURCES,
    include_dirs=INCLUDE_DIRS,
    extra_compile_args=EXTRA_COMPILE_ARGS,
    define_macros=DEFINE_MACROS,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
