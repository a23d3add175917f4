"""The nlmcodec frame layout (docs/format.md §7): constants, varints, the lzma block codec, the frame header,
block header and trailer serialisers and parsers, frame inspection (get_frame_info, list_frames) and the output
bound (declared_size).  Policy lives elsewhere: what the encoder chooses is _encode.py, how a decoder walks a
frame is _decode.py, what a format and mode mean to a word-model block is the C core's table
(csrc/codec/formats.h, reached through _core.Codec.reset).

The frame (all fixed-width integers little-endian; "varint" = unsigned LEB128, canonical, <= 9 bytes)::

    header    magic B1 4E 4C 4D | version | flags | [model id, 32 bytes] | header CRC32 (4)
              flags: bit 0 adapt, bits 1-2 check (0 none, 1 CRC32), bit 3 model id present, bit 4 heads mode
              (with bit 0), bits 5-7 zero
    block*    type (1) | size varint | payload size varint | payload | [block CRC32 (4): model blocks]
              type: bits 0-1 kind (0 stored, 1 lzma, 2 word model, 3 byte model), bit 2 group start,
              bits 3-7 zero, or (formats 15 on, a group start) the size class 10..23 of the byte-model run of a
              tracked group, which learns every byte of the group (format 17: its word-model blocks start with a
              route byte, and lines of them may be coded by the run, §3.8)
              word-model blocks: at most 64 KiB of output, byte-model blocks at most 256 KiB; both are
              followed by the CRC32 of their output
    end       0x80
    index     group count varint | per group { size varint, coded bytes varint } | total size varint
              | [content CRC32 (4), when check = CRC32] | index CRC32 (4) of every index byte from 0x80 on
    footer    backward size (4): bytes from 0x80 to the end of the index CRC | B1 4E ("\\xb1N")

A group is a run of blocks that starts with a group-start block; the word model's state is reset to
the trained state at every group start and carried across the group's word-model blocks, so groups
are independent (coded in parallel, seekable through the index).

Format policy (docs/format.md): every released format decodes forever; a new format is added beside the
frozen ones (a row of csrc/codec/formats.h, its own vectors), never by editing one.  Format 13 is the 1.0
format; format 14 is format 13 with the gap mixer (docs/format.md §3.7); format 15 is format 14 with tracked
groups (§7.2), written in one pass (§7.4); format 16 is format 15 with byte model 2 (§9.7); format 17 (format 16
with the line route in tracked groups, §3.8) is written; all five are read.  Frames of
formats 1-12 are refused with a message naming the release that reads them.
"""
from __future__ import annotations

import io
import lzma
import zlib
from collections import namedtuple

from ._backend import native
from ._errors import NLMError

MAGIC = b"\xb1NLM"
FOOTER_MAGIC = b"\xb1N"
FORMAT_VERSION = native.FORMAT_VERSION                       # what this build writes (nlm.h)
READ_VERSIONS = tuple(range(native.FORMAT_OLDEST, FORMAT_VERSION + 1))   # what it reads
RETIRED_VERSIONS = range(1, 13)  # formats of the 0.1 series, read by nlmcodec 0.1.0 only
RETIRED_READER = "0.1.0"
CHECK_NONE = 0
CHECK_CRC32 = 1
_CHECKS = (CHECK_NONE, CHECK_CRC32)

FLAG_ADAPT = 0x01
FLAG_CHECK_SHIFT = 1
FLAG_CHECK_MASK = 0x06
FLAG_MODEL = 0x08             # a model id follows the flags
FLAG_HEADS = 0x10             # with FLAG_ADAPT: heads mode, only the heads adapt (docs/format.md §6.5)
_FLAG_KNOWN = FLAG_ADAPT | FLAG_CHECK_MASK | FLAG_MODEL
HEADS = "heads"               # the adapt value of heads mode (adapt_mode)
DEFAULT_ADAPT = HEADS         # the mode of compress() and the CLI when none is asked for
                              # (docs/decisions/default-mode.md)


