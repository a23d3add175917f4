"""Whole-corpus compressions with the bundled default model, computed once per test session.

The slow tests (round trips, ratio targets, the ratio-regression CSV) all need the same frames; this
module compresses each (file, mode) once and decompresses it once.  With pytest-xdist the tests of one
file share an xdist_group, so they run in the same worker and hit the same cache.
"""
import functools
import lzma
import pathlib

import nlmcodec

import os

REPO = pathlib.Path(__file__).resolve().parents[1]


SKIP_REASON = ("needs the shared corpus: set NLMCODEC_CORPUS to its folder (or put it at ../shared/corpus "
               "beside the repository)")


class MissingCorpus:
    """CORPUS when there is no corpus: false, and any path made from it skips what asked for it (the test, or
    the whole module when that happens at import, e.g. in a parametrize list) with SKIP_REASON.  So a clean
    clone collects and runs everything that does not need the corpus."""

    def __bool__(self):
        return False

    def __truediv__(self, other):
        import pytest

        raise pytest.skip.Exception(SKIP_REASON, allow_module_level=True)

    def __fspath__(self):
        return self / ""

    def __str__(self):
        return str(self / "")


def _corpus_root():
    """The corpus of nlmcodec._bench.corpus_dir ($NLMCODEC_CORPUS, else ../shared/corpus beside the
    repository), or MissingCorpus()."""
    from nlmcodec._bench import corpus_dir

    d = corpus_dir()
    return pathlib.Path(d) if d else MissingCorpus()


CORPUS = _corpus_root()


def corpus_files():
    """Every file under bench/ (Silesia .xz included, decompressed on reading) and ood/."""
    out = []
    for sub in ("bench", "ood"):
        root = CORPUS / sub
        if root.is_dir():
            out += sorted(p for p in root.rglob("*") if p.is_file())
    return out


def corpus_params():
    """pytest params of corpus_files(), grouped per file for pytest-xdist (--dist loadgroup)."""
    import pytest

    return [pytest.param(p, id=name_of(p), marks=pytest.mark.xdist_group(name_of(p))) for p in corpus_files()]


def name_of(path):
    p = pathlib.Path(path)
    return p.name[:-3] if p.suffix == ".xz" else p.name


def find(name):
    for p in corpus_files():
        if name_of(p) == name:
            return p
    raise FileNotFoundError(name)


def head_text(path, limit, sep="\n", cut=False) -> bytes:
    """The first documents of a .jsonl.xz shard joined by sep, until limit characters (cut: exactly)."""
    import json

    out, n = [], 0
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)["text"]
            out.append(t)
            n += len(t)
            if n >= limit:
                break
    text = sep.join(out)
    return (text[:limit] if cut else text).encode("utf-8")


@functools.lru_cache(maxsize=4)
def read(path) -> bytes:
    data = pathlib.Path(path).read_bytes()
    return lzma.decompress(data) if str(path).endswith(".xz") else data


# A folder the session's workers share (conftest.py sets it for the pytest session, xdist workers inherit it):
# a frame compressed by one worker is read by the others, e.g. the sums over the fourteen English files in the
# dickens group, whose other files' frames are made in their own groups.
SHARED_FRAMES_ENV = "NLMCODEC_TEST_FRAMES"


@functools.lru_cache(maxsize=None)
def frame(path, adapt: bool) -> bytes:
    """The frame compress() writes without a model (it chooses between the bundled default models); made once
    per session when SHARED_FRAMES_ENV names a folder (a worker that wants a frame another is making waits for
    it), else once per process."""
    shared = os.environ.get(SHARED_FRAMES_ENV)
    if not shared:
        return nlmcodec.compress(read(path), adapt=adapt)
    import fcntl

    from nlmcodec._explain import MODE_NAMES

    stem = pathlib.Path(shared) / f"{name_of(path)}.{MODE_NAMES[adapt]}"
    done = stem.with_name(stem.name + ".nlm")
    with open(stem.with_name(stem.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return done.read_bytes()
        out = nlmcodec.compress(read(path), adapt=adapt)
        part = stem.with_name(stem.name + ".part")
        part.write_bytes(out)
        os.replace(part, done)
        return out


@functools.lru_cache(maxsize=None)
def round_trips(path, adapt: bool) -> bool:
    """frame(path, adapt) decodes to the file.  A frame of another mode than the default with no word-model block,
    whose blocks are the default mode's frame's byte for byte, decodes as that frame does (the mode, flag bits 0
    and 4 of docs/format.md §7.1, is a rule of the word model, §6; the byte model, §9, has none): the default
    mode's round trip stands for it (the byte-model files, reymont and xml among them, are not decoded three
    times)."""
    from nlmcodec import _frame as F

    f = frame(path, adapt)
    if adapt != F.DEFAULT_ADAPT:
        blocks = list(F.iter_blocks(f))
        default = list(F.iter_blocks(frame(path, F.DEFAULT_ADAPT)))
        if not any(b[0] == F.BLOCK_MODEL for b in blocks) and default == blocks:
            return round_trips(path, F.DEFAULT_ADAPT)
    return nlmcodec.decompress(f) == read(path)


@functools.lru_cache(maxsize=None)
def xz9e_size(path) -> int:
    return len(lzma.compress(read(path), preset=9 | lzma.PRESET_EXTREME))


def has_default_model() -> bool:
    try:
        nlmcodec.load_model("default")
        return True
    except Exception:
        return False


def repository_english() -> bytes:
    """70 KB of real English that the repository itself holds: the golden vectors' fallback input is alice29.txt's
    first 30,000 bytes, 140,000 tabs, then its next 40,000."""
    raw = (REPO / "codec" / "vectors" / "inputs" / "142cf5db1652efe7.raw").read_bytes()
    return (raw[:30000] + raw[170000:]).replace(b"\r\n", b"\n").lstrip()


def short_text(limit=4000) -> bytes:
    """The first `limit` bytes of asyoulik.txt cut after a newline (without the corpus, of the repository's
    alice29.txt, repository_english): the small real input of the file-layer tests."""
    p = CORPUS / "bench" / "canterbury" / "asyoulik.txt" if CORPUS else None
    text = p.read_bytes()[:limit] if p is not None and p.is_file() else repository_english()[:limit]
    return text[:text.rindex(b"\n") + 1]
