"""The decoder: walks one frame (layout in _frame.py) and produces its bytes on demand,
a block at a time (one thread) or a group per worker (several threads), checking everything on the way.

Memory: the input it has not used, plus at most one block of output (one thread) or GROUP_BUFFER bytes of
output per thread, whatever a group declares: a worker hands its group's output over in pieces and waits while
GROUP_BUFFER bytes of it are unread.  The input buffer is consumed through an offset and compacted, so feeding
it in small pieces costs linear time.

Hostile input (docs/format.md §7.3): max_output bounds the output; a block whose declared size would
cross it is refused before it is decoded (and, when the whole input is at hand, before anything is
decoded at all).  Each model block's CRC32 is checked right after decoding it, so a forged
block costs at most one block (64 KiB of the word model, 256 KiB of the byte model) of decoding.
"""
from __future__ import annotations

from collections import deque
import threading

from ._errors import NLMError
from . import _frame as F

READ_CHUNK = 1 << 20          # lzma blocks are decoded in pieces of at most this many bytes
GROUP_BUFFER = 8 << 20        # decoded bytes a worker may hold ahead of the reader, per group in flight


def _decode_block(codec, b: _Block) -> bytes:
    """Output of block b; codec: the word model (word-model blocks) or the group's ByteCoder (byte-model
    blocks)."""
    if b.kind == F.BLOCK_STORED:
        return b.payload
    if b.kind == F.BLOCK_LZMA:
        return F.lzma_decompress(b.payload, b.size, b.index)
    what = "word-model" if b.kind == F.BLOCK_MODEL else "byte-model"
    try:
        data = codec.decode_block(b.payload, b.size)
    except NLMError as e:
        raise NLMError(f"corrupt {what} block {b.index}: {e}", code=e.code) from None
    if len(data) != b.size:
        raise NLMError(f"corrupt {what} block {b.index}: decodes to the wrong size")
    if b.crc is not None and F.crc32(data) != b.crc:
        raise NLMError(f"corrupt {what} block {b.index}: block CRC32 mismatch (damaged data" +
                       (", or decoded with another model)" if b.kind == F.BLOCK_MODEL else ")"))
    return data


def _start_track(bcoder, b: _Block) -> bool:
    """At a group start: begin the tracked group's byte-model run (formats 15 on, docs/format.md §7.2), or end
    the run in progress.  True when the group is tracked."""
    bcoder.reset()
    if b.start == 1:
        return False
    bcoder.start_run(b.start)
    return True


def _tracked(bcoder, b: _Block, data) -> bytes:
    """data, the output of block b of a tracked group (or a piece of it): its byte-model blocks continue the
    group's run, every other block's bytes are learnt by it."""
    if b.kind == F.BLOCK_BYTE:
        return data
    try:
        bcoder.feed(data)
    except NLMError as e:
        raise NLMError(f"corrupt frame: block {b.index} takes its tracked group past the byte-model run's "
                       f"size", code=e.code) from None
    return data


def _decode_word_block(codec, bcoder, tracked: bool, version: int, b: _Block) -> bytes:
    """Output of word-model block b: in a tracked group its bytes are learnt by the group's run, which in format 17
    (the line route, docs/format.md §3.8) reads the block with the codec, and is fed the output before."""
    routed = tracked and F.routes(version)
    if routed:
        codec.set_router(bcoder)
    try:
        data = _decode_block(codec, b)
    finally:
        if routed:
            codec.set_router(None)        # the codec holds no group's run between blocks
    return _tracked(bcoder, b, data) if tracked and not routed else data


def _check_tracked_byte_block(b: _Block) -> None:
    if b.payload[0] != 0:
        raise NLMError(f"corrupt byte-model block {b.index}: it starts a run inside a tracked group")


class _Cancelled(Exception):
    """The reader went away (close): the worker stops decoding its group."""


class _GroupOutput:
    """The output of one group decoded on a worker thread, handed to the reader in pieces (a block, or at most
    READ_CHUNK bytes of an lzma block).  The worker waits while GROUP_BUFFER bytes are unread, so a group that
    declares a gigabyte costs GROUP_BUFFER of memory, and a reader that stops early stops the work."""

    def __init__(self):
        self._cv = threading.Condition()
        self._pieces = deque()
        self._held = 0
        self._done = False
        self._error = None
        self._cancelled = False

    def put(self, piece: bytes) -> None:                      # worker
        with self._cv:
            while self._held >= GROUP_BUFFER and not self._cancelled:
                self._cv.wait()
            if self._cancelled:
                raise _Cancelled
            self._pieces.append(piece)
            self._held += len(piece)
            self._cv.notify_all()

    def finish(self, error=None) -> None:                      # worker
        with self._cv:
            self._done, self._error = True, error
            self._cv.notify_all()

    def cancel(self) -> None:                                  # reader
        with self._cv:
            self._cancelled = True
            self._pieces.clear()
            self._cv.notify_all()

    def get(self, wait: bool):                                 # reader
        """The next piece; b"" when the group is finished; None when there is none yet and wait is False.
        Raises the worker's error once its earlier pieces are read."""
        with self._cv:
            while not self._pieces and not self._done:
                if not wait:
                    return None
                self._cv.wait()
            if self._pieces:
                piece = self._pieces.popleft()
                self._held -= len(piece)
                self._cv.notify_all()
                return piece
            if self._error is not None:
                raise self._error
            return b""


