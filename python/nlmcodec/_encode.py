"""The encoder: cuts the input into groups and blocks, chooses each block's coding once, in one pass, and
writes the frame (layout: _frame.py; spec: docs/format.md §7) as its blocks are decided, in bounded memory,
on one or several threads.

Policy (not part of the format; any valid choice decodes; docs/format.md §7.4 says it in full):

* Groups of GROUP_SIZE input bytes (cut after the last newline in the final 4 KiB, else the last space,
  else at the size), each coded from the trained state by a GroupCoder, so threads=N codes N groups at once.
* Blocks of BLOCK_SIZE bytes (the limit of a word-model block) inside a group, cut by the same rule once more
  than BLOCK_SIZE bytes of the group are known to follow (so a block never depends on where its group
  ends), and again before the token MAX_MODEL_TOKENS while the word model is tried.  Per block the word
  model is tried after save(); the block is a word-model block when that is strictly smaller than stored
  and, when the word model is not clearly ahead of lzma preset 1 (above BYTE_TRY_RATIO x; "clearly ahead"
  without the preset-1 coding when at most SCREEN_RATIO x zlib level 1: _above_try_ratio), than lzma -9e.
  Otherwise the codec is restore()d and the block is coded by the group's byte-model run (_PlainRun), or
  stored, or lzma -9e, whichever is smaller; in a plain group, once lzma wins a block, the rest of the group
  is gathered into one lzma block, written when the group ends.
* The hold: while the word model is tried, a group's first blocks (up to HOLD bytes, or EARLY_MIN bytes of
  word-model blocks) are held.  When the first word-model block is above BYTE_TRY_RATIO x lzma preset 1,
  or a fresh byte model codes it in less than TRACK_RATIO x its payload, the byte model codes the group
  alongside.  At the hold's end the group goes plain when the byte model is ahead (EARLY_RATIO once the
  word model has EARLY_MIN bytes, EARLY_STRONG on any), or when a byte-model coding of the held bytes is
  smaller than held blocks of several kinds; otherwise the held blocks are written.  After the hold each
  block is written as soon as it is coded.
* The line route (format 17, §3.8): in a tracked group each word-model block is coded with the group's run as
  the codec's router (each line by the cheaper of the word model and the run, the route byte 1; the run learns
  the block and its own coding of it comes out alongside); the held blocks coded before the run started take
  the route byte 0.  When the run starts at the block the word model has just coded, that block is coded again
  with the router, from the state before it.
* Speed only: every PROBE_SPAN blocks (not the group's last) the word model codes the block's first
  PROBE_SIZE bytes without adapting and is rolled back; when that is more than PROBE_RATIO x lzma preset 1
  or more than PROBE_BYTE_MARGIN x the byte model on the same bytes, the word model is not tried on the
  rest of the group (XML, logs, code, other languages are not coded twice).
* The frame's first bytes wait until the input is longer than HEADER_WAIT or ends; the model id is left out
  of a shorter input's header when no block uses the word model.  The default models are compared on the
  first CHOICE_WINDOW bytes (choose_model), so nothing waits for more than that.
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
PLAIN_GROUP_FACTOR = 2        # a group the word model is ruled out of at its first block holds twice as much
HOLD = 160 << 10              # a group's blocks are held until one ends at or after this (GroupCoder)
HEADER_WAIT = 192 << 10       # the frame's first bytes wait until the input is longer than this, or ends
STORED_MARGIN = 0.99          # the byte model replaces stored blocks only when 1% smaller
BYTE_TRY_RATIO = 0.7          # the byte model is tried on a block or group the word model codes above this x lzma -1
SCREEN_RATIO = 0.5            # speed only: at most this x zlib -1 counts as below BYTE_TRY_RATIO x lzma -1 (_above_try_ratio)
EARLY_MIN = 2 * (64 << 10)    # word-model bytes before the byte model may end the word model's attempt ...
EARLY_RATIO = 0.97            # ... by coding at most this x the word model's bits per byte so far
EARLY_STRONG = 0.8            # or, over whatever the hold covers, at most this x (dev: never below 1.079x)
TRACK_RATIO = 1.2             # a cold byte model within this x the word model on the first block: code alongside
ROUTE_KEEP = 0.98             # (format 17) the route saves 2% of the first word-model block's probe: code alongside
SWITCH_RATIO = 0.95           # a tracked group's block goes to the byte model when at most this x the word model
                              # (the word model then misses the block: benchmarks/skip_cost.md)
BLOCK_SIZE = F.MAX_MODEL_BLOCK     # input bytes per block (the format allows no larger word-model block)
CUT_WINDOW = 4096             # a group or block is cut after the last newline in its final 4 KiB
TOKEN_CUTS_MAX = 5            # blocks a 64 KiB piece is cut into before token 16,384 at most (max_compressed_size)
PROBE_SIZE = 16 * 1024
PROBE_SPAN = 16               # blocks covered by one probe
PROBE_RATIO = 1.25
PROBE_BYTE_MARGIN = 0.95      # ... and at most this x the byte model's bytes (dev: benchmarks/probe_dev.md)
CHOICE_MIN = 32 * 1024       # a shorter input takes the newest default model unprobed (choose_model; the start-up bound)
CHOICE_WINDOW = 128 << 10    # the default models are compared on the input's first bytes (choose_model; benchmarks/model_choice.md):
CHOICE_PIECES = 4            # ... on this many pieces spread over it
CHOICE_PIECE_SIZE = 4096     # ... of this many bytes
LZMA_PRESET = 9 | lzma.PRESET_EXTREME
LZMA_PIECE = 64 << 10         # input bytes between two looks at the preset-1 yardstick's output (speed only)
BINARY_SKIP_FRACTION = 16     # skip the word model when more than 1/16 of a block's bytes are binary
ROUTE = F.routes(F.FORMAT_VERSION)   # the written format routes lines in tracked groups (§3.8)

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


def _routed(codec, run, block):
    """(the word model's payload or None, the run's payload for the block): block coded with run (a tracked
    group's ByteCoder) as the codec's router (§3.8).  The run learns the block (unless the codec refuses it,
    which changes nothing); its payload is a byte-model block continuing the run, made alongside."""
    codec.set_router(run, True)
    try:
        payload = _try_model(codec, block)
        return payload, codec.route_byte_payload() if payload is not None else None
    finally:
        codec.set_router(None)        # the codec holds no run between blocks (a probe must not feed it)


def _route_pays(codec, block) -> bool:
    """(Format 17) the line route pays on the block: its first PROBE_SIZE bytes (cut after their last newline),
    coded without adapting with a fresh run as the codec's router, cost at most ROUTE_KEEP x the word model's own
    coding of their lines (the encoder's logged costs, nlm.h NLM_STAT_ROUTE_*_BITS).  The codec state is rolled
    back; a probe costs about a quarter of a block at static-mode speed, and the byte model over 16 KiB."""
    from ._core import ByteCoder

    probe = block[:PROBE_SIZE]
    k = bytes(probe).rfind(b"\n") + 1
    probe = probe[:k] if k else probe
    run = ByteCoder()
    run.start_run(size_class(len(probe)))
    before = codec.stats()
    codec.save()
    codec.set_frozen(True)
    try:
        payload, _ = _routed(codec, run, probe)
        after = codec.stats()
    finally:
        codec.set_frozen(False)
        codec.restore()
    word = after["route_word_bits"] - before["route_word_bits"]
    return payload is not None and after["route_coded_bits"] - before["route_coded_bits"] <= ROUTE_KEEP * word


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
        a = (i + 1) * (n - piece) // pieces
        p = bytes(mv[a:a + piece])
        p = p[p.find(b"\n") + 1:]                # from a line's start (the whole piece without a newline)
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


def _probe(codec, block):
    """(probe bytes, the word model's payload or None): the block's first PROBE_SIZE bytes, cut after their
    last newline, coded without adapting; the codec state is rolled back."""
    probe = block[:PROBE_SIZE]
    k = bytes(probe).rfind(b"\n") + 1
    probe = probe[:k] if k else probe
    codec.save()
    codec.set_frozen(True)       # a dynamic context estimates at static-mode speed (the probe is rolled back)
    try:
        return probe, _try_model(codec, probe)
    finally:
        codec.set_frozen(False)
        codec.restore()


def _probe_says_model(codec, block) -> bool:
    """Speed heuristic (see the module docstring)."""
    probe, payload = _probe(codec, block)
    return payload is not None and not _lzma1_decides(probe, lambda n: len(payload) > PROBE_RATIO * n) and \
        _byte_parts_reach(probe, len(payload) + F.BLOCK_CHECK_SIZE, PROBE_BYTE_MARGIN)


def _byte_ahead(track, wbytes: int, wsize: int, ratio: float) -> bool:
    """The byte model coded alongside (track, a _PlainRun) is below ratio x the word model's bits per byte on
    its blocks so far (wsize coded bytes for wbytes input bytes)."""
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
    """need <= margin x the coded size of raw as one fresh byte-model block (stored if that is larger), raw
    being at most one byte-model block (the probe).
    The byte model stops once its payload alone settles it: a stored block costs at least len(raw), a byte
    block at least its payload plus the block check, so at `cap` payload bytes, the smallest count with
    need <= margin x (cap + BLOCK_CHECK_SIZE), the answer is yes whichever it becomes."""
    from ._core import ByteCoder

    assert len(raw) <= F.MAX_BYTE_BLOCK
    cap = 0                           # no cap when even a stored block would not settle it
    if need <= margin * len(raw):
        cap = max(1, math.ceil(need / margin) - F.BLOCK_CHECK_SIZE)
        while not need <= margin * (cap + F.BLOCK_CHECK_SIZE):
            cap += 1
    payload = ByteCoder().encode_block(raw, len(raw), cap=cap)
    return payload is None or need <= margin * _coded_size([_byte_part(raw, payload)])


def _model_part(size: int, payload: bytes, block) -> tuple:
    """A word-model block: its payload followed by the block check (CRC32 of its bytes)."""
    return (F.BLOCK_MODEL, size, payload + zlib.crc32(block).to_bytes(F.BLOCK_CHECK_SIZE, "little"))


def _psize(t: int, body: bytes) -> int:
    """Payload size of a part (its body holds the payload, then the block check of a model block)."""
    return len(body) - F.block_check_size(t)


def _coded_size(parts) -> int:
    return sum(len(F.block_header(t, False, s, _psize(t, p))) + len(p) for t, s, p in parts)


def size_class(n: int) -> int:
    """The byte model's size class for a run of at most n bytes: the smallest s >= 10 with 2^s >= n (§9.1)."""
    return max(F.TRACK_MIN, (n - 1).bit_length())


class _PlainRun:
    """Blocks coded by the byte model, one at a time, as one run (§9.1) carried from block to block, unless
    lzma -9e of the block (tried only when the byte model is not below 0.8 x lzma preset 1 on it; speed only:
    at most SCREEN_RATIO x zlib level 1 counts as below, as in _above_try_ratio) or a stored block is smaller, or the byte model is not 1% smaller than stored (incompressible data stays stored: it
    decodes at memory speed).

    Untracked (track 0): the run starts at its first block and is carried across the group's word-model
    blocks, which it does not see; a block coded otherwise than by the run ends it (the model saw bytes the
    decoder's will not), and the next byte-model block starts a fresh one.  Tracked (track = s, formats 15 on,
    §7.2): the run of size class s starts with the group and learns every block of it, whatever the block's
    coding, as the decoder's does; it codes every block given to it (code()) and is never ended; in format 17 a
    word-model block coded with the run as router (_routed) has its payload made and the block learnt already.
    size and pos: coded bytes and input bytes so far; parts (keep=True): the parts coded."""

    def __init__(self, keep=False, track=0):
        from ._core import ByteCoder

        self._bc = None
        self._lz = None               # collect(): the bytes gathered for one lzma block
        self.track = track
        if track:
            self._bc = ByteCoder()
            self._bc.start_run(track)
        self.size = self.pos = 0
        self.parts = [] if keep else None

    def code(self, block, room: int, collect=False, payload=None):
        """The part for block; room: at most this many bytes of the group from block's start on (a fresh
        untracked run is sized for them); payload: the run's payload for the block when it was made alongside
        (_routed: the run has learnt the block).  collect (a plain group): once lzma wins a block, that block and
        every later one are gathered for one lzma block (flush()), as lzma codes long repeats across blocks
        that it would lose in 64 KiB pieces; None is returned for them."""
        from ._core import ByteCoder

        k = len(block)
        if self._lz is not None:
            self._lz += block
            self.pos += k
            return None
        stored = (F.BLOCK_STORED, k, bytes(block))
        start = self._bc is None
        if start:
            self._bc = ByteCoder()
        if payload is None:
            payload = self._bc.encode_block(block, room if start else 0)
        best = part = _byte_part(block, payload)
        if _coded_size([part]) >= STORED_MARGIN * _coded_size([stored]):
            best = stored
        size = _coded_size([best])
        if size > SCREEN_RATIO * _zlib1_size(block) and _lzma1_decides(block, lambda n: 5 * size > 4 * n):
            lz = (F.BLOCK_LZMA, k, F.lzma_compress(block, LZMA_PRESET))
            if len(lz[2]) < k and _coded_size([lz]) < size:        # LZMA2's raw chunks never replace stored blocks
                best = lz
        if (best is not part or part[0] != F.BLOCK_BYTE) and not self.track:
            self._bc = None
        if collect and best[0] == F.BLOCK_LZMA and not self.track:
            self._lz = bytearray(block)
            self.pos += k
            return None
        self.size += _coded_size([best])
        self.pos += k
        if self.parts is not None:
            self.parts.append(best)
        return best


    def flush(self) -> list:
        """The parts of the bytes collect() gathered: one lzma block, or stored blocks if lzma does not make
        them smaller."""
        if self._lz is None:
            return []
        data, self._lz = bytes(self._lz), None
        lz = F.lzma_compress(data, LZMA_PRESET)
        parts = [(F.BLOCK_LZMA, len(data), lz)] if len(lz) < len(data) else \
            [(F.BLOCK_STORED, q, data[p:p + q]) for p, q in _pieces(data, F.MAX_STORED_BLOCK)]
        self.size += _coded_size(parts)
        if self.parts is not None:
            self.parts += parts
        return parts


class GroupCoder:
    """Codes one group (at most group_size input bytes, from the trained state) in one pass, a block at a
    time, as its bytes arrive: push(data) adds bytes whose group end is not known yet, close(data) the
    last ones.  take() returns the blocks decided since the last call, serialized (the first one carries
    the group-start bit); done is True once close() has coded everything.  Each block is decided when it
    is coded, except the group's first blocks while the word model is on (the hold, see the module
    docstring).  The blocks depend only on the group's bytes, never on how they were pushed.

    A group is tracked (formats 15 on, docs/format.md §7.2) when the byte model ran alongside during the hold:
    its run then learns every byte of the group, and each later block is coded by whichever of the word
    model and the run is smaller.  Otherwise the word model codes the blocks it wins and an untracked run
    the others.

    codec: a _core.Codec or None (no word model); on_block(n) after each block of n bytes; cancel, a
    threading.Event, stops the work between blocks."""

    def __init__(self, codec, on_block=None, cancel=None, group_size=GROUP_SIZE, first_probe=None):
        self._codec = codec
        self._g = group_size                  # the most bytes the group has
        self._first_probe = first_probe       # the probe's verdict on the group's first bytes, when known
        self._only = False                    # close(): the group is the frame's only one
        self._on_block, self._cancel = on_block, cancel
        if codec is not None:
            codec.reset()                     # the current format in the codec's mode
        self._raw = bytearray()
        self._ended = False
        self._pos = 0                         # input bytes of the group cut into blocks so far
        self._queue = deque()                 # (start, length) of the current 64 KiB piece's blocks
        self._i = 0                           # blocks so far
        self._word = codec is not None and first_probe is not False   # the word model is still tried
        self._holding = self._word            # the group's first blocks are held (decided at the hold's end)
        self._held = []                       # (start, part) of the blocks held
        self._plain = _PlainRun()             # the blocks the word model does not code (tracked: every block)
        self._track = None                    # the byte model over the whole group, alongside (while holding)
        self._wbytes = self._wsize = 0        # input and coded bytes of the word-model blocks held
        self._zsum = 0                        # zlib -1 of the blocks the word model was tried on while holding
        self._unrouted = set()                # (format 17) starts of held word-model blocks coded without a router
        self._both = [0, 0, 0]                # tracked, after the hold: input, word-model and run bytes of the
                                              # blocks both coded
        self._out = deque()                   # serialized blocks decided, not yet taken
        self._first = True                    # the next block written starts the group
        self.used = False                     # a word-model block was written
        self.coded_size = 0                   # bytes of the blocks written
        self.size = 0                         # input bytes of the group
        self.done = False

    # -- input
    def push(self, data):
        self._raw += data
        self._cut()

    def close(self, data=b"", only=False):
        """The group's last bytes; only: the group is the whole input (the frame's only group)."""
        self._raw += data
        self._ended = True
        self._only = only
        self._cut()
        if self._holding:
            self._decide_hold()
        for part in self._plain.flush():
            self._write(part)
        self.size = len(self._raw)
        self.done = True

    def take(self) -> bytes:
        out = []
        while self._out:
            out.append(self._out.popleft())
        return b"".join(out)

    def _id_optional(self) -> bool:
        """The frame pays the model id only if a block uses the model (FrameEncoder: the whole input is this
        group, of at most HEADER_WAIT bytes)."""
        return self._only and len(self._raw) <= HEADER_WAIT

    # -- blocks
    def _cut(self):
        """Code every block whose extent is known: a 64 KiB piece is cut (cut_point) once more than
        BLOCK_SIZE bytes of the group are known to follow its start, which before close() is the bytes
        pushed (the frame encoder pushes at most group_size - CUT_WINDOW, the least a group that does not
        end the input has)."""
        raw = self._raw
        while True:
            if not self._queue:
                n = len(raw)
                sure = n if self._ended else min(n, self._g - CUT_WINDOW + 1)
                if sure - self._pos > BLOCK_SIZE:
                    k = cut_point(raw, self._pos, BLOCK_SIZE)
                elif self._ended and self._pos < n:
                    k = n - self._pos
                else:
                    return
                self._queue.extend(self._split(self._pos, k))
                self._pos += k
            start, k = self._queue.popleft()
            if self._cancel is not None and self._cancel.is_set():
                raise KeyboardInterrupt("compression cancelled")
            last = self._ended and start + k == len(raw)
            self._block(memoryview(raw)[start:start + k], start, last)
            if self._on_block is not None:
                self._on_block(k)

    def _split(self, pos, k):
        """The blocks of the piece raw[pos:pos + k]: cut again before the token that would take a word-model
        block over F.MAX_MODEL_TOKENS (_model_pieces) while the word model is tried; whole otherwise."""
        piece = bytes(self._raw[pos:pos + k])
        if not self._word or _looks_binary(piece):     # (the word model skips a binary block anyway)
            return [(pos, k)]
        return [(pos + p, q) for p, q in _model_pieces(piece)]

    def _try_word(self, block, pos, last, i):
        """The word model's part for the block, or None (the codec is then as before the block)."""
        k = len(block)
        snap = False
        if self._word and i == 0 and self._first_probe is not None:
            self._word = self._first_probe    # the frame encoder's (group_probe), on the same bytes
        elif self._word and i % PROBE_SPAN == 0 and not last:
            self._word = _probe_says_model(self._codec, block)    # a failed probe ends the word model's tries
            snap = True
            if not self._word and self._holding:
                self._decide_hold()
        if not self._word or _looks_binary(block):
            return None
        codec = self._codec
        could_track = ROUTE and self._holding and self._track is None     # (then the block may be coded again)
        if could_track and self._wbytes == 0 and _route_pays(codec, block):
            self._start_track(pos, last)          # the group's first word-model block: routed from the start
            self._catch_up(pos)
            could_track = False
        run = self._router(pos)
        if not snap and (not last or could_track):
            codec.save()
        if run is not None:
            payload, shadow = _routed(codec, run._bc, block)
        else:
            payload, shadow = _try_model(codec, block), None
        if payload is None:
            return None
        if run is None and could_track:
            self._unrouted.add(pos)
        elif run is not None and run is self._track:      # holding: the run alongside has its part of the block
            run.code(block, 0, payload=shadow)
        penalty = F.MODEL_ID_SIZE if last and self._id_optional() and not self.used and \
            not any(part[0] == F.BLOCK_MODEL for _, part in self._held) else 0
        part = _model_part(k, payload, block)
        if self._plain.track:          # a tracked group: the run's coding of the block is the other candidate
            other = self._plain.code(block, 0, payload=shadow if run is not None else None)
            wsize, bsize = _coded_size([part]) + penalty, _coded_size([other])
            self._both[0] += k
            self._both[1] += wsize
            self._both[2] += bsize
            n, w, b = self._both      # the run ahead over EARLY_MIN bytes: the word model is not tried again
            if n >= EARLY_MIN and b < EARLY_RATIO * w:
                self._word = False
            if bsize >= SWITCH_RATIO * wsize:      # the word model keeps the blocks it nearly wins: it
                return part                         # does not see the blocks the run codes
            if not last:
                codec.restore()
            return other
        best = k
        if self._holding and self._track is None and self._wbytes == 0 and \
                _cold_byte_model_below(block, TRACK_RATIO * len(payload)):
            self._start_track(pos, last)
            payload = self._route_from(block, pos, payload)
        zsize = _zlib1_size(block)
        if self._holding:
            self._zsum += zsize
        if _above_try_ratio(block, len(payload), zsize):
            best = min(best, len(F.lzma_compress(block, LZMA_PRESET)))
            if self._holding and self._track is None:
                self._start_track(pos, last)
                payload = self._route_from(block, pos, payload)
        part = _model_part(k, payload, block)
        if len(payload) + F.BLOCK_CHECK_SIZE + penalty >= best:
            if not last:      # the decoder never runs the model on this block
                codec.restore()
            return None
        return part

    def _router(self, pos):
        """The tracked run a block at pos is coded with (format 17, §3.8): the group's after the hold, the one
        alongside while holding (it has learnt the group up to pos), else None."""
        if not ROUTE:
            return None
        if self._plain.track:
            return self._plain
        if self._track is not None and self._track.pos == pos:
            return self._track
        return None

    def _route_from(self, block, pos, payload):
        """The run has just started alongside (format 17), at the block at pos that the word model coded
        without it: the run learns the held blocks before it, and the block is coded again with the run as
        router, from the state before it (saved by _try_word).  The new payload."""
        if not ROUTE:
            return payload
        track = self._track
        self._catch_up(pos)
        self._codec.restore()
        payload, shadow = _routed(self._codec, track._bc, block)
        track.code(block, 0, payload=shadow)
        self._unrouted.discard(pos)
        return payload

    def _catch_up(self, pos):
        """The run alongside learns (codes) the held blocks before pos that it has not coded yet."""
        for p, held in self._held:
            if self._track.pos <= p < pos:
                self._track.code(memoryview(self._raw)[p:p + held[1]], 0)

    def _start_track(self, pos, last):
        """The byte model alongside, from the group's start, sized for the whole group (for exactly its
        bytes when this block is the group's last)."""
        self._track = _PlainRun(keep=True, track=size_class(len(self._raw) if last else self._g))

    def _block(self, block, pos, last):
        i, self._i = self._i, self._i + 1
        k = len(block)
        part = self._try_word(block, pos, last, i)
        if part is not None and part[0] == F.BLOCK_MODEL and self._holding:
            self._wbytes += k
            self._wsize += len(part[2])
        if part is None:
            part = self._plain.code(block, k if last else self._g - pos,
                                    collect=not self._word and not self._holding and not self._plain.track)
            if part is None:          # gathered for one lzma block (written when the group ends)
                return
        if self._track is not None:               # the group from its start, at the blocks' cuts
            for p, q in [(p, held[1]) for p, held in self._held] + [(pos, k)]:
                if p >= self._track.pos:
                    self._track.code(memoryview(self._raw)[p:p + q], 0)
        if self._holding:
            self._held.append((pos, part))
            if self._wbytes >= EARLY_MIN or pos + k >= HOLD or last:
                self._decide_hold()
        else:
            self._write(part)

    def _decide_hold(self):
        """End of the hold.  Without the byte model alongside the held blocks are written, unless a plain
        coding of the held bytes is smaller (then the group is coded plain).  With it the group is tracked:
        coded plain by the run alongside (the word model off) when that is clearly ahead, else the held
        word-model blocks are written and the run's coding of the others."""
        self._holding = False
        held, self._held = self._held, []
        track, self._track = self._track, None
        parts = [part for _, part in held]
        n = sum(part[1] for part in parts)
        whole = self._ended and n == len(self._raw)      # the held blocks are the whole group
        if track is not None:
            self._plain = track
            mixed = [p if p[0] == F.BLOCK_MODEL else t for p, t in zip(parts, track.parts)]
            penalty = F.MODEL_ID_SIZE if whole and self._id_optional() else 0
            if self._wbytes >= EARLY_MIN and _byte_ahead(track, self._wbytes, self._wsize, EARLY_RATIO) or \
                    _byte_ahead(track, self._wbytes, self._wsize, EARLY_STRONG) or \
                    track.size < _coded_size(mixed) + penalty:
                self._word = False
                parts = track.parts
            else:
                parts = mixed
            track.parts = None
            starts = [p for p, _ in held]         # (the parts are the held blocks', in order)
            routed = any(t == F.BLOCK_MODEL and p not in self._unrouted for p, (t, _, _) in zip(starts, parts))
            if whole and not any(t == F.BLOCK_BYTE for t, _, _ in parts) and not (ROUTE and routed):
                self._plain = _PlainRun()     # nothing for a run to code: the group need not be tracked
            elif ROUTE:       # tracked: a word-model block coded before the run started takes the route byte 0
                parts = [(t, q, b"\x00" + body) if t == F.BLOCK_MODEL and p in self._unrouted else (t, q, body)
                         for p, (t, q, body) in zip(starts, parts)]
            for part in parts:
                self._write(part)
            return
        if not any(t == F.BLOCK_MODEL for t, _, _ in parts):
            for part in parts:
                self._write(part)
            return
        size = _coded_size(parts)
        if any(t != F.BLOCK_MODEL for t, _, _ in parts) or _above_try_ratio(self._raw[:n], size, self._zsum):
            alt = _PlainRun(keep=True)
            for p, q in _pieces(self._raw[:n], BLOCK_SIZE):
                alt.code(memoryview(self._raw)[p:p + q], n - p if whole else self._g - p)
            penalty = F.MODEL_ID_SIZE if whole and self._id_optional() else 0
            if alt.size < size + penalty:
                self._word = False            # plain after all: the run goes on over the rest of the group
                self._plain = alt
                parts, alt.parts = alt.parts, None
        for part in parts:
            self._write(part)

    def _write(self, part):
        t, size, body = part
        track = self._plain.track if self._first else 0
        data = F.block_header(t, self._first, size, _psize(t, body), track) + body
        self._first = False
        self.used |= t == F.BLOCK_MODEL
        self.coded_size += len(data)
        self._out.append(data)


def serialize(parts) -> bytes:
    """The blocks of one group: the first one carries the group-start bit."""
    out = bytearray()
    for j, (t, size, body) in enumerate(parts):
        out += F.block_header(t, j == 0, size, _psize(t, body))
        out += body
    return bytes(out)


class FrameEncoder:
    """Writes one frame in one pass: feed(data) and finish() return the frame's bytes as blocks are decided.

    get_codec() -> a codec, release_codec(codec): the word model (get_codec None: no model); model_id: its
    32-byte id.  threads: groups coded at once (each on its own codec); the bytes do not depend on it.  The
    group the input is arriving in is coded as it arrives, on the caller's thread, once every group before
    it is written; groups whose input is complete go to the worker threads (threads > 1).  The frame's
    first bytes wait until the input is longer than HEADER_WAIT or ends: the model id is left out of the
    header of a shorter input that no word-model block uses.  progress: input bytes coded.
    """

    def __init__(self, get_codec, release_codec, model_id, adapt: bool, check: int, threads: int = 1,
                 group_size: int = GROUP_SIZE):
        if check not in F._CHECKS:
            raise ValueError(f"check must be CHECK_NONE or CHECK_CRC32, not {check!r}")
        if get_codec is not None and (not isinstance(model_id, bytes) or len(model_id) != F.MODEL_ID_SIZE):
            raise ValueError("model_id must be 32 bytes")
        if not 2 * CUT_WINDOW <= group_size <= GROUP_SIZE:
            raise ValueError("group_size out of range")
        self._get_codec, self._release_codec = get_codec, release_codec
        self._model_id, self._adapt, self._check = model_id, F.adapt_mode(adapt), check
        self._threads = max(1, int(threads))
        self._group_size = group_size  # GROUP_SIZE; tests make smaller groups
        self._limit = None            # (size limit, probe verdict) of the group the input is arriving in, once
                                      # more than BLOCK_SIZE of it is known (group_probe)
        self._pending = bytearray()   # input not given to a group yet
        self._open = None             # (GroupCoder, codec) of the group the input is arriving in, once started
        self._pushed = 0              # bytes of that group given to it (at most GROUP_SIZE - CUT_WINDOW)
        self._size = 0
        self._crc = 0
        self._ended = False           # finish() was called
        self._cut = False             # a group was cut: the input is over one group
        self._jobs = deque()          # [GroupCoder, codec, future or None] in input order, not yet written
        self._groups = []             # (size, coded bytes) for the index
        self._used = False            # a written group has a word-model block
        self._held = []               # the frame's first bytes, until the header is written
        self._header_done = False
        self._done = False
        self._error = None
        self._codecs = []             # free codecs
        self._lock = threading.Lock()
        self._cancel = threading.Event()
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

    # -- groups
    def _group_probe(self):
        """(size limit, probe verdict) of the group whose first bytes start _pending (more than BLOCK_SIZE of
        them): a group the word model is ruled out of at its first block (no model, or the probe on its first
        PROBE_SIZE bytes says so) is plain and holds PLAIN_GROUP_FACTOR times as much (one byte-model run
        over 8 MiB, the byte model's largest, as logs, XML and other languages want); the verdict goes to the group's coder."""
        codec = self._take_codec()
        if codec is None:
            return PLAIN_GROUP_FACTOR * self._group_size, None
        try:
            codec.reset()
            word = _probe_says_model(codec, bytes(self._pending[:PROBE_SIZE]))
        finally:
            self._give_codec(codec)
        return (self._group_size if word else PLAIN_GROUP_FACTOR * self._group_size), word

    def _new_job(self):
        codec = self._take_codec()
        limit, word = self._limit or (self._group_size, None)
        job = [GroupCoder(codec, self._on_block, self._cancel, limit, word), codec, None]
        self._jobs.append(job)
        return job

    def _close(self, rest, only):
        """A group's input is complete: rest is what its coder has not been given."""
        if self._open is not None:
            job, self._open, self._pushed = self._open, None, 0
        else:
            job = self._new_job()
        self._limit = None
        if self._threads == 1:
            job[0].close(rest, only)
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor   # only when threads > 1

            self._pool = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="nlmcodec")
        job[2] = self._pool.submit(job[0].close, rest, only)

    def _advance_open(self):
        """Give the arriving group its input so far (the bytes that surely belong to it) and code it, on this
        thread, once every group before it is written."""
        if not self._pending or self._limit is None or (self._open is None and self._jobs) or \
                (self._open is not None and len(self._jobs) > 1):
            return
        if self._open is None:
            self._open = self._new_job()
        n = min(len(self._pending), self._limit[0] - CUT_WINDOW - self._pushed)
        if n > 0:
            self._open[0].push(bytes(self._pending[:n]))
            del self._pending[:n]
            self._pushed += n

    # -- output (in input order, on the caller's thread)
    def _drain(self, out, wait: bool):
        """Write the decided blocks of the groups at the head of the queue, and the index entry of each
        finished one (its codec is freed).  wait: wait for every group handed to a worker."""
        while self._jobs:
            coder, codec, fut = self._jobs[0]
            if fut is None:
                finished = coder.done             # coded on this thread
            elif wait or fut.done():
                fut.result()                      # the group's exception, if any
                finished = True
            else:
                finished = False                  # (its blocks so far are written all the same)
            self._emit(coder.take(), out)
            if not finished:
                return
            self._jobs.popleft()
            self._give_codec(codec)
            self._groups.append((coder.size, coder.coded_size))
            self._used |= coder.used

    def _emit(self, data, out):
        if self._header_done:
            out.append(data)
            return
        self._held.append(data)
        if self._size > HEADER_WAIT or self._ended and not self._jobs and self._open is None:
            with_id = self._get_codec is not None and (self._size > HEADER_WAIT or self._used)
            out.append(F.header(self._adapt, self._check, self._model_id if with_id else None))
            out.extend(self._held)
            self._held = []
            self._header_done = True

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
        for coder, codec, fut in self._jobs:      # a running worker's codec is left to it
            if codec is not None and (fut is None or fut.done()):
                codecs.append(codec)
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
            while True:
                if self._limit is None:
                    if self._pushed + len(self._pending) <= BLOCK_SIZE:
                        break
                    self._limit = self._group_probe()
                g = self._limit[0]
                if self._pushed + len(self._pending) <= g:
                    break
                k = cut_point(self._pending, 0, g - self._pushed)   # the cut window is in _pending
                self._cut = True
                rest = bytes(self._pending[:k])
                del self._pending[:k]
                self._close(rest, False)
                self._drain(out, wait=len(self._jobs) > self._threads)
        self._drain(out, wait=False)
        self._advance_open()
        self._drain(out, wait=False)
        return b"".join(out)

    def finish(self) -> bytes:
        if self._done:
            raise ValueError("the frame is already finished")
        return self._guard(self._finish)

    def _finish(self):
        out = []
        self._ended = True
        if self._pending or self._open is not None:
            rest, self._pending = bytes(self._pending), bytearray()
            self._close(rest, not self._cut)
        self._drain(out, wait=True)
        self._emit(b"", out)          # the header, and what waited for it
        out.append(F.trailer(self._groups, self._size, self._check, self._crc))
        self._done = True
        self._shutdown()
        return b"".join(out)


def max_compressed_size(n: int, group_size: int = GROUP_SIZE) -> int:
    """Upper bound on the frame the encoder writes for an n-byte input (docs/format.md §7.5)."""
    groups = -(-n // (group_size - CUT_WINDOW + 1))
    # a 64 KiB piece the word model is tried on is cut before token 16,384 (each of at least a byte): at most 5
    # blocks, each of which may end up stored
    blocks = groups + TOKEN_CUTS_MAX * -(-n // (BLOCK_SIZE - CUT_WINDOW + 1))
    vi = lambda v: len(F.varint(v))
    header = F.HEADER_SIZE + F.MODEL_ID_SIZE
    trailer = 1 + vi(groups) + groups * (vi(group_size) + vi(group_size + (group_size // BLOCK_SIZE + 2) * 7)) \
        + vi(n) + 4 + 4 + F.FOOTER_SIZE
    return n + header + trailer + blocks * (1 + vi(BLOCK_SIZE) * 2)