def routes(version: int) -> bool:
    """Whether format version's tracked groups route lines (§3.8): the C core's table says (csrc/codec/formats.h,
    nlm_format_routes).  version is one this build reads."""
    r = native.format_routes(version)
    if r < 0:
        raise ValueError(f"format {version} is not one this build reads")
    return r == 1


def adapt_mode(adapt):
    """The one spelling of a coding mode: False (static), True (dynamic: every part adapts, §6.3-§6.4) or
    HEADS ("heads": dynamic, the output heads only, over the integer transition, §6.5).  Accepts bools and
    "static", "dynamic", "heads"; ValueError otherwise."""
    if adapt is True or adapt is False:
        return adapt
    m = {"static": False, "dynamic": True, HEADS: HEADS}.get(adapt) if isinstance(adapt, str) else None
    if m is None:
        raise ValueError(f"adapt must be True, False, 'static', 'dynamic' or 'heads', not {adapt!r}")
    return m


BLOCK_STORED, BLOCK_LZMA, BLOCK_MODEL, BLOCK_BYTE = 0, 1, 2, 3
BLOCK_KINDS = {BLOCK_STORED: "stored", BLOCK_LZMA: "lzma", BLOCK_MODEL: "model", BLOCK_BYTE: "byte"}
MAX_MODEL_TOKENS = native.MAX_BLOCK_TOKENS   # tokens of one word-model block, END included (§3.5)

TYPE_KIND_MASK = 0x03
TYPE_GROUP_START = 0x04
TYPE_TRACK_SHIFT = 3          # formats 15 on: bits 3-7 of a group start = its tracked run's size class, or 0
TRACK_MIN, TRACK_MAX = 10, 23  # the byte model's size classes (docs/format.md §9.1)
TRACK_VERSION = 15            # the first format with tracked groups
END_MARKER = 0x80

MODEL_ID_SIZE = 32
MAX_VARINT_BYTES = 9
MAX_SIZE = (1 << 63) - 1
HEADER_SIZE = 4 + 1 + 1 + 4             # without the model id
FOOTER_SIZE = 4 + len(FOOTER_MAGIC)

# Decoder limits (what any valid frame respects; the encoder's choices are in _encode.py).
MAX_STORED_BLOCK = 1 << 20    # stored blocks: at most 1 MiB each
MAX_MODEL_BLOCK = 1 << 16     # word-model blocks: at most 64 KiB (the encoder's block size), so a forged block
                              # costs at most 64 KiB of decoding before its CRC fails
MAX_BYTE_BLOCK = 1 << 18      # byte-model blocks: at most 256 KiB (a forged one: 256 KiB of work)
BLOCK_CHECK_SIZE = 4          # CRC32 of a model block's output, after its payload
MAX_LZMA_BLOCK = 1 << 26      # lzma blocks: at most 64 MiB (decoded incrementally)

LZMA_DICT_MIN = 1 << 12
LZMA_DICT_MAX = 1 << 26

FrameInfo = namedtuple("FrameInfo", "format_version adapt check model_id decompressed_size blocks groups",
                       defaults=(None,))
FrameInfo.__doc__ = """One frame (see get_frame_info).  adapt: False (static), True (dynamic) or "heads" (heads
mode); model_id is None when the frame names no model; blocks is a tuple of BlockInfo; groups a tuple of
GroupInfo."""
BlockInfo = namedtuple("BlockInfo", "kind size compressed_size")
BlockInfo.__doc__ = "One block: kind ('stored', 'lzma' or 'model'), original and payload size."
GroupInfo = namedtuple("GroupInfo", "size coded_size")
GroupInfo.__doc__ = "One index entry: original bytes of the group and bytes of its blocks in the frame."


class Incomplete(Exception):
    """More input is needed (internal: becomes 'truncated' when the input is complete)."""


