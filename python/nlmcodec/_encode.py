"""The encoder: cuts the input into groups and blocks, chooses each block's coding, writes frames
(layout: _frame.py; spec: docs/format.md §7), in bounded memory, on one or several threads.

Policy (not part of the format; any valid choice decodes; docs/format.md §7.4):

* Groups of GROUP_SIZE input bytes (cut after the last newline in the final 4 KiB, else the last space,
  else at the size), each coded from the trained state.  The cut depends only on the input, never on how
  it was fed or on the thread count, so the frame is the same for any number of threads.
* Blocks of BLOCK_SIZE bytes (64 KiB, the limit of a word-model block) inside a group (same cut
  rule), so one call into C is about a second of work at dynamic-mode speed; a block the word model is
  tried on is cut again before its token MAX_MODEL_TOKENS (the bound on a block, §3.5).  Per block the word model is
  tried after save(); the block becomes a word-model block when that is strictly smaller than stored and,
  when the word model is not clearly ahead of lzma preset 1 (above BYTE_TRY_RATIO x), than lzma -9e on the
  block (counting the 32-byte model id in a one-group frame; "clearly ahead" without coding lzma preset 1
  when at most SCREEN_RATIO x zlib level 1: _above_try_ratio); otherwise the codec is restore()d, so its
  state is what the decoder will have.  No save() where it would copy the state for nothing: right after a
  probe (its restore() left a snapshot of this very state, and a snapshot outlives restores) and before the
  group's last block (nothing reads the state after it: the next group starts with reset()).
* The first time a block is above BYTE_TRY_RATIO x lzma preset 1, or when a fresh byte model codes the
  group's first word-model block in less than TRACK_RATIO x the word model's payload (an estimate, thrown
  away), the byte model starts coding the whole group alongside, a byte-model block at a time (_ByteParts).  Once the word-model blocks cover EARLY_MIN
  bytes and the byte model's bits per byte so far are below EARLY_RATIO x theirs, the word model stops and
  the group is plain: news, reports and papers pay the word model on their first 128 KiB only.  It stops
  sooner, after any word-model block (_byte_ahead), when the byte model over at least EARLY_MIN bytes is
  at most EARLY_STRONG x the word model's bits per byte on its blocks so far: code lexes into short blocks,
  so the word model would otherwise code several of them, at its dynamic speed, before the first rule may
  end it (zlib-source.c when the probe lets the word model in; the frozen probe already rules it out there).
* The blocks that are not word-model blocks form runs; each run is coded "plain" (_plain): by the byte
  model, as one run of byte-model blocks of BYTE_BLOCK_SIZE bytes sharing one model, unless lzma -9e (tried
  only when the byte model is not below 0.8 x lzma preset 1) is smaller, or the byte model is not 1%
  smaller than stored blocks (incompressible data stays stored: it decodes at memory speed).  A group that
  mixes the kinds, that the byte model was coding alongside, or whose word-model blocks exceed
  BYTE_TRY_RATIO x lzma preset 1 of the whole group (with the same zlib screen), is also tried plain as a
  whole, and the smaller coding is kept.  Consecutive groups without any word-model block are coded together, plain, up to PLAIN_RUN_MAX
  bytes (one group of the format, one byte-model run), so logs, code or XML lose nothing to the group cuts.
* Speed only: every PROBE_SPAN blocks, when at least PROBE_MIN_LEFT bytes of the group are left, the
  word model codes the next PROBE_SIZE bytes without adapting (set_frozen: static-mode speed in either mode)
  and is rolled back; when that is more than PROBE_RATIO times lzma preset 1 or more than PROBE_BYTE_MARGIN
  times the byte model on the same bytes, the word model is not tried on the rest of the group (XML, logs,
  code, other languages are not coded twice; the margin keeps out code on which the word model is barely
  ahead over 16 KiB, such as zlib-source.c, and sits well above every dev text's ratio).
"""
from __future__ import annotations

