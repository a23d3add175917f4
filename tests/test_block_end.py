"""How a word-model block ends (docs/format.md §3.2 step 6, §3.5), through the real codec.

* A block's <end> does not advance the network, so cutting a text into two blocks of one group costs a
  few bytes wherever the cut falls: at most 8 at this test's cut of alice29, in every mode.
* A block holds at most MAX_MODEL_TOKENS tokens: the core refuses to encode more (before touching its
  state) and a decoder stops at the bound, so a forged dense payload is corrupt after 16,384 token steps,
  while a decoder without the bound decodes it; the encoder cuts dense text before the bound.
"""
import json
import sys
from pathlib import Path

import pytest

import nlmcodec
from nlmcodec import _frame as F
from nlmcodec._core import Codec, lex_tokens, token_cut
from nlmcodec._encode import _model_pieces
from nlmcodec._errors import ERR_UNSUPPORTED
from corpus_cache import CORPUS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codec" / "vectors"))
import vectorset as VS  # noqa: E402


def _two_blocks_cost(model, text, adapt):
    """Payload bytes of text as two blocks of one group minus text as one block."""
    cut = text.rindex(b"\n", 0, len(text) // 2) + 1
    one = Codec(model, adapt)
    one.reset()
    two = Codec(model, adapt)
    two.reset()
    return len(two.encode_block(text[:cut])) + len(two.encode_block(text[cut:])) - len(one.encode_block(text))


@pytest.mark.parametrize("adapt", [False, True, "heads"], ids=["static", "dynamic", "heads"])
def test_a_block_boundary_costs_a_few_bytes(default_model, adapt):
    text = (CORPUS / "bench" / "canterbury" / "alice29.txt").read_bytes()[:65536]
    text = text[:text.rindex(b"\n") + 1]
    new = _two_blocks_cost(default_model, text, adapt)
    assert 0 < new <= 8, new             # the end check and the flush of the coder, the <end> token


def test_the_core_refuses_a_block_over_the_bound(tiny_model):
    dots = b"." * F.MAX_MODEL_TOKENS           # MAX_MODEL_TOKENS one-byte tokens and <end>: one too many
    c = Codec(tiny_model, False)
    c.reset()
    with pytest.raises(nlmcodec.NLMError) as ei:
        c.encode_block(dots)
    assert ei.value.code == ERR_UNSUPPORTED
    fits = c.encode_block(dots[1:])             # refused before any state was touched: the codec goes on
    d = Codec(tiny_model, False)
    d.reset()
    assert d.decode_block(fits, len(dots) - 1) == dots[1:]


def test_a_decoder_stops_at_the_bound(tiny_model):
    dots = b"." * (F.MAX_MODEL_TOKENS + 100)
    c = Codec(tiny_model, False)
    c.lab_reset(max_tokens=0)                       # what a forger can write
    payload = c.encode_block(dots)
    unbounded = Codec(tiny_model, False)
    unbounded.lab_reset(max_tokens=0)
    assert unbounded.decode_block(payload, len(dots)) == dots     # the payload itself is sound
    bounded = Codec(tiny_model, False)
    bounded.reset()
    with pytest.raises(nlmcodec.NLMError, match="corrupt payload"):
        bounded.decode_block(payload, len(dots))


def test_token_cut():
    text = b"a. " * 10
    assert token_cut(text, 100) == len(text)
    assert len(lex_tokens(text)) == 21 and token_cut(text, 21) == len(text)
    k = token_cut(text, 5)                      # tokens 0-3 ("a" "." "a" "."), then <end>: 5 tokens
    assert text[:k] == b"a. a." and len(lex_tokens(text[:k])) == 5


def test_the_encoder_cuts_dense_text_at_the_bound():
    """The golden vector of 64 KiB of news (over 16,384 tokens): two word-model blocks, each within the
    bound, and the encoder's pieces are the frame's blocks."""
    vec = VS.ok_vector("v13/news_64k-default-2-dynamic")
    raw = vec.raw()
    info = nlmcodec.get_frame_info(vec.frame())
    assert len(lex_tokens(raw)) > F.MAX_MODEL_TOKENS
    pieces = list(_model_pieces(raw))
    assert [k for _, k in pieces] == [b.size for b in info.blocks] and len(pieces) == 2
    assert all(b.kind == "model" for b in info.blocks)
    for pos, k in pieces:
        assert len(lex_tokens(raw[pos:pos + k])) <= F.MAX_MODEL_TOKENS
    assert len(lex_tokens(raw[:pieces[0][1]])) == F.MAX_MODEL_TOKENS      # cut at the bound, filled to it
