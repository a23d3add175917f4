"""The Kneser-Ney expert (python/nlmcodec/kn.py, csrc/model/kn.c, docs/format.md §2.5): the estimator gives
distributions, the model file carries the section, the C core rejects a malformed one with a clear error,
the mixture codes losslessly in both modes and pays on text, λ = 1 is the network alone, and the Kneser-Ney
model type (λ = 0 over a bias-only network) is built by the command and codes."""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nlmcodec
from nlmcodec import kn
from nlmcodec._model import Model, ModelFormatError
from nlmcodec.train import word_model_coded

ENGLISH = (b"It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
           b"foolishness, it was the epoch of belief, it was the epoch of incredulity.\n") * 20


def parse(sec: bytes, V: int) -> dict:
    """The section's arrays (docs/model_format.md field 13a), for the checks below."""
    lam, m3, n2, n3 = struct.unpack_from("<fIII", sec)
    o = 16
    def take(dt, n):
        nonlocal o
        a = np.frombuffer(sec, dtype=dt, count=n, offset=o)
        o += a.nbytes
        return a
    ent = np.dtype([("w", "<u4"), ("a", "<f4")])
    d = {"lam": lam, "p1": take("<f4", V), "g2": take("<f4", V), "o2": take("<u4", V + 1), "e2": take(ent, n2),
         "k3": take("<u8", m3), "g3": take("<f4", m3), "o3": take("<u4", m3 + 1), "e3": take(ent, n3)}
    assert o == len(sec)
    return d


def p3(d, V, u, v):
    """p3(.|u, v) over the vocabulary in float64 from the stored values."""
    p1 = d["p1"].astype(np.float64)
    p2 = d["g2"][v] * p1
    e = d["e2"][d["o2"][v]:d["o2"][v + 1]]
    p2[e["w"]] += e["a"]
    i = np.searchsorted(d["k3"], u * V + v)
    if i < len(d["k3"]) and d["k3"][i] == u * V + v:
        e = d["e3"][d["o3"][i]:d["o3"][i + 1]]
        out = d["g3"][i] * p2
        out[e["w"]] += e["a"]
        return out
    return p2


@pytest.fixture(scope="module")
def tiny_kn():
    return nlmcodec.load_model("tiny-kn")