import lzma
import math
import threading
import zlib
from collections import deque

from ._errors import ERR_UNSUPPORTED, NLMError
from . import _frame as F

GROUP_SIZE = 4 << 20          # input bytes per group (chosen by benchmarks/group_size.md)
PLAIN_RUN_MAX = 8 << 20       # consecutive groups without word-model blocks are coded together up to this
BYTE_RUN_MAX = 1 << 23        # bytes of one byte-model run (size class 23, docs/format.md §9.1)
BYTE_BLOCK_SIZE = F.MAX_BYTE_BLOCK   # input bytes per byte-model block (256 KiB, the format's limit)
STORED_MARGIN = 0.99          # the byte model replaces stored blocks only when 1% smaller
BYTE_TRY_RATIO = 0.7          # the byte model is tried on a block or group the word model codes above this x lzma -1
SCREEN_RATIO = 0.5            # speed only: at most this x zlib -1 counts as below BYTE_TRY_RATIO x lzma -1 (_above_try_ratio)
EARLY_MIN = 2 * (64 << 10)    # word-model bytes before the byte model may end the word model's attempt ...
EARLY_RATIO = 0.97            # ... by coding at most this x the word model's bits per byte so far
EARLY_STRONG = 0.8            # or sooner, over EARLY_MIN bytes of its own, at most this x (dev: never below 1.079x)
TRACK_RATIO = 1.2             # a cold byte model within this x the word model on the first block: code alongside
BLOCK_SIZE = F.MAX_MODEL_BLOCK     # input bytes per block (the format allows no larger word-model block)
CUT_WINDOW = 4096             # a group or block is cut after the last newline in its final 4 KiB
PROBE_SIZE = 16 * 1024
PROBE_SPAN = 16               # blocks covered by one probe
PROBE_MIN_LEFT = 4 * PROBE_SIZE
PROBE_RATIO = 1.25
PROBE_BYTE_MARGIN = 0.95      # ... and at most this x the byte model's bytes (dev: benchmarks/probe_dev.md)
CHOICE_MIN = 32 * 1024       # a shorter input takes the newest default model unprobed (choose_model; the start-up bound)
CHOICE_WINDOW = GROUP_SIZE   # the default models are compared on the first group (choose_model; benchmarks/model_choice.md):
CHOICE_PIECES = 4            # ... on this many pieces spread over it
CHOICE_PIECE_SIZE = 4096     # ... of this many bytes
LZMA_PRESET = 9 | lzma.PRESET_EXTREME
LZMA_PIECE = 64 << 10         # input bytes between two looks at the preset-1 yardstick's output (speed only)
BINARY_SKIP_FRACTION = 16     # skip the word model when more than 1/16 of a block's bytes are binary

# bytes that count as binary: the C0 controls other than the whitespace controls, and DEL
_BINARY_BYTES = bytes([b for b in range(32) if b not in (9, 10, 11, 12, 13)] + [127])


def cut_point(buf, start: int, limit: int) -> int:
    """Length of the piece starting at buf[start], given more than `limit` bytes from there on."""
    lo, hi = start + limit - CUT_WINDOW, start + limit
    i = buf.rfind(b"\n", lo, hi)
    if i < 0:
        i = buf.rfind(b" ", lo, hi)
    return (i + 1 if i >= 0 else hi) - start


def _pieces(buf, limit: int):
    """(start, length) of the pieces buf is cut into: every piece but the last is cut by cut_point."""
    pos, n = 0, len(buf)
    while n - pos > limit:
        k = cut_point(buf, pos, limit)
        yield pos, k
        pos += k
    if pos < n:
        yield pos, n - pos