# ---------------------------------------------------------------------------------------------- varints
def varint(v: int) -> bytes:
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


def read_varint(buf, pos: int, what: str):
    """(value, next position) of the varint at buf[pos]; Incomplete if buf ends inside it."""
    v = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            raise Incomplete
        b = buf[pos + i]
        v |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if b == 0 and i > 0:
                raise NLMError(f"corrupt frame: non-canonical varint in the {what}")
            return v, pos + i + 1
    raise NLMError(f"corrupt frame: varint too long in the {what}")


def crc32(data, value: int = 0) -> int:
    return zlib.crc32(data, value)


# ---------------------------------------------------------------------------------------------- lzma
def lzma_dict_size(size: int) -> int:
    """Dictionary size of an lzma block of `size` original bytes: the next power of two, 4 KiB..64 MiB."""
    d = LZMA_DICT_MIN
    while d < size and d < LZMA_DICT_MAX:
        d <<= 1
    return d


def lzma_filters(size: int, preset: int) -> list:
    """The filter chain of an lzma block of `size` original bytes (and of the encoder's lzma yardsticks)."""
    return [{"id": lzma.FILTER_LZMA2, "preset": preset, "dict_size": lzma_dict_size(size)}]


def lzma_compress(data, preset: int) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_RAW, filters=lzma_filters(len(data), preset))


class LzmaBlockReader:
    """Decodes one lzma block (a raw LZMA2 stream of exactly `size` bytes) in pieces of at most `chunk`."""

    def __init__(self, payload, size: int, index: int):
        self._d = lzma.LZMADecompressor(format=lzma.FORMAT_RAW,
                                        filters=[{"id": lzma.FILTER_LZMA2, "dict_size": lzma_dict_size(size)}])
        self._payload = payload
        self._left = size
        self._index = index

    @property
    def done(self) -> bool:
        return self._left == 0

    def read(self, chunk: int) -> bytes:
        d, i = self._d, self._index
        try:
            out = d.decompress(self._payload, max_length=min(chunk, self._left))
            self._payload = b""
            self._left -= len(out)
            if self._left == 0 and not d.eof:
                if d.decompress(b"", max_length=1):
                    raise NLMError(f"corrupt lzma block {i}: decodes to more bytes than its declared size")
        except lzma.LZMAError as e:
            raise NLMError(f"corrupt lzma block {i}: {e}") from None
        if self._left and (not out or d.eof):      # the stream ended (or stalled) before the declared size
            raise NLMError(f"corrupt lzma block {i}: decodes to fewer bytes than its declared size")
        if self._left == 0:
            if not d.eof:
                raise NLMError(f"corrupt lzma block {i}: stream does not end where the block ends")
            if d.unused_data:
                raise NLMError(f"corrupt lzma block {i}: {len(d.unused_data)} bytes after the end of the stream")
        return out


def lzma_decompress(payload, size: int, index: int) -> bytes:
    r = LzmaBlockReader(payload, size, index)
    return r.read(size) if size else b""


# ---------------------------------------------------------------------------------------------- header, blocks, trailer
def header(adapt, check: int, model_id, version: int = FORMAT_VERSION) -> bytes:
    """Frame header.  adapt: adapt_mode's values."""
    flags = (FLAG_ADAPT if adapt else 0) | (check << FLAG_CHECK_SHIFT) | (FLAG_MODEL if model_id else 0) | \
        (FLAG_HEADS if adapt == HEADS else 0)
    h = bytearray(MAGIC)
    h.append(version)
    h.append(flags)
    if model_id:
        h += model_id
    h += crc32(h).to_bytes(4, "little")
    return bytes(h)


