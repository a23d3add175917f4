"""nlmcodec.explain and --explain: the per-token trace of the C core, the records explain()
builds from the real encoder, the HTML page, the CLI mode, and the page as headless Chromium draws it.

Bound used below: the bits of one word-model block's tokens (−log2 of the quantised probabilities coded)
add up to its payload size in bits minus the range coder's rounding and flush, so
|Σ bits − 8·payload| <= FLUSH_BITS = 8·8 per block (tests/test_overhead.py allows the same 8 bytes, on
top of 0.1%, for a 120 KB block; measured here: under 6 bits per 64 KiB block with the tiny model).
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest

import nlmcodec
from nlmcodec import _core, _explain, _registry
from nlmcodec._core import TRACE_DTYPE, TRACE_PARTS, Codec

from corpus_cache import CORPUS

FLUSH_BITS = 8 * 8
ALICE = CORPUS / "bench" / "canterbury" / "alice29.txt"
PROSE = (b"The cat sat on the mat. It was a sunny day, and the children played in the garden.\n"
         b"Dr. Zyxwvut arrived at 10:30 with 42 boxes of Blorptastic widgets!\n\n"
         b"   She said: \"THE END\" -- and then\tleft.  The cat sat on the mat again.\n") * 3


@pytest.fixture(scope="module")
def tiny():
    return nlmcodec.load_model("tiny")


@pytest.fixture(scope="module")
def alice():
    if not ALICE.exists():
        pytest.skip(f"corpus file {ALICE} not present")
    return ALICE.read_bytes()


def _native_codec(native, model, adapt):
    """A codec of one binding module (_nlm_cy or _nlm_cffi_glue), built as _core.Codec builds it."""
    c = native.Codec(model._build_native(native), int(adapt))
    assert c.ok()
    return c


# ---------------------------------------------------------------------------------------------- C trace

@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_trace_changes_nothing_and_matches_stats(tiny, adapt):
    plain, traced = Codec(tiny, adapt), Codec(tiny, adapt)
    traced.trace(True)
    for piece in (PROSE, PROSE[::-1], b"x"):             # several blocks: the state carries over
        assert traced.encode_block(piece) == plain.encode_block(piece)
        recs = traced.trace_records()
        assert len(recs) == len(_core.lex_tokens(piece))
        assert recs[-1]["kind"] == _core.KIND_END and recs[-1]["word"] == 1
        # the records tile the block: gap then body, in order
        assert int(recs["off"][0]) == 0 and int(recs["off"][-1] + recs["len"][-1]) == len(piece)
        assert np.all(recs["off"][1:] == recs["off"][:-1] + recs["len"][:-1])
    assert traced.stats() == plain.stats()
    assert len(plain.trace_records()) == 0                # off by default


def test_trace_parts_sum_to_stats(tiny):
    c = Codec(tiny, True)
    c.trace(True)
    c.encode_block(PROSE)
    recs, st = c.trace_records(), c.stats()
    b = {p: float(recs["bits"][:, k].sum()) for k, p in enumerate(TRACE_PARTS)}
    assert b["class"] + b["word"] == pytest.approx(st["word_bits"], abs=1e-6)
    for part, stat in (("unk", "unk_bits"), ("cache", "cache_bits"), ("spell", "spell_bits"),
                       ("case", "case_bits"), ("gap", "gap_bits")):
        assert b[part] == pytest.approx(st[stat], abs=1e-6), part
    assert int((recs["word"] == 0).sum()) == st["unk_tokens"] > 0
    assert int((recs["flags"] & 1).sum()) == st["cache_hits"] > 0     # "Blorptastic" comes back from the cache
    unk = recs["word"] == 0
    assert np.all(recs["bits"][unk][:, 0:2] == 0) and np.all(recs["bits"][~unk][:, 2:5] == 0)


def test_top_predictions(tiny):
    c = Codec(tiny, False)
    c.trace(True)
    c.encode_block(PROSE)
    recs = c.trace_records()
    for r in recs:
        p = r["top_p"]
        if r["flags"] & 4:          # a match hit (§3.4): no class was coded, so no guesses
            assert np.all(r["top_id"] == -1) and r["bits"][TRACE_PARTS.index("match")] > 0
            continue
        assert np.all(r["top_id"] >= 0) and np.all(p > 0) and np.all(p <= 1)
        assert p[0] >= p[1] >= p[2]
        # the coded word is in the same class, so the best of that class is at least as likely
        coded = 2.0 ** -(r["bits"][0] + r["bits"][1] + r["bits"][2])
        assert p[0] >= coded * (1 - 1e-5)
        if r["word"] in r["top_id"]:
            k = list(r["top_id"]).index(r["word"])
            assert p[k] == pytest.approx(coded, rel=1e-5)
    # "the" after "sat on" is a word the tiny model predicts: it is among the top 3 somewhere
    the = tiny.vocab.index(b"the")
    assert any(the in r["top_id"] for r in recs)


def test_trace_refused_block_and_off(tiny):
    c = Codec(tiny, True)
    c.trace(True)
    c.encode_block(PROSE)
    with pytest.raises(nlmcodec.NLMError):
        c.encode_block(b"a" + b" " * 70_000 + b"b")      # a whitespace run over 65,535 bytes
    assert len(c.trace_records()) == 0
    c.trace(False)
    c.encode_block(PROSE)
    assert len(c.trace_records()) == 0


def test_bindings_agree(tiny):
    from nlmcodec import _nlm_cy, _nlm_cffi_glue

    assert _nlm_cy.TRACE_SIZE == _nlm_cffi_glue.TRACE_SIZE == TRACE_DTYPE.itemsize
    for adapt in (False, True):
        a, b = _native_codec(_nlm_cy, tiny, adapt), _native_codec(_nlm_cffi_glue, tiny, adapt)
        a.trace(1), b.trace(1)
        for piece in (PROSE, PROSE[:100]):
            assert a.encode_block(piece) == b.encode_block(piece)
            ra, rb = a.trace_records(), b.trace_records()
            assert len(ra) == len(_core.lex_tokens(piece)) * TRACE_DTYPE.itemsize
            assert ra == rb


# ---------------------------------------------------------------------------------------------- explain()

def _check_explanation(e, data, model, adapt):
    assert b"".join(t.bytes for t in e.tokens) == data
    assert [t.offset for t in e.tokens] == list(np.cumsum([0] + [len(t.bytes) for t in e.tokens[:-1]]))
    assert e.frame_size == len(nlmcodec.compress(data, model=model, adapt=adapt))
    assert sum(b.size for b in e.blocks) == len(data)
    assert e.overhead_bytes == e.frame_size - sum(b.payload_size for b in e.blocks) > 0
    assert [t.block for t in e.tokens] == sorted(t.block for t in e.tokens)
    for i, b in enumerate(e.blocks):
        toks = [t for t in e.tokens if t.block == i]
        assert toks[0].offset == b.offset and toks[-1].offset + len(toks[-1].bytes) == b.offset + b.size
        assert sum(t.total for t in toks) == pytest.approx(b.token_bits, abs=1e-6)
        if b.kind == "model":
            assert all(t.coder == "model" for t in toks)
            assert abs(b.token_bits - 8 * b.payload_size) <= FLUSH_BITS, b
            # the coder cannot beat the model's information by more than the up to 7 bytes past the payload's
            # end that the decoder reads as zero (the flush leaves out what they imply)
            assert b.token_bits <= 8 * (b.payload_size + 7)
        else:
            assert all(t.coder == b.kind for t in toks)
            assert b.token_bits == pytest.approx(8 * b.payload_size)
    assert e.total_bits == pytest.approx(sum(e.by_part().values()))


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_explain_alice_bits_add_up(alice, tiny, adapt):
    # the default model: the tiny one loses alice to the byte model (no word-model block to explain)
    model = "default" if "default" in _registry.model_files() else "tiny"
    e = nlmcodec.explain(alice, model=model, adapt=adapt)
    assert all(b.kind == "model" for b in e.blocks) and len(e.blocks) == 3 or model == "tiny"
    _check_explanation(e, alice, model, adapt)
    total_payload = sum(b.payload_size for b in e.blocks)
    assert abs(e.total_bits - 8 * total_payload) <= FLUSH_BITS * len(e.blocks)
    words = [t for t in e.tokens if t.kind == "word" and "word" in t.bits]
    assert all(1 <= len(t.top) <= 3 for t in words) and (words or model == "tiny")   # classes of < 3 words
    assert e.by_part()["lzma"] == 0 and e.by_part()["stored"] == 0


def test_explain_dynamic_beats_static(alice):
    s, d = (nlmcodec.explain(alice[:40_000], model="tiny", adapt=a) for a in (False, True))
    assert [t.offset for t in s] == [t.offset for t in d]
    assert d.total_bits < s.total_bits


# 68 KB of random hex digits in lines: no token repeats, so neither the network nor the token match flag helps
_r = random.Random(7)
HEX_ROWS = b"".join(bytes(_r.choice(b"0123456789abcdef") for _ in range(16)) + b"\n" for _ in range(4000))


def test_explain_plain_blocks(tiny):
    data = HEX_ROWS                                        # no word-model block: the byte model or lzma
    e = nlmcodec.explain(data, model=tiny, adapt=True)
    kinds = [b.kind for b in e.blocks]
    assert set(kinds) <= {"lzma", "byte"} and len(set(kinds)) == 1
    assert all(t.coder == kinds[0] and not t.top for t in e.tokens)
    _check_explanation(e, data, tiny, True)
    e = nlmcodec.explain(b"", model=tiny)
    assert len(e) == 0 and e.frame_size == len(nlmcodec.compress(b"", model=tiny))


def test_explain_mixed_blocks(alice, tiny):
    # prose, then 64 KiB that a byte model codes far better, then prose: the encoder mixes block kinds
    data = alice[:70_000] + HEX_ROWS + alice[70_000:100_000]
    e = nlmcodec.explain(data, model=tiny, adapt=True)
    kinds = {b.kind for b in e.blocks}
    assert kinds <= {"model", "lzma", "byte"} and kinds & {"lzma", "byte"}, kinds
    _check_explanation(e, data, tiny, True)


# ---------------------------------------------------------------------------------------------- page and CLI

def _page_data(page):
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


def test_page_is_self_contained(tiny):
    es = [nlmcodec.explain(PROSE, model=tiny, adapt=a) for a in (False, True)]
    page = _explain.render_html(PROSE, "prose.txt", es)
    d = _page_data(page)
    assert "".join(d["texts"]) == PROSE.decode()
    assert [m["label"] for m in d["modes"]] == ["static", "dynamic"]
    assert all(len(m["tok"]) == len(es[0]) for m in d["modes"])
    # no network: no external scripts, styles, images or fonts (the SVG namespace URI is not fetched)
    assert not re.search(r'(src|href)\s*=|<link|@import|url\(', page)
    assert page.count("http") == page.count('xmlns="http://www.w3.org/2000/svg"')
    assert "<svg" in page and "xz -9e" in page


def test_token_texts_split_utf8():
    toks = [_explain.Token(0, b"caf\xc3", "word", "model", {}, 0.0, (), 0),
            _explain.Token(4, b"\xa9 \xe2\x80", "symbol", "model", {}, 0.0, (), 0),
            _explain.Token(8, b"\x9d", "symbol", "model", {}, 0.0, (), 0)]
    assert "".join(_explain._token_texts(toks)) == "café \u201d"


def test_cli_explain(tmp_path, tiny):
    from nlmcodec.cli import main

    src = tmp_path / "prose.txt"
    src.write_bytes(PROSE)
    assert main(["--explain", str(src), "-m", "tiny", "-q"]) == 0
    out = tmp_path / "prose.txt.explain.html"
    page = out.read_text()
    assert len(_page_data(page)["modes"][0]["tok"]) == len(nlmcodec.explain(PROSE, model=tiny))
    assert os.stat(out).st_mode & 0o044                      # readable like any new file, not 0600
    out.write_text("keep")
    assert main(["--explain", str(src), "-m", "tiny", "-q"]) == 1     # never overwrites without -f
    assert out.read_text() == "keep"
    assert main(["--explain", str(src), "-m", "tiny", "-q", "-f"]) == 0
    assert out.read_text() != "keep"
    other = tmp_path / "p.html"
    assert main(["--explain", str(src), "-m", "tiny", "-q", "-o", str(other)]) == 0 and other.exists()
    assert main(["--explain", str(tmp_path / "missing.txt"), "-m", "tiny"]) == 1
    assert main(["--explain", str(src), "-m", "no-such-model", "-o", str(tmp_path / "x.html")]) == 1
    assert not (tmp_path / "x.html").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# ---------------------------------------------------------------------------------------------- Chromium

def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def _png_pixels(path):
    """(width, height, set of distinct colours) of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", None
    while pos < len(raw):
        n, typ = struct.unpack(">I4s", raw[pos:pos + 8])
        body = raw[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    data = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(h):
        f = data[y * (stride + 1)]
        line = bytearray(data[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 4 == 0:
            colours.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * 2))
        prev = line
    return w, h, colours


@pytest.mark.slow
def test_page_in_headless_chromium(tmp_path, tiny):
    exe = _chromium()
    if exe is None:
        pytest.skip("no chromium binary on PATH (Debian: apt-get install chromium)")
    es = [nlmcodec.explain(PROSE, model=tiny, adapt=a) for a in (False, True)]
    page = tmp_path / "page.html"
    page.write_text(_explain.render_html(PROSE, "prose.txt", es), encoding="utf-8")
    flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--disable-extensions", f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, timeout=120, check=True).stdout
    dom = dom.decode()
    spans = re.findall(r'<span class="t[^"]*" data-i="(\d+)"[^>]*>', dom)
    assert [int(i) for i in spans] == list(range(len(es[0])))          # one element per token, in order
    assert 'style="background: rgb(' in dom                            # coloured by the script
    pinned = subprocess.run(flags + ["--dump-dom", page.as_uri() + "#tok=3"], capture_output=True, timeout=120,
                            check=True).stdout.decode()
    assert "token 3: <code>" in pinned                                 # a token's record, pinned from the URL
    assert re.search(r'<span class="t[^"]*\bsel\b[^"]*" data-i="3"', pinned)
    shot = tmp_path / "shot.png"
    subprocess.run(flags + ["--window-size=1200,800", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    w, h, colours = _png_pixels(shot)
    assert (w, h) == (1200, 800)
    assert len(colours) > 50, "the screenshot is (nearly) one colour"
