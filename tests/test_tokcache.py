"""The token cache (csrc/codec/tokcache.c, docs/format.md §3.6), through the real codec.

* Text whose words recur after the same words (a small vocabulary of phrases in a new order each time, so
  the match flag finds few long matches) costs less with the cache than without it (exact sizes), and its
  statistics say why: every token mixed, the follower lists had most of the coded tokens.
* It round-trips static and dynamic, with the default model too.
* save/restore returns the cache exactly (static, dynamic and heads, the default mode): a block coded after a
  restore is byte-identical to the same block coded by a fresh context that never saw the discarded block.
* Hostile shapes round-trip: one token repeated thousands of times (the lists and the unigram are halved
  over and over), and more distinct contexts than the tables hold (slots replaced).
* The second reader of tests/format_reader.py decodes the token cache of the golden vectors
  (test_format_reader).
"""
import random

import pytest

import nlmcodec
from corpus_cache import short_text
from nlmcodec._core import Codec


def encode(model, blocks, adapt=False, cache=True):
    c = Codec(model, adapt)
    c.lab_reset(cache=cache)
    out = [c.encode_block(b) for b in blocks]
    return out, c.stats()


def decode(model, payloads, blocks, adapt=False, cache=True):
    d = Codec(model, adapt)
    d.lab_reset(cache=cache)
    return [d.decode_block(p, len(b)) for p, b in zip(payloads, blocks)]


def phrases(n, seed=5):
    """n short phrases drawn at random from 12: words recur after the same words, long matches are rare."""
    r = random.Random(seed)
    ph = [b"the old man said", b"in the morning", b"of the river", b"she turned away", b"and then",
          b"a small boat", b"by the door", b"he did not know", b"for a while", b"under the trees",
          b"at the station", b"it was late"]
    return b" ".join(r.choice(ph) + (b"." if r.random() < 0.2 else b",") for _ in range(n)) + b"\n"


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_recurring_words_cost_less_with_the_cache(tiny_model, adapt):
    blocks = [phrases(600)]
    (off,), _ = encode(tiny_model, blocks, adapt, cache=False)
    (on,), st = encode(tiny_model, blocks, adapt, cache=True)
    assert decode(tiny_model, [on], blocks, adapt) == blocks
    assert len(on) < 0.85 * len(off), (len(on), len(off))
    assert st["tc_tokens"] == st["tokens"]
    assert st["tc_o2"] > 0.8 * st["tokens"] and st["tc_o3"] > 0.5 * st["tokens"], st
    assert st["tc_u1"] <= st["tokens"]
    # the tokens the class stage coded cost less than the network alone would have made them cost
    assert st["word_bits"] + st["unk_bits"] < st["tc_net_cost"]


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_prose_round_trips_with_the_default_model(adapt):
    model = nlmcodec.load_model("default")
    blocks = [short_text(6000), short_text(3000)]
    payloads, _ = encode(model, blocks, adapt)
    assert decode(model, payloads, blocks, adapt) == blocks


@pytest.mark.parametrize("adapt", [False, True, "heads"], ids=["static", "dynamic", "heads"])
def test_restore_returns_the_cache_state(tiny_model, adapt):
    a, b, x = phrases(200, 1), phrases(200, 2), phrases(200, 3)
    c = Codec(tiny_model, adapt)
    c.reset()
    c.encode_block(a)
    c.save()
    c.encode_block(x)            # discarded
    c.restore()
    after = c.encode_block(b)
    fresh = Codec(tiny_model, adapt)
    fresh.reset()
    fresh.encode_block(a)
    assert after == fresh.encode_block(b)


def test_one_token_repeated(tiny_model):
    blocks = [b"the " * 9000]
    payloads, st = encode(tiny_model, blocks, adapt=True)
    assert decode(tiny_model, payloads, blocks, adapt=True) == blocks
    assert st["tc_o3"] > 0.9 * st["tokens"]


def test_more_contexts_than_the_tables_hold(tiny_model):
    # 40,000 distinct word pairs: more order-2 contexts than its 2^15 slots, so slots are replaced
    r = random.Random(9)
    words = [b"w%05d" % i for i in range(40000)]
    r.shuffle(words)
    text = b" ".join(words) + b"\n"
    blocks = [text[i:i + 30000] for i in range(0, len(text), 30000)]
    payloads, _ = encode(tiny_model, blocks)
    assert decode(tiny_model, payloads, blocks) == blocks
