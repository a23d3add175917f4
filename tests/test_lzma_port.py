# Owns the lzma-style tests of the incremental objects and one-shot functions (NLMCompressor,
# NLMDecompressor, compress, decompress), ported from CPython's Lib/test/test_lzma.py.
"""Compressor / decompressor / function tests, ported from CPython's Lib/test/test_lzma.py.

Our own words against our API, with the bundled "tiny" model and a few KB of real text (INPUT).  One
format: wherever lzma runs a test per format (xz, alone, raw + filter chain), we run it per frame variant
(static, dynamic and heads, CHECK_CRC32/CHECK_NONE, word-model, lzma and stored blocks).  Where lzma raises LZMAError
we expect NLMError; where lzma.decompress() ignores trailing junk, nlmcodec raises NLMError (by design).

CompressorDecompressorTestCase:
  test_simple_bad_args           ported (test_compressor_bad_args, test_decompressor_bad_args,
                                 test_bad_check_value, test_bad_check_type, test_decompress_bad_max_length);
                                 the format/preset/filters/memlimit parts are not applicable
  test_bad_filter_spec           not applicable: no filter chains
  test_decompressor_after_eof    ported
  test_decompressor_memlimit     not applicable: no memlimit option
  test_decompressor_auto, _xz, _alone, _raw_1.._raw_4
                                 ported as test_decompressor_good_input over our frame variants (one format)
  test_decompressor_chunks       ported
  test_decompressor_chunks_empty ported
  test_decompressor_chunks_maxsize  ported; output only exists once a whole block has arrived, so the
                                 first feed is the frame but its last byte instead of half of it
  test_decompressor_inputbuf_1, _2, _3  ported
  test_decompressor_unused_data  ported
  test_decompressor_bad_input    ported (non-frame data, .xz data, a bad version byte)
  test_decompressor_bug_28275    ported (a second call after an error raises NLMError again)
  test_roundtrip_xz, _alone, _raw  ported as test_roundtrip over adapt/check
  test_roundtrip_raw_empty       ported (test_roundtrip_empty_compress_calls)
  test_roundtrip_chunks          ported
  test_roundtrip_empty_chunks    ported
  test_decompressor_multistream  ported (one frame per object; the next frame stays in unused_data)
  test_compressor_bigmem, test_decompressor_bigmem  not applicable: 4 GiB inputs, not a fast test
  test_pickle                    ported (test_pickle_compressor, test_pickle_decompressor)
  test_refleaks_in_decompressor___init__  not applicable: needs a debug build (sys.gettotalrefcount)
  test_uninitialized_LZMADecompressor_crash  not applicable: a C-type crash test; ours is a Python class
FileTestCase.test_issue21872     ported here (test_issue21872_pending_output): a decompressor test
CompressDecompressFunctionTestCase:
  test_bad_args                  ported (test_function_bad_args, test_bad_check_type); the format/preset/
                                 filters/memlimit parts are not applicable
  test_decompress_memlimit       not applicable: no memlimit
  test_decompress_good_input     ported (test_decompress_good_input, over the frame variants)
  test_decompress_incomplete_input  ported
  test_decompress_bad_input      ported
  test_roundtrip                 ported (test_function_roundtrip)
  test_decompress_multistream    ported
  test_decompress_trailing_junk  ported, reversed: NLMError
  test_decompress_multistream_trailing_junk  ported, reversed: NLMError
MiscellaneousTestCase (is_check_supported, _encode/_decode_filter_properties, filter property round trip):
                                 not applicable: no such functions (two checks, no filters)
"""
import functools
import inspect
import lzma
import pickle
import random

import pytest
from conftest import lzma_block_input

import nlmcodec
from nlmcodec import CHECK_CRC32, CHECK_NONE, NLMCompressor, NLMDecompressor, NLMError
from nlmcodec._frame import DEFAULT_ADAPT
from nlmcodec._file import NLMFile, open as nlm_open  # noqa: F401  (the file layer: tests/test_file.py)