def _model_pieces(buf):
    """(start, length) of the blocks the word model is tried on: _pieces(buf, BLOCK_SIZE), each cut again
    before the token that would take it over F.MAX_MODEL_TOKENS (docs/format.md §3.5).  English text has
    about 14,000 tokens in 64 KiB, so this cuts only dense text (news, tables, code)."""
    from ._core import token_cut

    for pos, k in _pieces(buf, BLOCK_SIZE):
        end = pos + k
        while pos < end:
            cut = token_cut(buf[pos:end], F.MAX_MODEL_TOKENS)
            while cut < end - pos:                     # the prefix must lex within the bound on its own
                shorter = token_cut(buf[pos:pos + cut], F.MAX_MODEL_TOKENS)
                if shorter == cut:
                    break
                cut = shorter
            yield pos, cut
            pos += cut


def _looks_binary(block) -> bool:
    n_bin = len(block) - len(bytes(block).translate(None, _BINARY_BYTES))
    return n_bin * BINARY_SKIP_FRACTION > len(block)


def _try_model(codec, block):
    """Word-model payload of block, or None when the model cannot code it (the state is then unchanged:
    the core refuses before touching it).  Other core errors propagate."""
    try:
        return codec.encode_block(block)
    except NLMError as e:
        if e.code == ERR_UNSUPPORTED:
            return None
        raise


def choice_head(data, pieces: int = None, piece: int = None, window: int = None) -> bytes:
    """The bytes the default models are compared on (choose_model): `pieces` pieces of `piece` bytes
    (CHOICE_PIECES, CHOICE_PIECE_SIZE) spread evenly over the input's first `window` bytes (CHOICE_WINDOW,
    the first group), each cut to whole lines where it has a newline, joined; the whole window when it is
    no longer than the pieces.  A file's start (a title page, a licence, a table of contents) is often unlike
    the rest; the spread probe sees the group the model will code.  Depends only on the first `window` bytes
    (a streaming encoder decides once it has them, or at the end of a shorter input)."""
    pieces = CHOICE_PIECES if pieces is None else pieces
    piece = CHOICE_PIECE_SIZE if piece is None else piece
    mv = memoryview(data).cast("B")[:CHOICE_WINDOW if window is None else window]
    n = len(mv)
    if n <= pieces * piece:
        return bytes(mv)
    out = []
    for i in range(pieces):
        a = i * n // pieces
        p = bytes(mv[a:a + piece])
        if i:
            p = p[p.find(b"\n") + 1:]            # from a line's start (the whole piece without a newline)
        k = p.rfind(b"\n") + 1
        out.append(p[:k] if k else p)
    return b"".join(out)


def probe_cost(model, head, adapt=False):
    """Bytes of the word-model payloads of head (choice_head's bytes) coded by model in mode adapt from the
    trained state, as one group's blocks; None when the model cannot code them (binary bytes, a token the
    format does not allow)."""
    from ._core import Codec

    head = bytes(head)
    codec = Codec(model, F.adapt_mode(adapt))     # not from the pool: it is freed on return, so the losing
    codec.set_bit_stats(False)                    # model's codec does not stay beside the encoder's
    codec.reset()
    total = 0
    for pos, k in _model_pieces(head):
        piece = head[pos:pos + k]
        payload = None if _looks_binary(piece) else _try_model(codec, piece)
        if payload is None:
            return None
        total += len(payload)
    return total


def choose_model(models, data, adapt):
    """The model of models (a list of Models or model names, newest first) that codes choice_head(data)
    into the fewest bytes in the frame's mode adapt (probe_cost); the first of models on a tie or when none
    can code it.  One model, or data (the whole input, or at least its first CHOICE_WINDOW bytes) shorter
    than CHOICE_MIN: the first model, nothing coded and no other model loaded.  The frame names the model
    chosen; the choice depends only on the input's first CHOICE_WINDOW bytes and whether it is shorter than
    CHOICE_MIN."""
    from ._registry import load_model

    if len(models) == 1 or len(data) < CHOICE_MIN:
        return load_model(models[0])
    models = [load_model(m) for m in models]
    head = choice_head(data)
    costs = [probe_cost(m, head, adapt) for m in models]
    known = [(c, i) for i, c in enumerate(costs) if c is not None]
    return models[min(known)[1] if known else 0]


