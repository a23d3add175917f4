"""nlmcodec.explain: where the bits go, token by token, from the same coding path as compress (issue 14), in
memory and time that stay bounded on large inputs (issue 43 item 5).

Owns explain() (per-token records and per-block sums), explain_page() and render_html() (the self-contained
HTML page), the legend of the categories and the xz -9e reference curves.

How the records are made: the input is run through the real frame encoder (_encode.FrameEncoder, one thread,
CRC32, the same model and mode as compress) with a codec whose per-token trace is on (nlm_codec_trace,
csrc/nlm.h).  The encoder's policy is untouched: a probe or a block it rolls back (restore()) is dropped, and
a group it finally codes plain keeps none of its attempts, so the records of each word-model block are
exactly the symbols of that block's payload in the frame, and the frame explain() builds is byte-identical
to compress() (tests/test_explain.py checks both).

Bounded memory: each block's trace is reduced as soon as the block is coded.  Every block keeps its sums by
category and its token count (Block); the per-token records (one numpy structured array, RECORD_DTYPE) are
kept only for the *detail window*, the blocks that start before `detail` bytes (explain(detail=None): the
whole input).  The window ends at a word-model block boundary (window_end), the same in every mode.  No
Python object is made per token unless asked for (Explanation.tokens builds Token tuples on access).  So
explain() holds the input, the frame, the per-block sums and the window's records, whatever the input's size.

Blocks the encoder codes with the byte model, lzma or stored carry no per-token model bits.  Their tokens
(cut by the same lexer on the same pieces as the word model's blocks, and at the block's ends) get coder
"byte" / "lzma" / "stored" and a cost per byte:

* byte-model blocks in the detail window: bits per BYTE_PIECE-byte piece, measured by coding the block's run
  again in pieces of BYTE_PIECE bytes (_core.ByteCoder; the model's state runs on across pieces exactly as
  across the frame's blocks, so each piece is coded with the predictions the frame's run used).  A piece's
  payload less its run byte is its cost up to the coder's flush (under 1 byte per piece on average); the
  pieces of a block are scaled to add up to the block's payload, and a piece's bits are spread evenly over
  its bytes;
* lzma and stored blocks, and byte-model blocks past the window: an equal share per byte of the block's
  payload (8 * payload bytes / block bytes each).

So every token has a cost and the sums per block are the payload bits.  Frame header, block headers, block
checks and the trailer (index, size, CRC) are reported separately as overhead_bytes.

The page (explain_page): the chosen mode (default: the default mode of compress() and the CLI,
_frame.DEFAULT_ADAPT) over the whole file, with per-token detail for the window and per-block sums for all
of it; the other two modes over the window's bytes only (explain() of that prefix: its own frame), or over
the whole file with all_modes=True.  The page says which.
"""
from __future__ import annotations

import codecs
import hashlib
import html
import json
import lzma
from collections import namedtuple
from collections.abc import Sequence

from . import _encode, _frame
from ._core import TRACE_PARTS, lex_tokens

KINDS = ("end", "word", "number", "symbol")
CODERS = ("model", "byte", "lzma", "stored")
MODES = (False, _frame.HEADS, True)           # page order: static, heads, dynamic
MODE_NAMES = {False: "static", _frame.HEADS: "heads", True: "dynamic"}
XZ_PRESET = 9 | lzma.PRESET_EXTREME
XZ_WINDOW_POINTS = 8          # exact prefix sizes of xz -9e along the detail window
DETAIL_BYTES = 64 << 10       # the page's default detail window (tokens drawn in full); the rest per block
BYTE_PIECE = 256              # bytes per piece of the byte model's per-piece costs
PAGE_TOKENS = 4000            # tokens drawn at a time on the page (paged with buttons)
MAX_SPANS = 400               # rows of the per-block table at most (neighbouring blocks merged above)
CURVE_POINTS = 64             # points of a cumulative curve at most

LEGEND = (
    ("class", "the word model's first stage: the class (a group of words of similar use) of the next token "
              "(docs/format.md §3.2 step 1)"),
    ("word", "the second stage: which token of that class (§3.2 step 2); with class, the cost of a token the "
             "vocabulary holds"),
    ("unk", "class and word stages of <unk>: a word the vocabulary does not hold (§3.1), whose spelling "
            "follows in cache or spell"),
    ("cache", "the spelling cache (§5.1): an unknown word seen before in this group (a hit), or the escape "
              "that says it is new"),
    ("spell", "the speller (§5.2, §5.4): a new unknown word spelled byte by byte"),
    ("case", "the case of a word (§3.2 step 4): lower, Capitalised or UPPER (mixed case is spelled as <unk>)"),
    ("gap", "the whitespace before the token (§3.2 step 5, §3.3): one of 8 gap symbols, plus the bytes of a "
            "longer literal run (§5.3)"),
    ("match", "the token match flag (§3.4): is the token the one that followed the longest earlier repeat of "
              "the tokens before it?  A hit costs this flag alone"),
    ("route", "the line route (§3.8), in a group the byte model runs alongside: before each token, the bit "
              "that says whether the byte model codes the rest of the line"),
    ("run", "bytes of lines the byte model codes inside a word-model block (§3.8): markup, code, headers and "
            "other lines it codes better than the word model"),
    ("byte", "bytes the byte model (§9, a context-mixing model of bytes) codes: blocks the word model codes "
             "worse, such as code, tables or markup"),
    ("lzma", "a block coded with LZMA (xz's coder), its payload shared equally by its bytes"),
    ("stored", "bytes stored as they are (8 bits each): data nothing compresses"),
    ("overhead", "frame and block headers, each block's CRC32, the index and the trailer (§7)"),
)

Token = namedtuple("Token", "offset bytes kind coder bits total top block")
Token.__doc__ = """One token: offset (bytes into the input), bytes (gap then body), kind ("word", "number",
"symbol", "end"), coder ("model", "byte", "lzma", "stored"), bits ({part: bits}; parts TRACE_PARTS for the
model, {"byte": b}, {"lzma": b} or {"stored": b} for a token's cost in a plain block), total (bits), top
(model tokens: up to 3 (word, p) of the coded class, p = p(class) * p(word | class); () otherwise), block
(index into Explanation.blocks; a block's END token may be empty and sit at the block's end offset)."""