from corpus_cache import short_text

MODEL = "tiny"


INPUT = short_text()
NOISE = random.Random(8).randbytes(1024)          # incompressible: a stored block
BOGUS = b"this is not an nlmcodec frame, just some text\n" * 3


@functools.cache
def frame(data=INPUT, adapt=DEFAULT_ADAPT, check=CHECK_CRC32):
    return nlmcodec.compress(data, model=MODEL, adapt=adapt, check=check)


COMPRESSED = frame()
BAD_VERSION = COMPRESSED[:4] + b"\xee" + COMPRESSED[5:]     # the version byte follows the 4-byte magic
HAS_THREADS = "threads" in inspect.signature(NLMCompressor).parameters
needs_threads = pytest.mark.skipif(not HAS_THREADS, reason="NLMCompressor has no threads= yet (issue 8)")

# (data, adapt, check): the frame variants (our stand-in for lzma's formats)
VARIANTS = {
    "model-adapt-crc32": (INPUT, True, CHECK_CRC32),
    "model-static-crc32": (INPUT, False, CHECK_CRC32),
    "model-adapt-nocheck": (INPUT, True, CHECK_NONE),
    "model-static-nocheck": (INPUT, False, CHECK_NONE),
    "model-heads-crc32": (INPUT, "heads", CHECK_CRC32),         # heads: the default mode
    "model-heads-nocheck": (INPUT, "heads", CHECK_NONE),
    "lzma-block": (lzma_block_input(3), True, CHECK_CRC32),   # lzma wins it (conftest)
    "byte-block": (b"abc" * 3000, True, CHECK_CRC32),
    "stored-block": (NOISE, False, CHECK_CRC32),
    "empty": (b"", True, CHECK_CRC32),
}


def new_decompressor():
    return NLMDecompressor(model=MODEL)


def check_decompressor(d, data, want=INPUT, unused_data=b""):
    assert not d.eof
    assert d.decompress(data) == want
    assert d.eof and not d.needs_input
    assert d.unused_data == unused_data


def test_frames_are_what_they_claim():
    kinds = {name: {b.kind for b in nlmcodec.get_frame_info(frame(*v)).blocks} for name, v in VARIANTS.items()}
    assert kinds["model-adapt-crc32"] == kinds["model-static-crc32"] == kinds["model-heads-crc32"] == {"model"}
    assert kinds["lzma-block"] == {"lzma"} and kinds["stored-block"] == {"stored"} and kinds["empty"] == set()
    assert kinds["byte-block"] == {"byte"}


# -------------------------------------------------------------------------------------------- bad args
def test_compressor_bad_args():
    with pytest.raises(TypeError):
        NLMCompressor([])                      # options are keyword-only
    with pytest.raises(TypeError):
        NLMCompressor(model=3.45)
    with pytest.raises(FileNotFoundError):
        NLMCompressor(model="no-such-model")
    c = NLMCompressor(model=MODEL)
    with pytest.raises(TypeError):
        c.compress()
    with pytest.raises(TypeError):
        c.compress(b"foo", b"bar")
    with pytest.raises(TypeError):
        c.compress("text")
    with pytest.raises(TypeError):
        c.flush(b"blah")
    empty = c.flush()
    with pytest.raises(ValueError):
        c.compress(b"quux")
    with pytest.raises(ValueError):
        c.flush()
    assert nlmcodec.decompress(empty) == b""


@pytest.mark.parametrize("check", [2, 3, 7, -1, 16, 2 ** 70])
def test_bad_check_value(check):
    with pytest.raises(ValueError):
        NLMCompressor(model=MODEL, check=check)
    with pytest.raises(ValueError):
        nlmcodec.compress(b"", model=MODEL, check=check)


@pytest.mark.parametrize("check", ["", "none", b"asd", 1.0, None])
def test_bad_check_type(check):
    with pytest.raises(TypeError):
        NLMCompressor(model=MODEL, check=check)
    with pytest.raises(TypeError):
        nlmcodec.compress(b"", model=MODEL, check=check)


