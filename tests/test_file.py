# Owns the tests of the file layer: NLMFile and open() (python/nlmcodec/_file.py), on real files in
# tmp_path and in-memory file objects, with the bundled "tiny" model.
"""NLMFile / open() tests, ported from CPython's Lib/test/test_lzma.py (FileTestCase, OpenTestCase).

Our own words against our API: INPUT is a few KB of real text (asyoulik.txt, whose first lines are a
play as test_lzma's Hamlet excerpt is), frames come from nlmcodec.compress(model="tiny").  Where lzma
ignores trailing junk or raises EOFError on a truncated file, nlmcodec raises NLMError (its decompress()
rejects trailing garbage and truncation the same way).

FileTestCase, test by test:
  test_init                                 ported (test_init)
  test_init_with_PathLike_filename          ported (test_init_with_pathlike_filename)
  test_init_with_filename                   ported
  test_init_mode                            ported
  test_init_with_x_mode                     ported
  test_init_bad_mode                        ported
  test_init_bad_check                       ported (test_init_bad_check_value, test_init_bad_check_type,
                                            test_init_check_in_read_mode); a bad value is ValueError
                                            (NLMCompressor's choice) where lzma raises LZMAError
  test_init_bad_preset                      not applicable: no presets; the analogue for our options is
                                            test_init_bad_model (and adapt in read mode)
  test_init_bad_filter_spec                 not applicable: no filter chains
  test_init_with_preset_and_filters         not applicable: no presets or filters
  test_close                                ported (the closed descriptor is checked with os.fstat)
  test_closed, test_fileno, test_seekable   ported
  test_readable, test_writable              ported
  test_read                                 ported (frame variants: adapt, check, block kinds)
  test_read_0, test_read_10                 ported
  test_read_multistream                     ported
  test_read_multistream_buffer_size_aligned ported (monkeypatches _file.BUFFER_SIZE)
  test_read_trailing_junk                   ported, reversed: NLMError after the good data
  test_read_multistream_trailing_junk       ported, reversed: NLMError after the good data
  test_read_from_file                       ported
  test_read_from_file_with_bytes_filename   ported
  test_read_from_fileobj                    ported
  test_read_from_fileobj_with_int_name      ported
  test_read_incomplete                      ported: NLMError instead of EOFError
  test_read_truncated                       ported: NLMError instead of EOFError
  test_read_bad_args                        ported (test_read_bad_args[read])
  test_read_bad_data                        ported, reversed: data that is no frame raises NLMError
  test_read1, test_read1_0, test_read1_10   ported
  test_read1_multistream                    ported
  test_read1_bad_args                       ported as test_read_bad_args[read1]
  test_peek, test_peek_bad_args             ported
  test_iterator, test_readline, test_readlines  ported
  test_decompress_limited                   ported
  test_write, test_write_10                 ported (the bytes equal nlmcodec.compress of the same input)
  test_write_append                         ported
  test_write_to_file                        ported
  test_write_to_file_with_bytes_filename    ported
  test_write_to_fileobj                     ported
  test_write_to_fileobj_with_int_name       ported
  test_write_append_to_file                 ported
  test_write_bad_args, test_writelines      ported
  test_seek_forward, test_seek_forward_across_streams, test_seek_forward_relative_to_current,
  test_seek_forward_relative_to_end, test_seek_backward, test_seek_backward_across_streams,
  test_seek_backward_relative_to_end, test_seek_past_end, test_seek_past_start,
  test_seek_bad_args                        ported
  test_tell, test_tell_bad_args             ported
  test_issue21872                           ported in test_lzma_port.py (it tests the decompressor)
  test_issue44439                           ported
OpenTestCase:
  test_binary_modes, test_text_modes, test_filename, test_with_pathlike_filename, test_bad_params,
  test_encoding, test_encoding_error_handler, test_newline, test_x_mode   ported
  test_format_and_filters                   not applicable: one format, no filters; the analogue is
                                            test_open_model_option (a non-bundled model, model=)
Ours, not in test_lzma: a file object that does not start at offset 0, a non-seekable source, the
model= option for reading, threads= (skipped while NLMCompressor has no threads= keyword).
"""
import array
import functools
import inspect
import io
import os
import pathlib
import random

import pytest

import nlmcodec
from nlmcodec import CHECK_CRC32, CHECK_NONE, NLMError
from nlmcodec import _file
from nlmcodec._file import NLMFile, open as nlm_open
from nlmcodec._frame import DEFAULT_ADAPT

from corpus_cache import short_text

MODEL = "tiny"


INPUT = short_text()
BOGUS = b"this is not an nlmcodec frame, just some text\n" * 3


@functools.cache
def frame(data=INPUT, adapt=DEFAULT_ADAPT, check=CHECK_CRC32):
    return nlmcodec.compress(data, model=MODEL, adapt=adapt, check=check)