def _probe(codec, buf, pos: int):
    """(probe bytes, the word model's payload or None): the next PROBE_SIZE bytes from pos, cut after a
    newline, coded without adapting; the codec state is rolled back."""
    end = min(len(buf), pos + PROBE_SIZE)
    k = buf.rfind(b"\n", pos, end) + 1 or end
    probe = buf[pos:k]
    codec.save()
    codec.set_frozen(True)       # a dynamic context estimates at static-mode speed (the probe is rolled back)
    try:
        return probe, _try_model(codec, probe)
    finally:
        codec.set_frozen(False)
        codec.restore()


def _probe_says_model(codec, buf, pos: int) -> bool:
    """Speed heuristic (see the module docstring)."""
    probe, payload = _probe(codec, buf, pos)
    return payload is not None and not _lzma1_decides(probe, lambda n: len(payload) > PROBE_RATIO * n) and \
        _byte_parts_reach(probe, len(payload) + F.BLOCK_CHECK_SIZE, PROBE_BYTE_MARGIN)


class _ByteParts:
    """raw as byte-model blocks, coded a block at a time: runs of at most BYTE_RUN_MAX bytes, each one model
    over blocks of BYTE_BLOCK_SIZE bytes (cut at fixed offsets: the state runs on across the cuts).  A block
    whose payload would exceed its size (the format allows no larger payload: a 1-byte tail, or bytes the
    model mispredicts) is stored instead, and the next block starts a new run.  advance(n) codes until n
    bytes are covered, so a group can compare the byte model with the word model as both go (encode_group)."""

    def __init__(self, raw):
        self.raw, self.pos, self.size, self.parts, self._bc = raw, 0, 0, [], None

    def advance(self, upto: int):
        from ._core import ByteCoder

        raw = self.raw
        while self.pos < min(upto, len(raw)):
            r = self.pos - self.pos % BYTE_RUN_MAX                 # start of this run
            run_end = min(len(raw), r + BYTE_RUN_MAX)
            block = raw[self.pos:min(run_end, self.pos + BYTE_BLOCK_SIZE)]
            start = self._bc is None or self.pos == r
            if start:
                self._bc = ByteCoder()
            part = _byte_part(block, self._bc.encode_block(block, run_end - self.pos if start else 0))
            if part[0] == F.BLOCK_STORED:
                self._bc = None
            self.parts.append(part)
            self.size += _coded_size([part])
            self.pos += len(block)
        return self

    def finish(self):
        return self.advance(len(self.raw)).parts


def _byte_ahead(track, wbytes: int, wsize: int, ratio: float) -> bool:
    """The byte model coded alongside (advanced over at least EARLY_MIN bytes) is below ratio x the word
    model's bits per byte on its blocks so far (wsize coded bytes for wbytes input bytes)."""
    track.advance(EARLY_MIN)
    return track.size * wbytes < ratio * wsize * track.pos


def _lzma1_decides(raw, holds) -> bool:
    """holds(size of lzma preset 1 of raw), for a size bound: a test that, once false, stays false for every
    larger size.  The yardstick is coded only until its output so far (which never shrinks, and is the same
    however the input is cut into pieces) makes the test false; an lzma2 stream emits a chunk per 64 KiB of
    output at most, so a large group often stops before its end."""
    c = lzma.LZMACompressor(format=lzma.FORMAT_RAW, filters=F.lzma_filters(len(raw), 1))
    out = 0
    for p in range(0, len(raw), LZMA_PIECE):
        out += len(c.compress(raw[p:p + LZMA_PIECE]))
        if not holds(out):
            return False
    return holds(out + len(c.flush()))


