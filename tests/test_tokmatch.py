"""The token match flag (csrc/codec/tokmatch.c, docs/format.md §3.4), through the real codec.

* A repeated passage costs far less the second time with the flag than without it (exact sizes), and the
  flag's statistics say why (predictions, hits).
* An unknown word seen once is predicted as a token of the group: its repeats cost less than the spelling
  cache's pointer.
* save/restore returns the match state exactly (every mode, heads the default included): a block coded after a
  restore is byte-identical to the same block coded by a fresh context that never saw the discarded block.
* Hostile shapes round-trip: one token repeated thousands of times (the match runs on), and more distinct
  unknown bodies than the group's table holds (the overflow id, never predicted).
* The flag's two APMs (level 2, the one §3.4 defines) code it in fewer bits than one APM (level 1, a lab
  option of csrc/nlm_lab.h), on the same matches; a level outside 0..2 is refused.
"""
import random

import pytest

from corpus_cache import short_text
from nlmcodec._core import MATCH_FLAG1, MATCH_FLAG2, MATCH_OFF, Codec, NLMError


def encode(model, blocks, adapt=False, match=MATCH_FLAG2):
    c = Codec(model, adapt)
    c.lab_reset(match=match)
    out = [c.encode_block(b) for b in blocks]
    return out, c.stats()


def decode(model, payloads, blocks, adapt=False, match=MATCH_FLAG2):
    d = Codec(model, adapt)
    d.lab_reset(match=match)
    return [d.decode_block(p, len(b)) for p, b in zip(payloads, blocks)]


@pytest.mark.parametrize("adapt", [False, True])
def test_a_repeat_costs_little_the_second_time(tiny_model, adapt):
    text = short_text(4000)
    blocks = [text, text]
    (off1, off2), _ = encode(tiny_model, blocks, adapt, match=MATCH_OFF)
    (on1, on2), st = encode(tiny_model, blocks, adapt, match=MATCH_FLAG2)
    assert decode(tiny_model, [on1, on2], blocks, adapt) == blocks
    # the first copy: about the same either way; the second: a fraction of its cost without the flag
    assert len(on1) < 1.02 * len(off1)
    assert len(on2) < 0.35 * len(off2), (len(on2), len(off2))
    assert 0 < st["match_hits"] <= st["match_preds"] <= st["tokens"]
    assert st["match_bits"] < st["match_net_cost"]


def test_an_unknown_word_becomes_a_token_of_the_group(tiny_model):
    names = [b"Zorvathian", b"Quillmarsh", b"Hrothgarr"]
    r = random.Random(3)
    text = b" ".join(b"the %s and the %s said" % (r.choice(names), r.choice(names)) for _ in range(150))
    (off,), st_off = encode(tiny_model, [text], match=MATCH_OFF)
    (on,), st_on = encode(tiny_model, [text], match=MATCH_FLAG2)
    assert decode(tiny_model, [on], [text]) == [text]
    # 300 unknown tokens either way; without the flag every one goes through the cache or the speller
    assert st_off["unk_tokens"] == st_on["unk_tokens"] == 300
    assert st_off["cache_hits"] + st_off["spelled"] == 300
    assert st_on["cache_hits"] + st_on["spelled"] < 200       # the rest were predicted as tokens
    assert len(on) < 0.6 * len(off)


@pytest.mark.parametrize("adapt", [False, True, "heads"])
def test_restore_returns_the_match_state(tiny_model, adapt):
    text = short_text(6000)
    a, b, x = text[:2000], text[2000:4000], text[4000:] + text[:1500]
    fresh, _ = encode(tiny_model, [a, b], adapt)
    c = Codec(tiny_model, adapt)
    c.reset()
    assert c.encode_block(a) == fresh[0]
    c.save()
    c.encode_block(x)                      # a trial the encoder throws away
    c.restore()
    assert c.encode_block(b) == fresh[1]


def test_one_token_repeated(tiny_model):
    blocks = [b"the " * 5000, b"the the, " * 800]
    payloads, st = encode(tiny_model, blocks)
    off, _ = encode(tiny_model, blocks, match=MATCH_OFF)
    assert decode(tiny_model, payloads, blocks) == blocks
    assert st["match_hits"] > 0.9 * st["tokens"]
    assert len(payloads[0]) < 0.5 * len(off[0])


def test_more_unknown_bodies_than_the_table_holds(tiny_model):
    # 33,000 distinct unknown bodies in one group (the table holds 32,768), then the first ones again
    words = [b"q%05x" % i for i in range(33000)]
    blocks = [b" ".join(words[i:i + 3000]) for i in range(0, 33000, 3000)] + [b" ".join(words[:200])]
    payloads, st = encode(tiny_model, blocks)
    assert decode(tiny_model, payloads, blocks) == blocks
    assert st["unk_tokens"] >= 33000


@pytest.mark.parametrize("adapt", [False, True])
def test_two_apms_code_the_flag_in_fewer_bits(tiny_model, adapt):
    """Two APMs (MATCH_FLAG2, §3.4) against one (MATCH_FLAG1, a lab level): the same predictions and hits (the
    flag's probability changes neither the matches nor the network), fewer flag bits, and each round-trips
    only with its own level."""
    r = random.Random(5)
    parts = [short_text(3000)[i:i + 300] for i in range(0, 3000, 300)]
    text = b" ".join(r.choice(parts) for _ in range(40))     # passages repeated in a random order
    (one,), s1 = encode(tiny_model, [text], adapt, match=MATCH_FLAG1)
    (two,), s2 = encode(tiny_model, [text], adapt, match=MATCH_FLAG2)
    assert decode(tiny_model, [one], [text], adapt, match=MATCH_FLAG1) == [text]
    assert decode(tiny_model, [two], [text], adapt, match=MATCH_FLAG2) == [text]
    assert (s1["match_preds"], s1["match_hits"]) == (s2["match_preds"], s2["match_hits"])
    assert s2["match_preds"] > 1000
    assert s2["match_bits"] < 0.97 * s1["match_bits"], (s2["match_bits"], s1["match_bits"])
    assert len(two) < len(one)
    try:                                                    # the other level's decoder does not give the text
        wrong = decode(tiny_model, [two], [text], adapt, match=MATCH_FLAG1)
    except NLMError:
        wrong = None
    assert wrong != [text]


def test_a_match_level_outside_0_to_2_is_refused(tiny_model):
    c = Codec(tiny_model, False)
    for bad in (-1, 3):
        with pytest.raises(NLMError):
            c.lab_reset(match=bad)
