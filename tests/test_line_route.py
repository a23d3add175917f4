"""The line route of format 17 (docs/format.md §3.8, nlm.h nlm_codec_set_router): a tracked group's word-model
blocks with the group's run as their router code each line by the word model or by the run.  Round trips over
the lexer's edge cases, the run's coding made alongside (the encoder's other candidate), the route byte, the
trace of routed blocks, damaged payloads, and which formats allow a router.  The C core's own properties, on both
bindings (the frame layer's use of them: tests/test_fallback.py and the golden vectors)."""
import random

import pytest

from nlmcodec import NLMError, _frame
from nlmcodec._core import TRACE_PARTS, ByteCoder, Codec

S = 16                                    # the run's size class: 64 KiB, more than any group here
ROUTED, UNROUTED = 17, 16                 # format 17 routes lines; format 16's blocks are its untracked ones

# A structured text: troff requests, mail headers, quoted lines, prose (the lines the route was measured on).
STRUCTURED = b"".join(
    b".TH LS 1 \"%d\"\n.SH NAME\nls \\- list directory contents\n.PP\nFrom: someone@example.org (Some One)\n"
    b"Subject: Re: the %d lines of a manual\n> quoted text of the message before\n"
    b"The program lists the files of a directory, one per line, and the size of each.\n\n" % (i, i)
    for i in range(40))

EDGES = [
    b"", b"\n", b"\n\n", b"word", b"word\n", b"\nword", b"  \n  word  \n", b"a\r\nb\r\n", b"a \n b", b"a\t\n\tb\n",
    b"x\n\n\n  \n y\n", b"one two\nthree\n\n", b" \x0b\n\x0c z", b"end  ", b"\n\n\nlast line without newline",
]


def _codec(model, mode, route=True):
    """A context of format 17 (route) or 16 (no route: its blocks are format 17's untracked ones)."""
    c = Codec(model, _frame.adapt_mode(mode))
    c.reset(ROUTED if route else UNROUTED)
    return c


def _run():
    b = ByteCoder()
    b.start_run(S)
    return b


def _encode(model, mode, blocks, lines=True):
    c, run = _codec(model, mode), _run()
    c.set_router(run, lines)
    out = []
    for block in blocks:
        out.append((c.encode_block(block), c.route_byte_payload()))
    return out


def _decode(model, mode, blocks, payloads):
    d, run = _codec(model, mode), _run()
    d.set_router(run)
    return [d.decode_block(p, len(b)) for b, (p, _) in zip(blocks, payloads)]


def _random_text(rng, n):
    parts = [b"word", b"Cap", b"UPPER", b"x1", b"42", b".", b">", b".SH", b"\xc3\xa9t\xc3\xa9", b"\xff", b"-"]
    gaps = [b"", b" ", b"  ", b"\n", b"\n\n", b"\r\n", b"\t", b" \n", b"\n  ", b" \t\n\n ", b"\x0b"]
    return b"".join(rng.choice(gaps) + rng.choice(parts) for _ in range(n)) + rng.choice(gaps)


@pytest.mark.parametrize("mode", ["static", "heads"])
def test_round_trip_of_routed_blocks(tiny_model, mode):
    """A group of blocks (structured text, every lexer edge case, random token soups) decodes to its bytes, the
    network, the caches and the run carried across the blocks as both sides route lines."""
    rng = random.Random(7)
    blocks = [STRUCTURED[:3000], STRUCTURED[3000:]] + EDGES + [_random_text(rng, rng.randrange(1, 60))
                                                               for _ in range(40)]
    payloads = _encode(tiny_model, mode, blocks)
    assert _decode(tiny_model, mode, blocks, payloads) == blocks


def test_lines_go_to_the_run_where_it_is_cheaper(tiny_model):
    """On text whose lines the word model codes badly the routed blocks are smaller than the same blocks with the
    route byte 0 (every line the word model's), and than the run's coding of them alone; the run codes whole lines
    and the ends of lines (from a later token), and both decode."""
    blocks = [STRUCTURED[i:i + 4096] for i in range(0, len(STRUCTURED), 4096)]
    c, run = _codec(tiny_model, "heads"), _run()
    c.set_router(run)
    payloads = [(c.encode_block(b), c.route_byte_payload()) for b in blocks]
    st = c.stats()
    assert st["route_run_lines"] > 0 and st["route_split_lines"] > 0, st
    assert 0 < st["route_run_bytes"] < len(STRUCTURED) and st["route_bits"] > 0
    assert _decode(tiny_model, "heads", blocks, payloads) == blocks
    routed = sum(len(p) for p, _ in payloads)
    word = sum(len(p) for p, _ in _encode(tiny_model, "heads", blocks, lines=False))
    run = sum(len(s) for _, s in payloads)
    assert routed < word and routed < run, (routed, word, run)


