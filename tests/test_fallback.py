"""Fallback blocks and threads with the real codec: what compress writes, decompress reads back.

* a Hypothesis property over adversarial mixtures (whitespace runs of 65,535 / 65,536 / 70,000 bytes,
  words over 32 bytes, 20-digit numbers, NUL, invalid UTF-8, binary islands), placed at block
  boundaries, in every mode (static, dynamic and heads, the default);
* the reproducer of issue 8 (a 70,000-byte space run between English texts, default model, static);
* the same frame for every thread count in every mode, and any thread count decodes any frame;
* snapshots (save/restore) in every mode.
"""
import os

import pytest

from corpus_cache import short_text
from hypothesis import HealthCheck, given, settings, strategies as st

import corpus_cache as cc
import nlmcodec
from nlmcodec import _encode, _registry
from conftest import lane_modes, word_salad

B = _encode.BLOCK_SIZE
MODES = [False, True, "heads"]                  # static, dynamic and heads (the default mode)
MODE_IDS = ["static", "dynamic", "heads"]

ISLANDS = {
    "spaces65535": b" " * 65535,
    "spaces65536": b" " * 65536,
    "spaces70000": b" " * 70000,
    "tabs70000": b"\t" * 70000,
    "newlines70000": b"\n" * 70000,
    "mixed_ws": b" \t" * 40000,
    "long_word": b"Pneumonoultramicroscopicsilicovolcanoconiosis" * 3,
    "digits20": b"12345678901234567890 98765432109876543210",
    "nul": b"\x00" * 300,
    "bad_utf8": b"\xff\xfe\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc" * 50,
    "binary": bytes(range(256)) * 40,
}

PROPERTY_RUNS = int(os.environ.get("NLMCODEC_FALLBACK_EXAMPLES", "20"))   # raise it for a long run
island = st.sampled_from(sorted(ISLANDS))
segment = st.tuples(island, st.integers(0, 64), st.integers(200, 30000))   # island, offset from a block end, text


