"""Choosing the default model per frame (python/nlmcodec/_encode.py choose_model, _stream.NLMCompressor):
without model=, a frame uses the bundled default model (default-N) that codes a probe of its first group
(choice_head: pieces spread over the first CHOICE_WINDOW bytes) smaller in static mode, and names it; the
choice depends only on those bytes, never on how the input is fed or on the thread count; an explicit model
is never replaced.
"""
import random

import pytest

import nlmcodec
from nlmcodec import _bench, _encode, _registry

NARRATIVE, MANUAL = "alice29.txt", "xargs.1"     # a novel and a man page (benchmark files: tested, never tuned on)


def _defaults():
    models = _registry.default_models()
    if len(models) < 2:
        pytest.skip("fewer than two default models are bundled")
    return models


def _file(name):
    try:
        return _bench.read_file(name)[1]
    except (OSError, ValueError) as e:
        pytest.skip(f"{name}: {e}")


def test_the_defaults_are_every_bundled_generation_newest_first():
    names = _registry.default_model_names()
    gens = sorted((g, n) for n in _registry.model_files()
                  if _registry.model_files()[n].parent == _registry.package_dir()
                  and (g := _registry.default_generation(n)) is not None)
    assert names == [n for _, n in reversed(gens)]
    assert names[0] == _registry.default_model_name()          # "default" still names the newest


@pytest.mark.parametrize("adapt", [False, "heads"])
def test_the_frame_names_the_model_with_the_cheaper_probe_in_its_mode(adapt):
    """On the novel the static probe and the heads-mode probe disagree: each frame follows its own mode's."""
    models = _defaults()
    for name in (NARRATIVE, MANUAL):
        data = _file(name)
        costs = [_encode.probe_cost(m, _encode.choice_head(data), adapt) for m in models]
        best = models[costs.index(min(costs))]
        info = nlmcodec.get_frame_info(nlmcodec.compress(data, adapt=adapt))
        assert info.model_id == best.model_id, (name, costs)


def test_prose_and_a_manual_choose_different_models():
    """The point of two defaults: the technical model for a man page, the older one for a novel."""
    models = _defaults()
    chosen = {name: nlmcodec.get_frame_info(nlmcodec.compress(_file(name))).model_id for name in (NARRATIVE, MANUAL)}
    assert chosen[MANUAL] == models[0].model_id                  # default-3, trained on technical English too
    assert chosen[NARRATIVE] == models[1].model_id


def test_a_frame_of_either_default_decodes_without_a_model():
    _defaults()
    for name in (NARRATIVE, MANUAL):
        data = _file(name)[:40_000]
        assert nlmcodec.decompress(nlmcodec.compress(data)) == data


def _text(n, seed):
    """Lines of varied length: where the probe's last newline falls depends on the cut."""
    r = random.Random(seed)
    words = b"the of and to a in is it that was he for on as with his be at by this had not".split()
    lines = []
    while sum(map(len, lines)) < n:
        lines.append(b" ".join(r.choice(words) for _ in range(r.randrange(1, 30))) + b"\n")
    return b"".join(lines)[:n]