Block = namedtuple("Block", "offset size kind payload_size token_bits parts tokens")
Block.__doc__ = """One block of the frame: offset, size (input bytes), kind ("model", "byte", "lzma", "stored"),
payload_size (bytes), token_bits (sum of its tokens' bits; for a model block 8 * payload_size minus the range
coder's rounding and flush; for a plain block 8 * payload_size), parts ({category: bits}, adding up to
token_bits), tokens (how many)."""


def _record_dtype():
    import numpy as np

    return np.dtype([("off", "<u8"), ("len", "<u4"), ("kind", "u1"), ("coder", "u1"), ("flags", "u1"),
                     ("block", "<u4"), ("total", "<f8"), ("bits", "<f8", (len(TRACE_PARTS),)),
                     ("top_id", "<i4", (3,)), ("top_p", "<f4", (3,))])


class _Tokens(Sequence):
    """Explanation.tokens: the detail window's records seen as Token tuples, made on access."""

    def __init__(self, exp):
        self._e = exp

    def __len__(self):
        return len(self._e.records)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._e._token(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("token index out of range")
        return self._e._token(i)


class Explanation:
    """What explain() returns.

    blocks (list of Block: the whole input), records (numpy array of RECORD_DTYPE: one row per token of the
    detail window), tokens (the same rows as Token tuples, made on access), window (input bytes the records
    cover: the whole input unless explain() was given `detail`), frame_size (bytes of the frame compress()
    writes for the same input, model and mode), overhead_bytes (frame bytes outside the block payloads),
    token_count (tokens of the whole input), frame_sha256 (hex digest of that frame: the same as compress()'s),
    adapt, model_name, size (input bytes).  by_part() sums the bits
    per category over the whole input, window_by_part() over the window.  len() and iteration are over the
    window's tokens."""

    def __init__(self, data, adapt, model_name, records, blocks, frame_size, window, vocab=None, frame_sha256=""):
        self.data, self.adapt, self.model_name, self.frame_sha256 = data, adapt, model_name, frame_sha256
        self.records, self.blocks, self.frame_size, self.window = records, blocks, frame_size, window
        self.size = len(data)
        self.overhead_bytes = frame_size - sum(b.payload_size for b in blocks)
        self.token_count = sum(b.tokens for b in blocks)
        self._vocab = vocab

    @property
    def mode(self) -> str:
        return MODE_NAMES[self.adapt]

    @property
    def complete(self) -> bool:
        """The records cover the whole input."""
        return self.window >= self.size

    @property
    def tokens(self):
        return _Tokens(self)

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.tokens)

    def __getitem__(self, i):
        return self.tokens[i]

    def word(self, i: int) -> str:
        """The text of vocabulary id i."""
        return "<unk>" if i == 0 else "<end>" if i == 1 else self._vocab[i].decode("utf-8", "replace")

    def _token(self, i):
        r = self.records[i]
        off, n, coder = int(r["off"]), int(r["len"]), CODERS[r["coder"]]
        tot = float(r["total"])
        if coder == "model":
            bits = {p: float(v) for p, v in zip(TRACE_PARTS, r["bits"]) if v}
            top = tuple((self.word(int(w)), float(p)) for w, p in zip(r["top_id"], r["top_p"]) if w >= 0)
        else:
            bits, top = {coder: tot}, ()
        return Token(off, self.data[off:off + n], KINDS[r["kind"]], coder, bits, tot, top, int(r["block"]))

    @property
    def total_bits(self) -> float:
        return sum(b.token_bits for b in self.blocks)

    def by_part(self) -> dict:
        """{category: bits} over the whole input: TRACE_PARTS, then "byte", "lzma" and "stored"."""
        out = {p: 0.0 for p in TRACE_PARTS + CODERS[1:]}
        for b in self.blocks:
            for k, v in b.parts.items():
                out[k] += v
        return out

    def window_by_part(self) -> dict:
        """{category: bits} over the window's tokens (by_part() when the window is the whole input)."""
        out = {p: 0.0 for p in TRACE_PARTS + CODERS[1:]}
        r = self.records
        model = r["coder"] == 0
        for k, p in enumerate(TRACE_PARTS):
            out[p] = float(r["bits"][model, k].sum())
        for c, name in enumerate(CODERS[1:], 1):
            out[name] = float(r["total"][r["coder"] == c].sum())
        return out

    def __repr__(self):
        return (f"<Explanation {self.mode} {self.model_name!r}: {self.size} bytes, {self.token_count} tokens "
                f"({len(self.records)} in the window of {self.window} bytes), frame {self.frame_size} bytes>")


class _TracingCodec:
    """A _core.Codec seen by the encoder, keeping what the trace of every encode_block it keeps says.

    calls: {input offset of the block: (block size, payload size, token count, bits by part (8 floats),
    trace records or None)}; the records are copied only for blocks that start before `window`.  An
    encode_block followed by restore() (a probe, or a block the encoder rolled back) is forgotten."""

    def __init__(self, codec, window):
        self._c = codec
        self.adapt = codec.adapt      # the mode (GroupCoder resets the codec with its schedule)
        self._c.trace(True)
        self.window = window
        self.enc = None               # the FrameEncoder (its progress = offset of the block being coded)
        self.calls = {}
        self._last = None

    def reset(self, **options):
        self._c.reset(**options)

    def save(self):
        self._c.save()
        self._last = None

    def set_frozen(self, on):
        self._c.set_frozen(on)

    def restore(self):
        self._c.restore()
        if self._last is not None:
            if self.calls.get(self._last[0]) is self._last[1]:
                del self.calls[self._last[0]]
            self._last = None

    def stats(self):
        return self._c.stats()

    def set_router(self, bcoder, lines=True):
        self._c.set_router(bcoder, lines)

    def route_byte_payload(self):
        return self._c.route_byte_payload()

    def encode_block(self, block):
        payload = self._c.encode_block(block)
        recs = self._c.trace_records()
        pos = self.enc.progress
        entry = (len(block), len(payload), len(recs), recs["bits"].sum(axis=0),
                 recs.copy() if pos < self.window else None)
        self.calls[pos] = entry
        self._last = (pos, entry)
        return payload


