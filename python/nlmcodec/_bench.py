"""Benchmark helpers: the codec table, the benchmark files, the timing loop.

Shared by ``python -m nlmcodec -b FILE...`` (``bench_main``) and ``benchmarks/report.py``.
This module imports nothing from nlmcodec at import time (``benchmarks/report.py`` loads it by
path so the baselines can be measured even while the library is broken); the nlmcodec codecs
import the package lazily when they are built.

Codec names (the baseline names match ``shared/guide/anchor_sizes.json``):

=================  ===========================================================================
nlmcodec-static    ``nlmcodec.compress(data, model=M, adapt=False)``
nlmcodec-heads     ``nlmcodec.compress(data, model=M, adapt="heads")`` (the default: the output heads keep learning)
nlmcodec-dynamic   ``nlmcodec.compress(data, model=M, adapt=True)`` (the whole model keeps learning)
xz-9e              ``lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)``
xz-6               ``lzma.compress(data, preset=6)``
bz2-9              ``bz2.compress(data, 9)``
zlib-9             ``zlib.compress(data, 9)``
zstd-19            ``zstandard.ZstdCompressor(level=19)`` (package ``zstandard``, optional)
brotli-11          ``brotli.compress(data, quality=11, lgwin=24)`` (package ``brotli``, optional)
ppmd-o16           ``pyppmd.compress(data, max_order=16, mem_size=256 MiB, variant="I")`` (optional)
=================  ===========================================================================

Every measurement is in memory, single-threaded, and round-trip verified.
"""
from __future__ import annotations

import bz2
import lzma
import os
import platform
import statistics
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

# ----------------------------------------------------------------------------------------------
# Benchmark files
# ----------------------------------------------------------------------------------------------

ENGLISH = [
    "alice29.txt", "asyoulik.txt", "lcet10.txt", "plrabn12.txt",
    "book1", "book2", "paper1", "paper2", "paper3", "paper4", "paper5", "paper6", "news",
    "dickens",
]
QUICK = ["alice29.txt", "paper1", "paper5"]
SUBDIRS = ["canterbury", "calgary", "artificial", "silesia"]


def corpus_dir() -> Optional[str]:
    """The shared corpus folder, the one lookup everything uses: $NLMCODEC_CORPUS when set; else
    shared/corpus beside the repository (../shared/corpus from its root) or beside one of the folders
    above it, then the same from the current directory.  None when there is none (callers that need it
    say so, naming NLMCODEC_CORPUS: see require_corpus_dir)."""
    env = os.environ.get("NLMCODEC_CORPUS")
    if env:
        return os.path.normpath(env) if os.path.isdir(env) else None
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # <repo>/python/nlmcodec
    for start in (repo, os.getcwd()):
        d = start
        while True:
            c = os.path.join(os.path.dirname(d), "shared", "corpus")
            if os.path.isdir(c):
                return os.path.normpath(c)
            if os.path.dirname(d) == d:
                break
            d = os.path.dirname(d)
    return None


def require_corpus_dir() -> str:
    """corpus_dir(), or an error that says how to point at the corpus."""
    c = corpus_dir()
    if c is None:
        env = os.environ.get("NLMCODEC_CORPUS")
        raise FileNotFoundError(
            f"the shared corpus was not found: NLMCODEC_CORPUS={env!r} is not a folder" if env else
            "the shared corpus was not found: set NLMCODEC_CORPUS to its folder (the one with bench/, train/, "
            "dev/), or put it at ../shared/corpus beside the repository")
    return c


def _set_members(sub: str) -> List[str]:
    root = corpus_dir()
    if root is None:
        return []
    d = os.path.join(root, "bench", sub) if sub != "ood" else os.path.join(root, "ood")
    if not os.path.isdir(d):
        return []
    names = sorted(os.listdir(d))
    return [n[:-3] if n.endswith(".xz") else n for n in names if not n.startswith(".")]


def file_set(name: str) -> Optional[List[str]]:
    """Names of a file set (english, quick, canterbury, calgary, artificial, silesia, ood, all)."""
    if name == "english":
        return list(ENGLISH)
    if name == "quick":
        return list(QUICK)
    if name in SUBDIRS or name == "ood":
        return _set_members(name)
    if name == "all":
        out: List[str] = []
        for sub in SUBDIRS:
            out += _set_members(sub)
        return out
    return None