def _new_byte_coder(version):
    """The byte model of one group of a frame of format version (imported on the first byte-model block: no
    binding work before)."""
    from ._core import ByteCoder

    return ByteCoder(version)


class _Block:
    __slots__ = ("kind", "start", "size", "payload", "index", "crc")

    def __init__(self, kind, start, size, payload, index, crc=None):
        self.kind, self.start, self.size, self.payload, self.index = kind, start, size, payload, index
        self.crc = crc                # model blocks: CRC32 of the output, else None


class _CodecShelf:
    """The word-model codecs of one frame's decode, shared by its workers (a worker holds the shelf, not the
    decoder, so a decoder its user dropped is collected, and closed, while a worker still runs)."""

    def __init__(self, get_codec):
        self._get_codec = get_codec
        self._lock = threading.Lock()
        self._codecs = []

    def take(self, model_id, adapt):
        with self._lock:
            if self._codecs:
                return self._codecs.pop()
        return self._get_codec(model_id, adapt)

    def give(self, codec) -> None:
        with self._lock:
            self._codecs.append(codec)

    def empty(self) -> list:
        with self._lock:
            codecs, self._codecs = self._codecs, []
        return codecs


def _run_group(shelf, model_id, adapt, version, blocks, out: _GroupOutput) -> None:
    """Worker: decode one group into out, a block (or an lzma piece) at a time."""
    codec = bcoder = None
    tracked = blocks[0].start > 1
    try:
        if tracked:
            bcoder = _new_byte_coder(version)
            _start_track(bcoder, blocks[0])
        for b in blocks:
            if b.kind == F.BLOCK_LZMA:
                lz = F.LzmaBlockReader(b.payload, b.size, b.index)
                while not lz.done:
                    piece = lz.read(READ_CHUNK)
                    out.put(_tracked(bcoder, b, piece) if tracked else piece)
                continue
            if b.kind == F.BLOCK_MODEL and codec is None:
                codec = shelf.take(model_id, adapt)
                codec.reset(version)
            if b.kind == F.BLOCK_BYTE:
                if bcoder is None:
                    bcoder = _new_byte_coder(version)
                if tracked:
                    _check_tracked_byte_block(b)
            if b.kind == F.BLOCK_MODEL:
                out.put(_decode_word_block(codec, bcoder, tracked, version, b))
                continue
            data = _decode_block(bcoder if b.kind == F.BLOCK_BYTE else codec, b)
            out.put(_tracked(bcoder, b, data) if tracked else data)
        out.finish()
    except _Cancelled:
        out.finish()
    except BaseException as e:         # handed to the reader, raised where the group's output stops
        out.finish(e)
    finally:
        if codec is not None:
            shelf.give(codec)