def _mixture(segments, seed):
    """Text and islands, each island placed `off` bytes before the next 64 KiB boundary."""
    out = bytearray(word_salad(500, seed=seed) + b"\n")
    for i, (name, off, ntext) in enumerate(segments):
        room = (-len(out) - off) % B
        out += word_salad(room // 5 + 1, seed=seed + i)[:room]
        out += ISLANDS[name]
        out += b" " + word_salad(ntext // 5, seed=seed + 100 + i) + b"\n"
    return bytes(out)


@pytest.mark.one_lane      # the encoder's choices (the frame layer); the binding's calls are the round trips'
@settings(max_examples=PROPERTY_RUNS, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                           HealthCheck.too_slow])
@given(segments=st.lists(segment, min_size=1, max_size=4), seed=st.integers(0, 1000),
       adapt=st.sampled_from(MODES))
def test_adversarial_mixtures_round_trip(tiny_model, segments, seed, adapt):
    data = _mixture(segments, seed)
    f = nlmcodec.compress(data, model=tiny_model, adapt=adapt)
    assert nlmcodec.decompress(f, model=tiny_model) == data
    assert len(f) <= _encode.max_compressed_size(len(data))


def test_refused_whole_block_between_model_blocks(default_model):
    """A block made only of a 65,536-byte whitespace run is refused by the word model: no word-model block
    holds it, and the frame decodes (every mode).  The default model wins the prose on both sides (the
    tiny one does not: a byte model close to it on the first block is coded alongside, docs/format.md §7.4,
    and on this input it wins the whole group)."""
    prose = short_text(90_000)
    head = prose[:15_000]
    data = head + b" " * ((-len(head)) % B) + b" " * B + b"\t" * 10 + prose[15_000:]
    for adapt in MODES:
        f = nlmcodec.compress(data, model=default_model, adapt=adapt)
        blocks = nlmcodec.get_frame_info(f).blocks
        kinds = [b.kind for b in blocks]
        pos = 0
        for b in blocks:
            assert b.kind != "model" or b" " * B not in data[pos:pos + b.size]
            pos += b.size
        assert kinds[0] == "model" and kinds[-1] == "model" and len(kinds) >= 3
        assert nlmcodec.decompress(f, model=default_model) == data


def _frame_with(model, data, adapt, threads, group_size):
    enc = _encode.FrameEncoder(lambda: _registry.acquire_codec(model, adapt), _registry.release_codec,
                               model.model_id, adapt, nlmcodec.CHECK_CRC32, threads, group_size=group_size)
    return enc.feed(data) + enc.finish()


def _prose(n):
    """n bytes of English prose the tiny model wins even in static mode (it loses word salad to the byte
    model there), with no corpus needed: the standard library's pydoc topics."""
    from pydoc_data import topics

    text = "\n".join(topics.topics[k] for k in sorted(topics.topics)).encode()
    assert len(text) >= n
    return text[:n]


def _group_kinds(info):
    """The kinds of block in each group of a frame."""
    out, blocks = [], iter(info.blocks)
    for g in info.groups:
        n, kinds = 0, set()
        while n < g.size:
            b = next(blocks)
            n += b.size
            kinds.add(b.kind)
        out.append(kinds)
    return out


@pytest.mark.parametrize("adapt", lane_modes())
def test_thread_count_does_not_change_the_frame(tiny_model, adapt):
    """Small groups (the group size is the encoder's policy, the same for every thread count).  In every mode
    the input is cut into several groups whose cuts show in the frame: word-model groups (the prose), each
    coded from the trained state, so a group size that depended on the thread count would change the frame
    in static mode too (plain groups alone would not show it: consecutive ones are coded together)."""
    data = _mixture([("binary", 10, 9000), ("spaces70000", 0, 20000)], 7) + _prose(200_000)
    frames = {t: _frame_with(tiny_model, data, adapt, t, 80 << 10) for t in (1, 2, 3, 8)}
    f = frames[1]
    kinds = _group_kinds(nlmcodec.get_frame_info(f))
    # groups without a word-model block are coded together (the salad and islands before the prose: one plain
    # group in every mode); the prose is cut into word-model groups
    assert len(kinds) >= 3 and sum("model" in k for k in kinds) >= 2, kinds
    assert all(frames[t] == f for t in frames), [t for t in frames if frames[t] != f]
    for t in (1, 2, 3, 8):
        assert nlmcodec.decompress(f, model=tiny_model, threads=t) == data
    # incremental decoding with threads, fed in small pieces, max_length respected
    d = nlmcodec.NLMDecompressor(model=tiny_model, threads=3)
    got = bytearray()
    for i in range(0, len(f), 5000):
        got += d.decompress(f[i:i + 5000], max_length=30000)
        while not d.needs_input and not d.eof:
            got += d.decompress(b"", max_length=30000)
    assert d.eof and bytes(got) == data


ENGLISH_FILES = ("book1", "book2", "plrabn12.txt", "lcet10.txt", "news", "alice29.txt", "asyoulik.txt", "paper1",
                 "paper2", "paper3", "paper4", "paper5", "paper6")


@pytest.mark.slow
def test_threads_identical_frames_default_groups(tiny_model):
    """The shipped group size (4 MiB): 1 and 2 threads write the same frame, which 2 threads decode (one thread
    decodes frames of several default groups in the corpus round trip: bible.txt, dickens; the thread counts
    against the group count, 1, 2, 3 and 8 threads, in every mode, are test_thread_count_does_not_change_the_frame's;
    here the default mode: where the groups are cut does not depend on the mode, and a minute per mode is CI's
    time).  English (the corpus's), which the tiny model codes: the group after the cut is a word-model group,
    coded from the trained state, so the cut shows in the frame."""
    data = b"".join(cc.read(cc.find(n)) for n in ENGLISH_FILES)
    data += cc.read(cc.find("dickens"))[:4_700_000 - len(data)]     # ~4.7 MB: 2 groups
    assert len(data) > _encode.GROUP_SIZE
    frames = {t: nlmcodec.compress(data, model=tiny_model, threads=t) for t in (1, 2)}      # the default mode
    assert frames[2] == frames[1]
    f = frames[1]
    kinds = _group_kinds(nlmcodec.get_frame_info(f))
    assert len(kinds) == 2 and "model" in kinds[1], kinds
    assert nlmcodec.decompress(f, threads=2) == data


@pytest.mark.slow
def test_issue8_reproducer(default_model):
    """Issue 8's input, which once gave an undecodable frame: a 70,000-byte space run inside book1, then more
    English (default model, static); it round-trips."""
    book1, book2 = cc.read(cc.find("book1")), cc.read(cc.find("book2"))
    alice, lcet10 = cc.read(cc.find("alice29.txt")), cc.read(cc.find("lcet10.txt"))
    data = book1[:700000] + b" " * 70000 + book1[700000:] + book2[:300000] + alice + lcet10
    f = nlmcodec.compress(data, model=default_model, adapt=False)
    assert nlmcodec.decompress(f) == data


def _counting_codec(model, adapt, version=None):
    """A real codec that records the length of every block the encoder asks the word model to code; version:
    the format its resets code (None: the one this build writes)."""
    from nlmcodec import _core

    calls = []

    class Counting(_core.Codec):
        def encode_block(self, block):
            calls.append(len(block))
            return super().encode_block(block)

        def reset(self, v=None):
            return super().reset(v or version or _core.native.FORMAT_VERSION)

    return Counting(model, adapt), calls


# The encoder's rules below were set with format 13 and default-2 (docs/decisions/byte-model-alongside.md,
# probe-margin.md) and are tested there: on news and zlib-source.c format 14's gap mixer makes the word model good
# enough that these rules rightly no longer end it (zlib-source.c is a word-model file in heads mode now,
# benchmarks/byte_targets.md), so the inputs that show the rules working are format 13's (the word model's
# blocks are format 13's; the tests look at the group's blocks, which use no word-model block).
RULES_FORMAT = 13


@pytest.fixture
def byte_model_1(monkeypatch):
    """The encoder's byte model as in formats 13 to 15 (byte model 1, docs/format.md §9.1-§9.5), the one the
    rules were set with: byte model 2 (format 16, §9.7) codes news well enough to win its first block."""
    from nlmcodec import _core

    class ByteCoder1(_core.ByteCoder):
        def __init__(self, version=15):
            super().__init__(version)

    monkeypatch.setattr(_core, "ByteCoder", ByteCoder1)


def _one_group(codec, model, adapt, data):
    """data coded as one group by a GroupCoder (the whole input): (coder, frame, blocks as (kind, start, size,
    payload)); the frame round-trips when it has no word-model block."""
    F = _encode.F
    g = _encode.GroupCoder(codec)
    g.close(data, only=True)
    body = g.take()
    frame = F.header(adapt, nlmcodec.CHECK_CRC32, model.model_id) + body + \
        F.trailer([(g.size, g.coded_size)], len(data), nlmcodec.CHECK_CRC32, F.crc32(data))
    blocks = [(kind, start, size, payload) for kind, start, size, payload, _ in F.iter_blocks(frame)]
    if not g.used:
        assert nlmcodec.decompress(frame) == data
    return g, frame, blocks


@pytest.mark.slow
def test_byte_model_alongside_ends_the_word_model_early(default_model, byte_model_1, monkeypatch):
    """news (Calgary), static: the byte model runs alongside from the first block (TRACK_RATIO), so the group
    is tracked (docs/format.md §7.2); the word model keeps the blocks it wins, and once the byte model, which
    has learnt every byte, is ahead over EARLY_MIN bytes of blocks both coded, the word model is not tried on
    the rest of the group: its blocks come first, then only byte-model blocks, and it never codes the group's
    last blocks.  (Not dynamic mode: there the word model wins news.)  default-2 and byte model 1, the models
    these rules were set with."""
    monkeypatch.setattr(_encode, "ROUTE", False)      # format 13's codec: the hold's rules, no line route (§3.8)
    data = cc.read(cc.find("news"))
    model = nlmcodec.load_model("default-2")
    codec, calls = _counting_codec(model, False, RULES_FORMAT)
    g, frame, blocks = _one_group(codec, model, False, data)
    kinds = [k for k, *_ in blocks]
    assert blocks[0][1] == _encode.size_class(_encode.GROUP_SIZE)       # a tracked group
    first_byte = kinds.index(_encode.F.BLOCK_BYTE)
    assert first_byte > 0 and set(kinds[:first_byte]) == {_encode.F.BLOCK_MODEL}
    assert set(kinds[first_byte:]) == {_encode.F.BLOCK_BYTE}
    assert {p[0] for k, s, _, p in blocks if k == _encode.F.BLOCK_BYTE} == {0}          # the group's run
    tried = sum(calls) - calls[0]                                    # calls[0]: the probe of the first 16 KiB
    assert calls[0] <= _encode.PROBE_SIZE and tried <= len(data) - blocks[-1][2], calls    # not the last block


@pytest.mark.slow
def test_byte_model_far_ahead_ends_the_word_model_at_the_hold(default_model, monkeypatch):
    """zlib-source.c (ood), dynamic, with the probe turned off (it rules the word model out of this file at
    once): a fresh byte model is within TRACK_RATIO of the word model on the first block, so it codes the
    group alongside; at the hold's end it is ahead, so the word model codes no block after the hold (in one
    pass the word model codes the hold's blocks: the byte model's verdict comes after them).  The group is
    the byte model's, and the file round-trips."""
    monkeypatch.setattr(_encode, "_probe_says_model", lambda codec, block: True)
    monkeypatch.setattr(_encode, "ROUTE", False)      # format 13's codec: the hold's rules, no line route (§3.8)
    data = cc.read(cc.find("zlib-source.c"))
    codec, calls = _counting_codec(default_model, True, RULES_FORMAT)
    g, frame, blocks = _one_group(codec, default_model, True, data)
    assert not g.used and blocks[0][1] > 1 and {k for k, *_ in blocks} == {_encode.F.BLOCK_BYTE}
    assert sum(calls) <= _encode.HOLD + B, calls                    # the hold's blocks (the probe is off)
    monkeypatch.setattr(_encode, "ROUTE", True)       # the format this build writes (its tracked groups route)
    assert nlmcodec.decompress(nlmcodec.compress(data, model=default_model)) == data


@pytest.mark.parametrize("schedule", [(1, 0, 0), (0, 0, 0)], ids=["format11", "format12"])
def test_frozen_dynamic_context_codes_as_static(tiny_model, schedule):
    """The probe's estimate: a dynamic context set frozen codes a block with its weights unchanged (no update),
    and after restore() and unfreezing it codes as a fresh dynamic context again.  Frozen, dynamic mode's
    schedule (1, 0, 0; docs/format.md §6.3-§6.4) codes exactly as a static context with the float forward (a
    static context takes its products from int8 weights, §2.6, which a dynamic context on this schedule never
    does); heads mode's (0, 0, 0; §6.5) takes the transition's products from int8 weights as static contexts do
    and keeps the heads float, so it codes as neither, and its heads' float products are what separates it
    from the int8 static context.  (The ids are historical names, 0.1.0's formats.)"""
    from nlmcodec import _core

    text = short_text(20000)
    static = _core.Codec(tiny_model, False)
    static.lab_reset(forward=_core.FORWARD_FLOAT)
    int8 = _core.Codec(tiny_model, False)
    int8.reset()
    fresh = _core.Codec(tiny_model, True)
    fresh.lab_reset(schedule=schedule)
    dyn = _core.Codec(tiny_model, True)
    dyn.lab_reset(schedule=schedule)
    dyn.save()
    dyn.set_frozen(True)
    frozen = dyn.encode_block(text)
    dyn.set_frozen(False)
    dyn.restore()
    f, i = static.encode_block(text), int8.encode_block(text)
    if schedule == (1, 0, 0):
        assert frozen == f != i
    else:
        assert frozen != f and frozen != i
    adapted = fresh.encode_block(text)
    assert adapted != frozen and dyn.encode_block(text) == adapted


@pytest.mark.slow
def test_frozen_probe_rules_the_word_model_out_of_code(default_model):
    """zlib-source.c (ood), dynamic: the probe codes without adapting, at static-mode speed, and its payload
    is not smaller than a fresh byte model's, so no block is coded by the word model (before the frozen probe
    and the far-ahead rule it coded five blocks, at dynamic-mode speed).  The group is plain from its first
    block: an untracked run of byte-model blocks, written as they are coded.  default-2, the model the margin
    was set with: default-3 codes C comments well enough to pass the probe."""
    data = cc.read(cc.find("zlib-source.c"))
    model = nlmcodec.load_model("default-2")
    codec, calls = _counting_codec(model, True, RULES_FORMAT)
    g, frame, blocks = _one_group(codec, model, True, data)
    assert not g.used and {k for k, *_ in blocks} == {_encode.F.BLOCK_BYTE} and blocks[0][1] == 1
    assert len(calls) == 1 and calls[0] <= _encode.PROBE_SIZE, calls


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "after_a_block"])
@pytest.mark.parametrize("adapt", MODES, ids=MODE_IDS)
def test_a_snapshot_outlives_restores(default_model, adapt, warm):
    """The encoder reuses the probe's snapshot for the block after it (nlm.h nlm_codec_save): after two
    discarded attempts, each rolled back by restore() to one save(), the context codes the next block as a
    context that never made them.  The default model, so every part of the state is in play (the adapted
    weights, the match and cache tables, the speller's byte model on unknown words).  Fresh: the snapshot
    is taken before any block, when the speller still works on the model's primed tables (speller.c
    cur_state), as the probe at a group's start does."""
    from nlmcodec import _core

    text = short_text(80000)
    a, x, y, b = (text[o:o + 6000] for o in (0, 20000, 40000, 60000))
    if not warm:
        a = b""
    c = _core.Codec(default_model, adapt)
    c.reset()
    c.encode_block(a)
    c.save()
    c.set_frozen(True)            # the probe's attempt
    c.encode_block(x)
    c.set_frozen(False)
    c.restore()
    c.encode_block(y)             # the block's attempt, discarded too
    c.restore()
    after = c.encode_block(b)
    fresh = _core.Codec(default_model, adapt)
    fresh.reset()
    fresh.encode_block(a)
    assert after == fresh.encode_block(b)