def block_header(kind: int, group_start: bool, size: int, payload_size: int, track: int = 0) -> bytes:
    """track: the size class of a tracked group's byte-model run (formats 15 on, group starts only), else 0."""
    assert not track or group_start and TRACK_MIN <= track <= TRACK_MAX
    t = kind | (TYPE_GROUP_START if group_start else 0) | track << TYPE_TRACK_SHIFT
    return bytes([t]) + varint(size) + varint(payload_size)


def trailer(groups, total: int, check: int, content_crc: int) -> bytes:
    """End marker, index, checks and footer.  groups: [(size, coded bytes)]."""
    t = bytearray([END_MARKER])
    t += varint(len(groups))
    for size, coded in groups:
        t += varint(size)
        t += varint(coded)
    t += varint(total)
    if check == CHECK_CRC32:
        t += content_crc.to_bytes(4, "little")
    t += crc32(t).to_bytes(4, "little")
    return bytes(t) + len(t).to_bytes(4, "little") + FOOTER_MAGIC


def parse_start(buf):
    """(version, flags) of the frame starting at buf[0]; Incomplete or NLMError."""
    k = min(len(buf), len(MAGIC))
    if bytes(buf[:k]) != MAGIC[:k]:
        raise NLMError("not an nlmcodec frame (bad magic)")
    if len(buf) < 6:
        raise Incomplete
    v = buf[4]
    if v not in READ_VERSIONS:
        if v in RETIRED_VERSIONS:
            raise NLMError(f"format version {v} is retired: nlmcodec {RETIRED_READER} reads it "
                           f"(pip install nlmcodec=={RETIRED_READER}); this build reads version "
                           f"{', '.join(map(str, READ_VERSIONS))}")
        if v > FORMAT_VERSION:
            raise NLMError(f"unsupported format version {v}: written by a newer nlmcodec "
                           f"(this build reads versions {', '.join(map(str, READ_VERSIONS))})")
        raise NLMError(f"unsupported format version {v} (this build reads versions "
                       f"{', '.join(map(str, READ_VERSIONS))})")
    return v, buf[5]


def parse_header(buf):
    """(adapt, check, model_id, header length) of the frame header at buf[0]; adapt is adapt_mode's False,
    True or HEADS."""
    version, flags = parse_start(buf)
    known = _FLAG_KNOWN | (FLAG_HEADS if flags & FLAG_ADAPT else 0)
    if flags & ~known:
        raise NLMError(f"corrupt frame header: unknown flags 0x{flags:02x}")
    check = (flags & FLAG_CHECK_MASK) >> FLAG_CHECK_SHIFT
    if check not in _CHECKS:
        raise NLMError(f"corrupt frame header: unknown check type {check}")
    n = 6 + (MODEL_ID_SIZE if flags & FLAG_MODEL else 0)
    if len(buf) < n + 4:
        raise Incomplete
    if crc32(bytes(buf[:n])) != int.from_bytes(buf[n:n + 4], "little"):
        raise NLMError("corrupt frame header: header checksum mismatch")
    model_id = bytes(buf[6:n]) if flags & FLAG_MODEL else None
    return (HEADS if flags & FLAG_HEADS else bool(flags & FLAG_ADAPT)), check, model_id, n + 4


def block_check_size(kind: int) -> int:
    """Bytes of block check after the payload: 4 (CRC32) for word-model and byte-model blocks, else 0."""
    return BLOCK_CHECK_SIZE if kind in (BLOCK_MODEL, BLOCK_BYTE) else 0