def _model_pieces(data):
    """(offset, length) of the blocks the encoder tries the word model on, over the whole input: GROUP_SIZE
    groups, then _encode._model_pieces (the same cuts in every mode)."""
    for g, gl in _encode._pieces(data, _encode.GROUP_SIZE):
        for b, bl in _encode._model_pieces(data[g:g + gl]):
            yield g + b, bl


def window_end(data, detail) -> int:
    """End of the detail window: `detail` rounded down to the end of a word-model piece (_model_pieces), at
    least the first one, so the window is whole blocks wherever the word model codes and the same in every
    mode; len(data) for detail None (or at least len(data)), 0 for detail <= 0."""
    n = len(data)
    if detail is None or detail >= n:
        return n
    if detail <= 0:
        return 0
    end = 0
    for p, k in _model_pieces(data):
        if p + k > detail:
            return end or p + k
        end = p + k
    return n                                                   # pragma: no cover - the pieces tile data


def _frame_blocks(frame):
    """(kind name, group start (0, 1, or a tracked group's size class), size, payload size, payload offset) of
    each block of a complete frame, in order."""
    buf = memoryview(frame)
    version, _ = _frame.parse_start(buf)
    p = _frame.parse_header(buf)[3]
    i = 0
    while True:
        hdr = _frame.parse_block_header(buf, p, i, version)
        if hdr is None:
            return
        kind, start, size, psize, q = hdr
        yield _frame.BLOCK_KINDS[kind], start, size, psize, q
        p = q + psize + _frame.block_check_size(kind)
        i += 1


def _sub_pieces(pieces, a, b):
    """The parts of the word-model pieces inside [a, b): where a plain block's tokens are lexed."""
    for p, k in pieces:
        lo, hi = max(p, a), min(p + k, b)
        if lo < hi:
            yield lo, hi - lo
        if p >= b:
            break


def _plain_tokens(data, a, b, pieces):
    """(offsets, lengths, kinds) of the tokens of data[a:b) lexed on its sub-pieces, as numpy arrays."""
    import numpy as np

    offs, lens, kinds = [], [], []
    for p, k in _sub_pieces(pieces, a, b):
        t = lex_tokens(data[p:p + k])
        start = t["gap_off"].astype(np.int64)
        offs.append(p + start)
        lens.append(t["off"].astype(np.int64) + t["len"] - start)
        kinds.append(t["kind"])
    if not offs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8)
    return np.concatenate(offs), np.concatenate(lens), np.concatenate(kinds)


class _ByteRuns:
    """Per-piece costs of byte-model blocks (see the module docstring): the frame's byte-model blocks are fed
    in order (their run byte says where a run starts, or the group, when it is tracked: docs/format.md §7.2)
    and coded again in BYTE_PIECE-byte pieces; a tracked group's other blocks are learnt as the decoder
    learns them."""

    def __init__(self):
        self._bc = None
        self.tracked = False

    def group(self, start):
        """A group starts (start: 1, or a tracked group's size class)."""
        from ._core import ByteCoder

        self._bc, self.tracked = None, start > 1
        if self.tracked:
            self._bc = ByteCoder()
            self._bc.start_run(start)

    def learn(self, block):
        """A tracked group's block that the byte model does not code."""
        self._bc.feed(block)

    def block_costs(self, block, psize, run_byte):
        """Bits of each byte of `block` (a numpy float64 array), adding up to 8 * psize."""
        import numpy as np

        from ._core import ByteCoder

        if run_byte:
            self._bc = ByteCoder()
        if self._bc is None:                                    # pragma: no cover - a frame the encoder never writes
            raise AssertionError("a byte-model block continues no run")
        starts = range(0, len(block), BYTE_PIECE)
        raw = np.empty(len(starts))
        for j, s in enumerate(starts):
            first = run_byte and s == 0
            payload = self._bc.encode_block(block[s:s + BYTE_PIECE], (1 << run_byte) if first else 0)
            raw[j] = 8.0 * (len(payload) - 1)                   # less the run byte
        total = raw.sum()
        raw = raw * (8.0 * psize / total) if total > 0 else np.full(len(raw), 8.0 * psize / len(raw))
        lens = np.minimum(BYTE_PIECE, len(block) - np.arange(0, len(block), BYTE_PIECE))
        return np.repeat(raw / lens, lens)