@pytest.mark.parametrize("adapt", MODES, ids=MODE_IDS)
def test_each_save_replaces_the_snapshot(default_model, adapt):
    """The encoder saves before every block, so a snapshot is mostly made from the one before it: a save copies
    what changed since the last save or restore (the token cache's order slots written since, tokcache.c
    orders_sync), and a restore after the second of two saves returns to the second, then codes on as a
    context that never made the discarded attempt; after a reset (a group's start) the next save copies all of it."""
    from nlmcodec import _core

    text = short_text(80000)
    a, a2, x, b = (text[o:o + 6000] for o in (0, 20000, 40000, 60000))
    c = _core.Codec(default_model, adapt)
    c.reset()
    c.encode_block(a)
    c.save()
    c.encode_block(a2)
    c.save()                      # the second snapshot: a and a2 coded
    c.encode_block(x)             # an attempt, discarded
    c.restore()
    after = c.encode_block(b)
    fresh = _core.Codec(default_model, adapt)
    fresh.reset()
    fresh.encode_block(a)
    fresh.encode_block(a2)
    assert after == fresh.encode_block(b)
    # a group's start: reset, then a save, whose copy is a whole one (the slots the old snapshot holds and
    # the new group never wrote must not come back with the next restore)
    c.reset()
    c.encode_block(a2)
    c.save()
    c.encode_block(x)
    c.restore()
    fresh.reset()
    fresh.encode_block(a2)
    assert c.encode_block(b) == fresh.encode_block(b)


