"""The stream classes and the one-shot functions: NLMCompressor, NLMDecompressor, compress, decompress.

Owns the API's argument checks (check, threads, max_output) and the bridge between the frame layer
(_encode.FrameEncoder, _decode.FrameDecoder) and the models and codecs of _registry.  The file objects
(_file) are built on these classes; the package's __init__ re-exports them.
"""
from __future__ import annotations

import os

from . import _decode, _encode, _frame, _memory
from ._errors import NLMError
from ._frame import CHECK_CRC32, CHECK_NONE
from ._registry import acquire_codec, candidates, describe_id, load_model, model_by_id, release_codec, short_id

__all__ = ["NLMCompressor", "NLMDecompressor", "compress", "decompress"]


# ---------------------------------------------------------------------------------------------- objects
def _check_arg(check):
    if isinstance(check, bool) or not isinstance(check, int):
        raise TypeError(f"check must be an int (CHECK_NONE or CHECK_CRC32), not {type(check).__name__}")
    if check not in (CHECK_NONE, CHECK_CRC32):
        raise ValueError(f"invalid check {check!r}: use CHECK_NONE or CHECK_CRC32")
    return check


def _max_output_arg(max_output):
    """max_output: None (no bound) or an int >= 0."""
    if max_output is None:
        return None
    if isinstance(max_output, bool) or not isinstance(max_output, int):
        raise TypeError(f"max_output must be an int or None, not {type(max_output).__name__}")
    if max_output < 0:
        raise ValueError("max_output must be >= 0 (or None: no bound)")
    return max_output


def _threads_arg(threads):
    """threads: None or 1 = one thread, 0 = one per core, N > 1 = N."""
    if threads is None:
        return 1
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an int, not {type(threads).__name__}")
    if threads < 0:
        raise ValueError("threads must be >= 0 (0 = one per core)")
    return threads or (os.cpu_count() or 1)


class _NoPickle:
    def __reduce__(self):
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")


class NLMCompressor(_NoPickle):
    """Incremental compressor (like lzma.LZMACompressor): compress(data) returns the frame's bytes as its
    blocks are decided (the first ones once 192 KiB are in; docs/format.md §7.4); flush() returns the rest and
    ends the frame.  The frame is compress()'s, however the input is fed.  Memory is bounded by a few groups
    (4 or 8 MiB each) per thread, whatever the input size.

    model: a Model, a bundled model name or a path; None (the default): the bundled default models, of
    which each frame uses the one that codes a probe of its first 128 KiB smaller, an input under 32 KiB the
    newest (``python -m nlmcodec -l`` lists them; the frame names the model; model_id is the chosen
    model's id, None until the choice is made).  adapt: "heads" (the
    default, heads mode: dynamic evaluation of the output heads only, docs/format.md §6.5), True (dynamic
    mode: every part of the model adapts, about 0.5% fewer bytes on English text at about half the speed) or
    False (static, the fastest); check: CHECK_CRC32
    (default) or CHECK_NONE; threads: groups coded at once (0 = one per
    core; the output bytes are the same for every thread count).  progress: input bytes coded so far.
    """

    def __init__(self, *, model=None, adapt=_frame.DEFAULT_ADAPT, check=CHECK_CRC32, threads=1):
        check = _check_arg(check)
        threads = _threads_arg(threads)
        self._models = candidates(model)
        self.adapt = _frame.adapt_mode(adapt)
        self.check = check
        self.threads = threads
        self.model_id = None
        self._last_progress = 0
        self._head = bytearray()      # input held until the model is chosen (on CHOICE_WINDOW bytes, or at flush)
        self._enc = None
        self._done = False
        if len(self._models) == 1:
            self._start(load_model(self._models[0]))       # a Model, or the one default's name

    def _start(self, model):
        need = _memory.decode_need(model, self.adapt, 1)
        if need > _memory.DEFAULT_MEMLIMIT:
            raise NLMError(f"memory limit: a frame of this model in this mode needs up to {-(-need // _memory.MIB)} "
                           f"MiB to decode, more than decoders accept by default "
                           f"({_memory.DEFAULT_MEMLIMIT // _memory.MIB} MiB): use a smaller model or static mode")
        self._model = model
        self.model_id = model.model_id
        self._enc = _encode.FrameEncoder(lambda: acquire_codec(model, self.adapt), release_codec,
                                         self.model_id, self.adapt, self.check, self.threads)

    @property
    def progress(self):
        return self._last_progress if self._enc is None else self._enc.progress

    def compress(self, data, /) -> bytes:
        if self._done:
            raise ValueError("Compressor has been flushed")
        data = memoryview(data).cast("B")
        if self._enc is None:          # the model is chosen on the first CHOICE_WINDOW bytes (nothing of the
            self._head += data         # frame is written before HEADER_WAIT > CHOICE_WINDOW bytes are in anyway)
            if len(self._head) < _encode.CHOICE_WINDOW:
                return b""
            data, self._head = memoryview(self._head), None
            self._choose(data)
        return self._enc.feed(data)

    def _choose(self, head):
        try:
            self._start(_encode.choose_model(self._models, head, self.adapt))
        except BaseException:
            self._done = True          # as after FrameEncoder's errors, the compressor is not usable again
            raise

    def flush(self) -> bytes:
        if self._done:
            raise ValueError("Repeated call to flush()")
        self._done = True
        if self._enc is None:
            head, self._head = self._head, None
            self._choose(head)
            out = self._enc.feed(head)
        else:
            out = b""
        try:
            return out + self._enc.finish()       # progress stays readable while the last groups are coded
        finally:
            self._last_progress = self._enc.progress
            self._enc = None