def expand_files(specs: Sequence[str]) -> List[str]:
    """Expand set names (``english``, ``all``, ...) and keep file names and paths as they are."""
    out: List[str] = []
    for s in specs:
        for part in str(s).split(","):
            part = part.strip()
            if not part:
                continue
            members = None if os.path.exists(part) else file_set(part)
            for m in (members if members is not None else [part]):
                if m not in out:
                    out.append(m)
    return out


def resolve_file(spec: str) -> str:
    """A path for a file name or path; benchmark names are looked up in the shared corpus
    (``dickens`` -> ``bench/silesia/dickens.xz``)."""
    if os.path.exists(spec):
        return spec
    root = corpus_dir()
    if root is not None:
        for sub in SUBDIRS:
            for cand in (spec, spec + ".xz"):
                p = os.path.join(root, "bench", sub, cand)
                if os.path.isfile(p):
                    return p
        p = os.path.join(root, "ood", spec)
        if os.path.isfile(p):
            return p
    raise FileNotFoundError(f"benchmark file not found: {spec!r} (corpus: {root})")


def read_file(spec: str) -> Tuple[str, bytes]:
    """(display name, bytes). A Silesia ``*.xz`` is decompressed in memory (never on disk)."""
    path = resolve_file(spec)
    with open(path, "rb") as f:
        data = f.read()
    name = os.path.basename(path)
    if name.endswith(".xz") and os.path.dirname(os.path.abspath(path)).endswith(os.path.join("bench", "silesia")):
        data = lzma.decompress(data)
        name = name[:-3]
    return name, data


# ----------------------------------------------------------------------------------------------
# Codecs
# ----------------------------------------------------------------------------------------------

@dataclass
class Codec:
    name: str                      # e.g. "xz-9e", "nlmcodec-dynamic"
    options: str                   # how it is called, for the report
    version: str
    compress: Callable[[bytes], bytes]
    decompress: Callable[[bytes], bytes]
    model_size: int = 0            # bytes of model/dictionary the decoder needs (LTCB style)
    model_id: str = ""
    extra: Dict[str, str] = field(default_factory=dict)


BASELINES = ["xz-9e", "xz-6", "bz2-9", "zlib-9", "zstd-19", "brotli-11", "ppmd-o16"]
NLM = ["nlmcodec-static", "nlmcodec-heads", "nlmcodec-dynamic"]
ALL_CODECS = NLM + BASELINES
REPORT_DEFAULT = ["nlmcodec-static", "nlmcodec-heads", "nlmcodec-dynamic", "xz-9e", "bz2-9", "zlib-9",
                  "zstd-19", "brotli-11", "ppmd-o16"]
ALIASES = {
    "nlm": NLM, "nlmcodec": NLM, "static": ["nlmcodec-static"], "dynamic": ["nlmcodec-dynamic"],
    "heads": ["nlmcodec-heads"], "nlm-static": ["nlmcodec-static"], "nlm-heads": ["nlmcodec-heads"],
    "nlm-dynamic": ["nlmcodec-dynamic"],
    "lzma": ["xz-9e"], "xz": ["xz-9e"], "lzma-9e": ["xz-9e"], "lzma-6": ["xz-6"],
    "bz2": ["bz2-9"], "bzip2": ["bz2-9"], "zlib": ["zlib-9"], "gzip": ["zlib-9"], "deflate": ["zlib-9"],
    "zstd": ["zstd-19"], "brotli": ["brotli-11"], "ppmd": ["ppmd-o16"], "pyppmd": ["ppmd-o16"],
    "baselines": BASELINES, "all": ALL_CODECS,
}


def expand_codecs(specs: Sequence[str]) -> List[str]:
    out: List[str] = []
    for s in specs:
        for part in str(s).split(","):
            part = part.strip().lower()
            if not part:
                continue
            names = ALIASES.get(part, [part])
            for n in names:
                if n not in ALL_CODECS:
                    raise ValueError(f"unknown codec {part!r}; known: {', '.join(ALL_CODECS)}")
                if n not in out:
                    out.append(n)
    return out


def _c_version(mod, symbol: str) -> str:
    try:
        import ctypes
        fn = getattr(ctypes.CDLL(mod.__file__), symbol)
        fn.restype = ctypes.c_char_p
        return fn().decode()
    except Exception:
        return "?"


def _liblzma_version() -> str:
    import _lzma
    return "liblzma " + _c_version(_lzma, "lzma_version_string")


def _libbz2_version() -> str:
    import _bz2
    return "libbz2 " + _c_version(_bz2, "BZ2_bzlibVersion").split(",")[0]