def test_the_probe_is_spread_over_the_window():
    lines = b"".join(b"line %06d of the text\n" % i for i in range(40_000))      # 920,000 bytes
    head = _encode.choice_head(lines, pieces=4, piece=4096, window=800_000)
    n = 800_000
    for i in range(4):                      # each piece: whole lines from (i + 1) * (n - 4096) / 4 on: the last ends
        start = lines.index(b"\n", (i + 1) * (n - 4096) // 4) + 1        # at the window's end, none starts at 0
        assert lines[start:start + 100] in head
    assert lines[:100] not in head
    assert len(head) <= 4 * 4096 and head.endswith(b"\n")
    assert _encode.choice_head(lines[:16_000], pieces=4, piece=4096, window=800_000) == lines[:16_000]
    assert _encode.choice_head(lines, window=800_000) == _encode.choice_head(lines[:800_000], window=800_000)


@pytest.mark.parametrize("extra", [-1, 0, 1, 5000])
def test_streaming_chooses_on_the_same_bytes_as_compress(monkeypatch, extra):
    """However the input is split, the choice is made on choice_head(whole input): an encoder that decided
    before it had CHOICE_WINDOW bytes would probe other bytes, and its frame could differ from compress()'s.
    (The window is shrunk to 40,000 bytes to keep the test quick; the encoder reads it at run time.)"""
    models = _defaults()
    monkeypatch.setattr(_encode, "CHOICE_WINDOW", 40_000)
    data = _text(40_000 + extra, seed=extra + 7)
    seen = []
    real = _encode.choose_model
    monkeypatch.setattr(_encode, "choose_model", lambda ms, d, a: seen.append(_encode.choice_head(d)) or real(ms, d, a))
    want = nlmcodec.compress(data)
    assert seen == [_encode.choice_head(data)]
    r = random.Random(extra)
    for sizes in ([39_999, 1, 10**6], [7] * 5 + [10**6], [len(data)], [r.randrange(1, 9000) for _ in range(40)]):
        seen.clear()
        c = nlmcodec.NLMCompressor()
        out, pos = [], 0
        for k in sizes:
            out.append(c.compress(data[pos:pos + k]))
            pos += k
        assert pos >= len(data)
        out.append(c.flush())
        assert b"".join(out) == want, sizes
        assert seen == [_encode.choice_head(data)], sizes
        assert c.model_id in {m.model_id for m in models}


def test_model_id_is_known_once_chosen(monkeypatch):
    _defaults()
    monkeypatch.setattr(_encode, "CHOICE_WINDOW", 30_000)
    c = nlmcodec.NLMCompressor()
    assert c.model_id is None
    assert c.compress(b"x" * 100) == b""
    assert c.model_id is None and c.progress == 0
    c.compress(b"It was the best of times.\n" * 1200)             # past the window: chosen
    assert c.model_id is not None
    frame = c.flush()
    assert nlmcodec.get_frame_info(frame).model_id == c.model_id
    c = nlmcodec.NLMCompressor()
    c.compress(b"It was the best of times.\n" * 10)
    assert c.model_id is None
    frame = c.flush()                                              # a shorter input: chosen at the end
    assert c.model_id is not None and nlmcodec.get_frame_info(frame).model_id in (None, c.model_id)


def test_an_explicit_model_is_never_replaced():
    models = _defaults()
    data = _file(MANUAL)
    for m in models:
        assert nlmcodec.get_frame_info(nlmcodec.compress(data, model=m)).model_id == m.model_id


def test_the_choice_does_not_depend_on_threads():
    _defaults()
    data = _file(NARRATIVE)
    assert nlmcodec.compress(data, threads=2) == nlmcodec.compress(data)


def test_a_short_input_takes_the_newest_default_unprobed(monkeypatch):
    """Below CHOICE_MIN no probe is coded and no other model is needed: start-up stays one model's."""
    models = _defaults()
    text = _file(NARRATIVE)
    monkeypatch.setattr(_encode, "probe_cost", lambda *a: pytest.fail("probed a short input"))
    for data in (text[:_encode.CHOICE_MIN - 1], b"", b"x"):
        assert _encode.choose_model(_registry.default_model_names(), data, "heads") is models[0]
    frame = nlmcodec.compress(text[:_encode.CHOICE_MIN - 1])
    assert nlmcodec.get_frame_info(frame).model_id == models[0].model_id
    monkeypatch.undo()
    assert nlmcodec.get_frame_info(nlmcodec.compress(text[:_encode.CHOICE_MIN])).model_id in \
        {m.model_id for m in models}


def test_binary_input_uses_the_newest_default():
    models = _defaults()
    data = random.Random(3).randbytes(_encode.CHOICE_MIN + 1000)
    assert [_encode.probe_cost(m, _encode.choice_head(data), "heads") for m in models] == [None] * len(models)
    assert _encode.choose_model(models, data, "heads") is models[0]
    assert nlmcodec.decompress(nlmcodec.compress(data)) == data


def test_one_default_model_is_used_from_the_start(tmp_path, monkeypatch):
    """A directory with a single default (a checkout's own default.nlmm): nothing to choose, the compressor
    knows its model at once and never probes."""
    import shutil

    shutil.copyfile(_registry.model_files()["tiny"], tmp_path / "default.nlmm")
    monkeypatch.setattr(_registry, "package_dir", lambda: tmp_path)
    monkeypatch.setattr(_encode, "probe_cost", lambda *a: pytest.fail("probed with one default"))
    assert _registry.candidates(None) == ["default"]
    c = nlmcodec.NLMCompressor()
    assert c.model_id == nlmcodec.load_model(tmp_path / "default.nlmm").model_id
    data = _text(50_000, seed=3)
    frame = c.compress(data) + c.flush()
    assert nlmcodec.decompress(frame, model=tmp_path / "default.nlmm") == data
