"""Training: determinism, resume, the model it writes, and that our own models never read bench/ or ood/."""
import builtins
import io
import json
import lzma
import os
from pathlib import Path

import numpy as np
import pytest

from nlmcodec import train
from nlmcodec._model import Model

from corpus_cache import CORPUS, head_text
TRAIN08 = CORPUS / "train" / "train-08.jsonl.xz"
DEV = CORPUS / "dev" / "dev-00.jsonl.xz"

pytestmark = pytest.mark.skipif(not TRAIN08.exists(), reason="shared corpus not available")


def _head_text(path, nbytes):
    return head_text(path, nbytes, sep="\n\n", cut=True)


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    tr, dv = d / "train.txt", d / "dev.txt"
    tr.write_bytes(_head_text(TRAIN08, 200_000))
    dv.write_bytes(_head_text(DEV, 40_000))
    return tr, dv


def _args(tr, dv, out, ck=None, extra=()):
    a = [str(tr), "-o", str(out), "--vocab", "256", "--dim", "16", "--hidden", "16", "--classes", "8",
         "--tokens", "20000", "--batch", "8", "--bptt", "16", "--dev", str(dv), "--dev-tokens", "4000",
         "--eval-every", "40", "--ms-segments", "10", "--quiet", "--seed", "3"]
    if ck:
        a += ["--checkpoint-dir", str(ck)]
    return a + list(extra)


def test_same_command_same_model(texts, tmp_path, monkeypatch):
    tr, dv = texts
    (tmp_path / "1").mkdir()
    (tmp_path / "2").mkdir()
    monkeypatch.chdir(tmp_path / "1")
    assert train.main(_args(tr, dv, "m.nlmm")) == 0
    monkeypatch.chdir(tmp_path / "2")
    assert train.main(_args(tr, dv, "m.nlmm")) == 0
    a, b = tmp_path / "1" / "m.nlmm", tmp_path / "2" / "m.nlmm"
    assert a.read_bytes() == b.read_bytes()
    m = Model.load(a)
    c = m.config
    assert (c["V"], c["D"], c["H"], c["C"]) == (256, 16, 16, 8)
    assert m.vocab[0] == b"" and m.vocab[1] == b"" and len(set(m.vocab)) == 255
    assert not any(any(65 <= ch <= 90 for ch in v) for v in m.vocab)
    assert np.all(m.ms > 0) and np.all(np.isfinite(m.ms))
    assert len(m.speller_prime) > 0 and b"\n" in m.speller_prime
    assert m.metadata["dev"]["nats_per_token"] < 10
    assert "elapsed" not in json.dumps(m.metadata)
    # --dev also tunes dynamic evaluation on dev and stores the chosen setting (grid in the metadata)
    grid = m.metadata["dynamic_tuning"]["grid"]
    best = min(grid)
    assert len(grid) == 18 and best[1] == c["seg_len"]
    assert np.float32(best[2]) == np.float32(c["lr"]) and np.float32(best[3]) == np.float32(c["decay"])


def test_resume_continues(texts, tmp_path):
    tr, dv = texts
    ck = tmp_path / "ck"
    out = tmp_path / "r.nlmm"
    # run half, then resume to the end
    train.main(_args(tr, dv, out, ck, ["--tokens", "20000", "--max-steps-for-test", "60"]))
    assert (ck / "last.npz").exists() and (ck / "best.nlmm").exists()
    z = np.load(ck / "last.npz")
    assert int(z["step"]) == 60
    train.main(_args(tr, dv, out, ck, ["--resume"]))
    z = np.load(ck / "last.npz")
    assert int(z["step"]) == 20000 // (8 * 16)
    assert (ck / "dev_curve.csv").read_text().count("\n") >= 3
    Model.load(out)


def test_never_opens_bench_or_ood(texts, tmp_path, monkeypatch):
    """Training opens only the files it is given (and its own outputs): never a bench/ or ood/ file."""
    tr, dv = texts
    seen = []
    real_open, real_lzma = builtins.open, lzma.open

    def rec_open(f, *a, **k):
        seen.append(str(f))
        return real_open(f, *a, **k)

    def rec_lzma(f, *a, **k):
        seen.append(str(f))
        return real_lzma(f, *a, **k)

    monkeypatch.setattr(builtins, "open", rec_open)
    monkeypatch.setattr(lzma, "open", rec_lzma)
    train.main(_args(tr, dv, tmp_path / "x.nlmm"))
    assert seen, "recording did not work"
    allowed = {str(tr), str(dv)}
    for p in seen:
        parts = Path(os.path.abspath(p)).parts
        assert "bench" not in parts and "ood" not in parts, p
        assert p in allowed or Path(os.path.abspath(p)).is_relative_to(tmp_path), p