def parse_block_header(buf, pos: int, index: int, version: int):
    """(kind, start, size, payload size, position of the payload) of the block header at buf[pos] of a frame
    of format `version`, or None for the end marker; Incomplete if buf ends inside it.  start: 0 (not a
    group start), 1 (a group start) or, at the start of a tracked group (formats 15 on), the size class of its
    byte-model run (TRACK_MIN..TRACK_MAX)."""
    if pos >= len(buf):
        raise Incomplete
    t = buf[pos]
    if t == END_MARKER:
        return None
    kind = t & TYPE_KIND_MASK
    track = t >> TYPE_TRACK_SHIFT
    if track and not (version >= TRACK_VERSION and t & TYPE_GROUP_START and TRACK_MIN <= track <= TRACK_MAX):
        raise NLMError(f"corrupt frame: block {index} has unknown type 0x{t:02x}")
    size, p = read_varint(buf, pos + 1, "block header")
    psize, p = read_varint(buf, p, "block header")
    if size == 0:
        raise NLMError(f"corrupt frame: block {index} is empty")
    if psize > size:
        raise NLMError(f"corrupt frame: block {index} payload larger than its data")
    if kind == BLOCK_STORED and psize != size:
        raise NLMError(f"corrupt frame: stored block {index} has payload size {psize} != {size}")
    if kind == BLOCK_BYTE and psize < 2:
        raise NLMError(f"corrupt frame: byte-model block {index} has a payload of {psize} bytes")
    limit = MAX_LZMA_BLOCK if kind == BLOCK_LZMA else MAX_STORED_BLOCK if kind == BLOCK_STORED else \
        MAX_BYTE_BLOCK if kind == BLOCK_BYTE else MAX_MODEL_BLOCK
    if size > limit:
        raise NLMError(f"corrupt frame: {BLOCK_KINDS[kind]} block {index} larger than {limit} bytes")
    return kind, (track or 1) if t & TYPE_GROUP_START else 0, size, psize, p


def parse_trailer(buf, pos: int, check: int):
    """Parse the index, checks and footer starting at the end marker buf[pos].
    Returns (groups, total size, content CRC or None, position after the footer)."""
    start = pos
    count, p = read_varint(buf, pos + 1, "index")
    groups = []
    for _ in range(count):
        if p >= len(buf):
            raise Incomplete
        size, p = read_varint(buf, p, "index")
        coded, p = read_varint(buf, p, "index")
        groups.append((size, coded))
    total, p = read_varint(buf, p, "index")
    content = None
    if check == CHECK_CRC32:
        if len(buf) < p + 4:
            raise Incomplete
        content = int.from_bytes(buf[p:p + 4], "little")
        p += 4
    if len(buf) < p + 4 + FOOTER_SIZE:
        raise Incomplete
    if crc32(bytes(buf[start:p])) != int.from_bytes(buf[p:p + 4], "little"):
        raise NLMError("corrupt frame trailer: index checksum mismatch")
    p += 4
    if int.from_bytes(buf[p:p + 4], "little") != p - start or bytes(buf[p + 4:p + FOOTER_SIZE]) != FOOTER_MAGIC:
        raise NLMError("corrupt frame trailer: bad footer")
    return groups, total, content, p + FOOTER_SIZE


# ---------------------------------------------------------------------------------------------- inspection
def scan_frame(buf):
    """(FrameInfo, frame length) of the complete frame at the start of buf, from its headers and index
    alone (nothing is decoded, no model is needed).  Raises NLMError for a truncated or corrupt frame."""
    try:
        version, _ = parse_start(buf)
        adapt, check, model_id, p = parse_header(buf)
        blocks, seen, i = [], [], 0
        while True:
            hdr = parse_block_header(buf, p, i, version)
            if hdr is None:
                break
            kind, start, size, psize, q = hdr
            if i == 0 and not start:
                raise NLMError("corrupt frame: the first block does not start a group")
            if kind == BLOCK_MODEL and model_id is None:
                raise NLMError(f"corrupt frame: word-model block {i} in a frame without a model id")
            if start:
                seen.append([0, 0])
            tail = psize + block_check_size(kind)
            seen[-1][0] += size
            seen[-1][1] += q - p + tail
            blocks.append(BlockInfo(BLOCK_KINDS[kind], size, psize))
            p = q + tail
            i += 1
        if len(buf) < p:
            raise Incomplete
        groups, total, _, end = parse_trailer(buf, p, check)
        check_index(groups, total, seen)
        return FrameInfo(version, adapt, check, model_id, total, tuple(blocks),
                         tuple(GroupInfo(s, c) for s, c in groups)), end
    except Incomplete:
        raise NLMError("truncated frame: the data ends before the end of the frame") from None


