"""Thin Python layer over the chosen binding: the Codec wrapper, and numpy views of lexer output and traces.

Nothing here runs per token: one call per block.  The lexer lives in C (csrc/lexer/lex.c) so that the
codec and the training code share one tokenizer and the codec never loops over tokens in Python.  numpy is
imported only by the array helpers (TOKEN_DTYPE, TRACE_DTYPE, lex_tokens, trace_records), so compressing
never imports it.
"""
from ._backend import backend, native
from ._errors import NLMError, check
from ._frame import HEADS, MAX_MODEL_TOKENS


def _dtypes():
    """The C core reads and writes native-endian structs: every dtype handed to or read from C is "=" (native),
    so a big-endian host gets the right numbers (the model *file* stays little-endian: _model.py)."""
    import numpy as np

    token = np.dtype([("off", "=u4"), ("len", "=u4"), ("gap_off", "=u4"), ("gap_len", "=u4"),
                      ("kind", "u1"), ("case", "u1"), ("gap", "u1"), ("pad", "u1")])
    assert token.itemsize == native.TOKEN_SIZE
    # One NlmTraceRec (csrc/nlm.h): token bytes src[off, off+len) of the block (gap then body), word id, kind,
    # case, gap symbol, flags (1 cache hit, 2 case coded, 4 match hit, 8 coded by the run), bits in TRACE_PARTS order,
    # top-3 word ids of the coded class with p = p(class) * p(word | class) (id -1 = none).
    trace = np.dtype([("off", "=u4"), ("len", "=u4"), ("word", "=i4"), ("kind", "u1"), ("case", "u1"),
                      ("gap", "u1"), ("flags", "u1"), ("bits", "=f8", (len(TRACE_PARTS),)), ("top_id", "=i4", (3,)),
                      ("top_p", "=f4", (3,))])
    assert trace.itemsize == native.TRACE_SIZE
    return {"TOKEN_DTYPE": token, "TRACE_DTYPE": trace}


def __getattr__(name):          # TOKEN_DTYPE / TRACE_DTYPE on first use (PEP 562)
    if name in ("TOKEN_DTYPE", "TRACE_DTYPE"):
        globals().update(_dtypes())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TRACE_PARTS = ("class", "word", "unk", "cache", "spell", "case", "gap", "match", "route", "run")

KIND_END, KIND_WORD, KIND_NUMBER, KIND_SYMBOL = 0, 1, 2, 3
STAT_NAMES = ("tokens", "word_bits", "unk_tokens", "unk_bits", "cache_hits", "cache_bits",
              "spelled", "spell_bits", "case_bits", "gap_bits", "match_preds", "match_hits", "match_bits",
              "match_net_cost", "tc_u1", "tc_o2", "tc_o3", "tc_tokens", "tc_net_cost", "bm_candidates",
              "segments", "segments_skipped", "route_lines", "route_run_lines", "route_split_lines",
              "route_run_bytes", "route_bits", "route_word_bits", "route_coded_bits")
MATCH_OFF, MATCH_FLAG1, MATCH_FLAG2 = 0, 1, 2     # Codec.reset's match levels (nlm.h nlm_codec_set_match)
CACHE_OFF, CACHE_TOKENS, CACHE_BODIES = 0, 1, 2   # Codec.reset's cache levels (nlm.h nlm_codec_set_cache)
FORWARD_FLOAT, FORWARD_INT8 = 0, 1                # Codec.reset's forward levels (nlm.h nlm_codec_set_forward)


def lex_tokens(data):
    """Lex bytes into a structured numpy array of tokens (TOKEN_DTYPE); the last token is END.

    Fields: off/len (body bytes, original case), gap_off/gap_len (whitespace before the body),
    kind (0 END, 1 WORD, 2 NUMBER, 3 SYMBOL), case (0 lower, 1 Capitalised, 2 UPPER, 3 verbatim),
    gap (symbol 0..7, 7 = literal run).  See docs/format.md §1.
    """
    import numpy as np

    raw = check(native.lex(bytes(data) if not isinstance(data, bytes) else data), "lexer")
    return np.frombuffer(raw, dtype=__getattr__("TOKEN_DTYPE"))


