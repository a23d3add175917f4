"""The adaptation schedules of dynamic evaluation (nlm_lab.h nlm_codec_set_schedule, csrc/model/lm.c), through
the real codec (docs/decisions/heads-mode.md).  Two schedules are coding modes (csrc/codec/formats.h, applied
by nlm_codec_reset_for): (1, 0, 0), everything every segment, dynamic mode (docs/format.md §6.3-§6.4), and
(0, 0, 0) at rates (2, 1), the heads only over §2.6's integer transition, heads mode (§6.5, frame flag 0x10);
the others are measurements.

* The default is dynamic mode's (1, 0, 0): the same payload as a fresh context's; heads mode's differs.
* Every other schedule changes the payload and round-trips when the decoder uses the same schedule, for each
  model type's body (Elman, LSTM, NPLM: the one-step backward asks the body for dx alone).
* The transition is integer exactly when the schedule never adapts the body or the embeddings.
* skip_permille skips segments (the statistics count them) and changes the payload; the default skips none.
* Out-of-range values and static contexts are refused.
"""
import pytest

import nlmcodec
from corpus_cache import short_text
from nlmcodec import _frame
from nlmcodec._core import FORWARD_FLOAT, FORWARD_INT8, Codec, NLMError

SCHEDULES = [(0, 0, 0), (0, 1, 0), (2, 0, 0), (4, 1, 0), (1, 0, 63)]


def encode(model, data, schedule=None, forward=FORWARD_INT8):
    c = Codec(model, True)
    if schedule is None:
        c.reset()
    else:
        c.lab_reset(schedule=schedule, forward=forward)
    z = c.encode_block(data)
    return z, c.stats(), c.memory()


def decode(model, z, n, schedule):
    d = Codec(model, True)
    d.lab_reset(schedule=schedule)
    return d.decode_block(z, n)


@pytest.fixture(scope="module")
def text():
    # real English, then a run of one word: segments predictable enough for skip_permille to skip some
    return short_text(6000) + b"the " * 200 + b"\n"


def test_the_format_table_gives_each_mode_its_schedule_and_rates(tiny_model, text):
    """reset() (nlm_codec_reset_for of the current format) codes as the options set one by one: dynamic mode
    (1, 0, 0) at the trained rates, heads mode (0, 0, 0) at rates (2, 1); a version this build does not read, or
    a mode the context cannot code, is refused."""
    def payload(adapt, **lab):
        c = Codec(tiny_model, adapt)
        c.lab_reset(**lab) if lab else c.reset()
        return c.encode_block(text)

    assert payload(True) == payload(True, schedule=(1, 0, 0), rates=(1, 1)) != payload(True, schedule=(0, 0, 0))
    assert payload("heads") == payload(True, schedule=(0, 0, 0), rates=(2, 1)) != payload(True, schedule=(0, 0, 0))
    for version in (0, 12, _frame.FORMAT_VERSION + 1):
        with pytest.raises(NLMError):
            Codec(tiny_model, True).reset(version)
    static, dynamic = Codec(tiny_model, False), Codec(tiny_model, True)
    assert static._c.reset_for(_frame.FORMAT_VERSION, 1) < 0 and static._c.reset_for(_frame.FORMAT_VERSION, 2) < 0
    assert dynamic._c.reset_for(_frame.FORMAT_VERSION, 0) < 0 and dynamic._c.reset_for(_frame.FORMAT_VERSION, 3) < 0


def test_default_schedule_is_the_format(tiny_model, text):
    z0, st, _ = encode(tiny_model, text)
    z1, _, _ = encode(tiny_model, text, (1, 0, 0))
    zh, _, _ = encode(tiny_model, text, (0, 0, 0))
    assert z0 == z1 != zh
    assert st["segments"] > 50 and st["segments_skipped"] == 0, st


@pytest.mark.parametrize("name", ["tiny", "tiny-lstm", "tiny-nplm"])
def test_transition_is_integer_only_when_the_body_never_adapts(name, text):
    """§6.5: heads only (0, 0, 0) runs §2.6's integer transition (the forward level changes its code; NPLM's
    transition is float in every mode, §2.6); a schedule that adapts the body or the embeddings keeps it float
    (the level changes nothing)."""
    model = nlmcodec.load_model(name)
    has_integer = model.config["arch"] != "nplm"
    for schedule, integer in (((0, 0, 0), True), ((0, 0, 63), True), ((1, 0, 0), False), ((0, 1, 0), False),
                              ((4, 0, 0), False)):
        zi, _, _ = encode(model, text, schedule, FORWARD_INT8)
        zf, _, _ = encode(model, text, schedule, FORWARD_FLOAT)
        assert (zi != zf) == (integer and has_integer), schedule
        assert decode(model, zi, len(text), schedule) == text


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
        c.lab_reset(schedule=schedule)


def test_static_context_takes_no_schedule(tiny_model, text):
    c = Codec(tiny_model, False)
    assert c._c.set_schedule(0, 0, 0) < 0          # nlm_codec_set_schedule: NLM_ERR_STATE
    c.lab_reset(schedule=(0, 0, 0))                     # Codec.reset passes it to dynamic contexts only
    s = Codec(tiny_model, False)
    s.reset()
    assert c.encode_block(text) == s.encode_block(text)


def test_rates_are_the_format_and_change_only_heads_mode(tiny_model, text):
    """§6.5: heads mode takes twice the trained steps (rates (2, 1)); dynamic mode keeps the trained rates (1, 1)
    (test_the_format_table_gives_each_mode_its_schedule_and_rates); each rate codes differently and round-trips."""

    def code(rates):
        c = Codec(tiny_model, True)
        c.lab_reset(schedule=(0, 0, 0), rates=rates)
        z = c.encode_block(text)
        d = Codec(tiny_model, True)
        d.lab_reset(schedule=(0, 0, 0), rates=rates)
        assert d.decode_block(z, len(text)) == text
        return z

    z11, z21, z22 = code((1, 1)), code((2, 1)), code((2, 2))
    assert len({z11, z21, z22}) == 3
    c = Codec(tiny_model, True)
    c.lab_reset(schedule=(0, 0, 0))                     # the default rates are (1, 1)
    assert c.encode_block(text) == z11


@pytest.mark.parametrize("rates", [(0, 1), (17, 1), (1, 0), (1, 17), (-1, 1)])
def test_bad_rates_are_refused(tiny_model, rates):
    c = Codec(tiny_model, True)
    with pytest.raises(NLMError):
        c.lab_reset(schedule=(0, 0, 0), rates=rates)


def test_rates_need_a_dynamic_context_and_a_decay_below_one(tiny_model):
    assert Codec(tiny_model, False)._c.set_rates(2, 1) < 0      # nlm_codec_set_rates: NLM_ERR_STATE
    big = tiny_model.with_config(decay=0.07)                     # decay x 16 >= 1
    c = Codec(big, True)
    assert c._c.set_rates(1, 14) == 0 and c._c.set_rates(1, 15) < 0