def _spelled_text(n_words, seed):
    """Made-up words (never in a vocabulary) from a pool of 300, between common words: each block spells new
    ones (the speller's PPM and byte model learn) and repeats earlier ones (the spelling cache and its body
    mixer learn)."""
    import random

    r = random.Random(seed)
    pool = [bytes(r.choice(b"bcdfghklmnprstvz") + r.choice(b"aeiou") for _ in range(r.randrange(3, 6)))
            for _ in range(300)]
    common = [b"the", b"of", b"and", b"said", b"to", b"in", b"was"]
    return b" ".join(r.choice(pool) if r.random() < 0.4 else r.choice(common) for _ in range(n_words)) + b"\n"


@pytest.mark.parametrize("adapt", MODES, ids=MODE_IDS)
def test_snapshots_of_spelling_state_are_exact(default_model, adapt):
    """A save copies only what changed since the last save or restore, and a restore only what changed since
    the save: the speller's PPM tables by the 64-byte chunks written (speller.c pstate_sync), the body mixer's
    and the token cache's context tables by the slots written (codec/dirtyslots.h).  Through saves, attempts
    rolled back, a second restore to the same snapshot and a reset, on text that spells and repeats unknown
    words all the time, every block codes as in a context that only ever coded the kept blocks."""
    from nlmcodec import _core

    a, x1, x2, x3, x4, b = (_spelled_text(900, seed) for seed in range(6))
    c = _core.Codec(default_model, adapt)
    fresh = _core.Codec(default_model, adapt)
    for _ in range(2):                     # the second time after a reset: a group's start
        c.reset()
        fresh.reset()
        assert c.encode_block(a) == fresh.encode_block(a)
        c.save()
        assert c.encode_block(x1) == fresh.encode_block(x1)
        c.save()                           # from the first snapshot: the changes since it
        c.encode_block(x2)                 # discarded
        c.restore()
        assert c.encode_block(x3) == fresh.encode_block(x3)
        c.save()
        c.encode_block(x4)                 # discarded
        c.restore()
        c.encode_block(x2)                 # discarded again, from the same snapshot
        c.restore()
        assert c.encode_block(b) == fresh.encode_block(b)
    st = c.stats()
    assert st["cache_hits"] > 100, st      # the spelling cache and its mixer were in play