def test_decompressor_bad_args():
    with pytest.raises(TypeError):
        NLMDecompressor(())
    with pytest.raises(TypeError):
        NLMDecompressor(model=b"qw")
    d = new_decompressor()
    with pytest.raises(TypeError):
        d.decompress()
    with pytest.raises(TypeError):
        d.decompress("text")
    with pytest.raises(TypeError):
        d.decompress(COMPRESSED[:20], max_length=b"bar")
    d = new_decompressor()
    d.decompress(frame(b""))
    assert d.eof
    with pytest.raises(EOFError):
        d.decompress(b"quux")


@pytest.mark.parametrize("max_length", [b"bar", 1.5, "10"])
def test_decompress_bad_max_length(max_length):
    with pytest.raises(TypeError):
        new_decompressor().decompress(b"foo", max_length)


def test_decompressor_after_eof():
    d = new_decompressor()
    d.decompress(COMPRESSED)
    with pytest.raises(EOFError):
        d.decompress(b"nyan")
    with pytest.raises(EOFError):
        d.decompress(b"")


# -------------------------------------------------------------------------------------------- good input
@pytest.mark.parametrize("variant", VARIANTS)
def test_decompressor_good_input(variant):
    data, adapt, check = VARIANTS[variant]
    check_decompressor(new_decompressor(), frame(data, adapt, check), want=data)


def test_decompressor_finds_the_bundled_model():
    check_decompressor(NLMDecompressor(), COMPRESSED)


def test_decompressor_chunks():
    d = new_decompressor()
    out = []
    for i in range(0, len(COMPRESSED), 10):
        assert not d.eof
        out.append(d.decompress(COMPRESSED[i:i + 10]))
    assert b"".join(out) == INPUT
    assert d.eof and d.unused_data == b""


def test_decompressor_chunks_empty():
    d = new_decompressor()
    out = []
    for i in range(0, len(COMPRESSED), 10):
        assert not d.eof
        out += [d.decompress(b""), d.decompress(b""), d.decompress(b""), d.decompress(COMPRESSED[i:i + 10])]
    assert b"".join(out) == INPUT
    assert d.eof and d.unused_data == b""


def test_decompressor_chunks_maxsize():
    d = new_decompressor()
    max_length = 100
    out = []
    head = len(COMPRESSED) - 1
    # feed all but the last byte: the block is complete, more output than max_length is pending
    out.append(d.decompress(COMPRESSED[:head], max_length=max_length))
    assert not d.needs_input
    assert len(out[-1]) == max_length
    # more output without more input
    out.append(d.decompress(b"", max_length=max_length))
    assert not d.needs_input
    assert len(out[-1]) == max_length
    # more output while giving more input
    out.append(d.decompress(COMPRESSED[head:], max_length=max_length))
    assert len(out[-1]) <= max_length
    # the rest
    while not d.eof:
        out.append(d.decompress(b"", max_length=max_length))
        assert len(out[-1]) <= max_length
    assert b"".join(out) == INPUT
    assert d.unused_data == b""


def test_max_length_zero():
    d = new_decompressor()
    assert d.decompress(COMPRESSED, max_length=0) == b""
    assert not d.eof and not d.needs_input
    assert d.decompress(b"", max_length=0) == b""
    assert d.decompress(b"") == INPUT
    assert d.eof and not d.needs_input


def test_needs_input_while_incomplete():
    d = new_decompressor()
    assert d.needs_input and not d.eof
    assert d.decompress(COMPRESSED[:10]) == b""
    assert d.needs_input and not d.eof and d.unused_data == b""


def test_decompressor_inputbuf_1():
    d = new_decompressor()
    out = []
    assert d.decompress(COMPRESSED[:100], max_length=0) == b""
    out.append(d.decompress(b"", 2))
    out.append(d.decompress(COMPRESSED[100:105], 15))
    out.append(d.decompress(COMPRESSED[105:]))
    assert b"".join(out) == INPUT