def explain(data, *, model=None, adapt=_frame.DEFAULT_ADAPT, detail=None) -> Explanation:
    """Per-token costs of compressing data with model (None: the bundled default) in the given mode (default:
    the default mode of compress() and the CLI).

    detail: bytes from the start whose tokens get records (window_end rounds it down to a block end, at
    least one block; None: all of them); every block has its sums either way.  Runs the real encoder (one
    thread, CRC32) with the core's per-token trace on; see the module docstring for what plain blocks
    report."""
    import numpy as np

    from ._core import Codec
    from ._registry import candidates

    data = bytes(memoryview(data).cast("B"))
    adapt = _frame.adapt_mode(adapt)
    m = _encode.choose_model(candidates(model), data, adapt)      # the model compress() would use
    window = window_end(data, detail)
    tc = _TracingCodec(Codec(m, adapt), window)
    enc = _encode.FrameEncoder(lambda: tc, None, m.model_id, adapt, _frame.CHECK_CRC32, 1)
    tc.enc = enc
    frame = enc.feed(data) + enc.finish()
    calls, tc, enc = tc.calls, None, None           # the codec (its state and trace) goes now

    pieces = list(_model_pieces(data))
    rdt = _record_dtype()
    recs, blocks, pos = [], [], 0
    runs = _ByteRuns()
    for kind, start, size, psize, q in _frame_blocks(frame):
        bi = len(blocks)
        if start:
            runs.group(start)
        if runs.tracked and kind != "byte" and pos < window:
            runs.learn(data[pos:pos + size])
        if kind == "model":
            bsize, bpsize, count, sums, trace = calls.pop(pos)
            if bsize != size or bpsize != psize:                # pragma: no cover - an encoder change
                raise AssertionError(f"trace of the block at {pos} does not match the frame")
            parts = {p: float(v) for p, v in zip(TRACE_PARTS, sums)}
            bits = float(sums.sum())
            if trace is not None:
                r = np.zeros(len(trace), rdt)
                r["off"] = pos + trace["off"].astype(np.uint64)
                r["len"], r["kind"], r["flags"] = trace["len"], trace["kind"], trace["flags"]
                r["block"], r["bits"], r["total"] = bi, trace["bits"], trace["bits"].sum(axis=1)
                r["top_id"], r["top_p"] = trace["top_id"], trace["top_p"]
                recs.append(r)
        else:
            bits = 8.0 * psize
            parts = {kind: bits}
            run_byte = frame[q] if kind == "byte" else 0
            if pos < window:
                offs, lens, kinds = _plain_tokens(data, pos, min(pos + size, window), pieces)
                if kind == "byte":
                    per_byte = runs.block_costs(data[pos:pos + size], psize, run_byte)
                else:
                    per_byte = np.full(size, bits / size)
                cum = np.concatenate(([0.0], np.cumsum(per_byte)))
                r = np.zeros(len(offs), rdt)
                r["off"], r["len"], r["kind"] = offs, lens, kinds
                r["coder"], r["block"] = CODERS.index(kind), bi
                r["total"] = cum[offs - pos + lens] - cum[offs - pos]
                r["top_id"] = -1
                recs.append(r)
                count = len(offs)
                if pos + size > window:
                    count += len(_plain_tokens(data, window, pos + size, pieces)[0])
            else:
                count = len(_plain_tokens(data, pos, pos + size, pieces)[0])
        blocks.append(Block(pos, size, kind, psize, bits, parts, count))
        pos += size
    records = np.concatenate(recs) if recs else np.zeros(0, rdt)
    return Explanation(data, adapt, m.name or "", records, blocks, len(frame), window, m.vocab,
                       hashlib.sha256(frame).hexdigest())


# ---------------------------------------------------------------------------------------------- xz curves

def _xz_filters(n):
    """xz -9e with the dictionary cut to the input's size (as xz does for a small file): the same output, a
    tenth of the encoder's memory on a few MB."""
    d = 4096
    while d < n and d < (64 << 20):
        d *= 2
    return [{"id": lzma.FILTER_LZMA2, "preset": XZ_PRESET, "dict_size": d}]


def xz_size(data) -> int:
    return len(lzma.compress(data, format=lzma.FORMAT_XZ, filters=_xz_filters(len(data))))


class _Lzma2Chunks:
    """Reads an .xz stream as it is written and notes where each LZMA2 chunk ends: points [(input bytes, stream
    bytes)] (the chunk headers give both sizes; the xz file format and its LZMA2 chunks).  Only the bytes of a
    chunk header not yet complete are kept."""

    def __init__(self):
        self.buf, self.at, self.p, self.inp, self.points, self.done = bytearray(), 0, None, 0, [], False

    def feed(self, out):
        if self.done:
            return
        self.buf += out
        buf = self.buf
        if self.p is None:                    # stream header (12 bytes), then the block header ((b + 1) * 4)
            if len(buf) < 13:
                return
            self.p = 12 + (buf[12] + 1) * 4
        while True:
            i = self.p - self.at
            if i >= len(buf):
                break
            ctl = buf[i]
            if ctl == 0:                      # the end of the LZMA2 data
                self.done = True
                break
            if ctl in (1, 2):                 # an uncompressed chunk
                h = 3
                if i + h > len(buf):
                    break
                usize = int.from_bytes(buf[i + 1:i + 3], "big") + 1
                adv = h + usize
            elif ctl >= 0x80:                 # an LZMA chunk (with a properties byte from 0xC0)
                h = 6 if ctl >= 0xC0 else 5
                if i + h > len(buf):
                    break
                usize = ((ctl & 0x1F) << 16) + int.from_bytes(buf[i + 1:i + 3], "big") + 1
                adv = h + int.from_bytes(buf[i + 3:i + 5], "big") + 1
            else:                                                  # pragma: no cover - not LZMA2
                raise AssertionError(f"LZMA2 control byte 0x{ctl:02x}")
            self.p += adv
            self.inp += usize
            self.points.append((self.inp, self.p))
        k = min(self.p - self.at, len(buf))
        del buf[:k]
        self.at += k


def xz_curve(data, step=1 << 20):
    """[(offset, bytes of the xz -9e file up to offset)] from one xz -9e stream of the whole input: a point at
    each LZMA2 chunk boundary (a chunk codes up to 2 MiB of input into at most 64 KiB and ends with its range
    coder flushed, so the bytes up to a boundary code exactly the input up to it), the last point the size of
    the whole .xz file.  One pass, fed `step` bytes at a time (memory: the encoder's)."""
    n = len(data)
    if not n:
        return []
    c = lzma.LZMACompressor(format=lzma.FORMAT_XZ, filters=_xz_filters(n))
    chunks, total = _Lzma2Chunks(), 0
    for s in range(0, n, step):
        out = c.compress(data[s:s + step])
        total += len(out)
        chunks.feed(out)
    out = c.flush()
    total += len(out)
    chunks.feed(out)
    return [(o, b) for o, b in chunks.points if o < n] + [(n, total)]


