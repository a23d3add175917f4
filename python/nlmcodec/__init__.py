"""nlmcodec: lossless text compression with a word-level Elman RNN language model and a range coder.

The API follows lzma and compression.zstd::

    import nlmcodec
    blob = nlmcodec.compress(data)                 # a bundled default model, heads mode, CRC32
    assert nlmcodec.decompress(blob) == data       # the frame names its model; bundled models are found by id

    c = nlmcodec.NLMCompressor(adapt=False)        # incremental: compress(chunk)... then flush()
    d = nlmcodec.NLMDecompressor()                 # decompress(data, max_length=-1), eof, unused_data, needs_input
    with nlmcodec.open("x.txt.nlm", "wt") as f:    # file objects, like lzma.open (rb wb ab xb rt wt at xt)
        f.write("text")

Frames (docs/format.md) are self-describing and streamable: a header (magic, version, flags, the model
id), blocks that each carry their own small header (stored, lzma, byte-model or word-model blocks), then a
trailer with an index of the groups, the total size and a CRC32 of the data.  Memory is bounded whatever
the input size; threads=N codes N groups at once and never changes the output bytes.

Models: a frame names its model by id (the SHA-256 of the model file).  The wheel ships the default models
(each frame uses the one that codes a probe of its first 128 KiB smaller; under 32 KiB, the newest);
other models are found by name or id in the directories given to add_model_dir(path) and in
NLMCODEC_MODEL_PATH (os.pathsep-separated), or passed as model= (a Model or a .nlmm path).

Untrusted input: decompress, NLMDecompressor and open (reading) take max_output=N (like lzma's
memlimit): a frame declaring more than N bytes of output raises NLMError before that output is decoded.
"""
from __future__ import annotations

# The façade: the public API and nothing else.  Imports run one way, from here down:
#   __init__ (this file) -> _file, _fsspec, _explain (lazily) -> _stream -> _registry -> the core
#   (_frame, _encode, _decode: the frame layer; _core, _backend: the binding; _model: the model file).
# The command line (cli/), the tools (_bench, _explain) and training (train, kn, reference, _corpus) use
# the package from above.
from ._backend import backend
from ._errors import ModelFormatError, NLMError
from ._frame import CHECK_CRC32, CHECK_NONE, DEFAULT_ADAPT as _DEFAULT_ADAPT, FORMAT_VERSION, FrameInfo, get_frame_info
from ._registry import add_model_dir, load_model
from ._stream import NLMCompressor, NLMDecompressor, compress, decompress
from ._file import NLMFile, open
from . import _fsspec  # noqa: F401  (registers the "nlm" compression with fsspec, lazily)


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
    "add_model_dir",
    "backend",
    "compress",
    "decompress",
    "explain",
    "get_frame_info",
    "load_model",
    "open",
]


def explain(data, *, model=None, adapt=_DEFAULT_ADAPT, detail=None):
    """Per-token costs of compressing data with model (None: the bundled default compress() chooses) in the given mode: an
    Explanation (nlmcodec._explain; imported on first use, it needs numpy).  Runs the real encoder.  detail:
    the bytes from the start whose tokens keep full records (None: all; every block keeps its sums)."""
    from ._explain import explain as _explain

    return _explain(data, model=model, adapt=adapt, detail=detail)
