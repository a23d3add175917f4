"""nlmcodec on a Dask cluster: this module owns compressing and decompressing collections of files with
dask.distributed (one task per file), the worker plugin that loads the models once per worker process,
and the per-file task functions, which any scheduler can run (client.map, dask.delayed, Ray, Spark...).

    from dask.distributed import Client
    import nlmcodec.dask
    client = Client("scheduler:8786")                        # or LocalCluster(...)
    nlmcodec.dask.compress_files(paths, client=client, model="default", adapt=False)   # x -> x.nlm
    nlmcodec.dask.decompress_files([p + ".nlm" for p in paths], client=client)       # x.nlm -> x

Paths are local paths as every worker sees them (a shared filesystem); for object stores use fsspec's
"nlm" compression with dask.bag instead (nlmcodec._fsspec).  Each output is written to a temporary file
in its destination directory, fsynced and renamed into place (os.replace), so a reader never sees a
partial file and a failed or cancelled task leaves nothing behind.  The bytes are those of
nlmcodec.compress(data, ...) of each whole file, whichever worker made them.

The model is named (bundled name or .nlmm path), never shipped with the tasks: each worker process loads
it through nlmcodec.load_model, whose process-wide cache (path, mtime, size) and codec pool every later
task of that process reuses.  NLMCodecPlugin does the loading when a worker starts (or when it is
registered), so no task pays for it; it also makes the worker import nlmcodec, which registers the "nlm"
compression with fsspec there (dask.bag.read_text("*.txt.nlm") on a cluster needs that).  Workers started
by hand can do the same with ``dask worker --preload nlmcodec.dask``; dask's local process scheduler with
``dask.config.set({"multiprocessing.initializer": nlmcodec.dask.init_process})``.
"""
import functools
import hashlib
import os
import tempfile
import time

from distributed.diagnostics.plugin import WorkerPlugin

import nlmcodec
from . import _registry
from ._frame import CHECK_CRC32, DEFAULT_ADAPT

__all__ = ["NLMCodecPlugin", "compress_file", "compress_files", "decompress_file", "decompress_files",
           "init_process"]

CHUNK = 1 << 20          # bytes read from an input at a time


def init_process():
    """Process initializer: makes the process import nlmcodec (and so know fsspec's "nlm")."""
    return nlmcodec.backend


def _model_arg(model):
    """None, a bundled name, or a path made absolute (a worker's working directory may differ)."""
    if model is None:
        return None
    if isinstance(model, (str, os.PathLike)):
        s = os.fspath(model)
        if isinstance(model, str) and s in _registry.model_files():
            return s
        return os.path.abspath(s) if os.path.isfile(s) else s
    raise TypeError("model must be a bundled model name or a path to a .nlmm file (the workers load it "
                    f"themselves), not {type(model).__name__}")


def _load(model):
    """The model of this process (loaded once, then from nlmcodec's cache); None: the bundled default
    models (loaded; None is returned: the encoder chooses between them per frame)."""
    if model is None:
        _registry.default_models()
        return None
    return _registry.load_model(model)


class NLMCodecPlugin(WorkerPlugin):
    """Worker plugin: on each worker, import nlmcodec and load the models named (None: the bundled
    default) into the process-wide cache that the tasks use."""

    idempotent = True       # registering the same plugin again does not run setup again

    def __init__(self, models=(None,)):
        self.models = tuple(_model_arg(m) for m in models)
        self.name = "nlmcodec:" + ",".join("" if m is None else m for m in self.models)

    def setup(self, worker=None):
        for m in self.models:
            _load(m)


# ------------------------------------------------------------------------------------ one file (a task)
def _atomic_write(dst, src_mode, write, overwrite):
    """Call write(out), where out(b) appends b to a temporary file beside dst; then fsync the file, give
    it src_mode's permission bits and rename it to dst.  Returns (bytes written, sha256 hex of them)."""
    dst = os.fspath(dst)
    if not overwrite and os.path.lexists(dst):
        raise FileExistsError(f"{dst} exists (pass overwrite=True to replace it)")
    d, name = os.path.split(os.path.abspath(dst))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            h = hashlib.sha256()
            n = 0

            def out(b):
                nonlocal n
                if b:
                    f.write(b)
                    h.update(b)
                    n += len(b)

            write(out)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, src_mode & 0o777)
        os.replace(tmp, dst)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return n, h.hexdigest()


def _result(src, dst, bytes_in, written, t0):
    n, digest = written
    return {"src": os.fspath(src), "dst": os.fspath(dst), "bytes_in": bytes_in, "bytes_out": n,
            "sha256": digest, "seconds": time.perf_counter() - t0, "pid": os.getpid()}