def check_index(groups, total, seen):
    """The index must describe exactly the groups the decoder walked through."""
    if [tuple(g) for g in seen] != [tuple(g) for g in groups]:
        raise NLMError("corrupt frame trailer: the index does not match the blocks")
    if total != sum(s for s, _ in groups):
        raise NLMError("corrupt frame trailer: the total size does not match the index")


def get_frame_info(data) -> FrameInfo:
    """FrameInfo of the first frame in data, which must hold the whole frame (its sizes are in the block
    headers and the trailer)."""
    buf = memoryview(data).cast("B")
    try:
        parse_start(buf)
    except Incomplete:
        raise NLMError("truncated frame: the data ends inside the frame header") from None
    return scan_frame(buf)[0]


def list_frames(f):
    """[(FrameInfo, frame length)] of every frame in a binary file object (read from its current position
    to the end; each frame is read from its headers and index, in pieces, never decoded).  Trailing bytes
    that are not a frame raise NLMError."""
    out = []
    base = f.tell()
    end = f.seek(0, io.SEEK_END)
    pos = base
    while pos < end:
        f.seek(pos)
        head = f.read(HEADER_SIZE + MODEL_ID_SIZE)
        try:
            parse_start(head)
        except Incomplete:
            raise NLMError("truncated frame: the data ends inside the frame header") from None
        info, n = _scan_file(f, pos)
        out.append((info, n))
        pos += n
    f.seek(base)
    return out


def _scan_file(f, pos):
    """scan_frame for the frame at offset pos of a seekable file: block headers are read one by one (a few
    bytes each), payloads are skipped."""
    f.seek(pos)
    head = f.read(HEADER_SIZE + MODEL_ID_SIZE)
    try:
        version, _ = parse_start(head)
        adapt, check, model_id, p = parse_header(head)
    except Incomplete:
        raise NLMError("truncated frame: the data ends inside the frame header") from None
    blocks, seen, i = [], [], 0
    cur = pos + p
    while True:
        f.seek(cur)
        h = f.read(1 + 2 * MAX_VARINT_BYTES)
        try:
            hdr = parse_block_header(h, 0, i, version)
        except Incomplete:
            raise NLMError("truncated frame: the data ends inside a block header") from None
        if hdr is None:
            break
        kind, start, size, psize, q = hdr
        if i == 0 and not start:
            raise NLMError("corrupt frame: the first block does not start a group")
        if start:
            seen.append([0, 0])
        tail = psize + block_check_size(kind)
        seen[-1][0] += size
        seen[-1][1] += q + tail
        blocks.append(BlockInfo(BLOCK_KINDS[kind], size, psize))
        cur += q + tail
        i += 1
    f.seek(cur)
    tail = f.read(1 + MAX_VARINT_BYTES * (2 + 2 * len(seen)) + 8 + FOOTER_SIZE)
    try:
        groups, total, _, n = parse_trailer(tail, 0, check)
    except Incomplete:
        raise NLMError("truncated frame: the data ends inside the frame trailer") from None
    check_index(groups, total, seen)
    info = FrameInfo(version, adapt, check, model_id, total, tuple(blocks),
                     tuple(GroupInfo(s, c) for s, c in groups))
    return info, cur + n - pos


def iter_blocks(buf):
    """(kind, group start, size, payload, block CRC or None) of every block of the complete frame at the
    start of buf, from its headers (nothing is decoded)."""
    version, _ = parse_start(buf)
    p, i = parse_header(buf)[3], 0
    while True:
        hdr = parse_block_header(buf, p, i, version)
        if hdr is None:
            return
        kind, start, size, psize, q = hdr
        tail = block_check_size(kind)
        crc = int.from_bytes(buf[q + psize:q + psize + tail], "little") if tail else None
        yield kind, start, size, bytes(buf[q:q + psize]), crc
        p, i = q + psize + tail, i + 1


