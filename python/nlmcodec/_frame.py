"""The nlmcodec frame (container): the only code that reads or writes frames.  Spec: codec/FORMAT.md §7.

Layout of one frame (all multi-byte integers little-endian; "varint" = unsigned LEB128, canonical, at
most 9 bytes, value < 2**63)::

    magic          4 bytes   B1 4E 4C 4D  ("\\xb1NLM": first byte non-ASCII and not a UTF-8 lead byte)
    version        1 byte    1
    flags          1 byte    bit 0 adapt (dynamic evaluation), bits 1-2 check type (0 none, 1 CRC32),
                             bit 3 no-model (no block uses the word model; the model id is omitted),
                             bits 4-7 zero
    model id       32 bytes  SHA-256 of the model file (absent when no-model is set)
    original size  varint    total decompressed size
    block count    varint    <= original size (blocks are never empty)
    block table    count x { type 1 byte (0 stored, 1 lzma, 2 word model), size varint, payload size varint }
    header CRC32   4 bytes   CRC32 of every byte from the magic to the end of the block table
    payloads       the block payloads, in table order
    content CRC32  4 bytes   CRC32 of the decompressed data (present when the check type is CRC32)

Worst-case expansion (every block stored, which the encoder picks whenever nothing else is smaller)::

    len(frame) <= n + 30 + 7 * ceil(n / (BLOCK_MAX - CUT_WINDOW + 1))   (n = input size, n < 2**56)

(30 = 4 magic + 1 version + 1 flags + 8 size varint + 8 count varint + 4 header CRC + 4 content CRC; a
block table entry is at most 1 + 3 + 3 bytes, and every block but the last holds more than
BLOCK_MAX - CUT_WINDOW bytes.  The 32-byte model id is not in the bound because the encoder only uses
the word model when the first word-model block saves more than 32 bytes over its alternative.)  For
1 MB of random bytes the bound is n + 37; the actual frame is n + 25 (one stored block).  See :func:`max_compressed_size`.
"""
from __future__ import annotations

import lzma
import zlib
from collections import namedtuple

from ._errors import NLMError

MAGIC = b"\xb1NLM"
FORMAT_VERSION = 1
CHECK_NONE = 0
CHECK_CRC32 = 1
_CHECKS = (CHECK_NONE, CHECK_CRC32)

FLAG_ADAPT = 0x01
FLAG_CHECK_SHIFT = 1
FLAG_CHECK_MASK = 0x06
FLAG_NO_MODEL = 0x08
_FLAG_KNOWN = FLAG_ADAPT | FLAG_CHECK_MASK | FLAG_NO_MODEL

BLOCK_STORED, BLOCK_LZMA, BLOCK_MODEL = 0, 1, 2
BLOCK_KINDS = {BLOCK_STORED: "stored", BLOCK_LZMA: "lzma", BLOCK_MODEL: "model"}

BLOCK_MAX = 1 << 20          # encoder block size; also the decoder's limit for word-model blocks
CUT_WINDOW = 4096            # a block is cut after the last newline (else space) in its final 4 KiB
MAX_VARINT_BYTES = 9
MAX_SIZE = (1 << 63) - 1
MODEL_ID_SIZE = 32
LZMA_DICT_MIN = 1 << 12
LZMA_DICT_MAX = 1 << 26
BINARY_SKIP_FRACTION = 16    # skip the word model when more than 1/16 of a block's bytes are binary

FrameInfo = namedtuple("FrameInfo", "format_version adapt check model_id decompressed_size blocks")
FrameInfo.__doc__ = """Header of one frame (see get_frame_info).  model_id is None when no block uses the
word model; blocks is a tuple of BlockInfo."""
BlockInfo = namedtuple("BlockInfo", "kind size compressed_size")
BlockInfo.__doc__ = "One block table entry: kind ('stored', 'lzma' or 'model'), original and payload size."

# bytes that count as text for the binary heuristic: everything but the C0 controls (except the
# whitespace controls) and DEL.
_BINARY_BYTES = bytes([b for b in range(32) if b not in (9, 10, 11, 12, 13)] + [127])
_TEXT_BYTES = bytes(b for b in range(256) if b not in _BINARY_BYTES)