def _mismatch_message(model_id, given):
    """One line: the model the frame needs (named when it is on the search path) and the one given instead."""
    needed = describe_id(model_id)
    given = describe_id(given.model_id) or f"`{given.name or '?'}` (id {short_id(given.model_id)}...)"
    if needed is not None:
        return (f"model mismatch: the frame was compressed with {needed}, but the model given is {given}; "
                f"without model= the frame's model is found by its id")
    return (f"model mismatch: the frame was compressed with model {short_id(model_id)}..., which is not bundled "
            f"nor on the model search path, but the model given is {given}: pass that model's file with model=, "
            f"or put it in a directory of NLMCODEC_MODEL_PATH (or add_model_dir)")


class NLMDecompressor(_NoPickle):
    """Incremental decompressor of ONE frame (like lzma.LZMADecompressor / compression.zstd).

    decompress(data, max_length=-1) returns at most max_length bytes (all that can be produced if
    negative); needs_input is False when output is still pending (call again with b"").  eof becomes True
    at the end of the frame, with the bytes after it in unused_data; a further call raises EOFError.
    After an error every further call raises the same error.  model: None finds a bundled model by the id
    in the frame; an explicit model must match that id (else NLMError "model mismatch").  threads:
    groups decoded at once (0 = one per core); one thread keeps at most one block of output.

    max_output: None (no bound), or the most bytes the frame may decode to.  The bound is checked against
    the sizes the frame declares: a block that would take the output past it raises NLMError ("output
    limit") before it is decoded, so the work and the output are bounded by max_output whatever the
    frame claims.  (It bounds the output, which is what the memory of a one-shot decompress holds.)

    memlimit: None (the default, _memory.DEFAULT_MEMLIMIT: 1 GiB), 0 (no limit), or the most bytes the decode
    itself may need (the model, and per thread a codec, a byte model and the output in flight: docs/format.md
    §7.6).  A frame that needs more on one thread raises NLMError ("memory limit") before any codec is made;
    with several threads the decoder uses as many as fit.
    """

    def __init__(self, *, model=None, threads=1, max_output=None, memlimit=None):
        threads = _threads_arg(threads)
        self.max_output = _max_output_arg(max_output)
        self.memlimit = _memory.memlimit_arg(memlimit)
        self._model = None if model is None else load_model(model)
        self._dec = _decode.FrameDecoder(self._get_codec, release_codec, threads, self.max_output, self._plan)
        self._out = b""                 # the piece of output being handed out, from _out_pos on
        self._out_pos = 0
        self._extra = b""
        self._error = None
        self.eof = False
        self.unused_data = b""
        self.needs_input = True

    @property
    def info(self):
        """The frame's FrameInfo once known (at the end of the frame), else None."""
        return self._dec.info

    @property
    def check(self):
        return self._dec.check

    @property
    def model_id(self):
        return self._dec.model_id

    @property
    def progress(self):
        """Input bytes the decoder has consumed so far."""
        return self._dec.consumed

    def _plan(self, model_id, adapt, threads):
        try:
            model = None if model_id is None else self._model_of(model_id)
        except NLMError:      # missing or mismatched: reported where a block needs it, after the checks before it
            model = None
        return _memory.threads_within(model, adapt, threads, self.memlimit)

    def _get_codec(self, model_id, adapt):
        return acquire_codec(self._model_of(model_id), adapt)

    def _model_of(self, model_id):
        if self._model is not None:
            if self._model.model_id != model_id:
                raise NLMError(_mismatch_message(model_id, self._model))
            model = self._model
        else:
            model = model_by_id(model_id)
            if model is None:
                raise NLMError(f"the frame needs model {short_id(model_id)}... (the id of the model file it was "
                               f"compressed with), which is not bundled nor on the model search path: pass that "
                               f"file with model=, or put it in a directory of NLMCODEC_MODEL_PATH (or add_model_dir)")
        return model

    def decompress(self, data, /, max_length=-1, *, _complete=False) -> bytes:
        if self._error is not None:
            raise self._error
        if self.eof:
            raise EOFError("Already at end of stream")
        if max_length is None:
            max_length = -1
        elif isinstance(max_length, bool) or not isinstance(max_length, int):
            raise TypeError(f"max_length must be an int, not {type(max_length).__name__}")
        data = memoryview(data).cast("B")
        try:
            return self._decompress(data, max_length, _complete)
        except (NLMError, MemoryError) as e:
            self._error = e
            raise

    def _decompress(self, data, max_length, complete):
        dec = self._dec
        if dec.eof:
            self._extra += bytes(data)      # after the frame: becomes unused_data
        else:
            dec.feed(data)
        out, n, starved = [], 0, False
        while max_length < 0 or n < max_length:
            avail = len(self._out) - self._out_pos
            if avail:
                k = avail if max_length < 0 else min(max_length - n, avail)
                out.append(self._out if k == len(self._out) else self._out[self._out_pos:self._out_pos + k])
                self._out_pos += k
                n += k
                continue
            piece = None if dec.eof else dec.read(complete)
            if piece is None:
                starved = True
                break
            self._out, self._out_pos = piece, 0
        if dec.eof and self._out_pos == len(self._out):
            self.eof = True
            self.unused_data = dec.unused_data + self._extra
            self.needs_input = False
        else:
            # more input is needed only when the decoder could produce nothing from what it has
            self.needs_input = starved and not dec.eof
        return b"".join(out)