def token_cut(data, limit: int) -> int:
    """len(data) when data lexes into at most `limit` tokens (END included); else where the gap before its
    token number limit - 1 (from 0) starts, so the bytes before lex into limit - 1 tokens and END.  No numpy."""
    import struct

    raw = check(native.lex(bytes(data) if not isinstance(data, bytes) else data), "lexer")
    if len(raw) // native.TOKEN_SIZE <= limit:
        return len(data)
    return struct.unpack_from("=I", raw, (limit - 1) * native.TOKEN_SIZE + 8)[0]   # TOKEN_DTYPE's gap_off


def unlex(data, tokens):
    """Rebuild the bytes from tokens (a test helper: concatenates gap and body bytes)."""
    out = bytearray()
    for t in tokens:
        out += data[t["gap_off"]:t["gap_off"] + t["gap_len"]]
        out += data[t["off"]:t["off"] + t["len"]]
    return bytes(out)


def param_count(V, D, H, C, arch: int = 0):
    """Floats of the parameter block (arch: nlm.h NLM_ARCH_*), from the core."""
    return native.param_count(V, D, H, C, arch)


SPELLER_PPM, SPELLER_CM, SPELLER_CM_ALL = 0, 1, 2   # nlm.h NLM_SPELLER_* (CM_ALL: measurement only)


def mode_of(adapt) -> int:
    """The NLM_MODE_* of a coding mode (False static, True dynamic, "heads")."""
    return native.MODE_HEADS if adapt == HEADS else native.MODE_DYNAMIC if adapt else native.MODE_STATIC