def max_compressed_size(n: int) -> int:
    """Upper bound on the size of the frame written for an input of n bytes (documented bound)."""
    per = BLOCK_MAX - CUT_WINDOW + 1
    return n + 30 + 7 * (-(-n // per))


# ---------------------------------------------------------------------------------------------- varints
def _varint(v: int) -> bytes:
    if v < 0 or v > MAX_SIZE:
        raise ValueError("varint out of range")
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class _Incomplete(Exception):
    """More input is needed (internal: becomes 'truncated' when the input is complete)."""


def _read_varint(buf, pos: int, what: str):
    v = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            raise _Incomplete
        b = buf[pos + i]
        v |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if b == 0 and i > 0:
                raise NLMError(f"corrupt frame header: non-canonical varint in the {what}")
            return v, pos + i + 1
    raise NLMError(f"corrupt frame header: varint too long in the {what}")


# ---------------------------------------------------------------------------------------------- lzma
def lzma_dict_size(size: int) -> int:
    """Dictionary size of an lzma block of `size` original bytes: the next power of two, 4 KiB..64 MiB."""
    d = LZMA_DICT_MIN
    while d < size and d < LZMA_DICT_MAX:
        d <<= 1
    return d


def _lzma_compress(data: bytes, preset: int) -> bytes:
    filters = [{"id": lzma.FILTER_LZMA2, "preset": preset, "dict_size": lzma_dict_size(len(data))}]
    return lzma.compress(data, format=lzma.FORMAT_RAW, filters=filters)


def _lzma_decompress(payload, size: int, index: int) -> bytes:
    filters = [{"id": lzma.FILTER_LZMA2, "dict_size": lzma_dict_size(size)}]
    d = lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=filters)
    try:
        out = d.decompress(payload, max_length=size)
        if not d.eof and len(out) == size:
            extra = d.decompress(b"", max_length=1)   # the end marker may still be pending
            if extra:
                out += extra
    except lzma.LZMAError as e:
        raise NLMError(f"corrupt lzma block {index}: {e}") from None
    if len(out) != size:
        raise NLMError(f"corrupt lzma block {index}: decodes to {'more' if len(out) > size else 'fewer'} "
                       f"bytes than its declared size {size}")
    if not d.eof:
        raise NLMError(f"corrupt lzma block {index}: stream does not end where the block ends")
    if d.unused_data:
        raise NLMError(f"corrupt lzma block {index}: {len(d.unused_data)} bytes after the end of the stream")
    return out


# ---------------------------------------------------------------------------------------------- encoder
# Encoder speed heuristic (does not change the format): see FrameEncoder._probe_says_model.
PROBE_SIZE = 32 * 1024
PROBE_RATIO = 1.25


def cut_point(buf) -> int:
    """Length of the next block, given more than BLOCK_MAX pending bytes."""
    lo = BLOCK_MAX - CUT_WINDOW
    i = buf.rfind(b"\n", lo, BLOCK_MAX)
    if i < 0:
        i = buf.rfind(b" ", lo, BLOCK_MAX)
    return i + 1 if i >= 0 else BLOCK_MAX


def _looks_binary(block) -> bool:
    n_bin = len(block) - len(bytes(block).translate(None, _BINARY_BYTES))
    return n_bin * BINARY_SKIP_FRACTION > len(block)


class FrameEncoder:
    """Writes one frame.  codec: a _core.Codec (or None: stored/lzma only); model_id: its 32-byte id.

    Input is split into blocks as it arrives (the split depends only on the whole input, never on how it
    was chunked); the frame is emitted by finish(), because the header carries the block table.
    """

    def __init__(self, codec, model_id, adapt: bool, check: int):
        if check not in _CHECKS:
            raise ValueError(f"check must be CHECK_NONE or CHECK_CRC32, not {check!r}")
        if codec is not None and (not isinstance(model_id, bytes) or len(model_id) != MODEL_ID_SIZE):
            raise ValueError("model_id must be 32 bytes")
        self._codec = codec
        self._model_id = model_id
        self._adapt = bool(adapt)
        self._check = check
        self._pending = bytearray()
        self._blocks = []            # (type, size, payload)
        self._raw = []               # the input blocks (for the whole-input lzma alternative in finish)
        self._size = 0
        self._crc = 0
        self._used_model = False
        self._done = False
        if codec is not None:
            codec.reset()

    def feed(self, data) -> None:
        if self._done:
            raise ValueError("the frame is already finished")
        mv = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        if not len(mv):
            return
        self._pending += mv
        self._size += len(mv)
        if self._size > MAX_SIZE:
            raise OverflowError("input too large for one frame")
        self._crc = zlib.crc32(mv, self._crc)
        while len(self._pending) > BLOCK_MAX:
            k = cut_point(self._pending)
            block = bytes(self._pending[:k])
            del self._pending[:k]
            self._encode_block(block)

    def _encode_block(self, block: bytes) -> None:
        n = len(block)
        best = (n, BLOCK_STORED, block)
        model_payload = None
        codec = self._codec
        if codec is not None and not _looks_binary(block) and self._probe_says_model(block):
            codec.save()
            try:
                model_payload = codec.encode_block(block)
            except NLMError:
                model_payload = None
        if model_payload is None or len(model_payload) * 5 > 4 * len(_lzma_compress(block, 1)):
            lz = _lzma_compress(block, 9 | lzma.PRESET_EXTREME)
            if len(lz) < n:
                best = (len(lz), BLOCK_LZMA, lz)
        # The word model wins only when strictly smaller, counting the 32-byte model id for the first
        # word-model block of the frame (so short inputs do not pay for a model id they do not need).
        penalty = 0 if self._used_model else MODEL_ID_SIZE
        if model_payload is not None and len(model_payload) <= n and len(model_payload) + penalty < best[0]:
            best = (len(model_payload), BLOCK_MODEL, model_payload)
        if codec is not None and model_payload is not None and best[1] != BLOCK_MODEL:
            codec.restore()          # the decoder never runs the model on this block
        if best[1] == BLOCK_MODEL:
            self._used_model = True
        self._raw.append(block)
        self._blocks.append((best[1], n, best[2]))

    def _probe_says_model(self, block: bytes) -> bool:
        """Speed only (never correctness): on a block much larger than PROBE_SIZE, code its first
        PROBE_SIZE bytes with the word model (then roll the state back) and skip the model for the whole
        block when the probe is over PROBE_RATIO times the size lzma preset 1 gets on the same bytes.
        XML, logs, source code and non-English text are then not coded twice at word-model speed."""
        if len(block) < 8 * PROBE_SIZE:
            return True
        k = block.rfind(b"\n", 0, PROBE_SIZE) + 1 or PROBE_SIZE
        probe = block[:k]
        codec = self._codec
        codec.save()
        try:
            n_model = len(codec.encode_block(probe))
        except NLMError:
            return False
        finally:
            codec.restore()
        return n_model <= PROBE_RATIO * len(_lzma_compress(probe, 1))

    def finish(self) -> bytes:
        if self._done:
            raise ValueError("the frame is already finished")
        if self._pending:
            self._encode_block(bytes(self._pending))
            self._pending = bytearray()
        self._done = True
        blocks = self._blocks
        # Several blocks, and not all of them word-model blocks: lzma over the whole input keeps the
        # context across block boundaries, so it can beat the per-block choice.  Keep the smaller frame
        # (then without a model id: the decoder runs no model at all).
        if len(blocks) > 1 and any(t != BLOCK_MODEL for t, _, _ in blocks):
            whole = b"".join(self._raw)
            lz = _lzma_compress(whole, 9 | lzma.PRESET_EXTREME)
            cur = sum(len(p) + 7 for _, _, p in blocks) + (MODEL_ID_SIZE if self._used_model else 0)
            if len(lz) < len(whole) and len(lz) + 7 < cur:
                blocks = [(BLOCK_LZMA, len(whole), lz)]
                self._used_model = False
        self._raw = None
        flags = (FLAG_ADAPT if self._adapt else 0) | (self._check << FLAG_CHECK_SHIFT)
        hdr = bytearray(MAGIC)
        hdr.append(FORMAT_VERSION)
        if self._used_model:
            hdr.append(flags)
            hdr += self._model_id
        else:
            hdr.append(flags | FLAG_NO_MODEL)
        hdr += _varint(self._size)
        hdr += _varint(len(blocks))
        for t, size, payload in blocks:
            hdr.append(t)
            hdr += _varint(size)
            hdr += _varint(len(payload))
        hdr += zlib.crc32(hdr).to_bytes(4, "little")
        out = [bytes(hdr)]
        out += [p for _, _, p in blocks]
        if self._check == CHECK_CRC32:
            out.append(self._crc.to_bytes(4, "little"))
        self._blocks = []
        return b"".join(out)


# ---------------------------------------------------------------------------------------------- decoder
class _HeaderParser:
    """Resumable parser of one frame header: parse(buf) returns (FrameInfo, table, header length) or raises
    _Incomplete (feed more bytes and call again) or NLMError."""

    def __init__(self):
        self.pos = 0
        self.stage = 0
        self.flags = 0
        self.model_id = None
        self.size = 0
        self.count = 0
        self.table = []
        self.total = 0

    def parse(self, buf):
        if self.stage == 0:
            k = min(len(buf), len(MAGIC))
            if bytes(buf[:k]) != MAGIC[:k]:
                raise NLMError("not an nlmcodec frame (bad magic)")
            if len(buf) < 6:
                raise _Incomplete
            if buf[4] != FORMAT_VERSION:
                raise NLMError(f"unsupported format version {buf[4]} (this build reads version {FORMAT_VERSION})")
            flags = buf[5]
            if flags & ~_FLAG_KNOWN:
                raise NLMError(f"corrupt frame header: unknown flags 0x{flags:02x}")
            check = (flags & FLAG_CHECK_MASK) >> FLAG_CHECK_SHIFT
            if check not in _CHECKS:
                raise NLMError(f"corrupt frame header: unknown check type {check}")
            self.flags = flags
            self.pos = 6
            self.stage = 1
        if self.stage == 1:
            if not self.flags & FLAG_NO_MODEL:
                if len(buf) < self.pos + MODEL_ID_SIZE:
                    raise _Incomplete
                self.model_id = bytes(buf[self.pos:self.pos + MODEL_ID_SIZE])
                self.pos += MODEL_ID_SIZE
            self.stage = 2
        if self.stage == 2:
            size, p = _read_varint(buf, self.pos, "original size")
            count, p = _read_varint(buf, p, "block count")
            if count > size:
                raise NLMError(f"corrupt frame header: {count} blocks for {size} bytes")
            self.size, self.count, self.pos = size, count, p
            self.stage = 3
        if self.stage == 3:
            while len(self.table) < self.count:
                i = len(self.table)
                if self.pos >= len(buf):
                    raise _Incomplete
                t = buf[self.pos]
                if t not in BLOCK_KINDS:
                    raise NLMError(f"corrupt frame header: block {i} has unknown type {t}")
                size, p = _read_varint(buf, self.pos + 1, "block table")
                psize, p = _read_varint(buf, p, "block table")
                if size == 0:
                    raise NLMError(f"corrupt frame header: block {i} is empty")
                if self.total + size > self.size:
                    raise NLMError("corrupt frame header: block sizes exceed the original size")
                if t == BLOCK_STORED and psize != size:
                    raise NLMError(f"corrupt frame header: stored block {i} has payload size {psize} != {size}")
                if psize > size:
                    raise NLMError(f"corrupt frame header: block {i} payload larger than its data")
                if t == BLOCK_MODEL:
                    if self.model_id is None:
                        raise NLMError(f"corrupt frame header: word-model block {i} in a frame without a model")
                    if size > BLOCK_MAX:
                        raise NLMError(f"corrupt frame header: word-model block {i} larger than {BLOCK_MAX}")
                self.table.append((t, size, psize))
                self.total += size
                self.pos = p
            if self.total != self.size:
                raise NLMError("corrupt frame header: block sizes do not add up to the original size")
            if self.model_id is not None and not any(t == BLOCK_MODEL for t, _, _ in self.table):
                raise NLMError("corrupt frame header: model id present but no word-model block")
            self.stage = 4
        if self.stage == 4:
            if len(buf) < self.pos + 4:
                raise _Incomplete
            want = int.from_bytes(buf[self.pos:self.pos + 4], "little")
            if zlib.crc32(bytes(buf[:self.pos])) != want:
                raise NLMError("corrupt frame header: header checksum mismatch")
            self.pos += 4
            self.stage = 5
        flags = self.flags
        info = FrameInfo(FORMAT_VERSION, bool(flags & FLAG_ADAPT), (flags & FLAG_CHECK_MASK) >> FLAG_CHECK_SHIFT,
                         self.model_id, self.size,
                         tuple(BlockInfo(BLOCK_KINDS[t], s, p) for t, s, p in self.table))
        return info, self.table, self.pos


def get_frame_info(data) -> FrameInfo:
    """Parse and check the header of the first frame in data (no decoding, no model needed)."""
    p = _HeaderParser()
    try:
        return p.parse(memoryview(data).cast("B"))[0]
    except _Incomplete:
        raise NLMError("truncated frame: the data ends inside the frame header") from None


class FrameDecoder:
    """Decodes one frame incrementally.

    get_codec(model_id, adapt) -> codec is called once the header is read when the frame needs the word
    model (it raises NLMError for a missing or mismatched model); release_codec(codec) when done.
    feed(data) appends input and returns whatever output can be produced; eof is True after the content
    check; unused_data holds the bytes after the frame.  complete=True on feed() means no more input will
    come, so a frame that cannot finish is reported as truncated right away.
    """

    def __init__(self, get_codec, release_codec=None):
        self._get_codec = get_codec
        self._release_codec = release_codec
        self._buf = bytearray()
        self._parser = _HeaderParser()
        self.info = None
        self._table = None
        self._i = 0
        self._crc = 0
        self._codec = None
        self.eof = False
        self.unused_data = b""

    def feed(self, data, complete: bool = False) -> bytes:
        if self.eof:
            raise EOFError("end of frame already reached")
        self._buf += data
        out = []
        try:
            self._run(out, complete)
        except BaseException:
            self._close()
            raise
        return b"".join(out)

    def _run(self, out, complete):
        buf = self._buf
        if self.info is None:
            try:
                info, table, hlen = self._parser.parse(buf)
            except _Incomplete:
                if complete:
                    raise NLMError("truncated frame: the data ends inside the frame header") from None
                return
            need = hlen + sum(p for _, _, p in table) + (4 if info.check == CHECK_CRC32 else 0)
            if complete and len(buf) < need:
                raise NLMError(f"truncated frame: {need - len(buf)} bytes missing "
                               f"(compressed data ended before the end of the frame)")
            if info.model_id is not None:
                self._codec = self._get_codec(info.model_id, info.adapt)
                self._codec.reset()
            del buf[:hlen]
            self.info, self._table = info, table
        while self._i < len(self._table):
            t, size, psize = self._table[self._i]
            if len(buf) < psize:
                if complete:
                    raise NLMError("truncated frame: compressed data ended inside a block")
                return
            payload = bytes(buf[:psize])
            del buf[:psize]
            if t == BLOCK_STORED:
                data = payload
            elif t == BLOCK_LZMA:
                data = _lzma_decompress(payload, size, self._i)
            else:
                try:
                    data = self._codec.decode_block(payload, size)
                except NLMError as e:
                    raise NLMError(f"corrupt word-model block {self._i}: {e}") from None
                if len(data) != size:
                    raise NLMError(f"corrupt word-model block {self._i}: decodes to the wrong size")
            self._crc = zlib.crc32(data, self._crc)
            out.append(data)
            self._i += 1
        if self.info.check == CHECK_CRC32:
            if len(buf) < 4:
                if complete:
                    raise NLMError("truncated frame: compressed data ended before the checksum")
                return
            want = int.from_bytes(buf[:4], "little")
            del buf[:4]
            if want != self._crc:
                raise NLMError("CRC32 mismatch: the decompressed data is corrupt")
        self.eof = True
        self.unused_data = bytes(buf)
        self._buf = bytearray()
        self._close()

    def _close(self):
        if self._codec is not None and self._release_codec is not None:
            self._release_codec(self._codec)
        self._codec = None