def xz_prefix_curve(data, end, points=XZ_WINDOW_POINTS):
    """[(offset, bytes of xz -9e of data[:offset])] at `points` evenly spaced offsets up to end (each prefix
    compressed on its own: exact, and cheap for a window of a few hundred KiB)."""
    offs = sorted({max(1, end * i // points) for i in range(1, points + 1)}) if end else []
    return [(o, xz_size(data[:o])) for o in offs]


# ---------------------------------------------------------------------------------------------- page

def _cum_points(offs_end, totals, upto, points=CURVE_POINTS):
    """[(offset, cumulative bytes)] of token bits (token ends offs_end, bits totals), at up to `points`
    evenly spaced offsets in (0, upto]."""
    import numpy as np

    if not upto:
        return []
    xs = np.unique(np.linspace(0, upto, points + 1)[1:].astype(np.int64))
    cum = np.concatenate(([0.0], np.cumsum(totals)))
    idx = np.searchsorted(offs_end, xs, side="right")
    return [(int(x), float(cum[i]) / 8) for x, i in zip(xs, idx)]


def _block_curve(e, points=CURVE_POINTS):
    """[(offset, cumulative bytes)] of token bits at block ends, thinned to about `points`."""
    out, acc = [], 0.0
    for b in e.blocks:
        acc += b.token_bits
        out.append((b.offset + b.size, acc / 8))
    if len(out) > points:
        step = -(-len(out) // points)
        out = out[step - 1::step] + ([out[-1]] if (len(out) % step) else [])
    return out


def _svg_curve(curves, n, ident, caption):
    """Inline SVG: cumulative kilobytes along [0, n).  curves: [(label, colour, [(offset, bytes)])]."""
    W, H, L, B, R = 640, 260, 56, 30, 24        # size, left/bottom/right margins (px)
    ymax = max([v for _, _, pts in curves for _, v in pts] + [1])
    xs = lambda o: L + (W - L - R) * o / max(n, 1)
    ys = lambda v: H - B - (H - B - 10) * v / ymax
    out = [f'<svg id="{ident}" xmlns="http://www.w3.org/2000/svg" width="100%" '
           f'viewBox="0 0 {W} {H}" role="img" aria-label="{html.escape(caption)}">',
           f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="#444"/>',
           f'<line x1="{L}" y1="10" x2="{L}" y2="{H - B}" stroke="#444"/>']
    for k in range(5):
        v = ymax * k / 4
        out.append(f'<text x="{L - 4}" y="{ys(v) + 4:.1f}" font-size="10" text-anchor="end">{v / 1024:.1f}K</text>')
        o = n * k / 4
        out.append(f'<text x="{xs(o):.1f}" y="{H - B + 14}" font-size="10" text-anchor="middle">{o / 1024:.0f}K</text>')
    out.append(f'<text x="{(W + L) / 2}" y="{H - 2}" font-size="11" text-anchor="middle">input offset (bytes)</text>')
    for j, (label, colour, pts) in enumerate(curves):
        path = " ".join(f"{xs(o):.1f},{ys(v):.1f}" for o, v in [(0, 0)] + list(pts))
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        out.append(f'<rect x="{L + 10}" y="{14 + 16 * j}" width="12" height="4" fill="{colour}"/>'
                   f'<text x="{L + 28}" y="{20 + 16 * j}" font-size="11">{html.escape(label)}</text>')
    out.append("</svg>")
    return "".join(out)


def _colour(bpb):
    """The page's colour of a cost in bits per byte (the script's colour())."""
    x = min(bpb, 8) / 8
    hue = 130 - 130 * min(x * 1.6, 1) - (60 * (x - 0.62) / 0.38 if x > 0.62 else 0)
    return f"hsl({(hue + 360) % 360:.0f},85%,{88 - 30 * x:.0f}%)"


def _spans(blocks, limit=MAX_SPANS):
    """Rows of the per-block table: the blocks, neighbours merged when there are more than `limit`:
    (offset, size, kinds, payload bytes, bits, {category: bits}, tokens)."""
    step = max(1, -(-len(blocks) // limit))
    out = []
    for i in range(0, len(blocks), step):
        bs = blocks[i:i + step]
        parts = {}
        for b in bs:
            for k, v in b.parts.items():
                parts[k] = parts.get(k, 0.0) + v
        kinds = []
        for b in bs:
            if b.kind not in kinds:
                kinds.append(b.kind)
        out.append((bs[0].offset, sum(b.size for b in bs), kinds, sum(b.payload_size for b in bs),
                    sum(b.token_bits for b in bs), parts, sum(b.tokens for b in bs)))
    return out, step


def _strip(spans, n):
    """Inline SVG: the whole file as a bar, each span coloured by its bits per byte."""
    W, H = 640, 26
    out = [f'<svg id="strip" xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {W} {H}" '
           f'role="img" aria-label="bits per byte along the file">']
    for off, size, kinds, _, bits, _, _ in spans:
        x, w = W * off / max(n, 1), max(W * size / max(n, 1), 0.5)
        bpb = bits / size if size else 0
        dash = "" if kinds == ["model"] else ' stroke="#555" stroke-dasharray="2,2"'
        out.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{H}" fill="{_colour(bpb)}"{dash}>'
                   f'<title>{off:,}+{size:,}: {"/".join(kinds)}, {bpb:.3f} bits/byte</title></rect>')
    out.append("</svg>")
    return "".join(out)


def _texts(data, offs, lens):
    """Display text of each token: an incremental UTF-8 decode, so a character split across tokens is shown
    in the token where it completes and the concatenation is the decoded input."""
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return [dec.decode(data[o:o + k]) for o, k in zip(offs.tolist(), lens.tolist())]


def _token_texts(tokens):
    """_texts for a list of Token tuples."""
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return [dec.decode(t.bytes) for t in tokens]


def _mode_columns(e, offs, lens, words):
    """The page's arrays for mode e over the display tokens (offs, lens: the main mode's window): where e's
    tokens are the same (the usual case) its records, else (plain blocks cut elsewhere) e's bits over each
    display token's bytes, its tokens' bits spread evenly over their bytes ("~": no parts, no guesses)."""
    import numpy as np

    r = e.records
    same = len(r) == len(offs) and np.array_equal(r["off"], offs) and np.array_equal(r["len"], lens)
    if same:
        tot = r["total"]
        cod = "".join("mbls"[c] for c in r["coder"].tolist())
        parts = np.rint(r["bits"] * 10).astype(np.int64)
        parts[r["coder"] != 0] = 0
        top = []
        for ids, ps in zip(r["top_id"].tolist(), r["top_p"].tolist()):
            t = []
            for w, p in zip(ids, ps):
                if w >= 0:
                    k = words.setdefault(e.word(w), len(words))
                    t += [k, round(p * 1e4)]
            top.append(t)
    else:
        ends = (r["off"] + r["len"]).astype(np.float64)
        starts = r["off"].astype(np.float64)
        cum = np.concatenate(([0.0], np.cumsum(r["total"])))
        rl = np.maximum(r["len"], 1).astype(np.float64)

        def upto(x):                       # bits of e's tokens before offset x (a token split by x: pro rata)
            i = np.searchsorted(ends, x, side="right")
            j = np.minimum(i, len(r) - 1)
            part = np.where((i < len(r)) & (starts[j] < x), r["total"][j] * (x - starts[j]) / rl[j], 0.0)
            return cum[i] + part

        a = offs.astype(np.float64)
        tot = upto(a + lens) - upto(a) if len(r) else np.zeros(len(offs))
        cod = "~" * len(offs)
        parts = np.zeros((len(offs), len(TRACE_PARTS)), np.int64)
        top = [[] for _ in range(len(offs))]
    return {"tot": np.rint(np.asarray(tot) * 100).astype(np.int64).tolist(), "cod": cod,
            "parts": parts.ravel().tolist(), "top": top}


def _pct_table(title, cols, n_of):
    """An HTML table of bits by category: cols [(heading, {category: bits}, frame bytes or None, input bytes)]."""
    cats = [p for p in TRACE_PARTS + CODERS[1:] if any(c[1].get(p) for c in cols)]
    head = "".join(f"<th>{html.escape(c[0])}</th>" for c in cols)
    rows = []
    for cat in cats:
        cells = "".join(f"<td>{c[1].get(cat, 0) / 8:,.0f} B ({100 * c[1].get(cat, 0) / (sum(c[1].values()) or 1):.1f}%)"
                        f"</td>" for c in cols)
        rows.append(f"<tr><th><abbr title='{html.escape(dict(LEGEND).get(cat, ''))}'>{cat}</abbr></th>{cells}</tr>")
    rows.append("<tr><th>token bits in all</th>" + "".join(
        f"<td>{sum(c[1].values()) / 8:,.0f} B ({sum(c[1].values()) / max(c[3], 1):.3f} bpb)</td>" for c in cols)
        + "</tr>")
    rows.append("<tr><th>frame (with overhead)</th>" + "".join(
        f"<td><b>{c[2]:,} B</b> ({8 * c[2] / max(c[3], 1):.3f} bpb)</td>" if c[2] is not None else
        "<td>&mdash;</td>" for c in cols) + "</tr>")
    for label, size, nbytes in n_of:
        rows.append(f"<tr><th>{html.escape(label)}</th><td colspan='{len(cols)}'>{size:,} B "
                    f"({8 * size / max(nbytes, 1):.3f} bpb)</td></tr>")
    return f"<h3>{title}</h3><table><tr><th>bits by category</th>{head}</tr>{''.join(rows)}</table>"


def render_html(data, name, explanations, xz=None, xz_window=None) -> str:
    """The self-contained page (inline CSS/JS/SVG, no network) for explanations of one input.

    explanations[0] is the main one: explain(data) in one mode, over the whole input, its records (the
    detail window) drawn token by token and its blocks summed for the rest.  The others (other modes) cover
    either the whole input or the window's bytes (explain(data[:window])); they are drawn over the main
    one's tokens.  xz: xz_curve(data) or None to compute it; xz_window: xz_prefix_curve over the window."""
    import numpy as np

    main = explanations[0]
    n, win = len(data), main.window
    if xz is None:
        xz = xz_curve(data)
    if xz_window is None and win < n:
        xz_window = xz_prefix_curve(data, win)
    order = sorted(explanations, key=lambda e: MODES.index(e.adapt))
    offs, lens = main.records["off"], main.records["len"]
    words = {}
    modes = []
    for e in order:
        whole = e.size >= n
        label = e.mode + (" (default)" if e.adapt == _frame.DEFAULT_ADAPT else "")
        cols = _mode_columns(e, offs, lens, words)
        modes.append({"label": label, "main": e is main, "frame": e.frame_size, "covers": e.size,
                      "whole": whole, **cols})
    colours = {False: "#1f77b4", True: "#d62728", _frame.HEADS: "#2ca02c"}
    whole_modes = [e for e in order if e.size >= n]

    # whole-file summary (the modes that cover the whole file)
    xz_total = xz[-1][1] if xz else 0
    summary = _pct_table("Summary (whole file)", [(e.mode, e.by_part(), e.frame_size, n) for e in whole_modes],
                         [("xz -9e", xz_total, n)])
    curves = [("xz -9e", "#777", xz)] + [(f"nlmcodec {e.mode}", colours[e.adapt], _block_curve(e))
                                         for e in whole_modes]
    svg = _svg_curve(curves, n, "curve", "cumulative compressed size")
    window_part = ""
    if win < n:
        cols = []
        for e in order:
            if e.size >= n:
                cols.append((f"{e.mode} (its window)", e.window_by_part(), None, win))
            else:
                cols.append((f"{e.mode} (this prefix alone)", e.by_part(), e.frame_size, win))
        wsum = _pct_table(f"The detail window: the first {win:,} bytes, every mode", cols,
                          [("xz -9e of these bytes", xz_window[-1][1] if xz_window else 0, win)])
        ends = offs + lens
        wcurves = [("xz -9e (each prefix)", "#777", xz_window)]
        for e, m in zip(order, modes):
            tot = np.asarray(m["tot"], dtype=np.float64) / 100
            wcurves.append((f"nlmcodec {e.mode}", colours[e.adapt], _cum_points(ends, tot, win)))
        window_part = wsum + "<h3>Cumulative size along the detail window</h3>" + \
            _svg_curve(wcurves, win, "wcurve", "cumulative compressed size of the detail window")

    spans, step = _spans(main.blocks)
    rows = []
    for off, size, kinds, payload, bits, parts, ntok in spans:
        top = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
        cats = ", ".join(f"{k} {100 * v / (bits or 1):.0f}%" for k, v in top if v)
        rows.append(f"<tr><td>{off:,}</td><td>{size:,}</td><td>{'/'.join(kinds)}</td><td>{ntok:,}</td>"
                    f"<td>{payload:,}</td><td style='background:{_colour(bits / size if size else 0)}'>"
                    f"{bits / size if size else 0:.3f}</td><td style='text-align:left'>{cats}</td></tr>")
    merged = f" (each row {step} neighbouring blocks)" if step > 1 else ""
    blocks_html = (f"<h3>Blocks of the {main.mode} frame (whole file){merged}</h3>{_strip(spans, n)}"
                   f"<div class='scroll'><table><tr><th>offset</th><th>bytes</th><th>coded by</th><th>tokens</th>"
                   f"<th>payload B</th><th>bits/byte</th><th>largest categories</th></tr>{''.join(rows)}</table></div>")

    others = [e for e in order if e is not main]
    scope = []
    if win < n:
        scope.append(f"Token by token: the first {win:,} of {n:,} bytes ({len(main.records):,} of "
                     f"{main.token_count:,} tokens: the detail window, whole blocks); the table of blocks, the "
                     f"whole-file summary and curve cover every byte, in {main.mode} mode.")
        part = [e.mode for e in others if e.size < n]
        if part:
            scope.append(f"{' and '.join(part)} mode: the window's bytes alone, compressed on their own (the "
                         f"frame of that prefix); the whole file only in {main.mode} mode (nlmcodec --explain "
                         f"--all-modes for all three, at their cost).")
    else:
        scope.append("Every token of the file, in every mode shown.")
    scope.append("Byte-model blocks: bits per piece of 256 bytes, measured by coding the run again in pieces "
                 "with the same model state, spread evenly over each piece's bytes (dotted underline); lzma "
                 "and stored blocks: their payload shared equally by their bytes (greyed).")
    legend = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in LEGEND)

    texts = _texts(data, offs, lens)
    payload = {"texts": texts, "lens": lens.tolist(), "modes": modes, "parts": list(TRACE_PARTS), "page": PAGE_TOKENS,
               "kinds": "".join(str(k) for k in main.records["kind"].tolist()), "kindnames": list(KINDS),
               "words": list(words), "coders": {"m": "the word model", "b": "the byte model (per 256-byte piece)",
                                                "l": "lzma (an equal share per byte)",
                                                "s": "stored (8 bits per byte)",
                                                "~": "another cut of this mode's tokens (bits over these bytes)"}}
    blob = json.dumps(payload, ensure_ascii=True, separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(f"nlmcodec --explain {name}")
    return _PAGE.format(title=title, name=html.escape(name), size=f"{n:,}", ntok=f"{main.token_count:,}",
                        model=html.escape(main.model_name), main=html.escape(main.mode),
                        scope="".join(f"<p class='note scope'>{html.escape(s)}</p>" for s in scope),
                        summary=summary, svg=svg, window=window_part, blocks=blocks_html, legend=legend,
                        data=blob)


def explain_page(data, name, *, model=None, adapt=_frame.DEFAULT_ADAPT, detail=DETAIL_BYTES, all_modes=False):
    """(page, explanations) for `nlmcodec --explain`: explain(data) in mode `adapt` (default: the default
    mode) with records for the detail window, the other two modes over the window's bytes (all_modes: over the
    whole file, with the same window), and the page.  Memory: one mode's codec at a time, the window's records
    and the per-block sums; time: one encoding of the file, plus the other modes on the window, plus one xz
    -9e pass (see tests/test_explain.py for the measured figures)."""
    data = bytes(memoryview(data).cast("B"))
    adapt = _frame.adapt_mode(adapt)
    main = explain(data, model=model, adapt=adapt, detail=detail)
    win = main.window
    exps = [main]
    for a in MODES:
        if a != adapt:
            exps.append(explain(data if all_modes else data[:win], model=model, adapt=a,
                                detail=detail if all_modes else None))
    return render_html(data, name, exps), exps


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:0;color:#111;background:#fafafa}}
header{{padding:8px 16px;background:#222;color:#eee}} header b{{color:#fff}}
#wrap{{display:flex;gap:16px;padding:12px 16px}} #left{{flex:1;min-width:0}}
#right{{width:460px;flex:none}}
#text{{font:13px/1.55 ui-monospace,monospace;white-space:pre-wrap;word-wrap:break-word;background:#fff;
border:1px solid #ccc;padding:10px}}
#text span.t{{cursor:pointer}} #text span.sel{{outline:2px solid #000}} #text span.plain{{opacity:.55}}
#text span.est{{text-decoration:underline dotted #555}}
#info{{background:#fff;border:1px solid #ccc;padding:8px;min-height:150px;font-size:12px;position:sticky;top:8px}}
#info table td,#info table th{{padding:0 6px 0 0;text-align:left}}
table{{border-collapse:collapse}} td,th{{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}}
th:first-child{{text-align:left}} .note{{color:#555;font-size:12px}} .scope{{color:#333;margin:4px 0}}
#legend{{display:flex;align-items:center;gap:6px;font-size:12px;margin:6px 0}}
#grad{{width:220px;height:12px;border:1px solid #999}} button{{margin-right:4px}}
button.on{{background:#333;color:#fff}} .scroll{{max-height:320px;overflow:auto}}
dl#cats{{font-size:12px;display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:4px 0}}
dl#cats dt{{font-weight:bold}} dl#cats dd{{margin:0}}
</style></head><body>
<header><b>{name}</b>: {size} bytes, {ntok} tokens, model <b>{model}</b>, {main} mode &mdash; nlmcodec --explain</header>
<div id="wrap"><div id="left">
{scope}
<div>mode: <span id="modes"></span> &nbsp; page: <button id="prev">&larr;</button><span id="pageno"></span>
<button id="next">&rarr;</button></div>
<div id="legend">bits per byte: 0 <canvas id="grad" width="220" height="12"></canvas> 8+ &nbsp;
<span class="note">(dotted: byte model, per 256-byte piece; greyed: lzma or stored, an equal share per byte)</span></div>
<div id="text"></div>
<h3>What the categories mean</h3>
<dl id="cats">{legend}</dl>
<p class="note">Token kinds: word, number, symbol (punctuation and other bytes), and end (the &lt;end&gt; token
closing each word-model block, with the whitespace after the last token).  Bits are &minus;log2 of the quantised
probabilities the range coder used (the payload is this plus the coder's flush).</p></div>
<div id="right"><div id="info"><i>hover or click a token</i></div>
{summary}
<h3>Cumulative size along the file</h3>{svg}
<p class="note">nlmcodec: token bits at block ends; xz -9e: the bytes of one xz -9e stream at each of its LZMA2
chunk boundaries, and the whole .xz file at the end.</p>
{window}
{blocks}
</div></div>
<script id="data" type="application/json">{data}</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
let mode = Math.max(0, D.modes.findIndex(m => m.main)), page = 0, pinned = -1;
const npages = Math.max(1, Math.ceil(D.texts.length / D.page));
function colour(bpb) {{
  const x = Math.min(bpb, 8) / 8;                  // 0 green .. 0.5 yellow .. 1 red/purple
  const hue = 130 - 130 * Math.min(x * 1.6, 1) - (x > 0.62 ? 60 * (x - 0.62) / 0.38 : 0);
  return "hsl(" + ((hue + 360) % 360).toFixed(0) + ",85%," + (88 - 30 * x).toFixed(0) + "%)";
}}
function fmt(v) {{ return v.toFixed(2); }}
function esc(s) {{ return s.replace(/[&<>]/g, c => ({{"&": "&amp;", "<": "&lt;", ">": "&gt;"}})[c]); }}
function nbytes(i) {{ return D.lens[i]; }}
function show(i) {{
  const m = D.modes[mode], tot = m.tot[i] / 100, c = m.cod[i], n = nbytes(i);
  let h = "<b>" + m.label + "</b> token " + i + ": <code>" + esc(JSON.stringify(D.texts[i])) + "</code><br>" +
    D.kindnames[+D.kinds[i]] + ", coded by " + D.coders[c] + ", <b>" + fmt(tot) + " bits</b>" +
    (n ? " (" + fmt(tot / n) + " bits/byte)" : "") + "<table>";
  if (c === "m") D.parts.forEach((p, k) => {{ const v = m.parts[8 * i + k]; if (v) h += "<tr><td>" + p + "</td><td>" + (v / 10).toFixed(1) + "</td></tr>"; }});
  h += "</table>";
  const t = m.top[i];
  if (t.length) {{
    h += "top predictions (of the coded class):<table>";
    for (let k = 0; k < t.length; k += 2) h += "<tr><td><code>" + esc(D.words[t[k]]) + "</code></td><td>" + (t[k + 1] / 100).toFixed(2) + "%</td></tr>";
    h += "</table>";
  }}
  if (!m.whole) h += "<p class='note'>" + m.label + ": the window's bytes compressed on their own</p>";
  document.getElementById("info").innerHTML = h;
}}
function paint() {{
  const m = D.modes[mode];
  document.querySelectorAll("#text span.t").forEach(s => {{
    const i = +s.dataset.i, n = +s.dataset.n;
    s.style.background = n ? colour(m.tot[i] / 100 / n) : "";
    s.classList.toggle("plain", m.cod[i] === "l" || m.cod[i] === "s");
    s.classList.toggle("est", m.cod[i] === "b");
  }});
  document.querySelectorAll("#modes button").forEach((b, k) => b.classList.toggle("on", k === mode));
}}
function draw() {{
  const box = document.getElementById("text"), f = document.createDocumentFragment();
  box.textContent = "";
  const a = page * D.page, b = Math.min(D.texts.length, a + D.page);
  for (let i = a; i < b; i++) {{
    const s = document.createElement("span");
    s.className = "t"; s.dataset.i = i; s.dataset.n = nbytes(i); s.textContent = D.texts[i];
    f.appendChild(s);
  }}
  box.appendChild(f);
  document.getElementById("pageno").textContent = " " + (page + 1) + " / " + npages + " ";
  paint();
}}
D.modes.forEach((m, k) => {{
  const b = document.createElement("button");
  b.textContent = m.label + (m.whole ? " (" + m.frame.toLocaleString() + " B)" : " (window: " + m.frame.toLocaleString() + " B)");
  b.onclick = () => {{ mode = k; paint(); if (pinned >= 0) show(pinned); }};
  document.getElementById("modes").appendChild(b);
}});
const box = document.getElementById("text");
box.addEventListener("mouseover", e => {{ if (pinned < 0 && e.target.dataset.i) show(+e.target.dataset.i); }});
box.addEventListener("click", e => {{
  if (!e.target.dataset.i) return;
  document.querySelectorAll("#text span.sel").forEach(s => s.classList.remove("sel"));
  const i = +e.target.dataset.i;
  if (pinned === i) {{ pinned = -1; return; }}
  pinned = i; e.target.classList.add("sel"); show(i);
}});
document.getElementById("prev").onclick = () => {{ if (page > 0) {{ page--; draw(); }} }};
document.getElementById("next").onclick = () => {{ if (page < npages - 1) {{ page++; draw(); }} }};
const g = document.getElementById("grad").getContext("2d");
for (let x = 0; x < 220; x++) {{ g.fillStyle = colour(8 * x / 219); g.fillRect(x, 0, 1, 12); }}
draw();
const hm = /tok=(\\d+)/.exec(location.hash);      // #tok=N: open on token N with its record pinned
if (hm && +hm[1] < D.texts.length) {{
  page = Math.floor(+hm[1] / D.page); draw(); pinned = +hm[1];
  const s = document.querySelector('#text span[data-i="' + pinned + '"]');
  if (s) {{ s.classList.add("sel"); if (s.getBoundingClientRect().bottom > innerHeight) s.scrollIntoView({{block: "center"}}); }}
  show(pinned);
}}
</script></body></html>
"""