class Codec:
    """A C codec context over a Model's shared native model (python/nlmcodec/_model.py).  Not thread-safe;
    any number of Codecs, on any threads, share one Model."""

    def __init__(self, model, adapt):
        """adapt: False (static), True (dynamic) or "heads" (_frame.adapt_mode's values).  Call reset() before
        coding: it configures the context for a format in this mode."""
        self._c = native.Codec(model.native(), int(bool(adapt)))
        if not self._c.ok():
            check(self._c.err or -2, "model")
        self.adapt = HEADS if adapt == HEADS else bool(adapt)
        self.mode = mode_of(adapt)

    def memory(self):
        """Bytes this context owns (its state and adapted weights; the shared model not included)."""
        return self._c.memory()

    def reset(self, version: int = native.FORMAT_VERSION):
        """Back to the start of a group, configured for the word-model blocks of frame format `version` in this
        context's mode (nlm.h nlm_codec_reset_for: the one table of what a format and mode mean is in C)."""
        check(self._c.reset_for(int(version), self.mode))

    def lab_reset(self, speller=SPELLER_CM, match=MATCH_FLAG2, max_tokens=None, end_advance=False,
                  cache=CACHE_BODIES, schedule=None, forward=FORWARD_INT8, rates=None):
        """Tests and measurements only (csrc/nlm_lab.h): back to the start of a group with options set one by
        one, starting from the current format's.  A combination that is no row of csrc/codec/formats.h codes
        payloads of no format.  speller: SPELLER_CM or SPELLER_PPM (docs/format.md §5); match: MATCH_OFF,
        MATCH_FLAG1 or MATCH_FLAG2 (§3.4); max_tokens: tokens per block (§3.5; None: MAX_MODEL_TOKENS, 0: no
        bound); end_advance: a block's <end> advances the network (§3.2 step 6); cache: CACHE_OFF,
        CACHE_TOKENS or CACHE_BODIES (§3.6, §5.1.1); forward: FORWARD_FLOAT or FORWARD_INT8 (§2.6); schedule
        (dynamic contexts): (deep_every, shallow_emb, skip_permille) of nlm_codec_set_schedule, None: the
        mode's; rates (dynamic contexts): (a, b) of nlm_codec_set_rates, None: the mode's."""
        self.reset()
        check(self._c.set_speller(int(speller)))
        check(self._c.set_match(int(match)))
        check(self._c.set_cache(int(cache)))
        check(self._c.set_end_advance(int(bool(end_advance))))
        check(self._c.set_max_tokens(MAX_MODEL_TOKENS if max_tokens is None else int(max_tokens)))
        check(self._c.set_forward(int(forward)))
        if self.adapt:
            if schedule is not None:
                check(self._c.set_schedule(int(schedule[0]), int(schedule[1]), int(schedule[2])))
            if rates is not None:
                check(self._c.set_rates(int(rates[0]), int(rates[1])))

    def save(self):
        check(self._c.save())

    def set_frozen(self, on: bool):
        """Estimates only: while on, a dynamic context does not adapt (static-mode speed); save() before,
        restore() after (nlm.h nlm_codec_set_frozen)."""
        check(self._c.set_frozen(int(bool(on))))

    def restore(self):
        check(self._c.restore())

    def encode_block(self, data):
        """Payload bytes; raises NLMError if the word model cannot code this block."""
        return check(self._c.encode_block(data), "encode")

    def decode_block(self, payload, size):
        return check(self._c.decode_block(payload, size), "corrupt block")

    def lab_line_route(self, on: bool = True):
        """Measurement: format 17's line route (docs/format.md §3.8, nlm_lab.h nlm_codec_set_route) on a context of
        another format (after reset(); resets it), for variants measured before they become a format."""
        check(self._c.set_route(int(on)), "line route")

    def set_router(self, bcoder, lines: bool = True):
        """Format 17 (docs/format.md §3.8): the next word-model blocks belong to a tracked group whose run is
        bcoder's (a ByteCoder, or None: they do not; nlm.h nlm_codec_set_router; reset() clears it).  With a router
        each block starts with its route byte and its bytes are learnt by the run as they are coded or decoded;
        lines (the encoder's route byte): lines may go to the run."""
        check(self._c.set_router(bcoder._b if bcoder is not None else None, int(lines)), "router")

    def route_byte_payload(self):
        """After encode_block with a router: the payload of a byte-model block continuing the run that codes the
        same bytes (made alongside), or None."""
        return self._c.route_byte_payload()

    def stats(self):
        return dict(zip(STAT_NAMES, check(self._c.stats())))

    def set_bit_stats(self, on: bool):
        """Whether stats() sums the information of the coded tokens' symbols (the *_bits and *_cost entries the
        token step adds; on for a new context).  compress() and decompress() turn it off: a log2 per symbol is
        a few percent of a static token step (nlm.h nlm_codec_set_bit_stats).  Never changes the bytes."""
        check(self._c.set_bit_stats(int(bool(on))))

    def trace(self, on):
        """Record a per-token trace of every later encode_block (on=False: stop and free it)."""
        check(self._c.trace(int(bool(on))))

    def trace_records(self):
        """The trace of the last encode_block: a numpy array of TRACE_DTYPE, one row per token."""
        import numpy as np

        return np.frombuffer(self._c.trace_records(), dtype=__getattr__("TRACE_DTYPE"))


class ByteCoder:
    """The byte model (docs/format.md §9) of one run of byte-model blocks at a time, of frame format version
    (formats.h says which byte model a format has).  Not thread-safe."""

    def __init__(self, version: int = native.FORMAT_VERSION):
        self._b = native.ByteCoder(version)
        if not self._b.ok():
            check(self._b.err or -1, "byte model")

    def reset(self):
        """End the run in progress (every group starts without one)."""
        check(self._b.reset())

    def memory(self):
        return self._b.memory()

    def encode_block(self, data, run_size: int = 0, cap: int = 0):
        """Payload of one byte-model block; run_size > 0 starts a run of run_size bytes (this block first).
        cap > 0: None when the payload is cap bytes or more (the model may stop early; the run is ended), for
        estimates that only compare the size with a bound."""
        return check(self._b.encode_block(data, run_size, cap), "byte model")

    def decode_block(self, payload, size):
        return check(self._b.decode_block(payload, size), "corrupt block")

    def start_run(self, s: int):
        """Start the run of a tracked group (docs/format.md §7.2): size class s, no block coded."""
        check(self._b.start_run(s), "corrupt block")

    def feed(self, data):
        """The bytes of a tracked group's block the run does not code: learnt as if coded."""
        check(self._b.feed(data), "corrupt block")


__all__ = ["ByteCoder", "backend", "lex_tokens", "unlex", "Codec", "NLMError", "TOKEN_DTYPE", "TRACE_DTYPE", "TRACE_PARTS"]