def test_decompressor_inputbuf_2():
    d = new_decompressor()
    out = []
    assert d.decompress(COMPRESSED[:200], max_length=0) == b""
    out.append(d.decompress(b""))
    out.append(d.decompress(COMPRESSED[200:280], 2))
    out.append(d.decompress(COMPRESSED[280:300], 2))
    out.append(d.decompress(COMPRESSED[300:]))
    assert b"".join(out) == INPUT


def test_decompressor_inputbuf_3():
    d = new_decompressor()
    out = []
    out.append(d.decompress(COMPRESSED[:200], 5))
    out.append(d.decompress(COMPRESSED[200:300], 5))
    out.append(d.decompress(COMPRESSED[300:]))
    assert b"".join(out) == INPUT


def test_decompressor_unused_data():
    extra = b"fooblibar"
    check_decompressor(new_decompressor(), COMPRESSED + extra, unused_data=extra)


def test_unused_data_with_max_length():
    extra = b"fooblibar"
    d = new_decompressor()
    out = [d.decompress(COMPRESSED + extra, max_length=1000)]
    assert d.unused_data == b""                    # only once the frame's output has all been returned
    while not d.eof:
        out.append(d.decompress(b"", max_length=1000))
    assert b"".join(out) == INPUT and d.unused_data == extra


def test_issue21872_pending_output():
    # the input is used up but output is still pending: needs_input is False until it has been returned
    d1 = new_decompressor()
    entire = d1.decompress(COMPRESSED, max_length=-1)
    assert entire == INPUT and d1.eof
    d2 = new_decompressor()
    out1 = d2.decompress(COMPRESSED, max_length=len(INPUT) - 11)
    assert not d2.needs_input and not d2.eof
    out2 = d2.decompress(b"")
    assert len(out2) == 11 and d2.eof
    assert out1 + out2 == entire


# -------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("data", [BOGUS, lzma.compress(INPUT), b"\xb1NLX" + COMPRESSED[4:], BAD_VERSION],
                         ids=["text", "xz", "bad-magic", "bad-version"])
def test_decompressor_bad_input(data):
    with pytest.raises(NLMError):
        new_decompressor().decompress(data)


def test_decompressor_bug_28275():
    d = new_decompressor()
    with pytest.raises(NLMError):
        d.decompress(BOGUS)
    with pytest.raises(NLMError):                  # a second call: an error again, no crash
        d.decompress(BOGUS)


# -------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("adapt", [True, False, "heads"])
@pytest.mark.parametrize("check", [CHECK_CRC32, CHECK_NONE])
def test_roundtrip(adapt, check):
    c = NLMCompressor(model=MODEL, adapt=adapt, check=check)
    cdata = c.compress(INPUT) + c.flush()
    assert cdata == frame(INPUT, adapt, check)
    check_decompressor(new_decompressor(), cdata)


def test_roundtrip_empty_compress_calls():
    c = NLMCompressor(model=MODEL)
    cdata = c.compress(INPUT) + c.compress(b"") + c.compress(b"") + c.compress(b"") + c.flush()
    check_decompressor(new_decompressor(), cdata)


def test_roundtrip_chunks():
    c = NLMCompressor(model=MODEL)
    cdata = [c.compress(INPUT[i:i + 10]) for i in range(0, len(INPUT), 10)]
    cdata.append(c.flush())
    assert b"".join(cdata) == COMPRESSED
    check_decompressor(new_decompressor(), b"".join(cdata))


def test_roundtrip_empty_chunks():
    c = NLMCompressor(model=MODEL)
    cdata = []
    for i in range(0, len(INPUT), 10):
        cdata += [c.compress(INPUT[i:i + 10]), c.compress(b""), c.compress(b""), c.compress(b"")]
    cdata.append(c.flush())
    check_decompressor(new_decompressor(), b"".join(cdata))


def test_compress_accepts_bytes_like():
    c = NLMCompressor(model=MODEL)
    cdata = c.compress(bytearray(INPUT[:1000])) + c.compress(memoryview(INPUT)[1000:]) + c.flush()
    assert cdata == COMPRESSED