@pytest.mark.parametrize("kind", ["english", "log", "random", "zeros"])
def test_the_lzma_yardstick_stops_early_with_the_same_answer(kind):
    """_encode._lzma1_decides codes lzma preset 1 only until the answer is settled; its answer is the full
    yardstick's for every bound around the size, and the stream cut into pieces is the one-shot stream."""
    import lzma
    import random

    from nlmcodec import _frame

    r = random.Random(5)
    data = {"english": (short_text(200000) * 3)[:300000],
            "log": b"".join(b"10.0.0.%d GET /p/%d 200\n" % (r.randrange(256), r.randrange(999)) for _ in range(12000)),
            "random": bytes(r.randrange(256) for _ in range(200000)),
            "zeros": bytes(200000)}[kind]
    full = _frame.lzma_compress(data, 1)
    c = lzma.LZMACompressor(format=lzma.FORMAT_RAW, filters=_frame.lzma_filters(len(data), 1))
    assert b"".join(c.compress(data[p:p + 7000]) for p in range(0, len(data), 7000)) + c.flush() == full
    n = len(full)
    for size in sorted({1, n // 2, int(0.7 * n) - 1, int(0.7 * n), int(0.7 * n) + 1, n, 2 * n}):
        assert _encode._lzma1_decides(data, lambda m: size > 0.7 * m) == (size > 0.7 * n), size
        assert _encode._lzma1_decides(data, lambda m: 5 * size > 4 * m) == (5 * size > 4 * n), size


def test_the_zlib_screen_answers_as_the_yardstick_on_text():
    """_encode._above_try_ratio (is the word model above BYTE_TRY_RATIO x lzma preset 1?) answers "no" without
    the lzma yardstick when the size is at most SCREEN_RATIO x zlib level 1.  On English, where zlib -1 is
    well under BYTE_TRY_RATIO / SCREEN_RATIO x lzma -1, that is the yardstick's answer for every size.  Where
    zlib -1 is far above lzma -1 (a repeat beyond deflate's 32 KiB window) the screen may say "no" when the
    yardstick says "yes", but only for sizes at most SCREEN_RATIO x zlib -1: the word model is then still at
    most half of zlib -1."""
    import zlib

    from nlmcodec import _frame

    def sizes(n, z):   # every size around both thresholds
        marks = (int(_encode.BYTE_TRY_RATIO * n), int(_encode.SCREEN_RATIO * z))
        return sorted({max(1, m + d) for m in marks for d in (-2, -1, 0, 1, 2)} | {1, n, z})

    text = cc.read(cc.find("alice29.txt"))
    for p in range(0, len(text), 65536):
        block = text[p:p + 65536]
        z, n = len(zlib.compress(block, 1)), len(_frame.lzma_compress(block, 1))
        assert z < _encode.BYTE_TRY_RATIO / _encode.SCREEN_RATIO * n, (p, z, n)
        for size in sizes(n, z):
            assert _encode._above_try_ratio(block, size, z) == (size > _encode.BYTE_TRY_RATIO * n), (p, size)

    half = word_salad(8000, seed=3)[:40000]        # repeated at a distance over 32 KiB: lzma sees it, zlib not
    data = half + half
    z, n = len(zlib.compress(data, 1)), len(_frame.lzma_compress(data, 1))
    assert z > _encode.BYTE_TRY_RATIO / _encode.SCREEN_RATIO * n, (z, n)
    differ = [s for s in sizes(n, z) if _encode._above_try_ratio(data, s, z) != (s > _encode.BYTE_TRY_RATIO * n)]
    assert differ and all(s <= _encode.SCREEN_RATIO * z for s in differ), differ
