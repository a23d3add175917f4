"""cffi (API mode) binding of the C core: the same functions as the Cython extension _nlm_cy.

The compiled module nlmcodec._nlm_cffi is built by build_cffi.py from the same csrc/ sources and flags.
cffi releases the GIL around every C call in API mode.  Errors come back as negative codes; _core.py
turns them into NLMError.
"""
from ._nlm_cffi import ffi, lib

FORMAT_VERSION, FORMAT_OLDEST = lib.NLM_FORMAT_VERSION, lib.NLM_FORMAT_OLDEST
MODE_STATIC, MODE_DYNAMIC, MODE_HEADS = lib.NLM_MODE_STATIC, lib.NLM_MODE_DYNAMIC, lib.NLM_MODE_HEADS
MAX_BLOCK_TOKENS = lib.NLM_MAX_BLOCK_TOKENS
TOKEN_SIZE = ffi.sizeof("NlmLexToken")
TRACE_SIZE = ffi.sizeof("NlmTraceRec")


def error_name(code):
    return ffi.string(lib.nlm_error_name(code)).decode()


def format_routes(version):
    """formats.h's route column for version: 1 or 0, or a negative error code for a version not read."""
    return int(lib.nlm_format_routes(version))


def lex(data):
    n = len(data)
    cap = n + 1
    out = ffi.new("NlmLexToken[]", cap)
    k = lib.nlm_lex(ffi.from_buffer(data), n, out, cap)
    if k < 0:
        return int(k)
    return bytes(ffi.buffer(out, k * TOKEN_SIZE))


def lab_byte_costs(data):
    """Measurement only (nlm_lab.h nlm_lab_byte_costs): the raw bytes of a native uint16 array of 8 * len(data)
    12-bit probabilities, the fresh byte model's for each bit that occurred, or a negative error code."""
    n = len(data)
    out = ffi.new("uint16_t[]", 8 * n if n else 1)
    r = lib.nlm_lab_byte_costs(ffi.from_buffer(data), n, out)
    if r < 0:
        return int(r)
    return bytes(ffi.buffer(out, 2 * 8 * n))


def param_count(V, D, H, C, arch=0):
    cfg = ffi.new("NlmConfig*", {"V": V, "D": D, "H": H, "C": C, "seg_len": 1, "arch": arch})
    return lib.nlm_param_count(cfg)


class Model:
    """One NlmModel: the immutable weights, vocabulary and class map, shared by every Codec built on it.

    params is kept referenced (the C model reads it in place when it can: a mapped model file)."""

    def __init__(self, cfg, params, dtype, ms, vocab_blob, class_start, prime):
        V, D, H, C, seg_len, lr, decay, eps, arch = cfg
        self.m = None
        self.err = -2
        if not len(params) or len(ms) < 56 or not len(vocab_blob) or len(class_start) < 4 * (C + 1):
            return
        conf = ffi.new("NlmConfig*", {"V": V, "D": D, "H": H, "C": C, "seg_len": seg_len,
                                      "lr": lr, "decay": decay, "eps": eps, "arch": arch})
        err = ffi.new("int*")
        self._params = params
        m = lib.nlm_model_new(conf, ffi.from_buffer(params), dtype, ffi.from_buffer(ms),
                              ffi.from_buffer(vocab_blob), len(vocab_blob), ffi.from_buffer(class_start),
                              ffi.from_buffer(prime), len(prime), err)
        self.err = err[0]
        self.m = ffi.gc(m, lib.nlm_model_free) if m != ffi.NULL else None

    def ok(self):
        return self.m is not None

    def set_kn(self, blob):
        """Attach the Kneser-Ney section (before any Codec is made on this model); 0 or an error code."""
        if self.m is None or not len(blob):
            return -2
        return lib.nlm_model_set_kn(self.m, ffi.from_buffer(blob), len(blob))

    def memory(self):
        return lib.nlm_model_memory(self.m)


