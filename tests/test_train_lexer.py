"""The training-side Python lexer (fallback) agrees with the C lexer, and tune_dynamic runs."""
import random

import numpy as np
import pytest

from nlmcodec import _corpus

core = pytest.importorskip("nlmcodec._core")


def _same(data):
    a = _corpus.lex_python(data)
    b = core.lex_tokens(data)
    for k in ("off", "len", "gap_off", "gap_len", "kind", "case", "gap"):
        assert np.array_equal(np.asarray(a[k]).astype(np.int64), np.asarray(b[k]).astype(np.int64)), (k, data[:80])


def test_examples():
    for d in [b"", b" ", b"Hello  world,\r\nTHE Caf\xc3\xa9 \xc3\x97 x2 McDonald 1234567890123456789 \n\n",
              b"a" * 70, b"\xff\xfe abc\tdef\x0b\x0c", "naïve Ünïcode — “quotes” 日本".encode(), b"A", b"AB", b"aB",
              b"\xc3", b"x\xc3\x97y", b"ABC1DEF", b"  \n\n\n  ",
              # a two-byte letter across the 32-byte cut starts the next body (31 + 4 bytes, not 32 + 3)
              ("a" * 31 + "é" + "bc").encode(), ("é" * 20).encode(), ("a" * 29 + "éé" + "x" * 40).encode()]:
        _same(d)


def test_random_bytes_and_text():
    rnd = random.Random(5)
    alphabet = [b"a", b"Z", b"Q", b" ", b"  ", b"\n", b"\r\n", b"\t", b"1", b"9", b".", b",", b"\xc3\xa9", b"\xc3\x97",
                b"\xe2\x80\x94", b"\xff", b"\x00", b"\xc9\x8f", b"\xc9\x90", b"\x0b"]
    for _ in range(300):
        d = b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 80)))
        _same(d)
    for _ in range(100):
        _same(bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 200))))


def test_tune_dynamic_with_tiny():
    import nlmcodec
    from nlmcodec import train
    m = nlmcodec.load_model("tiny")
    text = b"The quick brown fox jumps over the lazy dog. " * 40
    best, res = train.tune_dynamic(m, text, lrs=(1e-3,), decays=(0.0, 1e-3), seg_lens=(20,), log=lambda *a: None)
    assert len(res) == 2 and res[0][0] <= res[1][0]
    assert best.config["seg_len"] == 20 and nlmcodec.decompress(nlmcodec.compress(text, model=best), model=best) == text