def test_route_byte_zero_codes_the_current_format_and_feeds_the_run(tiny_model):
    """A block written with the route byte 0 is that byte and the current format's payload; it decodes, and the run
    learnt it: the routed block after it decodes."""
    blocks = [STRUCTURED[:2000], STRUCTURED[2000:4000]]
    c, run = _codec(tiny_model, "heads"), _run()
    c.set_router(run, False)
    first = c.encode_block(blocks[0])
    assert first == b"\x00" + _codec(tiny_model, "heads", route=False).encode_block(blocks[0])
    c.set_router(run, True)
    second = c.encode_block(blocks[1])
    assert _decode(tiny_model, "heads", blocks, [(first, None), (second, None)]) == blocks


def test_the_runs_own_coding_alongside_decodes_as_a_byte_model_block(tiny_model):
    """route_byte_payload() is a byte-model block continuing the run: a run fed the earlier blocks decodes it to
    the block's bytes (the tracked group's other candidate, made without coding the block twice)."""
    blocks = [STRUCTURED[:2500], STRUCTURED[2500:6000], b"tail\n"]
    payloads = _encode(tiny_model, "heads", blocks)
    for i, block in enumerate(blocks):
        run = _run()
        for earlier in blocks[:i]:
            run.feed(earlier)
        shadow = payloads[i][1]
        assert shadow[0] == 0 and run.decode_block(shadow, len(block)) == block


def test_damaged_payloads_are_refused_or_differ(tiny_model):
    """Every cut of a routed payload is refused; flipped bytes are refused or decode to other bytes (the frame's
    block CRC32 catches those), never a crash."""
    block = STRUCTURED[:1500]
    (payload, _), = _encode(tiny_model, "heads", [block])
    for cut in range(0, len(payload), max(1, len(payload) // 40)):
        with pytest.raises(NLMError):
            _decode(tiny_model, "heads", [block], [(payload[:cut], None)])
    with pytest.raises(NLMError):                          # a route byte other than 0 and 1
        _decode(tiny_model, "heads", [block], [(b"\x02" + payload[1:], None)])
    rng = random.Random(3)
    for _ in range(40):
        i = rng.randrange(len(payload))
        bad = payload[:i] + bytes([payload[i] ^ (1 << rng.randrange(8))]) + payload[i + 1:]
        try:
            out = _decode(tiny_model, "heads", [block], [(bad, None)])
        except NLMError:
            continue
        assert out != [block] or bad == payload


def test_router_needs_the_route_and_reset_clears_it(tiny_model):
    """Format 17 allows a router and each group start clears it (the plain payload again, no route byte); a format
    without the route refuses one unless a measurement turns it on (nlm_lab.h nlm_codec_set_route)."""
    c = _codec(tiny_model, "heads")
    c.set_router(_run())
    assert c.encode_block(b"plain text\n")[0] == 1 and c.route_byte_payload() is not None
    c.reset(ROUTED)             # a group start: no router
    assert c.route_byte_payload() is None
    plain = _codec(tiny_model, "heads", route=False).encode_block(b"plain text\n")
    assert c.encode_block(b"plain text\n") == plain
    old = _codec(tiny_model, "heads", route=False)
    with pytest.raises(NLMError):
        old.set_router(_run())
    old.lab_line_route()
    old.set_router(_run())
    old.reset(UNROUTED)       # the format's options: no route, no router
    assert old.route_byte_payload() is None and old.encode_block(b"plain text\n") == plain
    with pytest.raises(NLMError):
        old.set_router(_run())


def test_trace_of_routed_blocks_adds_up(tiny_model):
    """The trace (nlm.h NLM_PART_ROUTE, NLM_PART_RUN) of a routed block: one record per token covering the block,
    the lines the run coded flagged and costed by the run alone, every record's bits adding up to the payload
    (less the route byte) within the coder's flush."""
    import numpy as np

    block = STRUCTURED[:4000]
    c, run = _codec(tiny_model, "heads"), _run()
    c.trace(True)
    c.set_router(run)
    payload = c.encode_block(block)
    t = c.trace_records()
    assert int(t["off"][0]) == 0 and int(t["off"][-1] + t["len"][-1]) == len(block)
    assert (t["off"][1:] == t["off"][:-1] + t["len"][:-1]).all()
    k = TRACE_PARTS.index
    ran = (t["flags"] & 8) != 0
    assert ran.any() and (~ran).any()
    assert (t["bits"][ran, :k("match") + 1] == 0).all() and (t["bits"][ran & (t["len"] > 0), k("run")] > 0).all()
    assert (t["bits"][~ran, k("run")] >= 0).all() and (t["bits"][~ran, :k("match") + 1].sum(axis=1) > 0).all()
    assert (t["bits"][:, k("route")] > 0).any()
    assert abs(float(t["bits"].sum()) - 8 * (len(payload) - 1)) < 64, (float(t["bits"].sum()), len(payload))
    assert np.isfinite(t["bits"]).all()


def test_which_formats_route_is_the_core_table():
    """The frame layer asks the C core's table (formats.h, nlm_format_routes) whether a format routes: format 17
    does, 13 to 16 do not, and a version this build does not read is an error, not a no."""
    assert [v for v in _frame.READ_VERSIONS if _frame.routes(v)] == [ROUTED]
    assert _frame.routes(_frame.FORMAT_VERSION)
    for v in (0, 12, _frame.FORMAT_VERSION + 1):
        with pytest.raises(ValueError):
            _frame.routes(v)
