"""Golden vectors (codec/vectors): ok vectors decode byte-exactly and re-encode to the same bytes (lzma
blocks compared by what they decode to, so the test does not depend on the installed liblzma); error
vectors are rejected with their message; both bindings agree (the other one through a subprocess)."""
import json
from pathlib import Path

import pytest

import nlmcodec
from nlmcodec import _encode, _frame

VEC = Path(__file__).resolve().parent.parent / "codec" / "vectors"
MANIFEST = json.loads((VEC / "ok" / "MANIFEST.json").read_text())
OK_NAMES = sorted(MANIFEST)
ERR_NAMES = sorted(p.stem for p in (VEC / "errors").glob("*.nlm"))


def test_both_formats_have_vectors():
    versions = {MANIFEST[n]["format_version"] for n in OK_NAMES}
    assert versions == set(_frame.READ_VERSIONS)
    assert any(n.startswith("v2-fallback-default") for n in OK_NAMES)


def test_every_model_type_has_vectors_of_both_modes():
    """Golden vectors per model type (FORMAT.md §2.4): each type's word-model frames, static, dynamic and heads
    mode, in the current format, written with a bundled model of that type."""
    have = set()
    for n in OK_NAMES:
        e = MANIFEST[n]
        if e["model_id"] and e["format_version"] == nlmcodec.FORMAT_VERSION:
            name = nlmcodec._bundled_name_by_id(bytes.fromhex(e["model_id"]))
            frame = (VEC / "ok" / f"{n}.nlm").read_bytes()
            if name and any(b.kind == "model" for b in nlmcodec.get_frame_info(frame).blocks):
                have.add((nlmcodec.load_model(name).config["arch"], e["adapt"]))
    assert have == {(a, d) for a in ("elman", "lstm", "nplm") for d in (False, True, "heads")}


def _model_blocks(name):
    """The word-model payloads of an ok vector, in order (found by tests/format_reader.py's frame walk)."""
    from format_reader import word_blocks
    return [payload for _, kind, _, payload in word_blocks((VEC / "ok" / f"{name}.nlm").read_bytes())[1]
            if kind == 2]


@pytest.mark.parametrize("v, before, other", [(12, 11, "v12-{}-dynamic"), (13, 12, "v12-{}-heads")],
                         ids=["format-12-adds-heads-mode", "format-13-changes-its-rates"])
def test_a_format_changed_heads_mode_only(v, before, other):
    """Format 12 added heads mode (FORMAT.md §6.5, frame flag 0x10), format 13 changed its rates (steps times
    2), and neither changed anything else: each static and dynamic vector's word-model payloads are the previous
    format's, byte for byte, and the heads vectors of English text differ from `other` (format 12's dynamic
    vector, format 12's heads vector)."""
    same = [n[len(f"v{v}-"):] for n in OK_NAMES if n.startswith(f"v{v}-") and MANIFEST[n]["model"]
            and MANIFEST[n]["adapt"] in (False, True)]
    assert len(same) >= 90
    for n in same:
        assert _model_blocks(f"v{v}-{n}") == _model_blocks(f"v{before}-{n}"), n
    heads = [n for n in OK_NAMES if n.startswith(f"v{v}-") and MANIFEST[n]["adapt"] == "heads"]
    assert len(heads) >= 45
    for n in ("alice_4k-default-2", "news_64k-default-2", "alice_4k-tiny-lstm"):
        h = _model_blocks(f"v{v}-{n}-heads")
        assert h and h != _model_blocks(other.format(n)), n
        assert nlmcodec.get_frame_info((VEC / "ok" / f"v{v}-{n}-heads.nlm").read_bytes()).adapt == "heads"


def test_retired_vectors_are_rejected():
    """A retired vector is kept with its reason and still fails to decode (it is not silently valid)."""
    ret = VEC / "retired"
    assert (ret / "README.md").exists()
    for p in ret.glob("*.nlm"):
        with pytest.raises(nlmcodec.NLMError):
            nlmcodec.decompress(p.read_bytes())


def test_vectors_present():
    assert len(OK_NAMES) >= 8 and len(ERR_NAMES) >= 10
    for n in OK_NAMES:
        assert (VEC / "ok" / f"{n}.raw").exists() and (VEC / "ok" / f"{n}.nlm").exists(), n
    for n in ERR_NAMES:
        assert (VEC / "errors" / f"{n}.why").exists(), n


def _model_for(entry):
    """The bundled model a vector was written with, found by its id (the manifest's name is the one the model
    had then: the vectors of "default" were written with what is now default-1)."""
    if entry["model"] is None:
        return None
    name = nlmcodec._bundled_name_by_id(bytes.fromhex(entry["model_id"])) if entry["model_id"] else entry["model"]
    if name is None or name not in nlmcodec._bundled_files():
        pytest.fail(f"the model of a golden vector ({entry['model']}, id {entry['model_id']}) is not bundled")
    return nlmcodec.load_model(name)


