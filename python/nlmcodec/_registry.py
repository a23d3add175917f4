"""Where models come from: the model search path, the model cache and the codec pool.

Owns the answer to "which Model is this name, path or id?" and keeps what is shared by every stream of the
process: one Model per model file (loaded once, keyed by path, mtime and size) and a small pool of codecs per
(model, mode).  Imports only the core (_model, _core, _errors); the stream classes (_stream) and the
tools sit above it.

The search path (``model_dirs()``), first match wins for a name:

1. the package's own directory ``nlmcodec/models`` (the wheel ships the default model there), so that a
   name always means the shipped model;
2. the directories given to ``add_model_dir(path)``, in the order they were added;
3. the directories of the environment variable ``NLMCODEC_MODEL_PATH`` (os.pathsep-separated; read at each
   look-up, so it also reaches subprocesses such as the command line).

A frame names its model by id (the SHA-256 of the model file); decoding looks for that id in every directory
of the search path.  "default" is the default model of the first directory that has one (its default.nlmm,
else its newest "default-N"): the package's, in an installed package.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ._errors import NLMError

MODEL_SUFFIX = ".nlmm"
DEFAULT_NAME = "default"            # the name compress() uses when no model is given
ENV_MODEL_PATH = "NLMCODEC_MODEL_PATH"

lock = threading.Lock()
model_cache = {}            # (resolved path, mtime_ns, size) -> Model; ("id", path, mtime_ns, size) -> id
codec_pool = {}             # (model id, adapt) -> [free Codec, ...], oldest key first
POOL_PER_KEY = 2
POOL_KEYS = 8               # codecs are kept for this many (model, adapt) keys: a process that uses many
                            # models (fuzzing load_model found it) does not keep a codec for each forever
_added_dirs = []            # add_model_dir's directories, in the order added


# ---------------------------------------------------------------------------------------------- search path
def package_dir() -> Path:
    """The package's own model directory (the models shipped in the wheel)."""
    return Path(__file__).resolve().parent / "models"


def add_model_dir(path) -> None:
    """Add a directory to the model search path (after the package's own models and the directories added
    before it, before NLMCODEC_MODEL_PATH's).  Its NAME.nlmm files can then be named ("NAME") and are found
    by id when a frame names them.  Adding a directory twice has no further effect."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    p = Path(os.fspath(path)).resolve()
    if not p.is_dir():
        raise NotADirectoryError(f"no such model directory: {os.fspath(path)}")
    with lock:
        if p not in _added_dirs:
            _added_dirs.append(p)


def model_dirs() -> list:
    """The model search path, in order: the package's directory, add_model_dir's, NLMCODEC_MODEL_PATH's."""
    env = [Path(d) for d in os.environ.get(ENV_MODEL_PATH, "").split(os.pathsep) if d]
    with lock:
        added = list(_added_dirs)
    return [package_dir()] + added + env


def default_generation(name: str):
    """N for a model named "default-N" (the defaults shipped so far, oldest 1), else None."""
    head, sep, n = name.rpartition("-")
    return int(n) if sep and head == DEFAULT_NAME and n.isdigit() and n[0] != "0" else None


def model_files() -> dict:
    """{name: path} of the models on the search path (NAME.nlmm; the first directory holding a name wins).
    "default" is decided by the first directory holding a default model: its default.nlmm (a development
    checkout's own) if it has one, else its newest "default-N"."""
    files = {}
    default = None
    for d in model_dirs():
        try:
            entries = sorted(d.iterdir())
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        here = {e.name[:-len(MODEL_SUFFIX)]: e for e in entries if e.name.endswith(MODEL_SUFFIX) and e.is_file()}
        for n, e in here.items():
            files.setdefault(n, e)
        if default is None:
            gens = {g: e for n, e in here.items() if (g := default_generation(n)) is not None}
            default = here.get(DEFAULT_NAME) or (gens[max(gens)] if gens else None)
    if default is not None:
        files[DEFAULT_NAME] = default
    return files


def default_model_name() -> str:
    """The name of the model that "default" means ("default-N"), or "default"."""
    files = model_files()
    p = files.get(DEFAULT_NAME)
    for n, q in files.items():
        if n != DEFAULT_NAME and q == p and default_generation(n) is not None:
            return n
    return DEFAULT_NAME


def manifest_id(path: Path):
    """The model id recorded beside a model file (its manifest NAME.json: model_id_sha256, checked against
    the file by tests/test_model_file.py), or None.  Trusted only when the recorded size matches."""
    try:
        man = json.loads(Path(path).with_suffix(".json").read_text())
        mid = bytes.fromhex(man["model_id_sha256"])
        if len(mid) == 32 and int(man["size_bytes"]) == Path(path).stat().st_size:
            return mid
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def file_id(path: Path) -> bytes:
    """The id of the model file at path: its manifest's, else its SHA-256 (hashed once per file version)."""
    digest = manifest_id(path)
    if digest is None:
        st = path.stat()
        key = ("id", str(path.resolve()), st.st_mtime_ns, st.st_size)
        with lock:
            digest = model_cache.get(key)
        if digest is None:
            import hashlib

            digest = hashlib.sha256(path.read_bytes()).digest()
            with lock:
                model_cache[key] = digest
    return digest


