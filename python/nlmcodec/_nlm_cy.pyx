# cython: language_level=3, boundscheck=False, wraparound=False
"""Cython binding of the C core (csrc/nlm.h); the default backend.

Mirrors python/nlmcodec/_nlm_cffi_glue.py function for function: _backend.py picks one of the two and
the rest of the package sees the same names.  The GIL is released around every C call that scales with
the input.  Errors come back as negative codes; _core.py turns them into NLMError (one error map).
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef extern from "nlm.h" nogil:
    enum:
        NLM_FORMAT_VERSION
        NLM_FORMAT_OLDEST
        NLM_MODE_STATIC
        NLM_MODE_DYNAMIC
        NLM_MODE_HEADS
        NLM_MAX_BLOCK_TOKENS
    const char* nlm_error_name(int code)
    ctypedef struct NlmLexToken:
        uint32_t off
    int64_t nlm_lex(const uint8_t* src, size_t n, NlmLexToken* out, size_t cap)
    ctypedef struct NlmConfig:
        int32_t V, D, H, C, seg_len
        float lr, decay, eps
        int32_t arch
    ctypedef struct NlmCodec:
        pass
    ctypedef struct NlmModel:
        pass
    size_t nlm_param_count(const NlmConfig* cfg)
    NlmModel* nlm_model_new(const NlmConfig* cfg, const void* params, int dtype, const uint8_t* ms,
                            const uint8_t* vocab_blob, size_t vocab_blob_len, const uint8_t* class_start,
                            const uint8_t* speller_prime, size_t speller_prime_len, int* err)
    int nlm_model_set_kn(NlmModel* m, const uint8_t* blob, size_t blob_len)
    void nlm_model_free(NlmModel* m)
    size_t nlm_model_memory(const NlmModel* m)
    NlmCodec* nlm_codec_new(const NlmModel* model, int adapt, int* err)
    size_t nlm_codec_memory(const NlmCodec* c)
    void nlm_codec_free(NlmCodec* c)
    int nlm_codec_reset_for(NlmCodec* c, int version, int mode)
    int nlm_codec_set_frozen(NlmCodec* c, int on)
    int nlm_codec_set_bit_stats(NlmCodec* c, int on)
    int nlm_codec_save(NlmCodec* c)
    int nlm_codec_restore(NlmCodec* c)
    int64_t nlm_encode_block(NlmCodec* c, const uint8_t* src, size_t n)
    const uint8_t* nlm_codec_output(const NlmCodec* c, size_t* length)
    int64_t nlm_decode_block(NlmCodec* c, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len)
    int nlm_codec_stats(const NlmCodec* c, double* out, size_t n)
    ctypedef struct NlmTraceRec:
        uint32_t off
    int nlm_codec_trace(NlmCodec* c, int on)
    const NlmTraceRec* nlm_codec_trace_records(const NlmCodec* c, size_t* n)
    ctypedef struct NlmByteCoder:
        pass
    NlmByteCoder* nlm_bytecoder_new(int version, int* err)
    void nlm_bytecoder_free(NlmByteCoder* b)
    int nlm_bytecoder_reset(NlmByteCoder* b)
    size_t nlm_bytecoder_memory(const NlmByteCoder* b)
    int64_t nlm_bytecoder_encode(NlmByteCoder* b, const uint8_t* src, size_t n, uint64_t run_size, uint64_t cap)
    const uint8_t* nlm_bytecoder_output(const NlmByteCoder* b, size_t* length)
    int64_t nlm_bytecoder_decode(NlmByteCoder* b, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len)
    int nlm_bytecoder_start(NlmByteCoder* b, int s)
    int nlm_bytecoder_feed(NlmByteCoder* b, const uint8_t* src, size_t n)
    int nlm_codec_set_router(NlmCodec* c, NlmByteCoder* b, int lines)
    const uint8_t* nlm_codec_route_byte_payload(const NlmCodec* c, size_t* length)
    int nlm_format_routes(int version)

# The tuning switches (csrc/nlm_lab.h): tests and measurements only; frames are read and written through
# nlm_codec_reset_for alone.
cdef extern from "nlm_lab.h" nogil:
    int nlm_codec_reset(NlmCodec* c)
    int nlm_codec_set_route(NlmCodec* c, int on)
    int nlm_codec_set_speller(NlmCodec* c, int kind)
    int nlm_codec_set_match(NlmCodec* c, int level)
    int nlm_codec_set_cache(NlmCodec* c, int level)
    int nlm_codec_set_schedule(NlmCodec* c, int deep_every, int shallow_emb, int skip_permille)
    int nlm_codec_set_rates(NlmCodec* c, int a, int b)
    int nlm_codec_set_max_tokens(NlmCodec* c, uint32_t n)
    int nlm_codec_set_end_advance(NlmCodec* c, int on)
    int nlm_codec_set_forward(NlmCodec* c, int level)
    int nlm_lab_byte_costs(const uint8_t* src, size_t n, uint16_t* p)
    int nlm_lab_trace_dists(NlmCodec* c, int on)
    const float* nlm_lab_trace_dists_records(const NlmCodec* c, size_t* n, size_t* width)

FORMAT_VERSION, FORMAT_OLDEST = NLM_FORMAT_VERSION, NLM_FORMAT_OLDEST
MODE_STATIC, MODE_DYNAMIC, MODE_HEADS = NLM_MODE_STATIC, NLM_MODE_DYNAMIC, NLM_MODE_HEADS
MAX_BLOCK_TOKENS = NLM_MAX_BLOCK_TOKENS
TOKEN_SIZE = sizeof(NlmLexToken)
TRACE_SIZE = sizeof(NlmTraceRec)


def error_name(int code):
    return nlm_error_name(code).decode()


def format_routes(int version):
    """formats.h's route column for version: 1 or 0, or a negative error code for a version not read."""
    return nlm_format_routes(version)


