"""nlmcodec: lossless text compression with a word-level Elman RNN language model and a range coder.

The API follows lzma and compression.zstd::

    import nlmcodec
    blob = nlmcodec.compress(data)                 # bundled "default" model, heads mode, CRC32
    assert nlmcodec.decompress(blob) == data       # the frame names its model; bundled models are found by id

    c = nlmcodec.NLMCompressor(adapt=False)        # incremental: compress(chunk)... then flush()
    d = nlmcodec.NLMDecompressor()                 # decompress(data, max_length=-1), eof, unused_data, needs_input
    with nlmcodec.open("x.txt.nlm", "wt") as f:    # file objects, like lzma.open (rb wb ab xb rt wt at xt)
        f.write("text")

Frames (codec/FORMAT.md §7, format 3) are self-describing and streamable: a header (magic, version,
flags, the model id), blocks that each carry their own small header (stored, lzma or word-model blocks),
then a trailer with an index of the groups, the total size and a CRC32 of the data.  Memory is bounded
whatever the input size; threads=N codes N groups at once and never changes the output bytes.  Frames of
formats 1 and 2 still decode.

Untrusted input: decompress, NLMDecompressor and open (reading) take max_output=N (like lzma's
memlimit): a frame declaring more than N bytes of output raises NLMError before that output is decoded.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ._backend import backend
from ._errors import ModelFormatError, NLMError
from . import _decode, _encode, _frame
from ._frame import CHECK_CRC32, CHECK_NONE, FORMAT_VERSION, FrameInfo, get_frame_info


def __getattr__(name):          # __version__ on first use: importlib.metadata costs ~15 ms of start-up
    if name == "__version__":
        try:
            from importlib.metadata import version as _dist_version

            v = _dist_version("nlmcodec")
        except Exception:  # pragma: no cover - not installed (source tree on sys.path)
            v = "0.0.0+unknown"
        globals()["__version__"] = v
        return v
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHECK_CRC32",
    "CHECK_NONE",
    "FORMAT_VERSION",
    "FrameInfo",
    "ModelFormatError",
    "NLMCompressor",
    "NLMDecompressor",
    "NLMError",
    "NLMFile",
    "backend",
    "compress",
    "decompress",
    "explain",
    "get_frame_info",
    "load_model",
    "open",
]

MODEL_SUFFIX = ".nlmm"

# ---------------------------------------------------------------------------------------------- models
_lock = threading.Lock()
_model_cache = {}            # (resolved path, mtime_ns, size) -> Model
_codec_pool = {}             # (model id, adapt) -> [free Codec, ...], oldest key first
_POOL_PER_KEY = 2
_POOL_KEYS = 8               # codecs are kept for this many (model, adapt) keys: a process that uses many
                             # models (fuzzing load_model found it) does not keep a codec for each forever


def _bundled_dir() -> Path:
    return Path(__file__).resolve().parent / "models"


DEFAULT_NAME = "default"         # the name compress() uses when no model is given


def _default_generation(name: str):
    """N for a bundled model named "default-N" (the defaults shipped so far, oldest 1), else None."""
    head, sep, n = name.rpartition("-")
    return int(n) if sep and head == DEFAULT_NAME and n.isdigit() and n[0] != "0" else None


def _bundled_files():
    """{name: path} of the bundled models (python/nlmcodec/models/*.nlmm), and "default": the newest
    "default-N" (every default ever shipped stays bundled under its own name, so that the frames written
    with it, which name it by id, keep decoding after a newer one becomes the default).  A file named
    default.nlmm (a development checkout's own) takes precedence."""
    try:
        entries = list(_bundled_dir().iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return {}
    files = {e.name[:-len(MODEL_SUFFIX)]: e for e in entries if e.name.endswith(MODEL_SUFFIX) and e.is_file()}
    gens = {g: p for n, p in files.items() if (g := _default_generation(n)) is not None}
    if gens and DEFAULT_NAME not in files:
        files[DEFAULT_NAME] = gens[max(gens)]
    return files


def _default_model_name() -> str:
    """The bundled name of the model that "default" means in this release ("default-N"), or "default"."""
    files = _bundled_files()
    p = files.get(DEFAULT_NAME)
    for n, q in files.items():
        if n != DEFAULT_NAME and q == p and _default_generation(n) is not None:
            return n
    return DEFAULT_NAME


def _bundled_manifest_id(path: Path):
    """The model id recorded when the model was bundled (its manifest NAME.json: model_id_sha256, checked
    against the file by tests/test_model_file.py), or None.  Trusted only when the recorded size matches."""
    try:
        man = json.loads(path.with_suffix(".json").read_text())
        mid = bytes.fromhex(man["model_id_sha256"])
        if len(mid) == 32 and int(man["size_bytes"]) == path.stat().st_size:
            return mid
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _load_file(path, known_id=None) -> "Model":
    from ._model import Model

    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    with _lock:
        m = _model_cache.get(key)
    if m is None:
        m = Model.load(p)
        if known_id is not None:
            m._id = known_id            # computed once, when the model was bundled
        with _lock:
            m = _model_cache.setdefault(key, m)
    return m


def load_model(name_or_path="default"):
    """Return a Model: the name of a bundled model ("default", "tiny", ...) or a path to a .nlmm file.

    Models are cached (by path, modification time and size), so repeated calls are cheap and every codec,
    thread and stream of the process shares one model in memory.  A Model object is returned as is.
    """
    from ._model import Model

    if isinstance(name_or_path, Model):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"model must be a Model, a bundled model name or a path, not {type(name_or_path).__name__}")
    s = os.fspath(name_or_path)
    bundled = _bundled_files()
    if isinstance(name_or_path, str) and s in bundled:
        m = _load_file(bundled[s], _bundled_manifest_id(bundled[s]))
        if not m.name:
            m.name = s
        return m
    if os.path.isfile(s):
        return _load_file(s)
    raise FileNotFoundError(f"no bundled model named {s!r} (bundled: {', '.join(sorted(bundled)) or 'none'}) "
                            f"and no such file")


def _default_model():
    bundled = _bundled_files()
    # "default" is trained by the project's training command and bundled once it exists; until then the
    # small test model "tiny" stands in, so that compress() works in a development checkout.
    for name in ("default", "tiny"):
        if name in bundled:
            return load_model(name)
    raise NLMError("no bundled model found (python/nlmcodec/models/default-N.nlmm); pass model=")


def _bundled_by_id(model_id: bytes):
    """The bundled model whose id is model_id, or None."""
    name = _bundled_name_by_id(model_id)
    return None if name is None else load_model(name)


def _bundled_name_by_id(model_id: bytes):
    """The bundled name (its own, not the "default" alias) of the model whose id is model_id, or None.  Ids
    come from the manifests (recorded at bundling); a bundled model without a usable manifest is hashed, once
    per file version."""
    import hashlib

    files = _bundled_files()
    own = {p: n for n, p in files.items() if n != DEFAULT_NAME}      # the alias's file has a name of its own
    for name, p in sorted((own.get(p, n), p) for n, p in files.items()):
        digest = _bundled_manifest_id(p)
        if digest is None:
            st = p.stat()
            key = ("id", str(p.resolve()), st.st_mtime_ns, st.st_size)
            with _lock:
                digest = _model_cache.get(key)
            if digest is None:
                digest = hashlib.sha256(p.read_bytes()).digest()
                with _lock:
                    _model_cache[key] = digest
        if digest == model_id:
            return name
    return None


def _resolve(model):
    return _default_model() if model is None else load_model(model)


def _acquire_codec(model, adapt):
    """A codec for (model, adapt), adapt one of _frame.adapt_mode's values: heads mode's codecs are kept apart
    from dynamic ones (Codec.reset gives each the schedule of its mode)."""
    key = (model.model_id, adapt)
    with _lock:
        free = _codec_pool.get(key)
        if free:
            return free.pop()
    from ._core import Codec

    c = Codec(model, adapt)
    c.set_bit_stats(False)        # compress / decompress never read the information sums
    c._pool_key = key
    return c


def _release_codec(codec):
    key = getattr(codec, "_pool_key", None)
    if key is None:
        return
    with _lock:
        free = _codec_pool.pop(key, [])        # re-inserted last: the keys stay in order of last use
        if len(free) < _POOL_PER_KEY:
            free.append(codec)
        _codec_pool[key] = free
        while len(_codec_pool) > _POOL_KEYS:
            del _codec_pool[next(iter(_codec_pool))]


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
    groups are finished (b"" until then); flush() returns the rest and ends the frame.  Memory is bounded
    by a few groups (4 MiB each) per thread, whatever the input size.

    model: a Model, a bundled model name or a path (None: the bundled "default" model); adapt: "heads" (the
    default, heads mode: dynamic evaluation of the output heads only, codec/FORMAT.md §6.5), True (dynamic
    mode: every part of the model adapts, about 0.5% fewer bytes on English text at about half the speed) or
    False (static, the fastest); check: CHECK_CRC32
    (default) or CHECK_NONE; threads: groups coded at once (0 = one per
    core; the output bytes are the same for every thread count).  progress: input bytes coded so far.
    """

    def __init__(self, *, model=None, adapt=_frame.DEFAULT_ADAPT, check=CHECK_CRC32, threads=1):
        check = _check_arg(check)
        threads = _threads_arg(threads)
        self._model = _resolve(model)
        self.adapt = _frame.adapt_mode(adapt)
        self.check = check
        self.threads = threads
        self.model_id = self._model.model_id
        self._last_progress = 0
        key = self._model
        self._enc = _encode.FrameEncoder(lambda: _acquire_codec(key, self.adapt), _release_codec,
                                         self.model_id, self.adapt, check, threads)

    @property
    def progress(self):
        return self._last_progress if self._enc is None else self._enc.progress

    def compress(self, data, /) -> bytes:
        if self._enc is None:
            raise ValueError("Compressor has been flushed")
        return self._enc.feed(memoryview(data).cast("B"))

    def flush(self) -> bytes:
        if self._enc is None:
            raise ValueError("Repeated call to flush()")
        try:
            return self._enc.finish()       # progress stays readable while the last groups are coded
        finally:
            self._last_progress = self._enc.progress
            self._enc = None


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
    frame claims.  (Like lzma's memlimit; it bounds the output, which is what the memory of a one-shot
    decompress holds.)
    """

    def __init__(self, *, model=None, threads=1, max_output=None):
        threads = _threads_arg(threads)
        self.max_output = _max_output_arg(max_output)
        self._model = None if model is None else load_model(model)
        self._dec = _decode.FrameDecoder(self._get_codec, _release_codec, threads, self.max_output)
        self._out = b""                 # the piece of output being handed out, from _out_pos on
        self._out_pos = 0
        self._extra = b""
        self._error = None
        self.eof = False
        self.unused_data = b""
        self.needs_input = True

    @property
    def info(self):
        """The frame's FrameInfo once known (format 2: at the end of the frame), else None."""
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

    def _get_codec(self, model_id, adapt):
        if self._model is not None:
            if self._model.model_id != model_id:
                raise NLMError(f"model mismatch: the frame was compressed with model {model_id.hex()}, "
                               f"the given model {self._model.name or ''} has id {self._model.model_id.hex()}")
            model = self._model
        else:
            model = _bundled_by_id(model_id)
            if model is None:
                raise NLMError(f"the frame needs model {model_id.hex()}, which is not bundled; pass it with model=")
        return _acquire_codec(model, adapt)

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
    """Compress bytes into one frame.  model: Model, bundled name or path (None: bundled "default");
    adapt: "heads" (the default: only the output heads adapt), True (dynamic mode: everything adapts; the
    smallest output, about half the speed) or False (static, the fastest); check: CHECK_CRC32 or
    CHECK_NONE; threads: 0 = one per core (the bytes
    do not depend on it)."""
    c = NLMCompressor(model=model, adapt=adapt, check=check, threads=threads)
    return c.compress(data) + c.flush()


def decompress(data, /, *, model=None, threads=1, max_output=None) -> bytes:
    """Decompress every concatenated frame in data.  Truncated input, trailing garbage, corruption or a
    wrong or missing model raise NLMError.  max_output: None, or the most bytes all the frames together
    may decode to; a frame whose declared sizes exceed what is left of it raises NLMError before any of
    it is decoded (use it for untrusted input)."""
    max_output = _max_output_arg(max_output)
    data = bytes(memoryview(data).cast("B"))
    if not data:
        raise NLMError("truncated frame: empty input")
    out, produced = [], 0
    while True:
        left = None if max_output is None else max_output - produced
        d = NLMDecompressor(model=model, threads=threads, max_output=left)
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


from ._file import NLMFile, open  # noqa: E402  (after the objects it is built on)
from . import _fsspec  # noqa: E402,F401  (registers the "nlm" compression with fsspec, lazily)


def explain(data, *, model=None, adapt=_frame.DEFAULT_ADAPT):
    """Per-token costs of compressing data with model (None: the bundled default) in the given mode: an
    Explanation (nlmcodec._explain; imported on first use, it needs numpy).  Runs the real encoder."""
    from ._explain import explain as _explain

    return _explain(data, model=model, adapt=adapt)
