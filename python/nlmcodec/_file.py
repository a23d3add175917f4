"""NLMFile and open(): nlmcodec frames as a file object, the way lzma.LZMAFile / lzma.open and
compression.zstd.ZstdFile / open present theirs.  This module owns the file layer only; the frames are
made and read by NLMCompressor / NLMDecompressor (_stream.py).

Reading decodes every concatenated frame in the file, one NLMDecompressor per frame, through an
io.BufferedReader over _FrameReader (decompress(data, max_length=N), so the output held at once is
bounded).  The file must end exactly at the end of a frame: a truncated frame or bytes that are not a
frame raise NLMError.  seek() is emulated: forward by decoding, backward by going back to where the
compressed data started and decoding again; SEEK_END first reads to the end.

Writing feeds NLMCompressor.compress() and writes whatever it returns; close() writes the rest
(flush()), which ends the frame.  "a" mode appends a new frame after the existing data.
"""
import builtins
import io
import os

from ._errors import NLMError
from ._frame import CHECK_CRC32, DEFAULT_ADAPT, MAGIC
from ._stream import NLMCompressor, NLMDecompressor, _max_output_arg

__all__ = ["NLMFile", "open"]

BUFFER_SIZE = io.DEFAULT_BUFFER_SIZE   # compressed bytes read from the underlying file at a time
_READALL_CHUNK = 1 << 20

_MODE_CLOSED, _MODE_READ, _MODE_WRITE = 0, 1, 2


def _new_decompressor(model, threads, max_output=None):
    kw = {} if max_output is None else {"max_output": max_output}
    if threads == 1:                   # threads= is passed only when asked for
        return NLMDecompressor(model=model, **kw)
    return NLMDecompressor(model=model, threads=threads, **kw)


def _new_compressor(model, adapt, check, threads):
    if threads == 1:
        return NLMCompressor(model=model, adapt=adapt, check=check)
    return NLMCompressor(model=model, adapt=adapt, check=check, threads=threads)


class _FrameReader(io.RawIOBase):
    """Raw, read-only stream of the decompressed bytes of the frames in fp (wrapped in a BufferedReader)."""

    def __init__(self, fp, model, threads, max_output=None):
        self._fp = fp
        self._model = model
        self._threads = threads
        self._max_output = max_output  # bound on the output of all the frames together (None: none)
        self._start = fp.tell() if fp.seekable() else None   # where backward seeks go back to
        self._dec = _new_decompressor(model, threads, max_output)
        self._frame_started = False  # the first decompressor has been given bytes
        self._eof = False            # every frame has been read
        self._pos = 0                # decompressed bytes returned so far
        self._size = -1              # total decompressed size, once known

    def readable(self):
        return True

    def seekable(self):
        return self._fp.seekable()

    def tell(self):
        return self._pos

    def close(self):
        self._dec = None
        super().close()

    def readinto(self, b):
        with memoryview(b) as view, view.cast("B") as out:
            data = self.read(len(out))
            out[:len(data)] = data
        return len(data)

    def readall(self):
        chunks = []
        while data := self.read(_READALL_CHUNK):
            chunks.append(data)
        return b"".join(chunks)

    def read(self, size=-1):
        if size < 0:
            return self.readall()
        if size == 0 or self._eof:
            return b""
        data = b""
        while not data:
            dec = self._dec
            if dec.eof:
                rest = dec.unused_data or self._fp.read(BUFFER_SIZE)
                if not rest:
                    self._eof = True
                    self._size = self._pos
                    return b""
                k = min(len(rest), len(MAGIC))
                if rest[:k] != MAGIC[:k]:
                    raise NLMError(f"trailing garbage after the end of the last frame (at least "
                                   f"{len(rest)} bytes)")
                left = None if self._max_output is None else self._max_output - self._pos
                self._dec = dec = _new_decompressor(self._model, self._threads, left)
                self._frame_started = True
                data = dec.decompress(rest, size)
            elif dec.needs_input:
                chunk = self._fp.read(BUFFER_SIZE)
                if not chunk:
                    raise NLMError("truncated frame: the file ended before the end of the frame"
                                   if self._frame_started else "truncated frame: empty file")
                self._frame_started = True
                data = dec.decompress(chunk, size)
            else:
                data = dec.decompress(b"", size)
        self._pos += len(data)
        return data

    def _rewind(self):
        self._fp.seek(self._start)
        self._dec = _new_decompressor(self._model, self._threads, self._max_output)
        self._frame_started = False
        self._eof = False
        self._pos = 0

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_SET:
            pass
        elif whence == io.SEEK_CUR:
            offset = self._pos + offset
        elif whence == io.SEEK_END:
            if self._size < 0:
                while self.read(_READALL_CHUNK):
                    pass
            offset = self._size + offset
        else:
            raise ValueError(f"invalid whence ({whence!r}, should be 0, 1 or 2)")
        if offset < self._pos:
            self._rewind()
        offset -= self._pos
        while offset > 0:                     # decode and drop (a position past the end stops there)
            data = self.read(min(_READALL_CHUNK, offset))
            if not data:
                break
            offset -= len(data)
        return self._pos


