"""The .nlmm model file: round trip, model id, and rejection of bad files."""
import os
import pathlib
import struct

import numpy as np
import pytest

from nlmcodec._model import MAGIC, Model, ModelFormatError, param_count
from nlmcodec import reference as R


def _model(dtype="float16", V=40, D=16, H=32, C=4, seed=0):
    rng = np.random.default_rng(seed)
    vocab = [b"", b""] + [f"w{i}".encode() for i in range(V - 2)]
    cs = np.array([0, 3, 10, 20, V], dtype=np.int32)
    p = R.init_params(V, D, H, C, rng)
    cfg = {"V": V, "D": D, "H": H, "C": C, "seg_len": 20, "lr": 1e-3, "decay": 5e-4, "eps": 1e-6}
    return Model(cfg, p, rng.random(14).astype(np.float32), vocab, cs, b"foo\nbar", {"x": 1}, name="t",
                 param_dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_round_trip(dtype, tmp_path):
    m = _model(dtype)
    b = m.to_bytes()
    assert b[:8] == MAGIC and b[0] >= 0x80
    m2 = Model.from_bytes(b)
    assert m2.to_bytes() == b
    assert m2.model_id == m.model_id and len(m.model_id) == 32
    assert np.array_equal(m2.params, m.params) and m2.params.dtype == np.float32
    assert np.array_equal(m2.ms, m.ms)
    assert m2.vocab == m.vocab and np.array_equal(m2.class_start, m.class_start)
    assert m2.speller_prime == b"foo\nbar" and m2.metadata == {"x": 1, "name": "t"}
    assert m2.config == m.config
    p = tmp_path / "a.nlmm"
    m.save(p)
    m3 = Model.load(p)
    assert m3.model_id == m.model_id and m3.name == "t"


def test_float16_loads_exactly():
    m = _model("float16")
    assert np.array_equal(m.params, m.params.astype(np.float16).astype(np.float32))
    assert len(m.to_bytes()) < len(_model("float32").to_bytes())


def test_model_id_depends_on_everything():
    a = _model()
    b = a.with_config(lr=2e-3)
    assert a.model_id != b.model_id


def test_truncations_rejected():
    b = _model().to_bytes()
    for n in list(range(0, 64)) + list(range(64, len(b), max(1, len(b) // 97))) + [len(b) - 1]:
        with pytest.raises(ModelFormatError):
            Model.from_bytes(b[:n])


def test_trailing_garbage_and_magic():
    b = _model().to_bytes()
    with pytest.raises(ModelFormatError):
        Model.from_bytes(b + b"\0")
    with pytest.raises(ModelFormatError):
        Model.from_bytes(b"X" + b[1:])
    assert issubclass(ModelFormatError, ValueError)


def _patch_header(b, field, value):
    # header: magic(8) version(4) V D H C seg_len (int32) lr decay eps (f32) dtype(u32)
    off = {"version": 8, "V": 12, "D": 16, "H": 20, "C": 24, "seg_len": 28, "dtype": 44}[field]
    return b[:off] + struct.pack("<i" if field != "dtype" else "<I", value) + b[off + 4:]


@pytest.mark.parametrize("field,value", [("version", 2), ("V", 1), ("V", 1 << 30), ("D", 17), ("H", 0),
                                         ("H", 1 << 20), ("C", 0), ("C", 41), ("seg_len", 0), ("dtype", 7),
                                         ("V", 41), ("D", 32)])
def test_bad_header_fields(field, value):
    b = _patch_header(_model().to_bytes(), field, value)
    with pytest.raises(ModelFormatError):
        Model.from_bytes(b)


def test_absurd_sizes_do_not_allocate():
    # a huge claimed config with a tiny file: must fail on the length check, fast
    b = _patch_header(_patch_header(_model().to_bytes(), "V", 1 << 20), "H", 4096)
    with pytest.raises(ModelFormatError):
        Model.from_bytes(b)


def test_bad_contents():
    m = _model()
    with pytest.raises(ModelFormatError):
        Model(m.config, m.params, m.ms, m.vocab[:-1] + [b"w0"], m.class_start)       # duplicate body
    with pytest.raises(ModelFormatError):
        Model(m.config, m.params, m.ms, [b"x"] + m.vocab[1:], m.class_start)          # <unk> not empty
    cs = m.class_start.copy(); cs[2] = cs[1]
    with pytest.raises(ModelFormatError):
        Model(m.config, m.params, m.ms, m.vocab, cs)                                   # empty class
    p = m.params.copy(); p[3] = np.nan
    with pytest.raises(ModelFormatError):
        Model(m.config, p, m.ms, m.vocab, m.class_start)
    with pytest.raises(ModelFormatError):
        Model(m.config, m.params[:-1], m.ms, m.vocab, m.class_start)


def test_param_count_matches_reference():
    assert param_count(40, 16, 32, 4) == R.param_count(40, 16, 32, 4)


def test_bundled_manifest_ids_match_the_files():
    """load_model trusts the id recorded at bundling (no 20 MB hash per process): it must be the file's, for
    the package's model and the test models alike."""
    import hashlib
    import json

    import nlmcodec
    from nlmcodec import _registry

    seen = 0
    for name, p in _registry.model_files().items():
        man = json.loads(p.with_suffix(".json").read_text())
        if "model_id_sha256" in man:
            assert man["model_id_sha256"] == hashlib.sha256(p.read_bytes()).hexdigest(), name
            assert man["size_bytes"] == p.stat().st_size, name
            assert _registry.manifest_id(p) == bytes.fromhex(man["model_id_sha256"])
            assert nlmcodec.load_model(name).model_id.hex() == man["model_id_sha256"]
            seen += 1
    assert seen >= 5


def test_loaded_model_reads_the_file_in_place():
    """A bundled binary16 model is mapped, not converted: the native model owns ~1 MB of tables, not the
    20 MB block, plus the integer forward's int8 word head (V×H bytes, docs/format.md §2.6: reserved at load,
    its pages written a class at a time by the static streams that use the class), and the weights are never
    turned into a numpy array unless asked for."""
    import nlmcodec
    from nlmcodec import _registry

    m = Model.load(_registry.model_files()["default"])        # a fresh load (not the process cache)
    assert m.param_dtype == "float16" and m._params is None
    c = m.config
    assert m.native().memory() < (4 << 20) + c["V"] * c["H"]
    assert m._params is None                                     # building the native model converted nothing
    shared = nlmcodec.load_model("default")
    assert shared.native() is nlmcodec.load_model("default").native()


def test_the_package_ships_only_the_default_models():
    """The wheel's model directory holds the default models and nothing else ("default-N": each with its
    .nlmm, manifest and dev curve); "default" names the newest; the test models live in tests/models and are
    found through the model search path."""
    from nlmcodec import _registry

    pkg = sorted(p.name for p in _registry.package_dir().iterdir() if not p.name.startswith("."))
    gens = [p[:-len(".nlmm")] for p in pkg if p.endswith(".nlmm")]
    assert gens and all(_registry.default_generation(g) is not None for g in gens), pkg
    assert pkg == sorted(f"{g}{s}" for g in gens for s in (".nlmm", ".json", "_dev_curve.csv"))
    assert _registry.default_model_name() == max(gens, key=_registry.default_generation)
    tests_models = pathlib.Path(__file__).resolve().parent / "models"
    for name in ("tiny", "tiny-kn", "tiny-lstm", "tiny-nplm"):
        assert _registry.model_files()[name] == tests_models / f"{name}.nlmm"


def test_the_default_and_every_current_vector_model_are_found():
    """"default" is the newest default-N, and every golden vector of the current format that names a model
    names one on the search path, by id (the default from the package, the others from tests/models; the
    names in the manifest are the ones the models had when the vectors were written)."""
    import json

    import nlmcodec
    from nlmcodec import _registry

    files = _registry.model_files()
    gens = {n: p for n, p in files.items() if _registry.default_generation(n) is not None}
    assert gens, "no default-N model is bundled"
    newest = max(gens, key=_registry.default_generation)
    assert files["default"] == gens[newest] and _registry.default_model_name() == newest
    text = b"It was the best of times, it was the worst of times; the Kanzler Grimsbyte wrote 42 lines.\n" * 3
    for n, p in gens.items():
        assert json.loads(p.with_suffix(".json").read_text())["model"] == p.name, n
        for adapt in (False, True):
            assert nlmcodec.decompress(nlmcodec.compress(text, model=n, adapt=adapt)) == text, n
    man = json.loads((pathlib.Path(__file__).resolve().parents[1] / "codec" / "vectors" /
                      "MANIFEST.json").read_text())
    ids = {e["model_id"] for e in man["ok"].values() if e.get("model_id")
           and e["format_version"] == nlmcodec.FORMAT_VERSION}
    assert ids and all(_registry.model_by_id(bytes.fromhex(i)) is not None for i in ids)


# Every default model a release has bundled, by name and id (docs/format.md, "Format policy": it stays in the
# package, so every frame made with it decodes with no option).  Add a new default here; never remove one.
BUNDLED_DEFAULTS = {
    "default-2": "95789fd5bee9d0b7c0826a825fbd845967b4bcd581f3b0ad9ab7de98167ef4b4",     # 1.0's frames
    "default-3": "5575597018477762de31d81ca1c8dd3155108f7484063fd109723ec50fd70e49",     # + technical English
}


def test_every_bundled_default_stays_in_the_package():
    """The package's model directory (what the wheel ships: pyproject's package data models/default-*) holds
    every default model ever bundled, byte for byte (the id is the file's SHA-256), and no default-N that is
    not pinned here."""
    import hashlib

    from nlmcodec import _registry

    shipped = {p.stem: p for p in _registry.package_dir().glob("default-*.nlmm")}
    assert set(shipped) == set(BUNDLED_DEFAULTS), sorted(shipped)
    for name, model_id in BUNDLED_DEFAULTS.items():
        assert hashlib.sha256(shipped[name].read_bytes()).hexdigest() == model_id, name
        found = _registry.model_by_id(bytes.fromhex(model_id))       # what a frame naming it gets
        assert found is not None and found.model_id == bytes.fromhex(model_id), name


def test_default_alias_is_the_newest_generation(tmp_path, monkeypatch):
    """The naming rule on real files: default-10 is newer than default-9; a default.nlmm of a development
    checkout takes precedence; other names are not defaults."""
    import shutil

    from nlmcodec import _registry

    tiny = _registry.model_files()["tiny"]
    for n in ("default-2", "default-9", "default-10", "default-01", "defaultx-11"):
        shutil.copyfile(tiny, tmp_path / f"{n}.nlmm")
    monkeypatch.setattr(_registry, "package_dir", lambda: tmp_path)
    files = _registry.model_files()
    assert files["default"] == tmp_path / "default-10.nlmm"
    assert _registry.default_model_name() == "default-10"
    assert _registry.default_model_names() == ["default-10", "default-9", "default-2"]   # compress() chooses
    shutil.copyfile(tiny, tmp_path / "default.nlmm")
    assert _registry.model_files()["default"] == tmp_path / "default.nlmm"
    assert _registry.default_model_name() == "default"
    assert _registry.default_model_names() == ["default"]


PROSE = b"""It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of
foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it
was the season of Darkness, it was the spring of hope, it was the winter of despair, we had everything
before us, we had nothing before us, we were all going direct to Heaven, we were all going direct the
other way - in short, the period was so far like the present period, that some of its noisiest
authorities insisted on its being received, for good or for evil, in the superlative degree of
comparison only.
There were a king with a large jaw and a queen with a plain face, on the throne of England; there were a
king with a large jaw and a queen with a fair face, on the throne of France. In both countries it was
clearer than crystal to the lords of the State preserves of loaves and fishes, that things in general
were settled for ever.
"""


def test_model_search_path(tmp_path, monkeypatch):
    """A directory on the search path (NLMCODEC_MODEL_PATH, or add_model_dir) makes its models known by name
    and by id; without it a frame naming one of them fails with one line naming the id and model=; the
    package's own names come first."""
    import shutil
    import subprocess
    import sys

    import nlmcodec
    from nlmcodec import _registry

    tiny = nlmcodec.load_model("tiny")
    d = tmp_path / "mine"
    d.mkdir()
    shutil.copyfile(_registry.model_files()["tiny"], d / "mine.nlmm")
    shutil.copyfile(_registry.model_files()["tiny"], d / "default.nlmm")     # never shadows the package's
    text = PROSE
    frame = nlmcodec.compress(text, model=tiny, adapt=False)
    assert nlmcodec.get_frame_info(frame).model_id == tiny.model_id        # the word model codes it
    monkeypatch.setenv("NLMCODEC_MODEL_PATH", str(d))
    assert _registry.model_dirs()[0] == _registry.package_dir() and _registry.model_dirs()[-1] == d
    assert nlmcodec.load_model("mine").model_id == tiny.model_id
    assert _registry.model_files()["default"].parent == _registry.package_dir()
    assert _registry.name_by_id(tiny.model_id) == "mine"
    assert nlmcodec.decompress(frame) == text
    monkeypatch.setenv("NLMCODEC_MODEL_PATH", "")
    with pytest.raises(FileNotFoundError):
        nlmcodec.load_model("mine")
    with pytest.raises(nlmcodec.NLMError, match=f"needs model {tiny.model_id.hex()[:12]}.*, which is not bundled"):
        nlmcodec.decompress(frame)
    (tmp_path / "f.nlm").write_bytes(frame)
    r = subprocess.run([sys.executable, "-m", "nlmcodec", "-dc", str(tmp_path / "f.nlm")], capture_output=True,
                       env=dict(os.environ, NLMCODEC_MODEL_PATH=""))
    err = r.stderr.decode().strip()
    assert r.returncode == 1 and r.stdout == b"" and len(err.splitlines()) == 1, err
    assert tiny.model_id.hex()[:12] in err and "-m MODEL" in err
    with pytest.raises(NotADirectoryError):
        nlmcodec.add_model_dir(tmp_path / "no-such-dir")
    monkeypatch.setattr(_registry, "_added_dirs", [])
    nlmcodec.add_model_dir(d)
    nlmcodec.add_model_dir(str(d))
    assert _registry.model_dirs() == [_registry.package_dir(), d.resolve()]
    assert nlmcodec.load_model("mine").model_id == tiny.model_id
    assert nlmcodec.decompress(frame) == text


def _lstm_model(seed=0, V=40, D=16, H=32, C=4):
    rng = np.random.default_rng(seed)
    cs = np.array([0, 5, 12, 20, V], np.int32)
    p = R.init_params(V, D, H, C, rng, arch="lstm", forget_bias=2.0)
    vocab = [b"", b""] + [f"w{i}".encode() for i in range(V - 2)]
    return Model({"V": V, "D": D, "H": H, "C": C, "seg_len": 10, "lr": 1e-3, "decay": 1e-4, "eps": 1e-6,
                  "arch": "lstm"}, p, np.full(14, 0.05), vocab, cs, b"w1\nw2\n", {"name": "t"})


def test_model_types_in_the_file():
    """An Elman model is written as model format 1, byte for byte as before types existed; an LSTM as format 2
    with its type after the header; both read back with their type and coding works."""
    import nlmcodec

    m = _lstm_model()
    b = m.to_bytes()
    assert struct.unpack_from("<I", b, 8)[0] == 2 and struct.unpack_from("<I", b, 48)[0] == 1
    m2 = Model.from_bytes(b)
    assert m2.config["arch"] == "lstm" and m2.params.size == param_count(40, 16, 32, 4, "lstm")
    assert param_count(40, 16, 32, 4, "lstm") - param_count(40, 16, 32, 4) == 3 * (32 * 16 + 32 * 32 + 32)
    text = b"w1 w2 w3 w1 w2 w9 w1, w2.\n" * 30
    for adapt in (False, True):
        assert nlmcodec.decompress(nlmcodec.compress(text, model=m2, adapt=adapt), model=m2) == text
    tiny = nlmcodec.load_model("tiny")
    assert tiny.config["arch"] == "elman" and struct.unpack_from("<I", tiny.to_bytes(), 8)[0] == 1
    e = Model(tiny.config, tiny.params, tiny.ms, tiny.vocab, tiny.class_start, tiny.speller_prime, tiny.metadata,
              tiny.name, tiny.param_dtype)
    assert e.to_bytes() == tiny.to_bytes()          # rewriting an Elman model gives its file, so its id


def test_unknown_model_type_rejected():
    b = bytearray(_lstm_model().to_bytes())
    b[48:52] = struct.pack("<I", 7)
    with pytest.raises(ModelFormatError, match="unknown model type code 7"):
        Model.from_bytes(bytes(b))
    b[8:12] = struct.pack("<I", 3)
    with pytest.raises(ModelFormatError, match="unsupported model format version 3"):
        Model.from_bytes(bytes(b))
    with pytest.raises(ModelFormatError, match="unknown model type"):
        Model({"V": 4, "D": 16, "H": 16, "C": 1, "arch": "gru"}, np.zeros(10), np.ones(14), [b""] * 4,
              [0, 4])


def test_nplm_context_in_the_type_field():
    """The NPLM's context travels in bits 8-15 of the type field; out-of-range contexts are rejected."""
    import nlmcodec

    m = nlmcodec.load_model("tiny-nplm")
    assert m.config["arch"] == "nplm" and m.config["context"] == 3
    b = bytearray(m.to_bytes())
    assert struct.unpack_from("<I", b, 48)[0] == 2 | 3 << 8
    assert m.params.size == param_count(512, 16, 32, 16, "nplm", 3)
    for bad in (2 | 1 << 8, 2 | 17 << 8, 1 | 3 << 8, 2 | 1 << 16):
        b[48:52] = struct.pack("<I", bad)
        with pytest.raises(ModelFormatError):
            Model.from_bytes(bytes(b))


def test_word_classes_are_quantised_once_for_every_thread():
    """The integer forward (docs/format.md §2.6) quantises the word head a class at a time, the first time a
    static stream reads the class, into the one table of the shared native model (an atomic state per class:
    csrc/model/lm.c q8_class).  Four threads coding static streams at once on a freshly loaded model (no class
    quantised yet) write exactly the frames one thread writes alone, and each frame decodes."""
    from concurrent.futures import ThreadPoolExecutor

    import nlmcodec

    texts = [(b"The %d quick brown foxes jumped over %d lazy dogs near the river bank; " % (i, 7 * i)) * 300
             for i in range(8)]
    from nlmcodec import _registry

    path = _registry.model_files()["default"]
    alone = [nlmcodec.compress(t, model=Model.load(path), adapt=False) for t in texts[:2]]
    shared = Model.load(path)                                   # a fresh native model: no class made yet
    with ThreadPoolExecutor(4) as ex:
        frames = list(ex.map(lambda t: nlmcodec.compress(t, model=shared, adapt=False), texts))
    assert frames[:2] == alone
    assert all(nlmcodec.decompress(f, model=shared) == t for f, t in zip(frames, texts))
    assert frames[0] != frames[1]