def _pkg_version(dist: str) -> str:
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return "?"


def model_file_size(model, spec) -> int:
    """Size in bytes of the model file a decoder needs (0 when unknown)."""
    if isinstance(spec, (str, os.PathLike)) and os.path.isfile(spec):
        return os.path.getsize(spec)
    for attr in ("path", "filename", "file"):
        p = getattr(model, attr, None)
        if isinstance(p, (str, os.PathLike)) and os.path.isfile(p):
            return os.path.getsize(p)
    name = spec if isinstance(spec, str) else getattr(model, "name", None)
    if isinstance(name, str):
        from nlmcodec._registry import model_files

        p = model_files().get(name)
        if p is not None:
            return p.stat().st_size
    to_bytes = getattr(model, "to_bytes", None)
    if callable(to_bytes):
        try:
            return len(to_bytes())
        except Exception:
            pass
    return 0


def _hex_id(mid) -> str:
    if mid is None:
        return ""
    if callable(mid):
        try:
            mid = mid()
        except Exception:
            return ""
    if isinstance(mid, (bytes, bytearray)):
        return bytes(mid).hex()
    if isinstance(mid, int):
        return f"{mid:016x}"
    return str(mid)


def _native_fingerprint(pkg, backend) -> str:
    """Short SHA-256 of the compiled extension, so runs (and a compress and a decompress worker)
    made with different builds of the C core can be told apart."""
    import glob
    import hashlib
    prefix = {"cython": "_nlm_cy", "cffi": "_nlm_cffi"}.get(str(backend), "_nlm")
    d = os.path.dirname(os.path.abspath(pkg.__file__))
    files = sorted(f for f in glob.glob(os.path.join(d, prefix + "*"))
                   if f.endswith((".so", ".pyd")) and (prefix != "_nlm_cffi" or "glue" not in f))
    if not files:
        return ""
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:10]


def load_nlm_model(spec):
    """nlmcodec model for a name ("default", or one on NLMCODEC_MODEL_PATH) or a path to a .nlmm file."""
    import nlmcodec
    return nlmcodec.load_model(spec)


def make_codec(name: str, model="default") -> Codec:
    """Build one codec; raises ImportError (or another error) when it is not available."""
    if name in NLM:
        import nlmcodec
        adapt = {"nlmcodec-static": False, "nlmcodec-heads": "heads", "nlmcodec-dynamic": True}[name]
        m = load_nlm_model(model)
        # "default": what compress() does without a model (the bundled default models, chosen per frame);
        # the table shows the newest one's file
        cm = None if model == "default" else m

        def comp(d, _m=cm, _a=adapt):
            return nlmcodec.compress(d, model=_m, adapt=_a)

        def decomp(c, _m=cm):
            try:
                return nlmcodec.decompress(c, model=_m)
            except TypeError:
                return nlmcodec.decompress(c)

        ver = getattr(nlmcodec, "__version__", None) or _pkg_version("nlmcodec")
        backend = getattr(nlmcodec, "backend", None)
        if backend is None:
            try:
                from nlmcodec import _backend
                backend = _backend.backend
            except Exception:
                backend = "?"
        build = _native_fingerprint(nlmcodec, backend)
        if build:
            backend = f"{backend}, build {build}"
        mname = model if isinstance(model, str) else getattr(m, "name", "?")
        return Codec(name, f"model={os.path.basename(str(mname))}, adapt={adapt}", f"{ver} ({backend})",
                     comp, decomp, model_file_size(m, model), _hex_id(getattr(m, "model_id", None)))
    if name == "xz-9e":
        return Codec(name, "preset=9|EXTREME", _liblzma_version(),
                     lambda d: lzma.compress(d, preset=9 | lzma.PRESET_EXTREME), lzma.decompress)
    if name == "xz-6":
        return Codec(name, "preset=6", _liblzma_version(), lambda d: lzma.compress(d, preset=6), lzma.decompress)
    if name == "bz2-9":
        return Codec(name, "compresslevel=9", _libbz2_version(), lambda d: bz2.compress(d, 9), bz2.decompress)
    if name == "zlib-9":
        return Codec(name, "level=9", "zlib " + zlib.ZLIB_RUNTIME_VERSION,
                     lambda d: zlib.compress(d, 9), zlib.decompress)
    if name == "zstd-19":
        import zstandard
        cctx, dctx = zstandard.ZstdCompressor(level=19), zstandard.ZstdDecompressor()
        return Codec(name, "level=19", f"zstandard {zstandard.__version__} (libzstd "
                     f"{'.'.join(map(str, zstandard.ZSTD_VERSION))})", cctx.compress, dctx.decompress)
    if name == "brotli-11":
        import brotli
        return Codec(name, "quality=11, lgwin=24", "brotli " + (getattr(brotli, "__version__", None)
                                                                or _pkg_version("brotli")),
                     lambda d: brotli.compress(d, quality=11, lgwin=24), brotli.decompress)
    if name == "ppmd-o16":
        import pyppmd
        kw = dict(max_order=16, mem_size=256 << 20, variant="I")
        return Codec(name, "max_order=16, mem_size=256MiB, variant=I", "pyppmd " + pyppmd.__version__,
                     lambda d: pyppmd.compress(d, **kw), lambda c: pyppmd.decompress(c, **kw))
    raise ValueError(f"unknown codec {name!r}")