class _Workers:
    """Daemon threads that run the groups of one decode: a worker waiting for its reader never holds up the
    interpreter's exit (a ThreadPoolExecutor's threads are joined at exit)."""

    def __init__(self, n: int):
        import queue

        self._jobs = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"nlmcodec-d{i}", daemon=True) for i in range(n)]
        for t in self._threads:
            t.start()

    def _work(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args = job
            fn(*args)
            del job, fn, args

    def submit(self, fn, *args) -> None:
        self._jobs.put((fn, args))

    def stop(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)


class FrameDecoder:
    """Decodes one frame.

    get_codec(model_id, adapt) -> codec is called (once per thread) at the first word-model block; it
    raises NLMError for a missing or mismatched model.  release_codec(codec) when done.  feed(data) adds
    input; read(complete) returns the next piece of output, or None when nothing can be produced without
    more input (eof is True at the end of the frame, unused_data then holds the bytes after it).
    complete=True: no more input will come, so a frame that cannot finish is reported as truncated.
    max_output: None, or the most bytes this frame may decode to (NLMError beyond, before decoding).
    plan(model_id, adapt, threads) -> threads, called once the header is read, before any codec is made: the
    threads the decode may use (fewer under a memory limit), or NLMError (_memory.threads_within).
    """

    def __init__(self, get_codec, release_codec=None, threads: int = 1, max_output=None, plan=None):
        self._get_codec, self._release_codec = get_codec, release_codec
        self._plan = plan
        self._threads = max(1, int(threads))
        self._max_output = max_output
        self._declared = 0            # output bytes declared by the blocks parsed so far
        self._buf = bytearray()
        self._pos = 0
        self._stage = "start"
        self.version = None
        self.adapt = None
        self.check = None
        self.model_id = None
        self.info = None              # FrameInfo at the end of the frame
        self._crc = 0
        self._out_size = 0
        self._codec = None
        self._bcoder = None           # byte model of the group being decoded (one thread)
        self._shelf = _CodecShelf(get_codec)
        self._reset = True
        self._nblock = 0
        self._groups = []             # [size, coded bytes] of the groups seen
        self._blocks = []             # BlockInfo of the blocks seen
        self._lz = None               # LzmaBlockReader of the lzma block being read
        self._lz_block = None         # ... and that block
        self._track = False           # the group being decoded is tracked (one thread; §7.2)
        self._group = None            # threads: blocks of the group being gathered
        self._ended = False           # threads: the end marker has been read
        self._inflight = deque()
        self._pool = None
        self.eof = False
        self.unused_data = b""
        self._dropped = 0             # input bytes consumed and dropped from the buffer

    # ------------------------------------------------------------------------------------------ input
    def feed(self, data) -> None:
        if len(data):
            if self._pos > (1 << 16) and self._pos * 2 > len(self._buf):
                del self._buf[:self._pos]
                self._dropped += self._pos
                self._pos = 0
            self._buf += data

    @property
    def consumed(self) -> int:
        """Input bytes used so far (parsed; with threads, possibly not yet decoded)."""
        return self._dropped + self._pos

    def _avail(self) -> int:
        return len(self._buf) - self._pos

    def _take(self, n: int) -> bytes:
        b = bytes(self._buf[self._pos:self._pos + n])
        self._pos += n
        return b

    def _rest(self) -> memoryview:
        return memoryview(self._buf)[self._pos:]

    # ------------------------------------------------------------------------------------------ codecs
    def _take_codec(self):
        return self._shelf.take(self.model_id, self.adapt)

    def __del__(self):
        """A decoder its user dropped: stop its workers; its codecs go with it.  They are not returned to the
        pool from here: a finalizer may run inside the garbage collector, on objects already found unreachable,
        and handing them to the pool there brought them back after the collector had begun to free them (the
        cffi binding freed a codec the pool still held: a crash at its next reset)."""
        if hasattr(self, "_shelf"):
            self.close(release=False)

    def close(self, release: bool = True) -> None:
        for out in self._inflight:
            out.cancel()
        self._inflight.clear()
        if self._pool is not None:
            self._pool.stop()
            self._pool = None
        codecs = self._shelf.empty()
        if self._codec is not None:
            codecs.append(self._codec)
            self._codec = None
        self._bcoder = None           # its memory (the run's tables) goes now, not with the decoder object
        if release and self._release_codec is not None:
            for c in codecs:
                self._release_codec(c)

    # ------------------------------------------------------------------------------------------ output
    def read(self, complete: bool = False):
        if self.eof:
            return None
        try:
            out = self._step(complete)
        except F.Incomplete:
            if complete:
                self.close()          # the codecs go back to the pool on this error path too
                raise NLMError(self._truncated_message()) from None
            return None
        except BaseException:
            self.close()
            raise
        if out:
            self._crc = F.crc32(out, self._crc)
            self._out_size += len(out)
        return out

    def _truncated_message(self):
        where = {"start": "inside the frame header", "header": "inside the frame header",
                 "blocks": "inside a block", "trailer": "inside the frame trailer"}[self._stage]
        return f"truncated frame: compressed data ended {where}"

    def _step(self, complete):
        """One piece of output (b"" when a stage ended without output); raises Incomplete."""
        while True:
            st = self._stage
            if st == "start":
                self.version, _ = F.parse_start(self._rest())
                self._stage = "header"
            elif st == "header":
                self._parse_header()
                if complete and self._max_output is not None:   # the whole frame is here: check it all first
                    with memoryview(self._buf) as mv:
                        declared = F.declared_size(mv[self._pos - self._hlen:])
                    self._check_bound(declared)
            elif st == "blocks":
                out = self._next_block(complete) if self._threads == 1 else self._next_threaded(complete)
                if out is not None:
                    return out
            elif st == "trailer":
                self._parse_trailer()
                return b""
            else:  # pragma: no cover
                raise AssertionError(st)

    def _need(self, n):
        if self._avail() < n:
            raise F.Incomplete
        return True

    def _parse_header(self):
        adapt, check, model_id, n = F.parse_header(self._rest())
        if self._plan is not None:
            self._threads = self._plan(model_id, adapt, self._threads)
        self._stage = "blocks"
        self.adapt, self.check, self.model_id = adapt, check, model_id
        self._pos += n
        self._hlen = n

    def _check_bound(self, declared):
        if self._max_output is not None and declared > self._max_output:
            raise NLMError(f"output limit: the frame declares at least {declared} bytes of output, more than "
                           f"max_output={self._max_output}")

    def _byte_coder(self):
        if self._bcoder is None:
            self._bcoder = _new_byte_coder(self.version)
        return self._bcoder

    def _model_codec(self):
        if self._codec is None:
            self._codec = self._take_codec()
        if self._reset:
            self._codec.reset(self.version)
            self._reset = False
        return self._codec

    # blocks ------------------------------------------------------------------------------------
    def _parse_block(self):
        """The next block (payload present) or None at the end marker; raises Incomplete."""
        rest = self._rest()
        i = self._nblock
        hdr = F.parse_block_header(rest, 0, i, self.version)
        if hdr is None:
            return None
        kind, start, size, psize, p = hdr
        if i == 0 and not start:
            raise NLMError("corrupt frame: the first block does not start a group")
        if kind == F.BLOCK_MODEL and self.model_id is None:
            raise NLMError(f"corrupt frame: word-model block {i} in a frame without a model id")
        self._check_bound(self._declared + size)
        tail = F.block_check_size(kind)
        if len(rest) < p + psize + tail:
            raise F.Incomplete
        del rest
        self._pos += p
        b = _Block(kind, start, size, self._take(psize), i)
        if tail:
            b.crc = int.from_bytes(self._take(tail), "little")
        self._declared += size
        if start:
            self._groups.append([0, 0])
        self._groups[-1][0] += size
        self._groups[-1][1] += p + psize + tail
        self._blocks.append(F.BlockInfo(F.BLOCK_KINDS[kind], size, psize))
        self._nblock += 1
        return b

    def _next_block(self, complete):
        if self._lz is not None:
            out = self._lz.read(READ_CHUNK)
            if self._lz.done:
                self._lz = None
            return _tracked(self._bcoder, self._lz_block, out) if self._track else out
        b = self._parse_block()
        if b is None:
            self._stage = "trailer"
            return None
        if b.start:
            self._reset = True
            if self._bcoder is not None or b.start > 1:
                self._track = _start_track(self._byte_coder(), b)
        if b.kind == F.BLOCK_LZMA:
            self._lz = F.LzmaBlockReader(b.payload, b.size, b.index)
            self._lz_block = b
            return self._next_block(complete)
        if b.kind == F.BLOCK_BYTE:
            if self._track:
                _check_tracked_byte_block(b)
            return _decode_block(self._byte_coder(), b)
        if b.kind == F.BLOCK_MODEL:
            return _decode_word_block(self._model_codec(), self._bcoder, self._track, self.version, b)
        out = _decode_block(None, b)
        return _tracked(self._bcoder, b, out) if self._track else out

    def _next_threaded(self, complete):
        """Gather whole groups, decode up to `threads` of them at once, return their output in order, in pieces
        (_GroupOutput)."""
        while True:
            while not self._ended and len(self._inflight) < self._threads:
                try:
                    b = self._parse_block()
                except F.Incomplete:
                    break
                if b is None:
                    self._ended = True
                if (b is None or b.start) and self._group:
                    self._submit(self._group)
                    self._group = None
                if b is not None:
                    self._group = (self._group or []) + [b]
            if not self._inflight:
                if self._ended:
                    self._stage = "trailer"
                    return None
                raise F.Incomplete
            # wait for the first group's output only when more input could not start another group
            wait = complete or self._ended or len(self._inflight) >= self._threads
            piece = self._inflight[0].get(wait)
            if piece is None:
                raise F.Incomplete    # the input ends inside a group: more input first; the workers go on
            if piece:
                return piece
            self._inflight.popleft()  # the first group is finished: on to the next

    def _submit(self, blocks):
        if self._pool is None:
            self._pool = _Workers(self._threads)
        out = _GroupOutput()
        self._inflight.append(out)
        self._pool.submit(_run_group, self._shelf, self.model_id, self.adapt, self.version, blocks, out)

    def _parse_trailer(self):
        groups, total, content, n = F.parse_trailer(self._rest(), 0, self.check)
        F.check_index(groups, total, self._groups)
        if total != self._out_size:
            raise NLMError("corrupt frame trailer: the total size does not match the decoded size")
        self._pos += n
        self._check_content(content)
        self.info = F.FrameInfo(self.version, self.adapt, self.check, self.model_id, total, tuple(self._blocks),
                                tuple(F.GroupInfo(s, c) for s, c in groups))
        self._finish()

    def _check_content(self, want):
        if want is not None and want != self._crc:
            raise NLMError("CRC32 mismatch: the decompressed data is corrupt")

    def _finish(self):
        self.eof = True
        self.unused_data = bytes(self._rest())
        self._dropped += self._pos
        self._buf = bytearray()
        self._pos = 0
        self.close()