def compress_file(src, dst=None, *, model=None, adapt=DEFAULT_ADAPT, check=CHECK_CRC32, threads=1, overwrite=False):
    """Compress the file src into dst (default: src + ".nlm") atomically; the bytes are those of
    nlmcodec.compress(open(src, "rb").read(), model=model, adapt=adapt, check=check).  The input is read
    in 1 MiB pieces, so memory is bounded whatever its size.  Returns a dict: src, dst, bytes_in,
    bytes_out, sha256 (of the output), seconds, pid."""
    t0 = time.perf_counter()
    dst = os.fspath(src) + ".nlm" if dst is None else dst
    m = _load(_model_arg(model))        # None: the bundled default models, chosen per frame
    bytes_in = 0
    with open(src, "rb") as fin:
        st = os.fstat(fin.fileno())

        def write(out):
            nonlocal bytes_in
            c = nlmcodec.NLMCompressor(model=m, adapt=adapt, check=check, threads=threads)
            while chunk := fin.read(CHUNK):
                bytes_in += len(chunk)
                out(c.compress(chunk))
            out(c.flush())

        written = _atomic_write(dst, st.st_mode, write, overwrite)
    return _result(src, dst, bytes_in, written, t0)


def _strip_suffix(src, suffix):
    s = os.fspath(src)
    if not s.endswith(suffix) or len(os.path.basename(s)) <= len(suffix):
        raise ValueError(f"{s}: no {suffix} suffix to strip (name the output)")
    return s[:-len(suffix)]


def decompress_file(src, dst=None, *, model=None, threads=1, overwrite=False, suffix=".nlm"):
    """Decompress the file src (every frame in it) into dst (default: src without its ".nlm")
    atomically.  model: needed only for frames made with a model that is not bundled.  Returns a dict as
    compress_file does (bytes_in: compressed size)."""
    t0 = time.perf_counter()
    dst = _strip_suffix(src, suffix) if dst is None else dst
    model = _model_arg(model)
    m = None if model is None else _load(model)
    with open(src, "rb") as fin:
        st = os.fstat(fin.fileno())

        def write(out):
            with nlmcodec.NLMFile(fin, "rb", model=m, threads=threads) as f:
                while piece := f.read(CHUNK):
                    out(piece)

        written = _atomic_write(dst, st.st_mode, write, overwrite)
    return _result(src, dst, st.st_size, written, t0)


# ------------------------------------------------------------------------------------ many files (a cluster)
def _client(client):
    if client is not None:
        return client
    from distributed import default_client

    return default_client()


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:             # not visible from the client: the worker will say so
        return 0


def _run(client, fn, srcs, dsts, models, kwargs):
    client = _client(client)
    srcs = [os.path.abspath(s) for s in srcs]          # a worker's working directory may differ
    dsts = [os.path.abspath(d) for d in dsts]
    if len(dsts) != len(srcs):
        raise ValueError(f"{len(srcs)} inputs but {len(dsts)} outputs")
    if len(set(dsts)) != len(dsts):
        raise ValueError("two inputs would be written to the same output")
    client.register_plugin(NLMCodecPlugin(models))
    # largest first: the last tasks to start are the short ones, so the workers finish together
    order = sorted(range(len(srcs)), key=lambda i: -_size(srcs[i]))
    tag = os.urandom(4).hex()
    futures = client.map(functools.partial(fn, **kwargs), [srcs[i] for i in order], [dsts[i] for i in order],
                         key=[f"nlmcodec-{fn.__name__}-{tag}-{i}" for i in order])
    results = client.gather(futures)
    out = [None] * len(srcs)
    for i, r in zip(order, results):
        out[i] = r
    return out


def compress_files(paths, outputs=None, *, client=None, model=None, adapt=DEFAULT_ADAPT, check=CHECK_CRC32,
                   threads=1, overwrite=False):
    """Compress each file of paths on the cluster of client (None: dask's default client), one task per
    file, into outputs (default: each path + ".nlm").  model: a bundled name or a .nlmm path every worker
    can read (None: the bundled default), loaded once per worker.  Returns compress_file's dicts, in the
    order of paths; the first failure is raised (outputs already written are kept, none is partial)."""
    paths = list(paths)
    outputs = [os.fspath(p) + ".nlm" for p in paths] if outputs is None else [os.fspath(o) for o in outputs]
    model = _model_arg(model)
    return _run(client, compress_file, paths, outputs, (model,),
                dict(model=model, adapt=adapt, check=check, threads=threads, overwrite=overwrite))


def decompress_files(paths, outputs=None, *, client=None, model=None, threads=1, overwrite=False,
                     suffix=".nlm"):
    """Decompress each file of paths on the cluster, one task per file, into outputs (default: each path
    without its suffix).  model: only for frames of a model that is not bundled (loaded once per
    worker); bundled models are found by the id in each frame.  Returns decompress_file's dicts."""
    paths = list(paths)
    outputs = [_strip_suffix(p, suffix) for p in paths] if outputs is None else [os.fspath(o) for o in outputs]
    model = _model_arg(model)
    return _run(client, decompress_file, paths, outputs, () if model is None else (model,),
                dict(model=model, threads=threads, overwrite=overwrite))