def lex(const uint8_t[::1] data):
    """Tokens of data as the raw bytes of an NlmLexToken array (see _core.TOKEN_DTYPE)."""
    cdef size_t n = data.shape[0]
    cdef size_t cap = n + 1
    buf = bytearray(cap * sizeof(NlmLexToken))
    cdef uint8_t[::1] out = buf
    cdef const uint8_t* src = &data[0] if n else <const uint8_t*>b""
    cdef int64_t k
    with nogil:
        k = nlm_lex(src, n, <NlmLexToken*>&out[0], cap)
    if k < 0:
        return int(k)
    return bytes(out[:k * sizeof(NlmLexToken)])


def lab_byte_costs(const uint8_t[::1] data):
    """Measurement only (nlm_lab.h nlm_lab_byte_costs): the raw bytes of a native uint16 array of 8 * len(data)
    12-bit probabilities, the fresh byte model's for each bit that occurred, or a negative error code."""
    cdef size_t n = data.shape[0]
    cdef const uint8_t* src = &data[0] if n else <const uint8_t*>b""
    out = bytearray(2 * 8 * n if n else 2)
    cdef uint8_t[::1] o = out
    cdef int r
    with nogil:
        r = nlm_lab_byte_costs(src, n, <uint16_t*>&o[0])
    if r < 0:
        return int(r)
    return bytes(out[:2 * 8 * n])


def param_count(int V, int D, int H, int C, int arch=0):
    cdef NlmConfig cfg
    cfg.V = V; cfg.D = D; cfg.H = H; cfg.C = C; cfg.seg_len = 1
    cfg.lr = 0; cfg.decay = 0; cfg.eps = 0; cfg.arch = arch
    return nlm_param_count(&cfg)