def test_decompressor_multistream():
    second = frame(INPUT, False, CHECK_NONE)
    d = new_decompressor()
    check_decompressor(d, COMPRESSED + second, unused_data=second)
    check_decompressor(new_decompressor(), d.unused_data)


# -------------------------------------------------------------------------------------------- pickle
def test_pickle_compressor():
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError):
            pickle.dumps(NLMCompressor(model=MODEL), proto)


def test_pickle_decompressor():
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError):
            pickle.dumps(NLMDecompressor(), proto)


# -------------------------------------------------------------------------------------------- functions
def test_function_bad_args():
    with pytest.raises(TypeError):
        nlmcodec.compress()
    with pytest.raises(TypeError):
        nlmcodec.compress([], model=MODEL)
    with pytest.raises(TypeError):
        nlmcodec.compress("text", model=MODEL)
    with pytest.raises(TypeError):
        nlmcodec.compress(b"", MODEL)                # options are keyword-only
    with pytest.raises(TypeError):
        nlmcodec.decompress()
    with pytest.raises(TypeError):
        nlmcodec.decompress([])
    with pytest.raises(TypeError):
        nlmcodec.decompress("text")
    with pytest.raises(TypeError):
        nlmcodec.decompress(COMPRESSED, MODEL)


@pytest.mark.parametrize("variant", VARIANTS)
def test_decompress_good_input(variant):
    data, adapt, check = VARIANTS[variant]
    assert nlmcodec.decompress(frame(data, adapt, check)) == data
    assert nlmcodec.decompress(frame(data, adapt, check), model=MODEL) == data


def test_decompress_incomplete_input():
    for cut in (0, 1, 5, 128, len(COMPRESSED) // 2, len(COMPRESSED) - 1):
        with pytest.raises(NLMError):
            nlmcodec.decompress(COMPRESSED[:cut])


@pytest.mark.parametrize("data", [BOGUS, lzma.compress(INPUT), BAD_VERSION], ids=["text", "xz", "bad-version"])
def test_decompress_bad_input(data):
    with pytest.raises(NLMError):
        nlmcodec.decompress(data)


@pytest.mark.parametrize("adapt", [True, False, "heads"])
@pytest.mark.parametrize("check", [CHECK_CRC32, CHECK_NONE])
def test_function_roundtrip(adapt, check):
    cdata = nlmcodec.compress(INPUT, model=MODEL, adapt=adapt, check=check)
    assert nlmcodec.decompress(cdata) == INPUT
    info = nlmcodec.get_frame_info(cdata)
    assert (info.adapt, info.check) == (adapt, check)


def test_decompress_multistream():
    data = COMPRESSED + frame(INPUT, False, CHECK_NONE) + frame(b"") + frame(b"abc" * 3000)
    assert nlmcodec.decompress(data) == INPUT * 2 + b"abc" * 3000


def test_decompress_trailing_junk():
    with pytest.raises(NLMError, match="trailing"):
        nlmcodec.decompress(COMPRESSED + BOGUS)


def test_decompress_multistream_trailing_junk():
    with pytest.raises(NLMError, match="trailing"):
        nlmcodec.decompress(COMPRESSED * 3 + BOGUS)
    with pytest.raises(NLMError):
        nlmcodec.decompress(COMPRESSED * 3 + b"\0")


# -------------------------------------------------------------------------------------------- threads
@needs_threads
@pytest.mark.parametrize("threads", [2, 4])
def test_threads_roundtrip(threads):
    c = NLMCompressor(model=MODEL, threads=threads)
    cdata = b"".join(c.compress(INPUT[i:i + 1000]) for i in range(0, len(INPUT), 1000)) + c.flush()
    for d_threads in (1, threads):
        d = NLMDecompressor(model=MODEL, threads=d_threads)
        check_decompressor(d, cdata)
    assert nlmcodec.decompress(cdata) == INPUT
