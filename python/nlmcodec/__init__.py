"""nlmcodec: lossless text compression with a word-level Elman RNN language model and a range coder.

The API follows lzma and compression.zstd::

    import nlmcodec
    blob = nlmcodec.compress(data)                 # bundled "default" model, dynamic evaluation, CRC32
    assert nlmcodec.decompress(blob) == data       # the frame names its model; bundled models are found by id

    c = nlmcodec.NLMCompressor(adapt=False)        # incremental: compress(chunk)... then flush()
    d = nlmcodec.NLMDecompressor()                 # decompress(data, max_length=-1), eof, unused_data, needs_input

Frames are self-describing (codec/FORMAT.md §7): magic, version, flags (adapt, check), the model id, the
original size, a block table (stored, lzma or word-model blocks), a header CRC32 and an optional CRC32 of
the data.  The output is never larger than ``n + 30 + 7 * ceil(n / 1044481)`` bytes for an n-byte input.
"""
from __future__ import annotations

import hashlib
import os
import threading
from importlib import resources
from pathlib import Path

from ._backend import backend
from ._errors import NLMError
from . import _frame
from ._frame import CHECK_CRC32, CHECK_NONE, FORMAT_VERSION, FrameInfo, get_frame_info

try:
    from importlib.metadata import version as _dist_version

    __version__ = _dist_version("nlmcodec")
except Exception:  # pragma: no cover - not installed (source tree on sys.path)
    __version__ = "0.0.0+unknown"

__all__ = [
    "CHECK_CRC32",
    "CHECK_NONE",
    "FORMAT_VERSION",
    "FrameInfo",
    "NLMCompressor",
    "NLMDecompressor",
    "NLMError",
    "backend",
    "compress",
    "decompress",
    "get_frame_info",
    "load_model",
]

MODEL_SUFFIX = ".nlmm"

# ---------------------------------------------------------------------------------------------- models
_lock = threading.Lock()
_model_cache = {}            # (resolved path, mtime_ns, size) -> Model
_codec_pool = {}             # (model id, adapt) -> [free Codec, ...]
_POOL_PER_KEY = 2


def _bundled_dir():
    return resources.files(__name__) / "models"


def _bundled_files():
    """{name: traversable} of the bundled models (python/nlmcodec/models/*.nlmm)."""
    try:
        entries = list(_bundled_dir().iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return {e.name[:-len(MODEL_SUFFIX)]: e for e in entries
            if e.name.endswith(MODEL_SUFFIX) and e.is_file()}


def _load_file(path) -> "Model":
    from ._model import Model

    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    with _lock:
        m = _model_cache.get(key)
    if m is None:
        m = Model.load(p)
        with _lock:
            _model_cache[key] = m
    return m


def load_model(name_or_path="default"):
    """Return a Model: the name of a bundled model ("default", "tiny", ...) or a path to a .nlmm file.

    Models are cached (by path, modification time and size), so repeated calls are cheap.  A Model object
    is returned as is.
    """
    from ._model import Model

    if isinstance(name_or_path, Model):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"model must be a Model, a bundled model name or a path, not {type(name_or_path).__name__}")
    s = os.fspath(name_or_path)
    bundled = _bundled_files()
    if isinstance(name_or_path, str) and s in bundled:
        with resources.as_file(bundled[s]) as p:
            m = _load_file(p)
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
    raise NLMError("no bundled model found (python/nlmcodec/models/default.nlmm); pass model=")


def _bundled_by_id(model_id: bytes):
    for name, entry in sorted(_bundled_files().items()):
        with resources.as_file(entry) as p:
            st = p.stat()
            key = ("id", str(Path(p).resolve()), st.st_mtime_ns, st.st_size)
            with _lock:
                digest = _model_cache.get(key)
            if digest is None:
                digest = hashlib.sha256(Path(p).read_bytes()).digest()
                with _lock:
                    _model_cache[key] = digest
        if digest == model_id:
            return load_model(name)
    return None


def _resolve(model):
    return _default_model() if model is None else load_model(model)


def _acquire_codec(model, adapt: bool):
    key = (model.model_id, bool(adapt))
    with _lock:
        free = _codec_pool.get(key)
        if free:
            return free.pop()
    from ._core import Codec

    c = Codec(model, bool(adapt))
    c._pool_key = key
    return c


def _release_codec(codec):
    key = getattr(codec, "_pool_key", None)
    if key is None:
        return
    with _lock:
        free = _codec_pool.setdefault(key, [])
        if len(free) < _POOL_PER_KEY:
            free.append(codec)