cdef class Model:
    """One NlmModel: the immutable weights, vocabulary and class map, shared by every Codec built on it.

    params is kept referenced (the C model reads it in place when it can: a mapped model file)."""
    cdef NlmModel* m
    cdef object _params
    cdef public int err

    def __cinit__(self, tuple cfg, const uint8_t[::1] params, int dtype, const uint8_t[::1] ms,
                  const uint8_t[::1] vocab_blob, const uint8_t[::1] class_start, const uint8_t[::1] prime):
        cdef NlmConfig conf
        cdef int err = 0
        conf.V, conf.D, conf.H, conf.C, conf.seg_len, conf.lr, conf.decay, conf.eps, conf.arch = cfg
        cdef const uint8_t* pp = &prime[0] if prime.shape[0] else <const uint8_t*>b""
        if params.shape[0] == 0 or ms.shape[0] < 56 or vocab_blob.shape[0] == 0 or \
                class_start.shape[0] < 4 * (conf.C + 1):
            self.err = -2
            return
        self._params = params
        with nogil:
            self.m = nlm_model_new(&conf, <const void*>&params[0], dtype, &ms[0], &vocab_blob[0],
                                   vocab_blob.shape[0], &class_start[0], pp, prime.shape[0], &err)
        if self.m == NULL:
            self.err = err

    def __dealloc__(self):
        if self.m != NULL:
            nlm_model_free(self.m)
            self.m = NULL

    def ok(self):
        return self.m != NULL

    def set_kn(self, const uint8_t[::1] blob):
        """Attach the Kneser-Ney section (before any Codec is made on this model); 0 or an error code."""
        if self.m == NULL or blob.shape[0] == 0:
            return -2
        return nlm_model_set_kn(self.m, &blob[0], blob.shape[0])

    def memory(self):
        return nlm_model_memory(self.m)


cdef class ByteCoder


cdef class Codec:
    """One NlmCodec context over a Model (state, adapted weights, cache, speller)."""
    cdef NlmCodec* c
    cdef object _model
    cdef object _router
    cdef public int err

    def __cinit__(self, Model model, int adapt):
        cdef int err = 0
        if model is None or model.m == NULL:
            self.err = -2
            return
        self._model = model
        with nogil:
            self.c = nlm_codec_new(model.m, adapt, &err)
        if self.c == NULL:
            self.err = err

    def memory(self):
        return nlm_codec_memory(self.c)

    def __dealloc__(self):
        if self.c != NULL:
            nlm_codec_free(self.c)
            self.c = NULL

    def ok(self):
        return self.c != NULL

    def reset_for(self, int version, int mode):
        return nlm_codec_reset_for(self.c, version, mode)

    def reset(self):
        return nlm_codec_reset(self.c)

    def set_speller(self, int kind):
        return nlm_codec_set_speller(self.c, kind)

    def set_match(self, int level):
        return nlm_codec_set_match(self.c, level)

    def set_cache(self, int on):
        return nlm_codec_set_cache(self.c, on)

    def set_schedule(self, int deep_every, int shallow_emb, int skip_permille):
        return nlm_codec_set_schedule(self.c, deep_every, shallow_emb, skip_permille)

    def set_rates(self, int a, int b):
        return nlm_codec_set_rates(self.c, a, b)

    def set_frozen(self, int on):
        return nlm_codec_set_frozen(self.c, on)

    def set_max_tokens(self, uint32_t n):
        return nlm_codec_set_max_tokens(self.c, n)

    def set_end_advance(self, int on):
        return nlm_codec_set_end_advance(self.c, on)

    def set_forward(self, int level):
        return nlm_codec_set_forward(self.c, level)

    def set_bit_stats(self, int on):
        return nlm_codec_set_bit_stats(self.c, on)

    def save(self):
        cdef int r
        with nogil:
            r = nlm_codec_save(self.c)
        return r

    def set_route(self, int on):
        return nlm_codec_set_route(self.c, on)

    def set_router(self, ByteCoder bcoder, int lines=1):
        cdef int r = nlm_codec_set_router(self.c, bcoder.b if bcoder is not None else NULL, lines)
        if r == 0:
            self._router = bcoder           # the run outlives the codec's use of it
        return r

    def route_byte_payload(self):
        cdef size_t n = 0
        cdef const uint8_t* p = nlm_codec_route_byte_payload(self.c, &n)
        return p[:n] if p != NULL else None

    def restore(self):
        cdef int r
        with nogil:
            r = nlm_codec_restore(self.c)
        return r

    def encode_block(self, const uint8_t[::1] data):
        """Payload bytes, or a negative error code."""
        cdef size_t n = data.shape[0]
        cdef const uint8_t* src = &data[0] if n else <const uint8_t*>b""
        cdef int64_t r
        cdef size_t olen = 0
        cdef const uint8_t* o
        with nogil:
            r = nlm_encode_block(self.c, src, n)
        if r < 0:
            return int(r)
        o = nlm_codec_output(self.c, &olen)
        return o[:olen] if olen else b""

    def decode_block(self, const uint8_t[::1] payload, size_t dst_len):
        """Decoded bytes, or a negative error code."""
        cdef size_t n = payload.shape[0]
        cdef const uint8_t* src = &payload[0] if n else <const uint8_t*>b""
        out = bytearray(dst_len if dst_len else 1)
        cdef uint8_t[::1] dst = out
        cdef int64_t r
        with nogil:
            r = nlm_decode_block(self.c, src, n, &dst[0], dst_len)
        if r < 0:
            return int(r)
        return bytes(out[:dst_len])

    def stats(self):
        cdef double buf[32]
        cdef int k = nlm_codec_stats(self.c, buf, 32)
        if k < 0:
            return int(k)
        return [buf[i] for i in range(k)]

    def trace(self, int on):
        return nlm_codec_trace(self.c, on)

    def trace_records(self):
        """The trace of the last encode_block as the raw bytes of an NlmTraceRec array (_core.TRACE_DTYPE)."""
        cdef size_t n = 0
        cdef const NlmTraceRec* t = nlm_codec_trace_records(self.c, &n)
        if n == 0 or t == NULL:
            return b""
        return (<const uint8_t*>t)[:n * sizeof(NlmTraceRec)]

    def lab_trace_dists(self, int on):
        """Measurement only (nlm_lab.h nlm_lab_trace_dists): also record each traced token's distributions."""
        return nlm_lab_trace_dists(self.c, on)

    def lab_trace_dists_records(self):
        """(raw bytes of a native float32 array of n x width, width): the last block's class probabilities (C)
        and gap probabilities (8) per traced token (nlm_lab.h nlm_lab_trace_dists_records)."""
        cdef size_t n = 0, w = 0
        cdef const float* d = nlm_lab_trace_dists_records(self.c, &n, &w)
        if n == 0 or d == NULL:
            return b"", w
        return (<const uint8_t*>d)[:n * w * sizeof(float)], w