class Codec:
    """One NlmCodec context over a Model (state, adapted weights, cache, speller)."""

    def __init__(self, model, adapt):
        self.c = None
        self.err = -2
        if model is None or model.m is None:
            return
        self._model = model                 # the model outlives its codecs
        err = ffi.new("int*")
        c = lib.nlm_codec_new(model.m, adapt, err)
        self.err = err[0]
        self.c = ffi.gc(c, lib.nlm_codec_free) if c != ffi.NULL else None

    def memory(self):
        return lib.nlm_codec_memory(self.c)

    def ok(self):
        return self.c is not None

    def reset_for(self, version, mode):
        return lib.nlm_codec_reset_for(self.c, version, mode)

    def reset(self):
        return lib.nlm_codec_reset(self.c)

    def set_speller(self, kind):
        return lib.nlm_codec_set_speller(self.c, kind)

    def set_match(self, level):
        return lib.nlm_codec_set_match(self.c, level)

    def set_cache(self, on):
        return lib.nlm_codec_set_cache(self.c, on)

    def set_schedule(self, deep_every, shallow_emb, skip_permille):
        return lib.nlm_codec_set_schedule(self.c, deep_every, shallow_emb, skip_permille)

    def set_rates(self, a, b):
        return lib.nlm_codec_set_rates(self.c, a, b)

    def set_frozen(self, on):
        return lib.nlm_codec_set_frozen(self.c, on)

    def set_max_tokens(self, n):
        return lib.nlm_codec_set_max_tokens(self.c, n)

    def set_end_advance(self, on):
        return lib.nlm_codec_set_end_advance(self.c, on)

    def set_forward(self, level):
        return lib.nlm_codec_set_forward(self.c, level)

    def set_bit_stats(self, on):
        return lib.nlm_codec_set_bit_stats(self.c, on)

    def save(self):
        return lib.nlm_codec_save(self.c)

    def set_route(self, on):
        return lib.nlm_codec_set_route(self.c, on)

    def set_router(self, bcoder, lines=1):
        r = lib.nlm_codec_set_router(self.c, bcoder.b if bcoder is not None else ffi.NULL, lines)
        if r == 0:
            self._router = bcoder           # the run outlives the codec's use of it
        return r

    def route_byte_payload(self):
        n = ffi.new("size_t*")
        p = lib.nlm_codec_route_byte_payload(self.c, n)
        return bytes(ffi.buffer(p, n[0])) if p != ffi.NULL else None

    def restore(self):
        return lib.nlm_codec_restore(self.c)

    def encode_block(self, data):
        r = lib.nlm_encode_block(self.c, ffi.from_buffer(data), len(data))
        if r < 0:
            return int(r)
        olen = ffi.new("size_t*")
        o = lib.nlm_codec_output(self.c, olen)
        return bytes(ffi.buffer(o, olen[0])) if olen[0] else b""

    def decode_block(self, payload, dst_len):
        out = ffi.new("uint8_t[]", max(dst_len, 1))
        r = lib.nlm_decode_block(self.c, ffi.from_buffer(payload), len(payload), out, dst_len)
        if r < 0:
            return int(r)
        return bytes(ffi.buffer(out, dst_len))

    def stats(self):
        buf = ffi.new("double[32]")
        k = lib.nlm_codec_stats(self.c, buf, 32)
        if k < 0:
            return int(k)
        return [buf[i] for i in range(k)]

    def trace(self, on):
        return lib.nlm_codec_trace(self.c, on)

    def trace_records(self):
        """The trace of the last encode_block as the raw bytes of an NlmTraceRec array (_core.TRACE_DTYPE)."""
        n = ffi.new("size_t*")
        t = lib.nlm_codec_trace_records(self.c, n)
        if n[0] == 0 or t == ffi.NULL:
            return b""
        return bytes(ffi.buffer(t, n[0] * TRACE_SIZE))

    def lab_trace_dists(self, on):
        """Measurement only (nlm_lab.h nlm_lab_trace_dists): also record each traced token's distributions."""
        return lib.nlm_lab_trace_dists(self.c, on)

    def lab_trace_dists_records(self):
        """(raw bytes of a native float32 array of n x width, width): the last block's class probabilities (C)
        and gap probabilities (8) per traced token (nlm_lab.h nlm_lab_trace_dists_records)."""
        n, w = ffi.new("size_t*"), ffi.new("size_t*")
        d = lib.nlm_lab_trace_dists_records(self.c, n, w)
        if n[0] == 0 or d == ffi.NULL:
            return b"", w[0]
        return bytes(ffi.buffer(d, n[0] * w[0] * 4)), w[0]


class ByteCoder:
    """One NlmByteCoder: the byte model of a run of byte-model blocks (docs/format.md §9)."""

    def __init__(self, version):
        err = ffi.new("int*")
        b = lib.nlm_bytecoder_new(version, err)
        self.err = err[0]
        self.b = ffi.gc(b, lib.nlm_bytecoder_free) if b != ffi.NULL else None

    def ok(self):
        return self.b is not None

    def reset(self):
        return lib.nlm_bytecoder_reset(self.b)

    def memory(self):
        return lib.nlm_bytecoder_memory(self.b)

    def encode_block(self, data, run_size, cap=0):
        r = lib.nlm_bytecoder_encode(self.b, ffi.from_buffer(data), len(data), run_size, cap)
        if r < 0:
            return int(r)
        if r == 0:
            return None
        olen = ffi.new("size_t*")
        o = lib.nlm_bytecoder_output(self.b, olen)
        return bytes(ffi.buffer(o, olen[0]))

    def start_run(self, s):
        return lib.nlm_bytecoder_start(self.b, s)

    def feed(self, data):
        return lib.nlm_bytecoder_feed(self.b, ffi.from_buffer(data), len(data))

    def decode_block(self, payload, dst_len):
        out = ffi.new("uint8_t[]", max(dst_len, 1))
        r = lib.nlm_bytecoder_decode(self.b, ffi.from_buffer(payload), len(payload), out, dst_len)
        if r < 0:
            return int(r)
        return bytes(ffi.buffer(out, dst_len))