COMPRESSED = frame()
HAS_THREADS = "threads" in inspect.signature(nlmcodec.NLMCompressor).parameters
needs_threads = pytest.mark.skipif(not HAS_THREADS, reason="NLMCompressor has no threads= yet (issue 8)")


def compressed_file(tmp_path, data=COMPRESSED, name="data.nlm"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_input_uses_the_word_model():
    # the tests would not exercise the model path if the frame were stored or lzma only
    info = nlmcodec.get_frame_info(COMPRESSED)
    assert info.model_id is not None and len(COMPRESSED) < len(INPUT) // 2


# -------------------------------------------------------------------------------------------- init
def test_init():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert isinstance(f, NLMFile) and f.mode == "rb"
    for mode in ("w", "x", "a"):
        with NLMFile(io.BytesIO(), mode, model=MODEL) as f:
            assert isinstance(f, NLMFile) and f.mode == "wb"


def test_init_with_pathlike_filename(tmp_path):
    path = compressed_file(tmp_path)
    assert isinstance(path, os.PathLike)
    with NLMFile(path) as f:
        assert f.read() == INPUT
        assert f.name == os.fspath(path)
    with NLMFile(path, "a", model=MODEL) as f:
        f.write(INPUT)
        assert f.name == os.fspath(path)
    with NLMFile(path) as f:
        assert f.read() == INPUT * 2
        assert f.name == os.fspath(path)


def test_init_with_filename(tmp_path):
    name = str(compressed_file(tmp_path))
    with NLMFile(name) as f:
        assert (f.name, f.mode) == (name, "rb")
    with NLMFile(name, "w", model=MODEL) as f:
        assert (f.name, f.mode) == (name, "wb")
    with NLMFile(name, "a", model=MODEL) as f:
        assert (f.name, f.mode) == (name, "wb")


def test_init_mode(tmp_path):
    name = str(compressed_file(tmp_path, b""))
    for mode, want in (("r", "rb"), ("rb", "rb"), ("w", "wb"), ("wb", "wb"), ("a", "wb"), ("ab", "wb")):
        with NLMFile(name, mode, model=MODEL) if want == "wb" else NLMFile(name, mode) as f:
            assert isinstance(f, NLMFile) and f.mode == want


def test_init_with_x_mode(tmp_path):
    for mode in ("x", "xb"):
        path = tmp_path / f"new-{mode}.nlm"
        with NLMFile(path, mode, model=MODEL) as f:
            assert isinstance(f, NLMFile) and f.mode == "wb"
            f.write(INPUT)
        with pytest.raises(FileExistsError):
            NLMFile(path, mode, model=MODEL)
        assert nlmcodec.decompress(path.read_bytes()) == INPUT      # untouched by the failed open


@pytest.mark.parametrize("mode", [(3, "x"), "", "xt", "x+", "rx", "wx", "rt", "r+", "wt", "w+", "rw"])
def test_init_bad_mode(mode):
    with pytest.raises(ValueError):
        NLMFile(io.BytesIO(COMPRESSED), mode)


def test_init_bad_check_value(tmp_path):
    for check in (2, 7, -1, 16):
        with pytest.raises(ValueError):
            NLMFile(io.BytesIO(), "w", model=MODEL, check=check)
    # a bad option fails before the file is opened: an existing file is not truncated
    path = compressed_file(tmp_path)
    with pytest.raises(ValueError):
        NLMFile(path, "w", model=MODEL, check=7)
    assert path.read_bytes() == COMPRESSED


@pytest.mark.parametrize("check", [b"asd", "", 1.0, None])
def test_init_bad_check_type(check):
    with pytest.raises(TypeError):
        NLMFile(io.BytesIO(), "w", model=MODEL, check=check)


def test_init_check_in_read_mode():
    # like lzma's "cannot specify a check with mode='r'": the frame records its own check and mode
    with pytest.raises(ValueError):
        NLMFile(io.BytesIO(COMPRESSED), check=CHECK_NONE)
    with pytest.raises(ValueError):
        NLMFile(io.BytesIO(COMPRESSED), check=7)
    with pytest.raises(ValueError):
        NLMFile(io.BytesIO(COMPRESSED), adapt=False)
    with NLMFile(io.BytesIO(COMPRESSED), check=CHECK_CRC32) as f:     # the default, given explicitly
        assert f.read() == INPUT


def test_init_bad_model(tmp_path):
    with pytest.raises(TypeError):
        NLMFile(io.BytesIO(), "w", model=4.39)
    with pytest.raises(FileNotFoundError):
        NLMFile(io.BytesIO(), "w", model="no-such-model")
    with pytest.raises(TypeError):
        NLMFile(io.BytesIO(COMPRESSED), model=4.39)
    path = tmp_path / "never.nlm"
    with pytest.raises(TypeError):
        NLMFile(path, "w", model=4.39)
    assert not path.exists()


def test_init_bad_filename():
    with pytest.raises(TypeError):
        NLMFile(42)
    with pytest.raises(TypeError):
        NLMFile(None, "w", model=MODEL)
    with pytest.raises(TypeError):
        NLMFile(io.BytesIO, "r")        # the class, not a file object: no bound read()


# -------------------------------------------------------------------------------------------- state
def test_close(tmp_path):
    with io.BytesIO(COMPRESSED) as src:
        f = NLMFile(src)
        f.close()
        assert not src.closed          # a file object passed in stays open
        f.close()                      # closing twice is fine
        assert not src.closed
    f = NLMFile(compressed_file(tmp_path))
    fd = f.fileno()
    os.fstat(fd)
    f.close()
    with pytest.raises(OSError):       # opened by name: closed by close()
        os.fstat(fd)
    f.close()


def test_closed():
    f = NLMFile(io.BytesIO(COMPRESSED))
    try:
        assert not f.closed
        f.read()
        assert not f.closed
    finally:
        f.close()
    assert f.closed
    f = NLMFile(io.BytesIO(), "w", model=MODEL)
    try:
        assert not f.closed
    finally:
        f.close()
    assert f.closed


def test_fileno(tmp_path):
    f = NLMFile(io.BytesIO(COMPRESSED))
    try:
        with pytest.raises(io.UnsupportedOperation):
            f.fileno()
    finally:
        f.close()
    with pytest.raises(ValueError):
        f.fileno()
    with open(compressed_file(tmp_path), "rb") as raw:
        with NLMFile(raw) as f:
            assert f.fileno() == raw.fileno() and isinstance(f.fileno(), int)
    with pytest.raises(ValueError):
        f.fileno()


def test_seekable():
    f = NLMFile(io.BytesIO(COMPRESSED))
    try:
        assert f.seekable()
        f.read()
        assert f.seekable()
    finally:
        f.close()
    with pytest.raises(ValueError):
        f.seekable()
    f = NLMFile(io.BytesIO(), "w", model=MODEL)
    try:
        assert not f.seekable()
    finally:
        f.close()
    with pytest.raises(ValueError):
        f.seekable()
    src = io.BytesIO(COMPRESSED)
    src.seekable = lambda: False
    f = NLMFile(src)
    try:
        assert not f.seekable()
        assert f.read() == INPUT
    finally:
        f.close()
    with pytest.raises(ValueError):
        f.seekable()


def test_readable_writable():
    f = NLMFile(io.BytesIO(COMPRESSED))
    try:
        assert f.readable() and not f.writable()
        f.read()
        assert f.readable() and not f.writable()
    finally:
        f.close()
    with pytest.raises(ValueError):
        f.readable()
    with pytest.raises(ValueError):
        f.writable()
    f = NLMFile(io.BytesIO(), "w", model=MODEL)
    try:
        assert f.writable() and not f.readable()
    finally:
        f.close()
    with pytest.raises(ValueError):
        f.readable()
    with pytest.raises(ValueError):
        f.writable()


# -------------------------------------------------------------------------------------------- read
@pytest.mark.parametrize("adapt", [True, False, "heads"])
@pytest.mark.parametrize("check", [CHECK_CRC32, CHECK_NONE])
def test_read(adapt, check):
    with NLMFile(io.BytesIO(frame(INPUT, adapt, check))) as f:
        assert f.read() == INPUT
        assert f.read() == b""


@pytest.mark.parametrize("data", [b"", b"x", random.Random(8).randbytes(1024), b"abc" * 3000],
                         ids=["empty", "one-byte", "binary-stored", "repetitive-lzma"])
def test_read_other_frames(data):
    with NLMFile(io.BytesIO(frame(data))) as f:
        assert f.read() == data
        assert f.read() == b""


def test_read_0():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert f.read(0) == b""
        assert f.read() == INPUT


def test_read_10():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        chunks = []
        while result := f.read(10):
            assert len(result) <= 10
            chunks.append(result)
        assert b"".join(chunks) == INPUT


def test_read_multistream():
    with NLMFile(io.BytesIO(COMPRESSED * 5)) as f:
        assert f.read() == INPUT * 5
    mixed = frame(INPUT, False, CHECK_NONE) + frame(b"") + COMPRESSED + frame(b"abc" * 3000)
    with NLMFile(io.BytesIO(mixed)) as f:
        assert f.read() == INPUT + INPUT + b"abc" * 3000


def test_read_multistream_buffer_size_aligned(monkeypatch):
    # a frame boundary that falls exactly at the end of a read from the underlying file
    monkeypatch.setattr(_file, "BUFFER_SIZE", len(COMPRESSED))
    with NLMFile(io.BytesIO(COMPRESSED * 5)) as f:
        assert f.read() == INPUT * 5


def test_read_small_buffer(monkeypatch):
    monkeypatch.setattr(_file, "BUFFER_SIZE", 7)
    with NLMFile(io.BytesIO(COMPRESSED * 2)) as f:
        assert f.read() == INPUT * 2


def test_read_trailing_junk():
    with NLMFile(io.BytesIO(COMPRESSED + BOGUS)) as f:
        with pytest.raises(NLMError, match="trailing garbage"):
            f.read()
    with NLMFile(io.BytesIO(COMPRESSED + BOGUS)) as f:
        assert f.read(len(INPUT)) == INPUT
        with pytest.raises(NLMError):
            f.read(1)


def test_read_multistream_trailing_junk():
    with NLMFile(io.BytesIO(COMPRESSED * 5 + BOGUS)) as f:
        with pytest.raises(NLMError):
            f.read()
    with NLMFile(io.BytesIO(COMPRESSED * 5 + b"\0")) as f:    # even one byte
        assert f.read(5 * len(INPUT)) == INPUT * 5
        with pytest.raises(NLMError):
            f.read()


def _check_read_state(f, name_of_source):
    assert f.read() == INPUT and f.read() == b""
    assert f.name == name_of_source
    assert isinstance(f.fileno(), int)
    assert f.mode == "rb"
    assert f.readable() is True and f.writable() is False and f.seekable() is True
    assert f.closed is False


def _check_closed_state(f, mode):
    assert f.closed is True
    with pytest.raises(ValueError):
        f.name
    for method in (f.fileno, f.readable, f.writable, f.seekable):
        with pytest.raises(ValueError):
            method()
    assert f.mode == mode


def test_read_from_file(tmp_path):
    name = str(compressed_file(tmp_path))
    with NLMFile(name) as f:
        _check_read_state(f, name)
    _check_closed_state(f, "rb")


def test_read_from_file_with_bytes_filename(tmp_path):
    name = os.fsencode(compressed_file(tmp_path))
    with NLMFile(name) as f:
        assert f.read() == INPUT and f.read() == b""
        assert f.name == name


def test_read_from_fileobj(tmp_path):
    with open(compressed_file(tmp_path), "rb") as raw:
        with NLMFile(raw) as f:
            _check_read_state(f, raw.name)
            assert f.fileno() == raw.fileno()
        _check_closed_state(f, "rb")
        assert not raw.closed


def test_read_from_fileobj_with_int_name(tmp_path):
    fd = os.open(compressed_file(tmp_path), os.O_RDONLY)
    with open(fd, "rb") as raw:
        with NLMFile(raw) as f:
            _check_read_state(f, fd)
            assert f.fileno() == raw.fileno()
        _check_closed_state(f, "rb")


def test_read_incomplete():
    with NLMFile(io.BytesIO(COMPRESSED[:128])) as f:
        with pytest.raises(NLMError, match="truncated"):
            f.read()


def test_read_truncated():
    truncated = COMPRESSED[:-1]          # the last byte of the frame (its check) is missing
    with NLMFile(io.BytesIO(truncated)) as f:
        with pytest.raises(NLMError, match="truncated"):
            f.read()
    with NLMFile(io.BytesIO(truncated)) as f:
        assert f.read(len(INPUT)) == INPUT
        with pytest.raises(NLMError, match="truncated"):
            f.read(1)
    for i in list(range(12)) + list(range(12, len(COMPRESSED), len(COMPRESSED) // 5)):
        with NLMFile(io.BytesIO(COMPRESSED[:i])) as f:       # i == 0: an empty file is no frame either
            with pytest.raises(NLMError):
                f.read(1)


def test_read_truncated_second_frame():
    for tail in (COMPRESSED[:1], COMPRESSED[:40], COMPRESSED[:-1]):
        with NLMFile(io.BytesIO(COMPRESSED + tail)) as f:
            assert f.read(len(INPUT)) == INPUT
            with pytest.raises(NLMError, match="truncated"):
                f.read()


def test_read_corrupt():
    bad = bytearray(COMPRESSED)
    bad[len(bad) // 2] ^= 0x40
    with NLMFile(io.BytesIO(bytes(bad))) as f:
        with pytest.raises(NLMError):
            f.read()


@pytest.mark.parametrize("method, bad", [("read", float()), ("read1", None)])
def test_read_bad_args(method, bad):
    f = NLMFile(io.BytesIO(COMPRESSED))
    f.close()
    with pytest.raises(ValueError):
        getattr(f, method)()
    with NLMFile(io.BytesIO(), "w", model=MODEL) as f:
        with pytest.raises(ValueError):
            getattr(f, method)()
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        with pytest.raises(TypeError):
            getattr(f, method)(bad)


def test_read_bad_data():
    with NLMFile(io.BytesIO(BOGUS)) as f:
        with pytest.raises(NLMError):
            f.read()


def test_readinto():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        buf = bytearray(100)
        assert f.readinto(buf) == 100 and buf == INPUT[:100]
        big = array.array("I", bytes(4 * len(INPUT)))
        n = f.readinto(big)
        assert big.tobytes()[:n] == INPUT[100:100 + n] and n > 0
        rest = f.read()
        assert INPUT[:100] + INPUT[100:100 + n] + rest == INPUT
        assert f.readinto(bytearray(10)) == 0


def test_read1():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        blocks = []
        while result := f.read1():
            blocks.append(result)
        assert b"".join(blocks) == INPUT
        assert f.read1() == b""


def test_read1_0():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert f.read1(0) == b""


def test_read1_10():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        blocks = []
        while result := f.read1(10):
            assert len(result) <= 10
            blocks.append(result)
        assert b"".join(blocks) == INPUT
        assert f.read1() == b""


def test_read1_multistream():
    with NLMFile(io.BytesIO(COMPRESSED * 5)) as f:
        blocks = []
        while result := f.read1():
            blocks.append(result)
        assert b"".join(blocks) == INPUT * 5
        assert f.read1() == b""


def test_peek():
    for size in (-1, 10):
        with NLMFile(io.BytesIO(COMPRESSED)) as f:
            result = f.peek(size)
            assert len(result) > 0 and INPUT.startswith(result)
            assert f.tell() == 0
            assert f.read() == INPUT
            assert f.peek() == b""


def test_peek_bad_args():
    with NLMFile(io.BytesIO(), "w", model=MODEL) as f:
        with pytest.raises(ValueError):
            f.peek()


def test_iterator():
    lines = io.BytesIO(INPUT).readlines()
    assert len(lines) > 10
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert list(iter(f)) == lines
    with NLMFile(io.BytesIO(frame(INPUT, False, CHECK_NONE))) as f:
        assert list(iter(f)) == lines


def test_readline():
    lines = io.BytesIO(INPUT).readlines()
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        for line in lines:
            assert f.readline() == line
        assert f.readline() == b""
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert f.readline(5) == lines[0][:5]


def test_readlines():
    lines = io.BytesIO(INPUT).readlines()
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert f.readlines() == lines
    with NLMFile(io.BytesIO(COMPRESSED * 2)) as f:
        assert b"".join(f.readlines()) == INPUT * 2


def test_decompress_limited():
    # decompressed data is not buffered beyond what the reader asked for
    bomb = nlmcodec.compress(b"\0" * 2_000_000, model=MODEL)
    assert len(bomb) < _file.BUFFER_SIZE
    f = NLMFile(io.BytesIO(bomb))
    assert f.read(1) == b"\0"
    assert f._buffer.raw.tell() <= 1 + io.DEFAULT_BUFFER_SIZE, "excessive amount of data was decompressed"
    f.close()


# -------------------------------------------------------------------------------------------- write
def test_write():
    with io.BytesIO() as dst:
        with NLMFile(dst, "w", model=MODEL) as f:
            assert f.write(INPUT) == len(INPUT)
            with pytest.raises(AttributeError):
                f.name
        assert dst.getvalue() == COMPRESSED
    for adapt, check in ((False, CHECK_CRC32), (True, CHECK_NONE), ("heads", CHECK_NONE)):
        with io.BytesIO() as dst:
            with NLMFile(dst, "w", model=MODEL, adapt=adapt, check=check) as f:
                f.write(INPUT)
            assert dst.getvalue() == frame(INPUT, adapt, check)
            info = nlmcodec.get_frame_info(dst.getvalue())
            assert (info.adapt, info.check) == (adapt, check)


def test_write_nothing():
    with io.BytesIO() as dst:
        with NLMFile(dst, "w", model=MODEL):
            pass
        assert dst.getvalue() == frame(b"")
        assert nlmcodec.decompress(dst.getvalue()) == b""


def test_write_10():
    with io.BytesIO() as dst:
        with NLMFile(dst, "w", model=MODEL) as f:
            for start in range(0, len(INPUT), 10):
                f.write(INPUT[start:start + 10])
        assert dst.getvalue() == COMPRESSED


def _parts():
    return INPUT[:1024], INPUT[1024:1536], INPUT[1536:]


def test_write_append():
    parts = _parts()
    expected = b"".join(frame(x) for x in parts)
    with io.BytesIO() as dst:
        for i, part in enumerate(parts):
            with NLMFile(dst, "a" if i else "w", model=MODEL) as f:
                f.write(part)
            assert f.mode == "wb"
        assert dst.getvalue() == expected
        dst.seek(0)
        with NLMFile(dst) as f:
            assert f.read() == INPUT


def _check_write_state(f, name_of_target):
    assert f.write(INPUT) == len(INPUT)
    assert f.name == name_of_target
    assert isinstance(f.fileno(), int)
    assert f.mode == "wb"
    assert f.readable() is False and f.writable() is True and f.seekable() is False
    assert f.closed is False


def test_write_to_file(tmp_path):
    name = str(tmp_path / "out.nlm")
    with NLMFile(name, "w", model=MODEL) as f:
        _check_write_state(f, name)
    _check_closed_state(f, "wb")
    assert pathlib.Path(name).read_bytes() == COMPRESSED


def test_write_to_file_with_bytes_filename(tmp_path):
    name = os.fsencode(tmp_path / "out.nlm")
    with NLMFile(name, "w", model=MODEL) as f:
        f.write(INPUT)
        assert f.name == name
    assert pathlib.Path(os.fsdecode(name)).read_bytes() == COMPRESSED


def test_write_to_fileobj(tmp_path):
    path = tmp_path / "out.nlm"
    with open(path, "wb") as raw:
        with NLMFile(raw, "w", model=MODEL) as f:
            _check_write_state(f, raw.name)
            assert f.fileno() == raw.fileno()
        _check_closed_state(f, "wb")
        assert not raw.closed
    assert path.read_bytes() == COMPRESSED


def test_write_to_fileobj_with_int_name(tmp_path):
    path = tmp_path / "out.nlm"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with open(fd, "wb") as raw:
        with NLMFile(raw, "w", model=MODEL) as f:
            _check_write_state(f, fd)
            assert f.fileno() == raw.fileno()
        _check_closed_state(f, "wb")
    assert path.read_bytes() == COMPRESSED


def test_write_append_to_file(tmp_path):
    parts = _parts()
    path = tmp_path / "out.nlm"
    for i, part in enumerate(parts):
        with NLMFile(path, "a" if i else "w", model=MODEL) as f:
            f.write(part)
        assert f.mode == "wb"
    assert path.read_bytes() == b"".join(frame(x) for x in parts)


def test_write_overwrites(tmp_path):
    path = compressed_file(tmp_path, COMPRESSED * 3)
    with NLMFile(path, "w", model=MODEL) as f:
        f.write(b"short\n")
    assert nlmcodec.decompress(path.read_bytes()) == b"short\n"


def test_write_bad_args():
    f = NLMFile(io.BytesIO(), "w", model=MODEL)
    f.close()
    with pytest.raises(ValueError):
        f.write(b"foo")
    with NLMFile(io.BytesIO(COMPRESSED), "r") as f:
        with pytest.raises(ValueError):
            f.write(b"bar")
    with NLMFile(io.BytesIO(), "w", model=MODEL) as f:
        for bad in (None, "text", 789):
            with pytest.raises(TypeError):
                f.write(bad)


def test_writelines():
    lines = io.BytesIO(INPUT).readlines()
    with io.BytesIO() as dst:
        with NLMFile(dst, "w", model=MODEL) as f:
            f.writelines(lines)
        assert dst.getvalue() == COMPRESSED


def test_write_bytes_like():
    # test_issue44439: write() of a multi-byte-item buffer returns its size in bytes
    q = array.array("Q", [1, 2, 3, 4, 5])
    length = len(q) * q.itemsize
    with io.BytesIO() as dst:
        with NLMFile(dst, "w", model=MODEL) as f:
            assert f.write(q) == length
            assert f.tell() == length
            assert f.write(memoryview(b"abc")) == 3
            assert f.write(bytearray(b"de")) == 2
        assert nlmcodec.decompress(dst.getvalue()) == q.tobytes() + b"abcde"


def test_write_error_propagates():
    class Full(io.RawIOBase):
        def writable(self):
            return True

        def write(self, b):
            raise OSError(28, "No space left on device")

    f = NLMFile(Full(), "w", model=MODEL)
    f.write(INPUT)
    with pytest.raises(OSError):
        f.close()
    assert f.closed


# -------------------------------------------------------------------------------------------- seek/tell
def test_seek_forward():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert f.seek(555) == 555
        assert f.read() == INPUT[555:]


def test_seek_forward_across_streams():
    with NLMFile(io.BytesIO(COMPRESSED * 2)) as f:
        f.seek(len(INPUT) + 123)
        assert f.read() == INPUT[123:]


def test_seek_forward_relative_to_current():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        f.read(100)
        assert f.seek(1236, 1) == 1336
        assert f.read() == INPUT[1336:]


def test_seek_forward_relative_to_end():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        assert f.seek(-555, 2) == len(INPUT) - 555
        assert f.read() == INPUT[-555:]


def test_seek_backward():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        f.read(1001)
        assert f.seek(211) == 211
        assert f.read() == INPUT[211:]


def test_seek_backward_across_streams():
    with NLMFile(io.BytesIO(COMPRESSED * 2)) as f:
        f.read(len(INPUT) + 333)
        f.seek(737)
        assert f.read() == INPUT[737:] + INPUT


def test_seek_backward_relative_to_end():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        f.seek(-150, 2)
        assert f.read() == INPUT[-150:]
        f.seek(-len(INPUT), 2)
        assert f.read(10) == INPUT[:10]


def test_seek_past_end():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        f.seek(len(INPUT) + 9001)
        assert f.tell() == len(INPUT)
        assert f.read() == b""


def test_seek_past_start():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        f.seek(-88)
        assert f.tell() == 0
        assert f.read() == INPUT


def test_seek_bad_args():
    f = NLMFile(io.BytesIO(COMPRESSED))
    f.close()
    with pytest.raises(ValueError):
        f.seek(0)
    with NLMFile(io.BytesIO(), "w", model=MODEL) as f:
        with pytest.raises(ValueError):
            f.seek(0)
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        with pytest.raises(ValueError):
            f.seek(0, 3)
        with pytest.raises((TypeError, ValueError)):
            f.seek(9, ())
        with pytest.raises(TypeError):
            f.seek(None)
        with pytest.raises(TypeError):
            f.seek(b"derp")


def test_seek_in_file_object_not_at_offset_0():
    # backward seeks go back to where the compressed data started, not to offset 0 of the file object
    prefix = b"some header of another format\n"
    src = io.BytesIO(prefix + COMPRESSED * 2)
    src.seek(len(prefix))
    with NLMFile(src) as f:
        assert f.read(len(INPUT) + 50) == INPUT + INPUT[:50]
        f.seek(20)
        assert f.read(30) == INPUT[20:50]
        f.seek(-10, 2)
        assert f.read() == INPUT[-10:]


def test_seek_not_seekable():
    class Pipe(io.RawIOBase):            # read-only, not seekable, like a pipe
        def __init__(self, data):
            self._src = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self._src.readinto(b)

    with NLMFile(Pipe(COMPRESSED * 2)) as f:
        assert not f.seekable()
        assert f.read(100) == INPUT[:100]
        with pytest.raises(io.UnsupportedOperation):
            f.seek(0)
        assert f.tell() == 100
        assert f.read() == INPUT[100:] + INPUT


def test_tell():
    with NLMFile(io.BytesIO(COMPRESSED)) as f:
        pos = 0
        while True:
            assert f.tell() == pos
            result = f.read(183)
            if not result:
                break
            pos += len(result)
        assert f.tell() == len(INPUT)
    with NLMFile(io.BytesIO(), "w", model=MODEL) as f:
        for pos in range(0, len(INPUT), 144):
            assert f.tell() == pos
            f.write(INPUT[pos:pos + 144])
        assert f.tell() == len(INPUT)


def test_tell_bad_args():
    f = NLMFile(io.BytesIO(COMPRESSED))
    f.close()
    with pytest.raises(ValueError):
        f.tell()


# -------------------------------------------------------------------------------------------- open()
def test_binary_modes():
    with nlm_open(io.BytesIO(COMPRESSED), "rb") as f:
        assert isinstance(f, NLMFile)
        assert f.read() == INPUT
    with io.BytesIO() as bio:
        with nlm_open(bio, "wb", model=MODEL) as f:
            f.write(INPUT)
        assert nlmcodec.decompress(bio.getvalue()) == INPUT
        with nlm_open(bio, "ab", model=MODEL) as f:
            f.write(INPUT)
        assert nlmcodec.decompress(bio.getvalue()) == INPUT * 2


def test_text_modes():
    text = INPUT.decode("ascii")
    text_raw = text.replace("\n", os.linesep)
    with nlm_open(io.BytesIO(COMPRESSED), "rt", encoding="ascii") as f:
        assert isinstance(f, io.TextIOWrapper)
        assert f.read() == text
    with io.BytesIO() as bio:
        with nlm_open(bio, "wt", encoding="ascii", model=MODEL) as f:
            f.write(text)
        assert nlmcodec.decompress(bio.getvalue()).decode("ascii") == text_raw
        with nlm_open(bio, "at", encoding="ascii", model=MODEL) as f:
            f.write(text)
        assert nlmcodec.decompress(bio.getvalue()).decode("ascii") == text_raw * 2


def test_text_mode_lines_and_seek():
    lines = INPUT.decode("ascii").splitlines(keepends=True)
    with nlm_open(io.BytesIO(COMPRESSED), "rt", encoding="ascii") as f:
        assert f.readline() == lines[0]
        pos = f.tell()
        rest = f.read()
        f.seek(pos)
        assert f.read() == rest
        f.seek(0)
        assert list(f) == lines


def test_filename(tmp_path):
    path = str(tmp_path / "f.nlm")
    with nlm_open(path, "wb", model=MODEL) as f:
        f.write(INPUT)
    with open(path, "rb") as f:
        assert nlmcodec.decompress(f.read()) == INPUT
    with nlm_open(path, "rb") as f:
        assert f.read() == INPUT
    with nlm_open(path, "ab", model=MODEL) as f:
        f.write(INPUT)
    with nlm_open(path) as f:             # "rb" is the default
        assert f.read() == INPUT * 2


def test_with_pathlike_filename(tmp_path):
    path = tmp_path / "f.nlm"
    with nlm_open(path, "wb", model=MODEL) as f:
        f.write(INPUT)
        assert f.name == os.fspath(path)
    with open(path, "rb") as f:
        assert nlmcodec.decompress(f.read()) == INPUT
    with nlm_open(path, "rb") as f:
        assert f.read() == INPUT
        assert f.name == os.fspath(path)


def test_bad_params(tmp_path):
    path = tmp_path / "never.nlm"
    for mode in ("", "rbt", "wbt", "r+", "rw", "t"):
        with pytest.raises(ValueError):
            nlm_open(path, mode)
    for kw in ({"encoding": "utf-8"}, {"errors": "ignore"}, {"newline": "\n"}):
        with pytest.raises(ValueError):
            nlm_open(path, "rb", **kw)
        with pytest.raises(ValueError):
            nlm_open(path, "wb", model=MODEL, **kw)
    assert not path.exists()


def test_encoding():
    text = INPUT.decode("ascii")
    text_raw = text.replace("\n", os.linesep)
    with io.BytesIO() as bio:
        with nlm_open(bio, "wt", encoding="utf-16-le", model=MODEL) as f:
            f.write(text)
        assert nlmcodec.decompress(bio.getvalue()).decode("utf-16-le") == text_raw
        bio.seek(0)
        with nlm_open(bio, "rt", encoding="utf-16-le") as f:
            assert f.read() == text


def test_encoding_error_handler():
    with io.BytesIO(frame(b"foo\xffbar")) as bio:
        with nlm_open(bio, "rt", encoding="ascii", errors="ignore") as f:
            assert f.read() == "foobar"
    with io.BytesIO(frame(b"foo\xffbar")) as bio:
        with nlm_open(bio, "rt", encoding="ascii") as f:
            with pytest.raises(UnicodeDecodeError):
                f.read()


def test_newline():
    # an explicit newline turns universal newlines off
    text = INPUT.decode("ascii")
    with io.BytesIO() as bio:
        with nlm_open(bio, "wt", encoding="ascii", newline="\n", model=MODEL) as f:
            f.write(text)
        bio.seek(0)
        with nlm_open(bio, "rt", encoding="ascii", newline="\r") as f:
            assert f.readlines() == [text]
    with io.BytesIO() as bio:
        with nlm_open(bio, "wt", encoding="ascii", newline="\r\n", model=MODEL) as f:
            f.write("a\nb\n")
        assert nlmcodec.decompress(bio.getvalue()) == b"a\r\nb\r\n"
        bio.seek(0)
        with nlm_open(bio, "rt", encoding="ascii") as f:
            assert f.read() == "a\nb\n"


def test_x_mode(tmp_path):
    for mode in ("x", "xb", "xt"):
        path = tmp_path / f"x-{mode}.nlm"
        encoding = "ascii" if "t" in mode else None
        with nlm_open(path, mode, encoding=encoding, model=MODEL):
            pass
        with pytest.raises(FileExistsError):
            with nlm_open(path, mode, encoding=encoding, model=MODEL):
                pass
        assert nlmcodec.decompress(path.read_bytes()) == b""


# -------------------------------------------------------------------------------------------- model=, threads=
@pytest.fixture(scope="module")
def own_model(tmp_path_factory):
    """A model file that is not bundled (tiny's weights, another lr: another id)."""
    tiny = nlmcodec.load_model(MODEL)
    other = tiny.with_config(lr=tiny.config["lr"] * 2 + 0.001)
    path = tmp_path_factory.mktemp("model") / "own.nlmm"
    other.save(path)
    assert nlmcodec.load_model(path).model_id != tiny.model_id
    return path


def test_open_model_option(tmp_path, own_model):
    path = tmp_path / "own.nlm"
    with nlm_open(path, "wb", model=own_model) as f:
        f.write(INPUT)
    assert nlmcodec.get_frame_info(path.read_bytes()).model_id == nlmcodec.load_model(own_model).model_id
    with nlm_open(path) as f:                       # not bundled: the reader needs model=
        with pytest.raises(NLMError, match="model"):
            f.read()
    with nlm_open(path, model=MODEL) as f:          # a different model: mismatch
        with pytest.raises(NLMError, match="model"):
            f.read()
    with nlm_open(path, model=own_model) as f:
        assert f.read() == INPUT
    with nlm_open(path, "rt", model=nlmcodec.load_model(own_model), encoding="ascii") as f:
        assert f.read() == INPUT.decode("ascii")


def test_model_option_reads_frames_without_the_model(own_model):
    # a frame that uses no model (stored/lzma blocks) reads with any model= given
    data = COMPRESSED + frame(bytes(range(256)) * 4)
    with NLMFile(io.BytesIO(data), model=own_model) as f:
        with pytest.raises(NLMError, match="model"):
            f.read()
    with NLMFile(io.BytesIO(frame(bytes(range(256)) * 4)), model=own_model) as f:
        assert f.read() == bytes(range(256)) * 4


@needs_threads
@pytest.mark.parametrize("threads", [2, 4])
def test_threads(threads):
    big = INPUT * 3
    with io.BytesIO() as bio:
        with nlm_open(bio, "wb", model=MODEL, threads=threads) as f:
            f.write(big)
        assert nlmcodec.decompress(bio.getvalue()) == big
        bio.seek(0)
        with nlm_open(bio, "rb", threads=threads) as f:
            assert f.read() == big
            f.seek(10)
            assert f.read(10) == big[10:20]