def _command_inputs(command):
    """The input files of a recorded ``nlmcodec --train`` (or ``nlmcodec.kn``) command: the paths after --train
    (after the module name) and every --dev."""
    words = command.split()
    i = (words.index("--train") if "--train" in words else words.index("nlmcodec.kn")) + 1
    files = []
    while i < len(words) and not words[i].startswith("-"):
        files.append(words[i])
        i += 1
    files += [words[j + 1] for j, w in enumerate(words[:-1]) if w == "--dev"]
    return files


MODELS = [Path(train.__file__).resolve().parent / "models", Path(__file__).resolve().parent / "models"]


@pytest.mark.parametrize("manifest", sorted(p for d in MODELS for p in d.glob("*.json")), ids=lambda p: p.stem)
def test_bundled_models_are_trained_on_train_and_dev_only(manifest):
    """DESIGN.md contract 6 for our own models: the recorded training command reads corpus train/ (training)
    and dev/ (--dev) only, and the model's own record of its files matches those splits byte for byte."""
    man = json.loads(manifest.read_text())
    commands = [man["command"]] + [man[k]["command"] for k in man if isinstance(man[k], dict)
                                   and "--train" in str(man[k].get("command", ""))]
    for command in commands:
        inputs = _command_inputs(command)
        assert inputs, command
        for p in inputs:
            parts = Path(p).parts
            assert "corpus" in parts and parts[parts.index("corpus") + 1] in ("train", "dev"), (manifest.name, p)
            assert "bench" not in parts and "ood" not in parts, p
    model = manifest.parent / man.get("model", manifest.stem + ".nlmm")
    meta = Model.load(model).metadata
    for key, split in (("train_files", "train"), ("dev_files", "dev")):
        for rec in meta.get(key) or []:
            f = CORPUS / split / rec["path"]
            assert f.is_file(), (model.name, key, rec["path"])
            assert train.sha256_file(f) == rec["sha256"], (model.name, key, rec["path"])


def test_sqrt_classes_properties():
    rng = np.random.default_rng(0)
    counts = np.sort((1e6 / np.arange(1, 5001)).astype(np.int64))[::-1]
    for C in (1, 2, 16, 70, 5000):
        cs = train.sqrt_classes(counts, C)
        assert cs[0] == 0 and cs[-1] == len(counts) and len(cs) == C + 1
        assert np.all(np.diff(cs) >= 1)
    cs = train.sqrt_classes(counts, 70)
    # classes of equal sqrt-mass: frequent words sit in small classes
    assert np.diff(cs)[0] < np.diff(cs)[-1]


def test_build_vocab_rules():
    from nlmcodec._corpus import END_KEY, TokenTable
    keys = [b"the", b"McDonald", END_KEY, b",", b"cat", b"dog", b"emu"]
    kidx = np.array([0, 0, 0, 1, 1, 1, 1, 3, 3, 4, 4, 5, 6, 2], dtype=np.int32)
    n = len(kidx)
    t = TokenTable(keys, kidx, np.zeros(n, np.uint8), np.zeros(n, np.uint8), np.ones(n, np.uint8))
    vocab, kmap, idc = train.build_vocab(t, 5)
    assert vocab == [b"", b"", b"the", b",", b"cat"]              # McDonald (capital) never; ties by bytes
    assert kmap[1] == 0 and kmap[2] == 1 and kmap[5] == 0
    assert idc[0] == 4 + 2 and idc[1] == 1                         # OOV tokens counted for <unk>
    prime = train.speller_prime_list(t, kmap)
    assert prime.split(b"\n") == [b"McDonald", b"dog", b"emu"]


def test_small_corpus_caps_vocab_and_bad_sizes(tmp_path):
    tr = tmp_path / "t.txt"
    tr.write_bytes(b"the cat sat on the mat. The dog sat on the log!\n" * 50)
    out = tmp_path / "m.nlmm"
    train.main([str(tr), "-o", str(out), "--vocab", "1000", "--classes", "64", "--dim", "16", "--hidden", "16",
                "--tokens", "2000", "--batch", "4", "--bptt", "8", "--ms-segments", "5", "--quiet"])
    m = Model.load(out)
    assert m.config["V"] == 2 + len({b"the", b"cat", b"sat", b"on", b"mat", b".", b"dog", b"log", b"!"})
    assert m.config["C"] <= m.config["V"]
    with pytest.raises(SystemExit):
        train.main([str(tr), "-o", str(out), "--dim", "20"])


def test_dev_eval_matches_training_record(texts, tmp_path):
    tr, dv = texts
    out = tmp_path / "d.nlmm"
    train.main(_args(tr, dv, out, tmp_path / "ck"))
    m = Model.load(out)
    r = train.dev_eval(m, [str(dv)], 4000)
    assert abs(r["nats_per_token"] - m.metadata["dev"]["nats_per_token"]) < 2e-3   # float16 storage
