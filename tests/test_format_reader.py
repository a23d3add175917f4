"""test_format_reader.py: docs/format.md §1–§6 and §9 are complete: tests/format_reader.py, a second reader
written from that text alone (numpy float32 and Python integers, no code shared with csrc/), decodes the
word-model blocks of the golden vectors of formats 13 to 17 (codec/vectors/vectorset.py) to the vectors' bytes,
and their byte-model blocks (§9.1-§9.5, byte model 1 of formats 13 to 15; §9.7, byte model 2 of formats 16 and
17) where the runs are short and untracked (byte_vectors()).
The word-model blocks of formats 15 and 16, and of format 17's untracked groups, are format 14's (format 15
changed the encoder and added tracked groups, §7.2, format 16 the byte model, §9.7; neither is this reader's):
vectors of formats 14 to 17 whose word-model blocks are the same byte for byte, for the same model and mode, are
decoded once, as the newest format's (newest_of_twins).  Not read yet: format 17's routed blocks (routed(): a
tracked group's word-model blocks, §3.8, which need byte model 2 and token steps without a coder), format 17's
news_64k-* among them (its fallback-* carry the context across blocks).

Covered, per format: every model type of §2.4–§2.5 (tiny: elman; tiny-lstm; tiny-nplm; tiny-kn: elman with
the Kneser-Ney expert; the default model, elman at full size: default-2 for format 13, default-3 for 14) in the
three modes (static with the integer forward of §2.6, dynamic with §6, heads with §6.5 and its rates): unknown
words spelled by the byte model (§5.4) and the body mixer (§5.1.1), the match flag (§3.4) and the token cache
(§3.6), gaps by §3.3 and §5.3 (format 13) or the gap mixer of §3.7 (format 14), the context carried across
segments and blocks, across a byte-model block between word-model blocks (fallback-<default>) and over two
blocks of 64 KiB of news (news_64k-<default>).  Vectors without a word-model block give the second reader
nothing to decode and are not listed (the nomodel ones, binary, one_byte, mixed, empty, and the fallback and
news_64k frames whose blocks the encoder gave to the byte model).

Left out, for time (minutes of pure-Python decoding each): the fallback-* and news_64k-* vectors of the older
formats, the default model's in dynamic mode (about two minutes each; the tiny model's are read instead) and
in static mode, and those of the other tiny models; the tracked-* vectors (270 KB each; their word-model blocks
are coded as in any group, and the tracked byte-model run, §7.2, is not this reader's).  Their paths are covered by others:
the context carried over 64-KiB blocks and across a byte-model block by the current format's fallback-* and
news_64k-* (the default model in heads mode, the tiny model in dynamic mode: §6's updates do not depend on the
model's size; static mode carries the context as the others do, and its integer forward, §2.6, is taken by its
other vectors; format 13 differs only in the gap coding, which its other vectors take), and each
tiny model's own arithmetic (the lstm and nplm transitions and their backward, the Kneser-Ney mixture) in every
mode by its alice_4k, short_english, spelled and repeats vectors; no rule of the format depends on both.

Marked slow (30 s to minutes of CPU each on the shared 2-core machine): the fallback-* and news_64k-*; spelled-*
and repeats-* of tiny-lstm, tiny-nplm and tiny-kn (about 10 s each: the spelling and match paths they load are
taken in the quick lane by the tiny and default vectors of the same names, since the speller, the body mixer, the match flag and the token cache do not depend on the model type, and the models'
own arithmetic by their alice_4k and short_english vectors), and every vector of a frozen older format (format
13: its rules are unchanged, and the current format's vectors take the same paths but for the gaps)."""
import os
import pathlib
import sys

import pytest

import nlmcodec
from format_reader import Reader, byte_block, word_blocks
from nlmcodec import _registry

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "codec" / "vectors"))
import vectorset as VS  # noqa: E402

# The second reader runs no binding (it is pure Python over the vectors' bytes): it runs once, in the default
# (Cython) lane of .ci/run, not again in the cffi lane.
pytestmark = pytest.mark.skipif(os.environ.get("NLMCODEC_BACKEND") == "cffi",
                                reason="binding-independent: run in the Cython lane")

