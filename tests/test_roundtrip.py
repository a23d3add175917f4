"""Lossless round trips: Hypothesis on arbitrary bytes and text-like strings (tiny model, every mode: static,
dynamic and heads, the default), and every benchmark / out-of-domain corpus file with the default model in
every mode (slow)."""
import lzma
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import corpus_cache as cc
import nlmcodec
from nlmcodec import _encode

MODES = [False, True, "heads"]          # static, dynamic and heads (the default mode)
MODE_IDS = ["static", "dynamic", "heads"]
HSET = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

text_like = st.lists(st.one_of(
    st.sampled_from(["the", "The", "THE", "of", "and", "caf\u00e9", "\u00dcber", "x86_64", "McDonald", "42",
                     "3.14", ",", ".", "!", "\u201c", "\u65e5\u672c"]),
    st.sampled_from([" ", "  ", "\n", "\n\n", "\r\n", "\t", " \t ", "\f", ""]),
    st.text(max_size=12)), max_size=200).map("".join)


@HSET
@given(data=st.binary(max_size=3000), adapt=st.sampled_from(MODES))
def test_roundtrip_bytes(tiny_model, data, adapt):
    f = nlmcodec.compress(data, model=tiny_model, adapt=adapt)
    assert len(f) <= _encode.max_compressed_size(len(data))
    assert nlmcodec.decompress(f, model=tiny_model) == data


@HSET
@given(text=text_like, adapt=st.sampled_from(MODES), check=st.sampled_from([0, 1]))
def test_roundtrip_text(tiny_model, text, adapt, check):
    data = text.encode("utf-8", "surrogatepass")
    f = nlmcodec.compress(data, model=tiny_model, adapt=adapt, check=check)
    assert nlmcodec.decompress(f, model=tiny_model) == data


@pytest.mark.parametrize("adapt", MODES)
def test_roundtrip_word_model_blocks(tiny_model, adapt):
    """The word-model payload path itself, whatever the frame policy picks."""
    from nlmcodec._core import Codec
    from conftest import word_salad
    data = word_salad(2000) + "\r\n Mixed CASE \u00fcber\t\x00\xff".encode("utf-8", "surrogateescape")
    enc, dec = Codec(tiny_model, adapt), Codec(tiny_model, adapt)
    enc.reset(), dec.reset()
    for part in (data, data[:777], data[::-1]):
        p = enc.encode_block(part)
        assert dec.decode_block(p, len(part)) == part


# Every corpus file in every mode but dickens (10 MB) in dynamic mode: its decoding took 167 s of a CI worker, its
# frame's size and SHA-256 are pinned by test_ratio_regression.py, and dynamic mode's decoding, groups and threads
# are the same code on every other file (bible.txt, 4 MB, the longest of them).
ROUNDTRIP_CASES = [pytest.param(p.values[0], adapt, id=f"{p.id}-{mid}", marks=p.marks)
                   for p in cc.corpus_params() for adapt, mid in zip(MODES, MODE_IDS)
                   if not (p.id == "dickens" and adapt is True)]


@pytest.mark.slow
@pytest.mark.parametrize("path, adapt", ROUNDTRIP_CASES)
def test_roundtrip_corpus(default_model, path, adapt):
    f = cc.frame(path, adapt)
    assert len(f) <= _encode.max_compressed_size(len(cc.read(path)))
    assert cc.round_trips(path, adapt)