def same_frame(a, b) -> bool:
    """Two frames are the same coding of the same data up to the liblzma build: equal bytes, or the same
    header, the same blocks (kind, group start, size; stored and word-model blocks byte for byte, lzma
    blocks decoding to the same bytes) and the same data (the index then differs only in coded sizes).
    What tests pin, so that they do not depend on the installed liblzma."""
    if a == b:
        return True
    try:
        if parse_start(a)[0] != parse_start(b)[0] or parse_header(a) != parse_header(b):
            return False
        (ia, na), (ib, nb) = scan_frame(a), scan_frame(b)         # whole, valid frames
        ba, bb = list(iter_blocks(a)), list(iter_blocks(b))
    except (Incomplete, NLMError):
        return False
    if na != len(a) or nb != len(b) or ia.decompressed_size != ib.decompressed_size or \
            [g.size for g in ia.groups] != [g.size for g in ib.groups]:
        return False
    if ia.check == CHECK_CRC32 and a[-14:-10] != b[-14:-10]:     # the content CRC32 (before index CRC, footer)
        return False
    if len(ba) != len(bb):
        return False
    for (ka, sa, za, pa, ca), (kb, sb, zb, pb, cb) in zip(ba, bb):
        if (ka, sa, za, ca) != (kb, sb, zb, cb):
            return False
        if pa != pb and (ka != BLOCK_LZMA or lzma_decompress(pa, za, 0) != lzma_decompress(pb, zb, 0)):
            return False
    return True


def frame_digest(frame) -> tuple:
    """(SHA-256 hex, lzma payload bytes) of a complete frame: the SHA-256 of the frame when it
    has no lzma block, else of the frame with each lzma block's payload replaced by the SHA-256 of what it
    decodes to: what nlmcodec itself produces, independent of the liblzma build."""
    import hashlib

    if not any(k == BLOCK_LZMA for k, *_ in iter_blocks(frame)):
        scan_frame(frame)
        return hashlib.sha256(bytes(frame)).hexdigest(), 0
    h = hashlib.sha256()
    info, n = scan_frame(frame)
    h.update(bytes(frame[:parse_header(frame)[3]]))
    lz = 0
    for kind, start, size, payload, crc in iter_blocks(frame):
        h.update(bytes([kind, start]) + varint(size))
        if kind == BLOCK_LZMA:
            lz += len(payload)
            h.update(hashlib.sha256(lzma_decompress(payload, size, 0)).digest())
        else:
            h.update(varint(len(payload)) + payload + (crc.to_bytes(4, "little") if crc is not None else b""))
    h.update(varint(info.decompressed_size) + (bytes(frame[n - 14:n - 10]) if info.check == CHECK_CRC32 else b""))
    return h.hexdigest(), lz


def declared_size(buf) -> int:
    """Output bytes the frame at the start of buf declares, from its headers alone (its block sizes, walked as
    far as buf holds well-formed block headers).
    Nothing is decoded; a malformed or truncated frame is not reported here (the decoder reports it), the
    walk just stops.  Used to refuse a frame over max_output before any decoding."""
    total = 0
    try:
        version, _ = parse_start(buf)
        p, i = parse_header(buf)[3], 0
        while True:
            hdr = parse_block_header(buf, p, i, version)
            if hdr is None:
                return total
            kind, _, size, psize, q = hdr
            total += size
            p = q + psize + block_check_size(kind)
            i += 1
    except (Incomplete, NLMError):
        return total


__all__ = ["FrameInfo", "BlockInfo", "GroupInfo", "get_frame_info", "list_frames", "NLMError"]