@pytest.mark.parametrize("name", OK_NAMES)
def test_ok_vector_decodes(name):
    entry = MANIFEST[name]
    raw = (VEC / "ok" / f"{name}.raw").read_bytes()
    frame = (VEC / "ok" / f"{name}.nlm").read_bytes()
    assert entry["format_version"] in _frame.READ_VERSIONS
    assert nlmcodec.get_frame_info(frame).format_version == entry["format_version"]
    info = nlmcodec.get_frame_info(frame)
    assert (info.model_id.hex() if info.model_id else None) == entry["model_id"]
    assert nlmcodec.decompress(frame) == raw             # bundled models are found by id


@pytest.mark.parametrize("name", [n for n in OK_NAMES if MANIFEST[n]["reencode"]
                                  and MANIFEST[n]["format_version"] == nlmcodec.FORMAT_VERSION])
def test_ok_vector_reencodes(name):
    entry = MANIFEST[name]
    raw = (VEC / "ok" / f"{name}.raw").read_bytes()
    frame = (VEC / "ok" / f"{name}.nlm").read_bytes()
    model = _model_for(entry)
    if model is None:
        e = _encode.FrameEncoder(None, None, None, entry["adapt"], entry["check"])
        assert _frame.same_frame(e.feed(raw) + e.finish(), frame)       # lzma blocks compared by decoding
        bundled = nlmcodec._bundled_files()
        # with each bundled model (once: "default" is another name of the newest default-N): the same frame,
        # unless the word model wins a block
        for name_ in sorted({p: n for n, p in sorted(bundled.items())}.values()):
            out = nlmcodec.compress(raw, model=name_, adapt=entry["adapt"], check=entry["check"])
            if not _frame.same_frame(out, frame):
                assert len(out) < len(frame)
                assert any(b.kind == "model" for b in nlmcodec.get_frame_info(out).blocks)
    else:
        assert _frame.same_frame(nlmcodec.compress(raw, model=model, adapt=entry["adapt"], check=entry["check"]), frame)


@pytest.mark.parametrize("name", ERR_NAMES)
def test_error_vector_rejected(name):
    frame = (VEC / "errors" / f"{name}.nlm").read_bytes()
    why = (VEC / "errors" / f"{name}.why").read_text().strip()
    with pytest.raises(nlmcodec.NLMError) as ei:
        nlmcodec.decompress(frame)
    assert why in str(ei.value)


_CROSS = """
import hashlib
from pathlib import Path
vec = Path(IN["vec"])
OUT = {}
for n in IN["ok"]:
    OUT["ok:" + n] = hashlib.sha256(nlmcodec.decompress((vec / "ok" / (n + ".nlm")).read_bytes())).hexdigest()
for n in IN["err"]:
    try:
        nlmcodec.decompress((vec / "errors" / (n + ".nlm")).read_bytes()); OUT["err:" + n] = "accepted"
    except nlmcodec.NLMError as e:
        OUT["err:" + n] = str(e)
m = nlmcodec.load_model(IN["model"])
for i, t in enumerate(IN["texts"]):
    for adapt in (False, True):
        c = nlmcodec.compress(t.encode("utf-8", "surrogateescape"), model=m, adapt=adapt)
        d = nlmcodec.decompress(c, model=m)
        OUT["c:%d:%d" % (i, adapt)] = hashlib.sha256(c).hexdigest() + ":" + hashlib.sha256(d).hexdigest()
from nlmcodec._core import Codec
for i, t in enumerate(IN["texts"]):
    for adapt in (False, True):
        cd = Codec(m, adapt); cd.reset()
        try:
            OUT["raw:%d:%d" % (i, adapt)] = hashlib.sha256(cd.encode_block(t.encode("utf-8", "surrogateescape"))).hexdigest()
        except nlmcodec.NLMError as e:
            OUT["raw:%d:%d" % (i, adapt)] = "error: " + str(e)
"""


@pytest.mark.one_lane          # runs both bindings itself
def test_bindings_identical(run_backend, tiny_model_path):
    from conftest import word_salad
    texts = ["", "a", "The quick brown fox jumps over the lazy dog.\n", word_salad(3000).decode(),
             "Mixed CASE\r\n\ttabs \u00fcber caf\u00e9 \u65e5\u672c " * 20]
    payload = {"vec": str(VEC), "ok": OK_NAMES, "err": ERR_NAMES, "model": tiny_model_path, "texts": texts}
    results = {b: run_backend(b, _CROSS, payload) for b in ("cython", "cffi")}
    assert results["cython"] == results["cffi"]
    assert all(v != "accepted" for k, v in results["cython"].items() if k.startswith("err:"))