# ---------------------------------------------------------------------------------------------- models
def _load_file(path, known_id=None):
    from ._model import Model

    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    with lock:
        m = model_cache.get(key)
    if m is None:
        m = Model.load(p)
        if known_id is not None:
            m._id = known_id            # computed once, when the model was bundled
        with lock:
            m = model_cache.setdefault(key, m)
    return m


def load_model(name_or_path="default"):
    """Return a Model: the name of a model on the search path ("default", ...; see nlmcodec.add_model_dir and
    NLMCODEC_MODEL_PATH) or a path to a .nlmm file.

    Models are cached (by path, modification time and size), so repeated calls are cheap and every codec,
    thread and stream of the process shares one model in memory.  A Model object is returned as is.
    """
    from ._model import Model

    if isinstance(name_or_path, Model):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"model must be a Model, a bundled model name or a path, not {type(name_or_path).__name__}")
    s = os.fspath(name_or_path)
    files = model_files()
    if isinstance(name_or_path, str) and s in files:
        m = _load_file(files[s], manifest_id(files[s]))
        if not m.name:
            m.name = s
        return m
    if os.path.isfile(s):
        return _load_file(s)
    raise FileNotFoundError(f"no bundled model named {s!r} (bundled: {', '.join(sorted(files)) or 'none'}) "
                            f"and no such file")


def default_model():
    """The model "default" names: the newest default-N (or a checkout's default.nlmm); in a checkout without
    one, "tiny" (the test model, when tests/models is on the search path) stands in."""
    files = model_files()
    for name in (DEFAULT_NAME, "tiny"):
        if name in files:
            return load_model(name)
    raise NLMError("no bundled model found (python/nlmcodec/models/default-N.nlmm); pass model=")


def default_model_names() -> list:
    """The names of the models compress() chooses from, per frame, when no model is given
    (_encode.choose_model), newest first: every default generation (default-N) of the directory that decides
    "default" (the package's, in an installed package).  A directory with its own default.nlmm (a
    development checkout) offers that one alone; [] when there is no default model."""
    files = model_files()
    p = files.get(DEFAULT_NAME)
    if p is None or p.name == DEFAULT_NAME + MODEL_SUFFIX:
        return [] if p is None else [DEFAULT_NAME]
    gens = ((g, n) for n, q in files.items() if q.parent == p.parent and (g := default_generation(n)))
    return [n for _, n in sorted(gens, reverse=True)]


def default_models() -> list:
    """The Models of default_model_names(); without any default model, default_model()'s stand-in."""
    names = default_model_names()
    return [load_model(n) for n in names] if names else [default_model()]


def name_by_id(model_id: bytes):
    """The name (its own, not the "default" alias) of the model on the search path whose id is model_id, or
    None.  Ids come from the manifests (recorded at bundling); a model without a usable manifest is hashed,
    once per file version."""
    files = model_files()
    own = {p: n for n, p in files.items() if n != DEFAULT_NAME}      # the alias's file has a name of its own
    for name, p in sorted((own.get(p, n), p) for n, p in files.items()):
        if file_id(p) == model_id:
            return name
    return None


def short_id(model_id: bytes) -> str:
    """The first 12 hex digits of a model id, as messages and ``-l`` show it."""
    return model_id.hex()[:12]


def describe_id(model_id: bytes):
    """How a message names the model on the search path whose id is model_id: "the bundled model `default-2`
    (a default model, id 95789fd5bee9...)", "the model `mine` (id 01d836c0af95..., in /some/dir)"; None when no
    model there has that id."""
    try:
        name = name_by_id(model_id)
    except OSError:
        return None
    if name is None:
        return None
    files = model_files()
    p = files[name]
    default = "a default model, " if name in default_model_names() else ""
    if p.parent == package_dir():
        return f"the bundled model `{name}` ({default}id {short_id(model_id)}...)"
    return f"the model `{name}` ({default}id {short_id(model_id)}..., in {p.parent})"


def model_by_id(model_id: bytes):
    """The model on the search path whose id is model_id, or None."""
    name = name_by_id(model_id)
    return None if name is None else load_model(name)


def candidates(model) -> list:
    """The models the encoder may use for model as given to compress(): None gives default_model_names()
    (names: _encode.choose_model loads only those it needs), else the one Model."""
    if model is None:
        return default_model_names() or [default_model()]
    return [load_model(model)]


# ---------------------------------------------------------------------------------------------- codec pool
def acquire_codec(model, adapt):
    """A codec for (model, adapt), adapt one of _frame.adapt_mode's values: heads mode's codecs are kept apart
    from dynamic ones (Codec.reset gives each the schedule of its mode)."""
    key = (model.model_id, adapt)
    with lock:
        free = codec_pool.get(key)
        if free:
            return free.pop()
    from ._core import Codec

    c = Codec(model, adapt)
    c.set_bit_stats(False)        # compress / decompress never read the information sums
    c._pool_key = key
    return c


def release_codec(codec):
    key = getattr(codec, "_pool_key", None)
    if key is None:
        return
    with lock:
        free = codec_pool.pop(key, [])        # re-inserted last: the keys stay in order of last use
        if len(free) < POOL_PER_KEY:
            free.append(codec)
        codec_pool[key] = free
        while len(codec_pool) > POOL_KEYS:
            del codec_pool[next(iter(codec_pool))]