def test_the_stored_estimates_are_distributions(tiny_kn):
    V = tiny_kn.config["V"]
    d = parse(tiny_kn.kn, V)
    assert d["lam"] == pytest.approx(tiny_kn.metadata["kn_lambda"])
    assert abs(d["p1"].astype(np.float64).sum() - 1) < 1e-5 and d["p1"].min() > 0
    rng = np.random.default_rng(1)
    ctx = [(int(k // V), int(k % V)) for k in rng.choice(d["k3"], 40)] + [(1, 1), (0, 0), (V - 1, V - 2)]
    for u, v in ctx:
        p = p3(d, V, u, v)
        assert p.min() > 0 and abs(p.sum() - 1) < 1e-5, (u, v, p.sum())


def test_estimator_on_a_known_stream():
    """Counts of a hand-made stream give the textbook interpolated Kneser-Ney values."""
    V = 6
    ids = np.array([2, 3, 4, 2, 3, 5, 2, 3, 4, 1], np.int64)
    d = parse(kn.build_section(ids, V), V)
    # context (2, 3) is followed by 4 twice and 5 once: c(23.) = 3, two types; D3 from the trigram counts
    k = 2 * V + 3
    i = int(np.searchsorted(d["k3"], k))
    assert d["k3"][i] == k
    e = d["e3"][d["o3"][i]:d["o3"][i + 1]]
    assert list(e["w"]) == [4, 5]
    c3 = np.unique(((np.r_[1, 1, ids][:-2] * V + np.r_[1, 1, ids][1:-1]) * V + np.r_[1, 1, ids][2:]),
                   return_counts=True)[1]
    D3 = np.sum(c3 == 1) / (np.sum(c3 == 1) + 2 * np.sum(c3 == 2))
    assert e["a"][0] == pytest.approx((2 - D3) / 3, rel=1e-6) and e["a"][1] == pytest.approx((1 - D3) / 3, rel=1e-6)
    assert d["g3"][i] == pytest.approx(2 * D3 / 3, rel=1e-6)
    for u in range(V):
        for v in range(V):
            assert abs(p3(d, V, u, v).sum() - 1) < 1e-6


def test_the_section_travels_in_the_model_file(tiny_kn, tmp_path):
    b = tiny_kn.to_bytes()
    assert struct.unpack_from("<I", b, 8)[0] == 2            # a model with a section is model format 2
    p = tmp_path / "m.nlmm"
    p.write_bytes(b)
    m = Model.load(p)
    assert m.kn == tiny_kn.kn and m.model_id == tiny_kn.model_id
    plain = nlmcodec.load_model("tiny")
    assert not plain.kn and struct.unpack_from("<I", plain.to_bytes(), 8)[0] == 1


def _with_section(sec: bytes) -> bytes:
    return kn.attach(nlmcodec.load_model("tiny"), sec).to_bytes()


@pytest.mark.parametrize("damage", ["lambda", "length", "word_range", "word_order", "key_order", "p1_zero",
                                    "p1_nan", "negative", "offsets"])
def test_a_malformed_section_is_a_model_format_error(tiny_kn, damage):
    V = tiny_kn.config["V"]
    sec = bytearray(tiny_kn.kn)
    d = parse(bytes(sec), V)
    n2 = len(d["e2"])
    o_p1, o_g2 = 16, 16 + 4 * V
    o_o2 = o_g2 + 4 * V
    o_e2 = o_o2 + 4 * (V + 1)
    o_k3 = o_e2 + 8 * n2
    v = int(np.argmax(np.diff(d["o2"])))                      # the bigram context with the most entries
    first = o_e2 + 8 * int(d["o2"][v])
    if damage == "lambda":
        struct.pack_into("<f", sec, 0, 1.5)
    elif damage == "length":
        sec = sec[:-8]
    elif damage == "word_range":
        struct.pack_into("<I", sec, first, V)
    elif damage == "word_order":
        w0, w1 = struct.unpack_from("<I", sec, first)[0], struct.unpack_from("<I", sec, first + 8)[0]
        struct.pack_into("<I", sec, first, w1)
        struct.pack_into("<I", sec, first + 8, w0)
    elif damage == "key_order":
        k0, k1 = struct.unpack_from("<QQ", sec, o_k3)
        struct.pack_into("<QQ", sec, o_k3, k1, k0)
    elif damage == "p1_zero":
        struct.pack_into("<f", sec, o_p1 + 8, 0.0)
    elif damage == "p1_nan":
        struct.pack_into("<f", sec, o_p1 + 8, float("nan"))
    elif damage == "negative":
        struct.pack_into("<f", sec, first + 4, -0.25)
    elif damage == "offsets":
        struct.pack_into("<I", sec, o_o2 + 4, n2 + 1)          # o2[1] > o2[2]: not increasing
    b = _with_section(bytes(sec))
    with pytest.raises(ModelFormatError, match="Kneser-Ney"):
        Model.from_bytes(b)


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_the_mixture_round_trips_and_pays(tiny_kn, adapt):
    from nlmcodec._bench import read_file

    text = read_file("alice29.txt")[1][:40000] + b"\x00\xff binary tail \xc3\x28" + ENGLISH
    f = nlmcodec.compress(text, model=tiny_kn, adapt=adapt)
    assert nlmcodec.decompress(f, model=tiny_kn) == text
    with_kn = word_model_coded(tiny_kn, text[:40000], adapt)[0]
    alone = word_model_coded(nlmcodec.load_model("tiny"), text[:40000], adapt)[0]
    assert with_kn < 0.97 * alone, (with_kn, alone)


def test_lambda_one_is_the_network_alone(tiny_kn):
    """λ = 1: the logits are kern_log of the network's own softmax, so the code length is the network's up
    to the rounding of one exp/log round trip."""
    text = ENGLISH + b"Alice was beginning to get very tired of sitting by her sister on the bank.\n" * 30
    one = kn.attach(tiny_kn, kn.with_lambda(tiny_kn.kn, 1.0))
    a = word_model_coded(one, text, False)[0]
    b = word_model_coded(nlmcodec.load_model("tiny"), text, False)[0]
    assert abs(a - b) <= max(2, b // 500), (a, b)


def test_the_kneser_ney_model_type_is_built_and_codes(tmp_path):
    from nlmcodec._bench import require_corpus_dir

    out = tmp_path / "kn.nlmm"
    train = Path(require_corpus_dir()) / "train" / "train-08.jsonl.xz"
    r = subprocess.run([sys.executable, "-m", "nlmcodec.kn", str(train), "-o", str(out), "--vocab", "512",
                        "--classes", "16", "--tokens", "100000", "--max-train-tokens", "300000", "--batch", "32",
                        "--name", "kn-test", "--cache-dir", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = Model.load(out)
    assert m.metadata["arch"] == "kn" and kn.section_lambda(m.kn) == 0.0
    assert m.metadata["kn"]["tokens_counted"] == 100000 // (32 * 32) * 32 * 32
    for adapt in (False, True):
        f = nlmcodec.compress(ENGLISH, model=m, adapt=adapt)
        assert nlmcodec.decompress(f, model=m) == ENGLISH
        assert len(f) < len(ENGLISH) // 4