TINY = ("tiny", "tiny-lstm", "tiny-nplm", "tiny-kn")
DEFAULT_OF = {13: "default-2", 14: "default-3", 15: "default-3", 16: "default-3", 17: "default-3"}   # each format's
TWINS = (14, 15, 16, 17)            # default model; formats whose word-model blocks decode alike (§7.1; format 17's
                                    # untracked groups' blocks are format 16's, its tracked ones route lines, §3.8)
MODES = (False, True, "heads")


def has_word_blocks(v):
    return any(kind == 2 for _, kind, _, _ in word_blocks(v.frame())[1])


def word_payloads(v):
    return tuple((size, payload) for _, kind, size, payload in word_blocks(v.frame())[1] if kind == 2)


def routed(v):
    """A format-17 vector with a word-model block in a tracked group: its blocks start with a route byte and lines
    of them may be coded by the group's byte-model run (§3.8), which needs byte model 2 (§9.7): not this
    reader's yet (issue 41)."""
    if v.format_version < 17:
        return False
    track = 0
    for start, kind, _, _ in word_blocks(v.frame())[1]:
        track = start if start else track
        if kind == 2 and track > 1:
            return True
    return False


def heavy_read(v, dflt):
    """Whether a fallback-* or news_64k-* vector is read: the current format's, the default model's in heads mode
    (the default mode) and the tiny model's in dynamic mode (for time: the default model's dynamic ones take
    minutes, its static ones half a minute each); format 17's news_64k-* route lines (routed()): its fallback-*
    carry the context across blocks for it."""
    return v.format_version == nlmcodec.FORMAT_VERSION and (
        (v.model == dflt and v.adapt == "heads") or (v.model == "tiny" and v.adapt is True))


def newest_of_twins(vectors):
    """vectors less those of formats 14 to 16 whose word-model blocks a vector of a newer format of TWINS among
    them holds byte for byte, for the same model and mode (each decoded once, as the newest format's)."""
    seen, out = set(), []
    for v in sorted(vectors, key=lambda v: -v.format_version):
        twin = (v.model, v.adapt, word_payloads(v))
        if v.format_version in TWINS and twin in seen:
            continue
        if v.format_version in TWINS:
            seen.add(twin)
        out.append(v)
    return sorted(out, key=lambda v: (v.format_version, v.key))


VECTORS = newest_of_twins(
    [v for ver, dflt in DEFAULT_OF.items() for v in VS.ok_vectors(ver) if v.model in TINY + (dflt,)
     and has_word_blocks(v)
     and (heavy_read(v, dflt) or not v.name.startswith(("fallback-", "news_64k-")))   # for time
     and not v.name.startswith("tracked-")       # for time: 270 KB, word-model blocks like any other
     and not routed(v)])
SLOW = {v.key for v in VECTORS if v.name.startswith(("fallback-", "news_64k-"))
        or (v.model in ("tiny-lstm", "tiny-nplm", "tiny-kn") and v.name.startswith(("spelled-", "repeats-")))
        or v.format_version < nlmcodec.FORMAT_VERSION}      # a frozen older format: the slow lane
_readers = {}


def reader_for(model, adapt):
    if model not in _registry.model_files():
        pytest.skip(f"model {model} is not on the model search path")
    if model not in _readers:
        m = nlmcodec.load_model(model)
        _readers[model] = Reader(m.config, m.params, m.ms, list(m.vocab), m.class_start, m.speller_prime, adapt,
                                 m.kn)
    return _readers[model]


@pytest.mark.parametrize("version", (13, TWINS[-1]))
def test_there_are_vectors_of_every_model_and_mode(version):
    dflt = DEFAULT_OF[version]
    vecs = [v for v in VECTORS if v.format_version == version]
    quick = [v for v in vecs if not v.name.startswith(("fallback-", "news_64k-"))
             and not (v.model in ("tiny-lstm", "tiny-nplm", "tiny-kn") and v.name.startswith(("spelled-", "repeats-")))]
    for model in TINY + (dflt,):
        for adapt in MODES:
            names = {v.name.split("-")[0] for v in quick if v.model == model and v.adapt == adapt}
            assert {"alice_4k", "short_english"} <= names, (model, adapt, names)
            if model in ("tiny", dflt):       # (format 17's repeats-* route lines: see routed())
                assert {"spelled", "repeats"} - ({"repeats"} if version >= 17 else set()) <= names, (model, adapt, names)
    for adapt in (True, "heads"):    # word-model blocks on both sides of a byte-model block; two blocks of 64 KiB
        name = VS.ADAPT_NAMES[adapt]
        model = "tiny" if adapt is True else dflt
        heavy = {f"v{version}/fallback-{model}-{name}", f"v{version}/news_64k-{model}-{name}"}
        read = {k for k in heavy if not routed(VS.ok_vector(k))} if version == nlmcodec.FORMAT_VERSION else set()
        assert (read or version < nlmcodec.FORMAT_VERSION) and read <= SLOW, (adapt, read)
        assert not (heavy - read) & {v.key for v in VECTORS}, (adapt, heavy - read)
    assert all((v.key in SLOW) == (version < nlmcodec.FORMAT_VERSION) for v in quick)