def _above_try_ratio(raw, size: int, zsize: int) -> bool:
    """size > BYTE_TRY_RATIO x lzma preset 1 of raw: the word model, `size` bytes on raw, is not clearly ahead.
    Speed only: a size at most SCREEN_RATIO x zsize (zlib level 1 of raw, or the sum over raw's blocks) counts
    as clearly ahead without the lzma yardstick, which costs about six times as much.  It can answer
    otherwise only where zlib -1 is over BYTE_TRY_RATIO / SCREEN_RATIO = 1.4 x lzma -1 (a repeat beyond
    deflate's 32 KiB window), and then the word model is still at most half of zlib -1; on dev text zlib -1
    is at most 1.305 x lzma -1, so dev's frames are the yardstick's (benchmarks/yardstick_dev.md)."""
    return size > SCREEN_RATIO * zsize and _lzma1_decides(raw, lambda n: size > BYTE_TRY_RATIO * n)


def _zlib1_size(raw) -> int:
    return len(zlib.compress(raw, 1))


def _byte_part(block, payload) -> tuple:
    """The part of a byte-model block whose payload is `payload`: stored when that would exceed its size."""
    if len(payload) > len(block):
        return (F.BLOCK_STORED, len(block), bytes(block))
    return (F.BLOCK_BYTE, len(block), payload + zlib.crc32(block).to_bytes(F.BLOCK_CHECK_SIZE, "little"))


def _cold_byte_model_below(block, bound: float) -> bool:
    """A fresh byte model over block alone codes it in fewer than `bound` payload bytes (an estimate: the
    model starts cold).  Only the answer is needed, so the model stops once its payload reaches ceil(bound)."""
    from ._core import ByteCoder

    payload = ByteCoder().encode_block(block, len(block), cap=max(1, math.ceil(bound)))
    return payload is not None and len(payload) < bound


def _byte_parts_reach(raw, need: int, margin: float) -> bool:
    """need <= margin x _coded_size(_byte_parts(raw)), for raw of at most one byte-model block (the probe).
    The byte model stops once its payload alone settles it: a stored block costs at least len(raw), a byte
    block at least its payload plus the block check, so at `cap` payload bytes, the smallest count with
    need <= margin x (cap + BLOCK_CHECK_SIZE), the answer is yes whichever it becomes."""
    from ._core import ByteCoder

    assert len(raw) <= BYTE_BLOCK_SIZE
    cap = 0                           # no cap when even a stored block would not settle it
    if need <= margin * len(raw):
        cap = max(1, math.ceil(need / margin) - F.BLOCK_CHECK_SIZE)
        while not need <= margin * (cap + F.BLOCK_CHECK_SIZE):
            cap += 1
    payload = ByteCoder().encode_block(raw, len(raw), cap=cap)
    return payload is None or need <= margin * _coded_size([_byte_part(raw, payload)])


def _byte_parts(raw):
    return _ByteParts(raw).finish()


def _plain(raw, bm=None):
    """Parts for bytes that do not use the word model: the byte model (bm: raw's byte-model parts when
    already coded), unless lzma (tried only when the byte model is not clearly ahead of lzma preset 1) or
    stored blocks are smaller."""
    best = [(F.BLOCK_STORED, k, bytes(raw[p:p + k])) for p, k in _pieces(raw, BLOCK_SIZE)]
    bm = _byte_parts(raw) if bm is None else bm
    if _coded_size(bm) < STORED_MARGIN * _coded_size(best):     # incompressible data stays stored (fast)
        best = bm
    size = _coded_size(best)
    if len(raw) <= F.MAX_LZMA_BLOCK and _lzma1_decides(raw, lambda n: 5 * size > 4 * n):
        lz = [(F.BLOCK_LZMA, len(raw), F.lzma_compress(raw, LZMA_PRESET))]
        if len(lz[0][2]) < len(raw) and _coded_size(lz) < size:   # LZMA2's raw chunks never
            best = lz                                              # replace stored blocks
    return best


