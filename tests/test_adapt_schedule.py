"""The adaptation schedules of dynamic evaluation (nlm.h nlm_codec_set_schedule, csrc/model/lm.c), through the
real codec: issue 11's cheaper adaptation, measured by benchmarks/adapt_subsets.py (no frame records a
schedule, so only the default is a format).

* The default (1, 0, 0) is what a fresh context codes: the same payload as a context never given a schedule.
* Every other schedule changes the payload and round-trips when the decoder uses the same schedule, for each
  model type's body (Elman, LSTM, NPLM: the one-step backward asks the body for dx alone).
* skip_permille skips segments (the statistics count them) and changes the payload; the default skips none.
* Out-of-range values and static contexts are refused.
"""
import pytest

import nlmcodec
from corpus_cache import short_text
from nlmcodec._core import Codec, NLMError

SCHEDULES = [(0, 0, 0), (0, 1, 0), (2, 0, 0), (4, 1, 0), (1, 0, 63)]


def encode(model, data, schedule=None):
    c = Codec(model, True)
    if schedule is None:
        c.reset()
    else:
        c.reset(schedule=schedule)
    z = c.encode_block(data)
    return z, c.stats(), c.memory()


def decode(model, z, n, schedule):
    d = Codec(model, True)
    d.reset(schedule=schedule)
    return d.decode_block(z, n)


@pytest.fixture(scope="module")
def text():
    return short_text(6000)


def test_default_schedule_is_the_format(tiny_model, text):
    z0, st, _ = encode(tiny_model, text)
    z1, _, _ = encode(tiny_model, text, (1, 0, 0))
    assert z0 == z1
    assert st["segments"] > 50 and st["segments_skipped"] == 0, st


@pytest.mark.parametrize("name", ["tiny", "tiny-lstm", "tiny-nplm"])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: "-".join(map(str, s)))
def test_schedule_round_trips_and_changes_the_code(name, schedule, text):
    model = nlmcodec.load_model(name)
    full, _, _ = encode(model, text)
    z, _, _ = encode(model, text, schedule)
    assert z != full
    assert decode(model, z, len(text), schedule) == text


def test_skip_counts_segments(tiny_model, text):
    _, st, _ = encode(tiny_model, text, (1, 0, 63))
    assert 0 < st["segments_skipped"] < st["segments"], st


@pytest.mark.parametrize("schedule", [(-1, 0, 0), (1025, 0, 0), (1, 2, 0), (1, 0, 62), (1, 0, 1001), (1, 0, -1)])
def test_bad_schedules_are_refused(tiny_model, schedule):
    c = Codec(tiny_model, True)
    with pytest.raises(NLMError):
        c.reset(schedule=schedule)


def test_static_context_takes_no_schedule(tiny_model, text):
    c = Codec(tiny_model, False)
    assert c._c.set_schedule(0, 0, 0) < 0          # nlm_codec_set_schedule: NLM_ERR_STATE
    c.reset(schedule=(0, 0, 0))                     # Codec.reset passes it to dynamic contexts only
    s = Codec(tiny_model, False)
    s.reset()
    assert c.encode_block(text) == s.encode_block(text)