def make_codecs(names: Sequence[str], model="default") -> Tuple[List[Codec], Dict[str, str]]:
    """The codecs that can be built, and {name: reason} for those that cannot."""
    ok: List[Codec] = []
    skipped: Dict[str, str] = {}
    for n in names:
        try:
            ok.append(make_codec(n, model))
        except Exception as exc:  # missing optional package, library not built, model missing
            skipped[n] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    return ok, skipped


# ----------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------

class RoundTripError(AssertionError):
    pass


def time_runs(fn: Callable[[bytes], bytes], arg: bytes, runs: int, warmup: int = 0):
    """(last output, [wall seconds], [cpu seconds]) over `runs` timed calls after `warmup` calls."""
    out = b""
    for _ in range(max(0, warmup)):
        out = fn(arg)
    walls, cpus = [], []
    for _ in range(max(1, runs)):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn(arg)
        w1, c1 = time.perf_counter(), time.process_time()
        walls.append(w1 - w0)
        cpus.append(c1 - c0)
    return out, walls, cpus


def kbps(nbytes: int, seconds: float) -> float:
    return nbytes / 1000.0 / seconds if seconds > 0 else float("inf")


def measure(codec: Codec, data: bytes, runs: int = 3, warmup: int = 0) -> Dict[str, float]:
    """Compress and decompress `runs` times each (median), verify the round trip."""
    comp, cw, cc = time_runs(codec.compress, data, runs, warmup)
    back, dw, dc = time_runs(codec.decompress, comp, runs, warmup)
    if back != data:
        raise RoundTripError(f"{codec.name}: round trip failed ({len(data)} bytes in, {len(back)} back)")
    return summarize(codec, len(data), len(comp), cw, cc, dw, dc)


def summarize(codec: Codec, n_in: int, n_out: int, cw, cc, dw, dc) -> Dict[str, float]:
    c_wall, d_wall = statistics.median(cw), statistics.median(dw)
    c_cpu, d_cpu = statistics.median(cc), statistics.median(dc)
    return {
        "codec": codec.name, "options": codec.options, "version": codec.version,
        "bytes_in": n_in, "bytes_out": n_out,
        "ratio": n_in / n_out if n_out else float("inf"),
        "bpb": 8.0 * n_out / n_in if n_in else 0.0,
        "c_s": c_wall, "d_s": d_wall, "c_cpu_s": c_cpu, "d_cpu_s": d_cpu,
        "c_kbps": kbps(n_in, c_wall), "d_kbps": kbps(n_in, d_wall),
        "runs": len(cw),
        "model_bytes": codec.model_size, "model_id": codec.model_id,
        "total_bytes": n_out + codec.model_size,
    }


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB.

    Linux: ``VmHWM`` from /proc/self/status (the peak of this process image).  Not ``ru_maxrss``:
    Linux carries the parent's peak into a spawned child through exec, so a worker started by a
    big parent would report the parent's size.  Elsewhere: ``ru_maxrss`` (KiB; bytes on macOS).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return float("nan")
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1e6 if sys.platform == "darwin" else r * 1024 / 1e6


# ----------------------------------------------------------------------------------------------
# Machine
# ----------------------------------------------------------------------------------------------

def machine_info() -> Dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = "%.2f %.2f %.2f" % os.getloadavg()
    except (OSError, AttributeError):
        load = "?"
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count() or 0
    return {
        "cpu": cpu, "cores": str(os.cpu_count()), "usable_cores": str(affinity), "loadavg": load,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
    }


