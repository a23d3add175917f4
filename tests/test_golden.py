"""Golden vectors (codec/vectors, layout in codec/vectors/vectorset.py): the frozen formats' vectors keep their
bytes (FROZEN pins each format's manifest), ok vectors decode byte-exactly and re-encode to the same bytes (lzma
blocks compared by what they decode to, so the test does not depend on the installed liblzma), error vectors
are rejected with their message, retired formats with one line naming the release that reads them, and both
bindings agree (the other one through a subprocess)."""
import hashlib
import sys
from pathlib import Path

import pytest

import nlmcodec
from nlmcodec import _encode, _frame

VEC = Path(__file__).resolve().parent.parent / "codec" / "vectors"
sys.path.insert(0, str(VEC))
import vectorset as VS  # noqa: E402

# The format policy (docs/format.md): a released format's vectors never change.  Each frozen format's manifest
# entries (every frame's and input's SHA-256 included) hash to this; a new format adds its own line.
FROZEN = {13: "615bd8699ee29f9d140fc678cb855761d0fbf89908726d60e684cb082cb4abb4",
          14: "682dd1c49dbbee0b248d72132837095eb5381040f217a26651aa73bfacdfebe6",
          15: "03fe664a9fddff5057bab46610158d5c1371da8c1cd0195d9509579bb416a68e",
          16: "c48fba013538295121beef5a15f88a7e6c76c8c965becc4fff6fa41a525b7fbe",
          17: "4546c19198c3c3810c4f33d02c82521b5d906f229e3d18abaf0285d3e8ef8250"}

OK = VS.ok_vectors()
ERRORS = VS.error_vectors()


def test_frozen_formats_keep_their_vectors():
    """Every format this build reads is frozen with a pinned digest, and its vectors are the pinned ones."""
    assert set(FROZEN) == set(_frame.READ_VERSIONS)
    for version, digest in FROZEN.items():
        assert VS.frozen_digest(version) == digest, f"the vectors of frozen format {version} changed"


def test_every_file_is_what_the_manifest_says():
    m = VS.manifest()
    files = {p.relative_to(VEC).as_posix() for p in VEC.rglob("*") if p.is_file() and p.suffix in (".nlm", ".raw")}
    listed = {v.path.relative_to(VEC).as_posix() for v in OK + ERRORS}
    listed |= {f"inputs/{i}.raw" for i in m["inputs"]}
    assert files == listed
    for v in OK + ERRORS:
        assert hashlib.sha256(v.frame()).hexdigest() == v.entry["sha256"], v.key
    for i, e in m["inputs"].items():
        raw = (VEC / "inputs" / f"{i}.raw").read_bytes()
        assert VS.input_id(raw) == i and VS.sha256(raw) == e["sha256"] and len(raw) == e["size"]


def test_vectors_cover_every_model_type_mode_and_path():
    """Per model type (docs/format.md §2.4) a word-model frame in each mode; the fallback, the byte model, the
    Kneser-Ney mixture, a frame without a check, concatenated frames; under 250 files per format."""
    have = set()
    for v in OK:
        if v.model and any(b.kind == "model" for b in nlmcodec.get_frame_info(v.frame()).blocks):
            have.add((nlmcodec.load_model(v.model).config["arch"], v.adapt))
    assert have == {(a, d) for a in ("elman", "lstm", "nplm") for d in (False, True, "heads")}
    names = {v.name for v in OK}
    for n in ("fallback-default-2-heads", "log_270k-nomodel-static", "alice_4k-tiny-kn-heads",
              "short_english-nomodel-nocheck", "concat-nomodel", "tracked-default-3-static"):
        assert n in names, n
    # tracked groups (formats 15 and 16, docs/format.md §7.2): one of word-model and byte-model blocks, one of
    # byte-model blocks only
    for version in (15, 16):
        tracked = {v.name: list(_frame.iter_blocks(v.frame())) for v in OK if v.format_version == version
                   and v.name in ("tracked-default-3-static", "tracked-tiny-static")}
        assert all(blocks[0][1] > 1 for blocks in tracked.values())
        assert {k for k, *_ in tracked["tracked-default-3-static"]} == {_frame.BLOCK_MODEL, _frame.BLOCK_BYTE}
        assert {k for k, *_ in tracked["tracked-tiny-static"]} == {_frame.BLOCK_BYTE}
    assert len(ERRORS) >= 25
    for version in _frame.READ_VERSIONS:              # each format's vectors: a couple of hundred files, not thousands
        assert sum(1 for p in (VEC / f"v{version}").rglob("*") if p.is_file()) < 250, version


# Every format's vectors decode in the Cython lane; the cffi lane decodes the oldest format's and the newest's (the
# binding's calls do not depend on the format: the frame layer above it and the C core below it do, and the
# Cython lane takes every format through them).
BINDING_FORMATS = (_frame.READ_VERSIONS[0], nlmcodec.FORMAT_VERSION)


@pytest.mark.parametrize("vec", [pytest.param(v, marks=[] if v.format_version in BINDING_FORMATS
                                              else [pytest.mark.one_lane]) for v in OK], ids=lambda v: v.key)
def test_ok_vector_decodes(vec):
    frame = vec.frame()
    info = nlmcodec.get_frame_info(frame)
    assert info.format_version == vec.format_version
    assert (info.model_id.hex() if info.model_id else None) == vec.model_id
    assert nlmcodec.decompress(frame) == vec.raw()          # models are found by id