# ---------------------------------------------------------------------------------------------- one-shot
def compress(data, /, *, model=None, adapt=_frame.DEFAULT_ADAPT, check=CHECK_CRC32, threads=1) -> bytes:
    """Compress bytes into one frame.  model: Model, bundled name or path (None: the bundled default models,
    the one that codes a probe of the first 128 KiB smaller; see NLMCompressor);
    adapt: "heads" (the default: only the output heads adapt), True (dynamic mode: everything adapts; the
    smallest output, about half the speed) or False (static, the fastest); check: CHECK_CRC32 or
    CHECK_NONE; threads: 0 = one per core (the bytes
    do not depend on it)."""
    c = NLMCompressor(model=model, adapt=adapt, check=check, threads=threads)
    return c.compress(data) + c.flush()


def decompress(data, /, *, model=None, threads=1, max_output=None, memlimit=None) -> bytes:
    """Decompress every concatenated frame in data.  Truncated input, trailing garbage, corruption or a
    wrong or missing model raise NLMError.  max_output: None, or the most bytes all the frames together
    may decode to; a frame whose declared sizes exceed what is left of it raises NLMError before any of
    it is decoded (use it for untrusted input).  memlimit: as NLMDecompressor's."""
    max_output = _max_output_arg(max_output)
    data = bytes(memoryview(data).cast("B"))
    if not data:
        raise NLMError("truncated frame: empty input")
    out, produced = [], 0
    while True:
        left = None if max_output is None else max_output - produced
        d = NLMDecompressor(model=model, threads=threads, max_output=left, memlimit=memlimit)
        out.append(d.decompress(data, _complete=True))
        produced += len(out[-1])
        if not d.eof:  # pragma: no cover - complete=True raises first
            raise NLMError("truncated frame: compressed data ended before the end of the frame")
        data = d.unused_data
        if not data:
            return b"".join(out)
        k = min(len(data), len(_frame.MAGIC))
        if data[:k] != _frame.MAGIC[:k]:
            raise NLMError(f"trailing garbage: {len(data)} bytes after the end of the last frame")