@pytest.mark.parametrize("v", [pytest.param(v, id=v.key, marks=[pytest.mark.slow] if v.key in SLOW else [])
                               for v in VECTORS])
def test_second_reader_decodes_the_golden_vector(v):
    frame, raw = v.frame(), v.raw()
    adapt, blocks = word_blocks(frame)
    assert adapt == v.adapt
    # by id: the manifest's name is the one the model had when the vector was made
    reader, off, decoded = reader_for(_registry.name_by_id(bytes.fromhex(v.model_id)) or v.model, adapt), 0, 0
    for start, kind, size, payload in blocks:
        if start:
            reader.reset(adapt, frame[4])
        if kind == 2:
            assert reader.decode_block(payload, size) == raw[off:off + size], f"block at {off}"
            decoded += 1
        off += size
    assert off == len(raw) and decoded >= 1


BYTE_MODEL_OF = {13: 1, 14: 1, 15: 1, 16: 2, 17: 2}    # formats.h's byte_model column (§9.7)
BYTE_RUN_LIMIT = 4096        # bytes a vector's byte-model runs code, at most (pure Python: about 1 KB a second)


def byte_vectors():
    """One vector of each distinct coding of byte-model blocks (the byte model and the blocks' sizes and payloads)
    whose runs code at most BYTE_RUN_LIMIT bytes, in groups that are not tracked (a tracked group's run learns its
    other blocks too, §7.2: the vectors that have one code 210 KB and more, minutes of this reader)."""
    seen, out = set(), []
    for ver in sorted(DEFAULT_OF, reverse=True):        # (a coding is read as its newest format's)
        for v in VS.ok_vectors(ver):
            frame = v.frame()
            if frame[:4] != b"\xb1NLM":
                continue
            blocks = word_blocks(frame)[1]
            byte = tuple((size, payload) for _, kind, size, payload in blocks if kind == 3)
            if not byte or any(start > 1 for start, *_ in blocks) or sum(n for n, _ in byte) > BYTE_RUN_LIMIT:
                continue
            if (BYTE_MODEL_OF[ver], byte) not in seen:
                seen.add((BYTE_MODEL_OF[ver], byte))
                out.append(v)
    return sorted(out, key=lambda v: v.key)


BYTE_VECTORS = byte_vectors()


def test_byte_vectors_take_both_byte_models():
    assert {BYTE_MODEL_OF[v.format_version] for v in BYTE_VECTORS} == {1, 2}
    assert {v.name.split("-")[0] for v in BYTE_VECTORS if v.format_version == nlmcodec.FORMAT_VERSION} >= \
        {"binary", "mixed", "concat"}


@pytest.mark.parametrize("v", BYTE_VECTORS, ids=lambda v: v.key)
def test_second_reader_decodes_the_byte_model_blocks(v):
    """§9.1-§9.5 (byte model 1) and §9.7 (byte model 2): the vector's byte-model blocks decode to its bytes, each
    run starting at its first block and carried over the next ones (a group start ends it)."""
    frame, raw = v.frame(), v.raw()
    off, run, decoded = 0, None, 0
    for start, kind, size, payload in word_blocks(frame)[1]:
        if start:
            run = None
        if kind == 3:
            run, out = byte_block(run, BYTE_MODEL_OF[v.format_version], payload, size, False)
            assert out == raw[off:off + size], f"block at {off}"
            decoded += 1
        off += size
    assert decoded >= 1