def _model_part(size: int, payload: bytes, block) -> tuple:
    """A word-model block: its payload followed by the block check (CRC32 of its bytes)."""
    return (F.BLOCK_MODEL, size, payload + zlib.crc32(block).to_bytes(F.BLOCK_CHECK_SIZE, "little"))


def _psize(t: int, body: bytes) -> int:
    """Payload size of a part (its body holds the payload, then the block check of a model block)."""
    return len(body) - F.block_check_size(t)


def _coded_size(parts) -> int:
    return sum(len(F.block_header(t, False, s, _psize(t, p))) + len(p) for t, s, p in parts)


def encode_group(codec, raw: bytes, single: bool, on_block=None, cancel=None):
    """Code one group (`raw`, at most GROUP_SIZE bytes) from the trained state.

    codec: a _core.Codec or None (no word model); single: the frame has this one group, so the model id
    is paid only if a block uses the model.  on_block(n) is called after each block of n bytes; cancel,
    a threading.Event, stops the work between blocks.  Returns (bytes of the group's blocks, used model,
    None), or (None, False, parts) when no block uses the word model: the caller codes such plain groups
    together with the plain groups next to them, so lzma sees across group boundaries; parts, when not
    None, is _plain(raw) already computed (used when the group has no plain neighbour).
    """
    parts, run = [], []               # run: (start, length) of the pending non-model blocks
    used = False
    if codec is not None:
        codec.reset()                     # the current format in the codec's mode
    probe_ok = codec is not None
    track = None                      # the byte model over the group, coded alongside the word model
    wbytes = wsize = 0                # input and coded bytes of the word-model blocks so far
    zsum = 0                          # zlib -1 of the blocks the word model was tried on
    for i, (pos, k) in enumerate(_model_pieces(raw)):
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt("compression cancelled")
        block = raw[pos:pos + k]
        snap = False                  # the codec's snapshot is of its state now (the probe rolled back to it)
        if probe_ok and i % PROBE_SPAN == 0 and len(raw) - pos >= PROBE_MIN_LEFT:
            probe_ok = _probe_says_model(codec, raw, pos)   # a failed probe rules the word model out for the group
            snap = True
        last = pos + k == len(raw)    # nothing follows: a rejected last block needs no rollback
        payload = None
        if probe_ok and not _looks_binary(block):
            if not snap and not last:
                codec.save()
            payload = _try_model(codec, block)
            if payload is not None:
                best = k
                if track is None and wbytes == 0 and _cold_byte_model_below(block, TRACK_RATIO * len(payload)):
                    track = _ByteParts(raw)
                zsize = _zlib1_size(block)
                zsum += zsize
                if _above_try_ratio(block, len(payload), zsize):
                    best = min(best, len(F.lzma_compress(block, LZMA_PRESET)))
                    if track is None:
                        track = _ByteParts(raw)
                penalty = F.MODEL_ID_SIZE if single and not used else 0
                if len(payload) + F.BLOCK_CHECK_SIZE + penalty >= best:
                    if not last:      # the decoder never runs the model on this block
                        codec.restore()
                    payload = None
                else:
                    wbytes += k
                    wsize += len(payload) + F.BLOCK_CHECK_SIZE
        if track is not None and probe_ok:
            track.advance(pos + k)
            # the byte model clearly ahead: the word model is not tried on the rest of the group
            if wbytes >= EARLY_MIN and _byte_ahead(track, wbytes, wsize, EARLY_RATIO) or \
                    _byte_ahead(track, wbytes, wsize, EARLY_STRONG):
                if on_block is not None:
                    on_block(len(raw) - pos)
                return None, False, _plain(raw, track.finish())
        if payload is None:
            run.append((pos, k))
        else:
            if run:
                parts += _plain(raw[run[0][0]:pos])
                run = []
            parts.append(_model_part(k, payload, block))
            used = True
        if on_block is not None:
            on_block(k)
    if not used:
        return None, False, None      # a plain group: coded together with its plain neighbours
    if run:
        parts += _plain(raw[run[0][0]:])
    mixed = any(t != F.BLOCK_MODEL for t, _, _ in parts)
    size = _coded_size(parts)
    if mixed or track is not None or _above_try_ratio(raw, size, zsum):   # not mixed: zsum covers raw
        alt = _plain(raw, track.finish() if track is not None else None)
        if _coded_size(alt) < size + (F.MODEL_ID_SIZE if single else 0):
            return None, False, alt   # plain after all; alt is its coding if it has no plain neighbour
    return serialize(parts), used, None


