"""Lexer (csrc/lexer/lex.c, docs/format.md §1): total and lossless on every byte string."""
import lzma
import os
import pathlib

import pytest
from hypothesis import given, settings, strategies as st

from nlmcodec._core import KIND_END, KIND_NUMBER, KIND_SYMBOL, KIND_WORD, lex_tokens, unlex

from corpus_cache import CORPUS
BENCH_FILES = sorted(p for p in (CORPUS / "bench").rglob("*") if p.is_file()) + sorted(
    p for p in (CORPUS / "ood").rglob("*") if p.is_file())


def read_corpus_file(p):
    data = p.read_bytes()
    return lzma.decompress(data) if p.suffix == ".xz" else data


def check_tokens(data):
    toks = lex_tokens(data)
    assert toks[-1]["kind"] == KIND_END and (toks["kind"][:-1] != KIND_END).all()
    assert unlex(data, toks) == data
    # gaps are whitespace only, bodies never empty except END
    assert (toks["len"][:-1] > 0).all()
    return toks


def test_examples():
    data = b"Hello, WORLD!  The  McDonald's\r\n\n12345678901234567890 na\xc3\xafve \xe2\x80\x9cq\xe2\x80\x9d \xff\x00x\t\v"
    toks = check_tokens(data)
    bodies = [data[t["off"]:t["off"] + t["len"]] for t in toks]
    assert bodies[:4] == [b"Hello", b",", b"WORLD", b"!"]
    assert [int(t["case"]) for t in toks[:4]] == [1, 0, 2, 0]
    assert bodies[bodies.index(b"McDonald")] == b"McDonald"
    assert int(toks[bodies.index(b"McDonald")]["case"]) == 3
    assert b"1234567890123456" in bodies and b"7890" in bodies  # numbers cut at 16 digits
    assert b"na\xc3\xafve" in bodies  # Latin letters are word characters
    assert b"\xe2\x80\x9c" in bodies  # other UTF-8 is one symbol
    assert b"\xff" in bodies  # invalid byte alone
    kinds = {bytes(b): int(t["kind"]) for b, t in zip(bodies, toks)}
    assert kinds[b"Hello"] == KIND_WORD and kinds[b"7890"] == KIND_NUMBER and kinds[b","] == KIND_SYMBOL


def test_gap_symbols():
    data = b"a b  c\nd\n\ne\r\nf\tg   h\n \ni"
    toks = check_tokens(data)
    assert [int(t["gap"]) for t in toks] == [0, 1, 2, 3, 4, 5, 6, 7, 7, 0]


def test_empty_and_whitespace_only():
    assert len(check_tokens(b"")) == 1
    toks = check_tokens(b" \n\n ")
    assert len(toks) == 1 and toks[0]["gap_len"] == 4


def test_long_word_cut():
    data = b"x" * 100
    toks = check_tokens(data)
    assert [int(t["len"]) for t in toks[:-1]] == [32, 32, 32, 4]


@given(st.binary(max_size=2000))
@settings(max_examples=300, deadline=None)
def test_arbitrary_bytes(data):
    check_tokens(data)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=500))
@settings(max_examples=300, deadline=None)
def test_text_like(text):
    check_tokens(text.encode("utf-8", "surrogatepass"))


@given(st.text(alphabet="aAbBzZ 019,.'\n\t\r-éÉ“”", max_size=500))
@settings(max_examples=300, deadline=None)
def test_english_like(text):
    check_tokens(text.encode())


@pytest.mark.one_lane       # the C lexer against the reference on the corpus; the cffi lane lexes the other inputs
@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.name)
def test_corpus_files(path):
    check_tokens(read_corpus_file(path))