@pytest.mark.parametrize("vec", [v for v in OK if v.reencode and v.format_version == nlmcodec.FORMAT_VERSION],
                         ids=lambda v: v.key)
def test_ok_vector_reencodes(vec):
    raw, frame = vec.raw(), vec.frame()
    if vec.model is None:
        e = _encode.FrameEncoder(None, None, None, vec.adapt, vec.check)
        assert _frame.same_frame(e.feed(raw) + e.finish(), frame)       # lzma blocks compared by decoding
        # with the default model: the same frame, unless the word model wins a block; the header names the model
        # when the input is over HEADER_WAIT (docs/format.md §7.4)
        out = nlmcodec.compress(raw, adapt=vec.adapt, check=vec.check)
        if len(raw) > _encode.HEADER_WAIT:
            info = nlmcodec.get_frame_info(out)
            assert info.model_id is not None
            if not any(b.kind == "model" for b in info.blocks):
                h = _frame.header(vec.adapt, vec.check, None)
                out = h + out[len(h) + _frame.MODEL_ID_SIZE:]
        if not _frame.same_frame(out, frame):
            assert len(out) < len(frame)
            assert any(b.kind == "model" for b in nlmcodec.get_frame_info(out).blocks)
    else:
        model = nlmcodec.load_model(vec.model)
        assert vec.model_id in (None, model.model_id.hex())      # None: no word-model block won
        assert _frame.same_frame(nlmcodec.compress(raw, model=model, adapt=vec.adapt, check=vec.check), frame)


@pytest.mark.parametrize("vec", ERRORS, ids=lambda v: v.key)
def test_error_vector_rejected(vec):
    """Each is refused with its message; format 13's unknown_version (its version byte 14, which a reader of
    format 14 knows) by the header checksum that its edited version byte no longer matches."""
    with pytest.raises(nlmcodec.NLMError) as ei:
        nlmcodec.decompress(vec.frame())
    superseded = VS.superseded(vec, nlmcodec.FORMAT_VERSION)
    assert superseded == (vec.key in {f"v{n}/unknown_version" for n in range(13, nlmcodec.FORMAT_VERSION)})
    assert ("header checksum mismatch" if superseded else vec.why) in str(ei.value)


def test_retired_formats_name_the_release_that_reads_them():
    """A frame of formats 1-12 (one of each kind of header kept in retired/) is refused in one line naming 0.1.0,
    by decompress, get_frame_info and the streaming decoder alike."""
    retired = [v for v in ERRORS if v.key.startswith("retired/")]
    assert {v.format_version for v in retired} >= {1, 12}
    for v in retired:
        for call in (nlmcodec.decompress, nlmcodec.get_frame_info, lambda f: nlmcodec.NLMDecompressor().decompress(f)):
            with pytest.raises(nlmcodec.NLMError) as ei:
                call(v.frame())
            msg = str(ei.value)
            assert "\n" not in msg and f"format version {v.format_version} is retired" in msg and "0.1.0" in msg


_CROSS = """
import hashlib, sys
sys.path.insert(0, IN["vec"])
import vectorset as VS
OUT = {}
# (the ok vectors: test_ok_vector_decodes checks each binding's decoding of every one against its raw bytes, in
# each lane, so they are identical across the bindings without decoding them here again)
for v in VS.error_vectors():
    try:
        nlmcodec.decompress(v.frame()); OUT["err:" + v.key] = "accepted"
    except nlmcodec.NLMError as e:
        OUT["err:" + v.key] = str(e)
m = nlmcodec.load_model(IN["model"])
for i, t in enumerate(IN["texts"]):
    for adapt in (False, True, "heads"):
        c = nlmcodec.compress(t.encode("utf-8", "surrogateescape"), model=m, adapt=adapt)
        d = nlmcodec.decompress(c, model=m)
        OUT["c:%d:%s" % (i, adapt)] = hashlib.sha256(c).hexdigest() + ":" + hashlib.sha256(d).hexdigest()
from nlmcodec._core import Codec
for i, t in enumerate(IN["texts"]):
    for adapt in (False, True, "heads"):
        cd = Codec(m, adapt); cd.reset()
        try:
            z = cd.encode_block(t.encode("utf-8", "surrogateescape"))
            OUT["raw:%d:%s" % (i, adapt)] = hashlib.sha256(z).hexdigest()
        except nlmcodec.NLMError as e:
            OUT["raw:%d:%s" % (i, adapt)] = "error: " + str(e)
"""


@pytest.mark.one_lane          # runs both bindings itself
def test_bindings_identical(run_backend, tiny_model_path):
    from conftest import word_salad
    texts = ["", "a", "The quick brown fox jumps over the lazy dog.\n", word_salad(3000).decode(),
             "Mixed CASE\r\n\ttabs \u00fcber caf\u00e9 \u65e5\u672c " * 20]
    payload = {"vec": str(VEC), "model": tiny_model_path, "texts": texts}
    results = {b: run_backend(b, _CROSS, payload) for b in ("cython", "cffi")}
    assert results["cython"] == results["cffi"]
    assert all(v != "accepted" for k, v in results["cython"].items() if k.startswith("err:"))