cdef class ByteCoder:
    """One NlmByteCoder: the byte model of a run of byte-model blocks (docs/format.md §9)."""
    cdef NlmByteCoder* b
    cdef public int err

    def __cinit__(self, int version):
        cdef int err = 0
        self.b = nlm_bytecoder_new(version, &err)
        self.err = err

    def __dealloc__(self):
        if self.b != NULL:
            nlm_bytecoder_free(self.b)
            self.b = NULL

    def ok(self):
        return self.b != NULL

    def reset(self):
        return nlm_bytecoder_reset(self.b)

    def memory(self):
        return nlm_bytecoder_memory(self.b)

    def encode_block(self, const uint8_t[::1] data, uint64_t run_size, uint64_t cap=0):
        """Payload bytes, None when cap > 0 and the payload is cap bytes or more, or a negative error code."""
        cdef size_t n = data.shape[0]
        cdef const uint8_t* src = &data[0] if n else <const uint8_t*>b""
        cdef int64_t r
        cdef size_t olen = 0
        cdef const uint8_t* o
        with nogil:
            r = nlm_bytecoder_encode(self.b, src, n, run_size, cap)
        if r < 0:
            return int(r)
        if r == 0:
            return None
        o = nlm_bytecoder_output(self.b, &olen)
        return o[:olen]

    def start_run(self, int s):
        return nlm_bytecoder_start(self.b, s)

    def feed(self, const uint8_t[::1] data):
        cdef size_t n = data.shape[0]
        cdef const uint8_t* src = &data[0] if n else <const uint8_t*>b""
        cdef int r
        with nogil:
            r = nlm_bytecoder_feed(self.b, src, n)
        return r

    def decode_block(self, const uint8_t[::1] payload, size_t dst_len):
        """Decoded bytes, or a negative error code."""
        cdef size_t n = payload.shape[0]
        cdef const uint8_t* src = &payload[0] if n else <const uint8_t*>b""
        out = bytearray(dst_len if dst_len else 1)
        cdef uint8_t[::1] dst = out
        cdef int64_t r
        with nogil:
            r = nlm_bytecoder_decode(self.b, src, n, &dst[0], dst_len)
        if r < 0:
            return int(r)
        return bytes(out[:dst_len])

