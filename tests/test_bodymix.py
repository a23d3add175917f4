"""The body mixer (csrc/codec/bodymix.c, docs/format.md §5.1.1), through the real codec.

* Unknown names that recur after the same words (a new order each time, so the match flag rarely has them)
  cost less with the mixer (cache level 2) than with the cache's PPM-C counts alone (level 1): exact sizes,
  the cache symbol's bits, and the statistics say the experts named most of them.
* It round-trips static and dynamic, with the default model too, and over more distinct unknown bodies than
  one symbol's candidates (stage B, the excluded PPM-C code, is used).
* save/restore returns the mixer exactly (static, dynamic and heads, the default mode): a block coded after a
  restore is byte-identical to the block coded by a fresh context that never saw the discarded one.
* A cache level outside 0..2 is refused.
* The second reader of tests/format_reader.py decodes the body mixer of the golden vectors (test_format_reader).
"""
import random

import pytest

import nlmcodec
from corpus_cache import short_text
from nlmcodec._core import CACHE_BODIES, CACHE_TOKENS, Codec, NLMError

NAMES = [b"Zorbathwick", b"Quillimore", b"Fendrasko", b"Vantrelle", b"Oskibarro", b"Merinthwaite", b"Tolgravian",
         b"Ulbrecht", b"Kazzenmoor", b"Perlivank"]
VERBS = [b"said", b"walked to the gate", b"looked at the sea", b"sat down", b"laughed", b"went home"]


def names_text(n, seed=3):
    """n sentences, each a title then a made-up name (never in a vocabulary) then a verb phrase: a name
    recurs after its own title, in random order, so the match model seldom has the whole phrase."""
    r = random.Random(seed)
    title = {nm: t for nm, t in zip(NAMES, [b"Mr.", b"Dr.", b"Lady", b"Captain", b"Sir"] * 2)}
    out = []
    for _ in range(n):
        nm = r.choice(NAMES)
        out.append(title[nm] + b" " + nm + b" " + r.choice(VERBS) + b".")
    return b" ".join(out) + b"\n"


def encode(model, blocks, adapt=False, cache=CACHE_BODIES):
    c = Codec(model, adapt)
    c.lab_reset(cache=cache)
    out = [c.encode_block(b) for b in blocks]
    return out, c.stats()


def decode(model, payloads, blocks, adapt=False, cache=CACHE_BODIES):
    d = Codec(model, adapt)
    d.lab_reset(cache=cache)
    return [d.decode_block(p, len(b)) for p, b in zip(payloads, blocks)]


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_recurring_names_cost_less_with_the_mixer(tiny_model, adapt):
    blocks = [names_text(400)]
    (tokens,), s1 = encode(tiny_model, blocks, adapt, cache=CACHE_TOKENS)
    (bodies,), s2 = encode(tiny_model, blocks, adapt, cache=CACHE_BODIES)
    assert decode(tiny_model, [bodies], blocks, adapt) == blocks
    assert decode(tiny_model, [tokens], blocks, adapt, cache=CACHE_TOKENS) == blocks
    assert len(bodies) < len(tokens), (len(bodies), len(tokens))
    coded = s2["cache_hits"] + s2["spelled"]
    assert coded > 100 and s2["cache_hits"] == s1["cache_hits"]   # the same symbols, coded differently
    assert s2["cache_bits"] < 0.7 * s1["cache_bits"], (s2["cache_bits"], s1["cache_bits"])
    assert s1["bm_candidates"] == 0 and s2["bm_candidates"] > 0.8 * s2["cache_hits"], s2


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_prose_round_trips_with_the_default_model(adapt):
    data = short_text() + names_text(60)
    z = nlmcodec.compress(data, adapt=adapt)
    assert z[4] == nlmcodec.FORMAT_VERSION >= 9 and nlmcodec.decompress(z) == data


def test_many_distinct_bodies_round_trip(tiny_model):
    """More distinct unknown bodies than any symbol's candidates, revisited at random: most symbols leave
    the experts' names (stage B), some are new (escapes), and every one decodes."""
    r = random.Random(11)
    bodies = [bytes(r.choice(b"bcdfghjklmnpqrstvwxz") for _ in range(7)) for _ in range(600)]
    text = b" ".join(r.choice(bodies) + b" " + r.choice([b"and", b"or", b"of", b"the"]) for _ in range(3000))
    blocks = [text[:20000], text[20000:]]
    payloads, st = encode(tiny_model, blocks)
    assert decode(tiny_model, payloads, blocks) == blocks
    assert st["cache_hits"] > 1000 and st["bm_candidates"] < st["cache_hits"], st


@pytest.mark.parametrize("adapt", [False, True, "heads"], ids=["static", "dynamic", "heads"])
def test_restore_returns_the_mixer_state(tiny_model, adapt):
    first, discarded, last = names_text(80, seed=1), names_text(80, seed=2), names_text(80, seed=4)
    a = Codec(tiny_model, adapt)
    a.reset()
    a.encode_block(first)
    a.save()
    a.encode_block(discarded)
    a.restore()
    after_restore = a.encode_block(last)
    b = Codec(tiny_model, adapt)
    b.reset()
    b.encode_block(first)
    assert b.encode_block(last) == after_restore


@pytest.mark.parametrize("level", [-1, 3])
def test_a_cache_level_outside_the_range_is_refused(tiny_model, level):
    c = Codec(tiny_model, False)
    with pytest.raises(NLMError):
        c.lab_reset(cache=level)