class NLMFile(io.BufferedIOBase):
    """A file object reading or writing nlmcodec frames (like lzma.LZMAFile).

    filename: a str, bytes or PathLike path, or a file object with read() (mode "r") or write() (the
    others).  mode: "r"/"rb" read; "w"/"wb" truncate and write; "x"/"xb" create and write; "a"/"ab"
    append a frame.  model: the model to compress with (a Model, bundled name or path; None: the bundled
    default), and when reading, the model that frames made with a non-bundled model need.  adapt and check
    (NLMCompressor's options) are for writing only.  threads: passed to NLMCompressor / NLMDecompressor.
    max_output (reading only): None, or the most bytes the frames of the file may decode to together
    (NLMError "output limit" before a block that would pass it is decoded; see NLMDecompressor).

    Reading returns the data of every frame in the file, one after the other.  A file object passed in is
    not closed by close(); a file opened from a name is.
    """

    _mode = _MODE_CLOSED      # also when __init__ fails early (IOBase.__del__ calls close())

    def __init__(self, filename=None, mode="r", *, model=None, adapt=DEFAULT_ADAPT, check=CHECK_CRC32, threads=1,
                 max_output=None):
        self._fp = None
        self._closefp = False
        self._mode = _MODE_CLOSED
        self._buffer = None
        self._compressor = None
        self._pos = 0
        if mode in ("r", "rb"):
            if check != CHECK_CRC32 or adapt != DEFAULT_ADAPT:
                raise ValueError("adapt and check are only for writing: a frame records its own")
            max_output = _max_output_arg(max_output)
            mode_code, fmode = _MODE_READ, "rb"
        elif mode in ("w", "wb", "a", "ab", "x", "xb"):
            if max_output is not None:
                raise ValueError("max_output is only for reading")
            mode_code, fmode = _MODE_WRITE, mode[0] + "b"
            compressor = _new_compressor(model, adapt, check, threads)   # bad options fail before opening
        else:
            raise ValueError(f"invalid mode: {mode!r}")

        if isinstance(filename, (str, bytes, os.PathLike)):
            fp = builtins.open(filename, fmode)
            closefp = True
        elif hasattr(filename, "read" if mode_code == _MODE_READ else "write"):
            fp, closefp = filename, False
        else:
            raise TypeError("filename must be a str, bytes or PathLike path, or a file object")

        try:
            if mode_code == _MODE_READ:
                self._buffer = io.BufferedReader(_FrameReader(fp, model, threads, max_output))
            else:
                self._compressor = compressor
        except BaseException:
            if closefp:
                fp.close()
            raise
        self._fp, self._closefp, self._mode = fp, closefp, mode_code
        self._mode_name = "rb" if mode_code == _MODE_READ else "wb"

    # ------------------------------------------------------------------------------------- state
    @property
    def closed(self):
        return self._mode == _MODE_CLOSED

    @property
    def mode(self):
        return self._mode_name

    @property
    def name(self):
        self._check_not_closed()
        return self._fp.name

    def fileno(self):
        self._check_not_closed()
        return self._fp.fileno()

    def readable(self):
        self._check_not_closed()
        return self._mode == _MODE_READ

    def writable(self):
        self._check_not_closed()
        return self._mode == _MODE_WRITE

    def seekable(self):
        return self.readable() and self._buffer.seekable()

    def _check_not_closed(self):
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def _check_can_read(self):
        if not self.readable():
            raise io.UnsupportedOperation("file not open for reading")

    def _check_can_write(self):
        if not self.writable():
            raise io.UnsupportedOperation("file not open for writing")

    def close(self):
        """Finish the frame (writing) and close the file; a file object passed in is left open."""
        if self._mode == _MODE_CLOSED:
            return
        try:
            if self._mode == _MODE_READ:
                self._buffer.close()
            else:
                self._fp.write(self._compressor.flush())
        finally:
            try:
                if self._closefp:
                    self._fp.close()
            finally:
                self._fp = None
                self._closefp = False
                self._buffer = None
                self._compressor = None
                self._mode = _MODE_CLOSED

    # ------------------------------------------------------------------------------------- reading
    def read(self, size=-1):
        self._check_can_read()
        return self._buffer.read(size)

    def read1(self, size=-1):
        self._check_can_read()
        if size < 0:
            size = io.DEFAULT_BUFFER_SIZE
        return self._buffer.read1(size)

    def readinto(self, b):
        self._check_can_read()
        return self._buffer.readinto(b)

    def readinto1(self, b):
        self._check_can_read()
        return self._buffer.readinto1(b)

    def readline(self, size=-1):
        self._check_can_read()
        return self._buffer.readline(size)

    def peek(self, size=-1):
        """Return buffered data without advancing the position (at least one byte unless at the end)."""
        self._check_can_read()
        return self._buffer.peek(size)

    def seek(self, offset, whence=io.SEEK_SET):
        """Move to a position in the decompressed data (emulated: this can be slow, see the module doc).
        Positions past the end go to the end."""
        self._check_can_read()
        if not self.seekable():
            raise io.UnsupportedOperation("the underlying file is not seekable")
        return self._buffer.seek(offset, whence)

    def tell(self):
        """The position in the decompressed data."""
        self._check_not_closed()
        if self._mode == _MODE_READ:
            return self._buffer.tell()
        return self._pos

    # ------------------------------------------------------------------------------------- writing
    def write(self, data):
        """Compress data (any bytes-like object); return the number of bytes taken."""
        self._check_can_write()
        if isinstance(data, (bytes, bytearray)):
            length = len(data)
        else:
            data = memoryview(data)
            length = data.nbytes
        out = self._compressor.compress(data)
        if out:
            self._fp.write(out)
        self._pos += length
        return length

    def flush(self):
        """Flush the underlying file.  The frame itself is completed by close()."""
        self._check_not_closed()
        if self._mode == _MODE_WRITE and hasattr(self._fp, "flush"):
            self._fp.flush()


def open(filename, mode="rb", *, model=None, adapt=DEFAULT_ADAPT, check=CHECK_CRC32, threads=1, max_output=None,
         encoding=None, errors=None, newline=None):
    """Open an nlmcodec file in binary ("r", "rb", "w", "wb", "x", "xb", "a", "ab") or text ("rt",
    "wt", "xt", "at") mode and return an NLMFile, or an io.TextIOWrapper over one in text mode.

    filename: a path (str, bytes, PathLike) or a file object.  model, adapt, check, threads, max_output: as
    for NLMFile.  encoding, errors, newline: for text mode only (as in builtins.open).
    """
    if "t" in mode:
        if "b" in mode:
            raise ValueError(f"invalid mode: {mode!r}")
    else:
        for arg, value in (("encoding", encoding), ("errors", errors), ("newline", newline)):
            if value is not None:
                raise ValueError(f"argument {arg!r} not supported in binary mode")
    binary = NLMFile(filename, mode.replace("t", ""), model=model, adapt=adapt, check=check, threads=threads,
                     max_output=max_output)
    if "t" not in mode:
        return binary
    try:
        return io.TextIOWrapper(binary, io.text_encoding(encoding), errors, newline)
    except BaseException:
        binary.close()
        raise