# ---------------------------------------------------------------------------------------------- objects
class NLMCompressor:
    """Incremental compressor: compress(data) returns b"" (blocks are coded as they fill, but the frame
    header carries the block table, so the frame is written by flush()).  flush() ends the frame; the
    object cannot be used afterwards (like lzma.LZMACompressor).

    model: a Model, a bundled model name or a path (None: the bundled "default" model); adapt: dynamic
    evaluation (the model keeps learning on the text); check: CHECK_CRC32 (default) or CHECK_NONE.
    """

    def __init__(self, *, model=None, adapt=True, check=CHECK_CRC32):
        if check not in (CHECK_NONE, CHECK_CRC32):
            raise ValueError(f"check must be CHECK_NONE or CHECK_CRC32, not {check!r}")
        self._model = _resolve(model)
        self._codec = _acquire_codec(self._model, adapt)
        self._enc = _frame.FrameEncoder(self._codec, self._model.model_id, bool(adapt), check)
        self.adapt = bool(adapt)
        self.check = check
        self.model_id = self._model.model_id

    def compress(self, data, /) -> bytes:
        if self._enc is None:
            raise ValueError("Compressor has been flushed")
        self._enc.feed(memoryview(data).cast("B"))
        return b""

    def flush(self) -> bytes:
        if self._enc is None:
            raise ValueError("Repeated call to flush()")
        try:
            return self._enc.finish()
        finally:
            self._enc = None
            _release_codec(self._codec)
            self._codec = None


class NLMDecompressor:
    """Incremental decompressor of ONE frame (like lzma.LZMADecompressor / compression.zstd).

    decompress(data, max_length=-1) returns up to max_length bytes (all if negative); needs_input is False
    when output is still pending (call again with b"").  eof becomes True at the end of the frame, with the
    bytes after it in unused_data; a further call raises EOFError.  model: None finds a bundled model by the
    id in the frame; an explicit model must match that id (else NLMError "model mismatch").
    """

    def __init__(self, *, model=None):
        self._model = None if model is None else load_model(model)
        self._dec = _frame.FrameDecoder(self._get_codec, _release_codec)
        self._pending = b""
        self.eof = False
        self.unused_data = b""
        self.needs_input = True

    @property
    def info(self):
        """The frame header (FrameInfo) once it has been read, else None."""
        return self._dec.info

    @property
    def check(self):
        return None if self._dec.info is None else self._dec.info.check

    @property
    def model_id(self):
        return None if self._dec.info is None else self._dec.info.model_id

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
        if self.eof:
            raise EOFError("Already at end of stream")
        data = memoryview(data).cast("B")
        if not self._dec.eof:
            self._pending += self._dec.feed(data, _complete)
        elif len(data):
            self._dec.unused_data += bytes(data)
        if max_length is None or max_length < 0 or max_length >= len(self._pending):
            out, self._pending = self._pending, b""
        else:
            out, self._pending = self._pending[:max_length], self._pending[max_length:]
        if self._dec.eof and not self._pending:
            self.eof = True
            self.unused_data = self._dec.unused_data
            self.needs_input = False
        else:
            self.needs_input = not self._pending
        return out


# ---------------------------------------------------------------------------------------------- one-shot
def compress(data, /, *, model=None, adapt=True, check=CHECK_CRC32) -> bytes:
    """Compress bytes into one frame.  model: Model, bundled name or path (None: bundled "default");
    adapt: dynamic evaluation; check: CHECK_CRC32 or CHECK_NONE."""
    c = NLMCompressor(model=model, adapt=adapt, check=check)
    return c.compress(data) + c.flush()


def decompress(data, /, *, model=None) -> bytes:
    """Decompress every concatenated frame in data.  Truncated input, trailing garbage, corruption or a
    wrong or missing model raise NLMError."""
    data = bytes(memoryview(data).cast("B"))
    if not data:
        raise NLMError("truncated frame: empty input")
    out = []
    while True:
        d = NLMDecompressor(model=model)
        out.append(d.decompress(data, _complete=True))
        if not d.eof:  # pragma: no cover - complete=True raises first
            raise NLMError("truncated frame: compressed data ended before the end of the frame")
        data = d.unused_data
        if not data:
            return b"".join(out)
        k = min(len(data), len(_frame.MAGIC))
        if data[:k] != _frame.MAGIC[:k]:
            raise NLMError(f"trailing garbage: {len(data)} bytes after the end of the last frame")