def serialize(parts) -> bytes:
    """The blocks of one group: the first one carries the group-start bit."""
    out = bytearray()
    for j, (t, size, body) in enumerate(parts):
        out += F.block_header(t, j == 0, size, _psize(t, body))
        out += body
    return bytes(out)


class FrameEncoder:
    """Writes one frame, a group at a time.

    get_codec() -> a codec, release_codec(codec): the word model (get_codec None: no model); model_id: its
    32-byte id.  feed(data) and finish() return the frame's bytes as groups are finished.  threads: groups
    coded at once (each on its own codec); the bytes do not depend on it.  progress: input bytes coded.
    """

    def __init__(self, get_codec, release_codec, model_id, adapt: bool, check: int, threads: int = 1,
                 group_size: int = GROUP_SIZE):
        if check not in F._CHECKS:
            raise ValueError(f"check must be CHECK_NONE or CHECK_CRC32, not {check!r}")
        if get_codec is not None and (not isinstance(model_id, bytes) or len(model_id) != F.MODEL_ID_SIZE):
            raise ValueError("model_id must be 32 bytes")
        if group_size < 2 * CUT_WINDOW or group_size > F.MAX_LZMA_BLOCK:
            raise ValueError("group_size out of range")
        self._get_codec, self._release_codec = get_codec, release_codec
        self._model_id, self._adapt, self._check = model_id, F.adapt_mode(adapt), check
        self._threads = max(1, int(threads))
        self._group_size = group_size
        self._pending = bytearray()
        self._size = 0
        self._crc = 0
        self._groups = []             # (size, coded bytes) for the index
        self._multi = False           # a group was cut before the end: the input is over one group
        self._plain, self._plain_size = [], 0     # pending plain groups [(raw, parts or None)], see encode_group
        self._header_done = False
        self._done = False
        self._error = None
        self._codecs = []             # free codecs
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._inflight = deque()      # futures of (group bytes, used), in order (threads > 1)
        self._pool = None
        self.progress = 0

    # -- codecs, shared by the worker threads
    def _take_codec(self):
        if self._get_codec is None:
            return None
        with self._lock:
            if self._codecs:
                return self._codecs.pop()
        return self._get_codec()

    def _give_codec(self, codec):
        if codec is not None:
            with self._lock:
                self._codecs.append(codec)

    def _on_block(self, n):
        with self._lock:
            self.progress += n

    def _run_group(self, raw, single):
        codec = self._take_codec()
        try:
            return encode_group(codec, raw, single, self._on_block, self._cancel)
        finally:
            self._give_codec(codec)

    # -- output (in input order, on the caller's thread)
    def _emit(self, raw, group_bytes, used, plain_parts, out):
        if group_bytes is None:
            if self._plain_size + len(raw) > PLAIN_RUN_MAX:
                self._flush_plain(out)
            self._plain.append((raw, plain_parts))
            self._plain_size += len(raw)
            return
        self._flush_plain(out)
        self._write(len(raw), group_bytes, used, out)

    def _flush_plain(self, out):
        if self._plain:
            if len(self._plain) == 1 and self._plain[0][1] is not None:
                raw, parts = self._plain[0]
            else:
                raw = b"".join(r for r, _ in self._plain)
                parts = _plain(raw)
            self._plain, self._plain_size = [], 0
            self._write(len(raw), serialize(parts), False, out)

    def _write(self, raw_size, group_bytes, used, out):
        if not self._header_done:
            with_id = self._get_codec is not None and (used or self._multi)
            out.append(F.header(self._adapt, self._check, self._model_id if with_id else None))
            self._header_done = True
        self._groups.append((raw_size, len(group_bytes)))
        out.append(group_bytes)

    def _submit(self, raw, single, out):
        if self._threads == 1:
            self._emit(raw, *self._run_group(raw, single), out)
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor   # only when threads > 1

            self._pool = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="nlmcodec")
        self._inflight.append((raw, self._pool.submit(self._run_group, raw, single)))
        self._collect(out, keep=self._threads)

    def _collect(self, out, keep):
        """Emit the finished groups at the head of the queue, waiting for the oldest while more than
        `keep` groups are in flight."""
        while self._inflight:
            raw, fut = self._inflight[0]
            if len(self._inflight) <= keep and not fut.done():
                break
            result = fut.result()
            self._inflight.popleft()
            self._emit(raw, *result, out)

    def _guard(self, fn, *args):
        if self._error is not None:
            raise self._error
        try:
            return fn(*args)
        except BaseException as e:
            self._error = e if isinstance(e, (NLMError, MemoryError)) else \
                NLMError(f"the compressor was stopped by an earlier error ({type(e).__name__})")
            self._shutdown()
            raise

    def _shutdown(self):
        self._cancel.set()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        codecs, self._codecs = self._codecs, []
        if self._release_codec is not None:
            for c in codecs:
                self._release_codec(c)

    def feed(self, data) -> bytes:
        if self._done:
            raise ValueError("the frame is already finished")
        return self._guard(self._feed, data)

    def _feed(self, data):
        mv = memoryview(data).cast("B")
        out = []
        if len(mv):
            self._size += len(mv)
            if self._size > F.MAX_SIZE:
                raise OverflowError("input too large for one frame")
            self._crc = F.crc32(mv, self._crc)
            self._pending += mv
            pos, g = 0, self._group_size
            while len(self._pending) - pos > g:
                k = cut_point(self._pending, pos, g)
                self._multi = True
                self._submit(bytes(self._pending[pos:pos + k]), False, out)
                pos += k
            if pos:
                del self._pending[:pos]
        self._collect(out, keep=len(self._inflight))
        return b"".join(out)

    def finish(self) -> bytes:
        if self._done:
            raise ValueError("the frame is already finished")
        return self._guard(self._finish)

    def _finish(self):
        out = []
        if self._pending:
            raw, self._pending = bytes(self._pending), bytearray()
            self._submit(raw, not self._multi, out)
        self._collect(out, keep=0)
        self._flush_plain(out)
        if not self._header_done:      # empty input
            out.append(F.header(self._adapt, self._check, None))
            self._header_done = True
        out.append(F.trailer(self._groups, self._size, self._check, self._crc))
        self._done = True
        self._shutdown()
        return b"".join(out)


def max_compressed_size(n: int, group_size: int = GROUP_SIZE) -> int:
    """Upper bound on the frame the encoder writes for an n-byte input (docs/format.md §7.5)."""
    groups = -(-n // (group_size - CUT_WINDOW + 1))
    blocks = groups + -(-n // (BLOCK_SIZE - CUT_WINDOW + 1))
    vi = lambda v: len(F.varint(v))
    header = F.HEADER_SIZE + F.MODEL_ID_SIZE
    trailer = 1 + vi(groups) + groups * (vi(group_size) + vi(group_size + (group_size // BLOCK_SIZE + 2) * 7)) \
        + vi(n) + 4 + 4 + F.FOOTER_SIZE
    return n + header + trailer + blocks * (1 + vi(BLOCK_SIZE) * 2)