def codec_versions(codecs: Sequence[Codec]) -> Dict[str, str]:
    return {c.name: c.version for c in codecs}


# ----------------------------------------------------------------------------------------------
# CLI: python -m nlmcodec -b FILE...
# ----------------------------------------------------------------------------------------------

def _opt(options, name, default=None):
    if options is None:
        return default
    if isinstance(options, dict):
        v = options.get(name, default)
    else:
        v = getattr(options, name, default)
    return default if v is None else v


def format_line(r: Dict[str, float], name: str, width: int = 16) -> str:
    """zstd -b / lzbench-like: ``codec  file : in -> out (xRatio, bpb), C KB/s, D KB/s``."""
    return (f"{r['codec']:<{width}} {name} : {r['bytes_in']:>10,d} -> {r['bytes_out']:>10,d} "
            f"(x{r['ratio']:6.3f}, {r['bpb']:6.3f} bpb), {r['c_kbps']:9.1f} KB/s C, "
            f"{r['d_kbps']:9.1f} KB/s D")


def bench_main(files, options=None) -> int:
    """Benchmark FILEs in memory with nlmcodec (static, heads and dynamic) and the baselines.

    `options` is the CLI's argparse Namespace (or a dict, or None). Attributes read, all optional:
    ``against`` (comma list, default ``lzma,bz2,zlib`` plus zstd/brotli/ppmd when installed),
    ``model`` (name or path, default "default"), ``adapt`` (False: static only; otherwise the three
    modes), ``runs`` / ``iterations`` (default 3; medians), ``quiet``, ``json``/``robot``
    (one JSON object per line instead of text).  Returns 0, or 1 when a file is missing or a
    round trip fails.  Set names (``english``, ``all``, ...) are accepted as FILEs.
    """
    out = sys.stdout
    err = sys.stderr
    files = expand_files(list(files or []))
    if not files:
        print("nlmcodec: -b needs at least one FILE", file=err)
        return 1
    against = _opt(options, "against", None)
    if against is None:
        base = ["xz-9e", "bz2-9", "zlib-9", "zstd-19", "brotli-11", "ppmd-o16"]
        optional = {"zstd-19", "brotli-11", "ppmd-o16"}
    else:
        base = expand_codecs([against] if isinstance(against, str) else list(against))
        base = [b for b in base if b not in NLM]
        optional = set()
    adapt = _opt(options, "adapt", None)
    if _opt(options, "no_adapt", False):
        adapt = False
    nlm = ["nlmcodec-static"] if adapt is False else list(NLM)
    model = _opt(options, "model", "default")
    runs = int(_opt(options, "runs", None) or _opt(options, "iterations", None) or 3)
    as_json = bool(_opt(options, "json", False) or _opt(options, "robot", False))
    quiet = bool(_opt(options, "quiet", False))

    codecs, skipped = make_codecs(base + nlm, model)  # xz-9e first: the others print their size against it
    for name, why in skipped.items():
        if name not in optional and not quiet:
            print(f"nlmcodec: -b: {name} skipped ({why})", file=err)
    if not codecs:
        return 1
    if not quiet and not as_json:
        mi = machine_info()
        print(f"# {mi['cpu']}, {mi['cores']} cores (load {mi['loadavg']}), {mi['python']}; "
              f"single thread, in memory, median of {runs}, round trip verified", file=out)
    rc = 0
    width = max(len(c.name) for c in codecs)
    for spec in files:
        try:
            name, data = read_file(spec)
        except OSError as exc:
            print(f"nlmcodec: {spec}: {exc}", file=err)
            rc = 1
            continue
        ref = None
        for codec in codecs:
            try:
                r = measure(codec, data, runs)
            except Exception as exc:
                print(f"nlmcodec: -b: {codec.name} on {name}: {type(exc).__name__}: {exc}", file=err)
                rc = 1
                continue
            r["file"] = name
            if codec.name == "xz-9e":
                ref = r["bytes_out"]
            if as_json:
                import json
                print(json.dumps(r), file=out)
            else:
                line = format_line(r, name, width)
                if ref and codec.name != "xz-9e":
                    line += f"  [{r['bytes_out'] / ref:.3f} of xz-9e]"
                if r["model_bytes"]:
                    line += f"  (+model {r['model_bytes']:,d} B)"
                print(line, file=out)
            out.flush()
    return rc


if __name__ == "__main__":  # pragma: no cover - manual use: python -m nlmcodec._bench FILE...
    sys.exit(bench_main(sys.argv[1:], None))
