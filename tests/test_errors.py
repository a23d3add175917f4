"""Corrupt, truncated and foreign input: always NLMError with a clear message, never a crash or wrong output."""
import os
import random

import pytest

import nlmcodec
from nlmcodec import _frame
from conftest import word_salad

TEXT = word_salad(600) + b"\n"


@pytest.fixture(scope="module")
def frames(tiny_model):
    out = {"text-static": nlmcodec.compress(TEXT, model=tiny_model, adapt=False),
           "text-dynamic": nlmcodec.compress(TEXT, model=tiny_model, adapt=True),
           "stored": nlmcodec.compress(random.Random(5).randbytes(300), model=tiny_model)}
    return out


@pytest.mark.parametrize("name", ["text-static", "text-dynamic", "stored"])
def test_truncation_at_every_offset(frames, tiny_model, name):
    f = frames[name]
    for k in range(len(f)):
        with pytest.raises(nlmcodec.NLMError, match="truncated frame"):
            nlmcodec.decompress(f[:k], model=tiny_model)


@pytest.mark.parametrize("name", ["text-static", "text-dynamic", "stored"])
def test_single_bit_flips(frames, tiny_model, name):
    f = frames[name]
    raw = nlmcodec.decompress(f, model=tiny_model)
    detected = 0
    for i in range(len(f)):
        for bit in range(8):
            g = bytearray(f)
            g[i] ^= 1 << bit
            try:
                out = nlmcodec.decompress(bytes(g), model=tiny_model)
            except nlmcodec.NLMError:
                detected += 1
            else:  # a flip in bits the decoder never reads may go unnoticed, but never yields wrong output
                assert out == raw, (i, bit)
    assert detected >= 0.99 * 8 * len(f)


def test_trailing_garbage_and_concatenation(frames, tiny_model):
    f = frames["text-static"]
    for junk in (b"\x00", b"garbage", b"\xb1NL", f[:10]):
        with pytest.raises(nlmcodec.NLMError, match="trailing garbage|truncated frame"):
            nlmcodec.decompress(f + junk, model=tiny_model)
    with pytest.raises(nlmcodec.NLMError, match="trailing garbage: 7 bytes"):
        nlmcodec.decompress(f + b"garbage", model=tiny_model)


def _edit_header(f, pos, value):
    return f[:pos] + bytes([value]) + f[pos + 1:]


def test_version_magic_flags(frames):
    f = frames["stored"]
    with pytest.raises(nlmcodec.NLMError, match="unsupported format version 2"):
        nlmcodec.decompress(_edit_header(f, 4, 2))
    with pytest.raises(nlmcodec.NLMError, match="unsupported format version 0"):
        nlmcodec.get_frame_info(_edit_header(f, 4, 0))
    with pytest.raises(nlmcodec.NLMError, match="bad magic"):
        nlmcodec.decompress(b"\xfd7zXZ\x00" + f[6:])
    with pytest.raises(nlmcodec.NLMError, match="unknown flags"):
        nlmcodec.decompress(_edit_header(f, 5, f[5] | 0x40))
    with pytest.raises(nlmcodec.NLMError, match="unknown check type"):
        nlmcodec.decompress(_edit_header(f, 5, f[5] | 0x06))
    with pytest.raises(nlmcodec.NLMError, match="header checksum mismatch"):
        nlmcodec.decompress(_edit_header(f, 5, f[5] ^ 0x01))
    with pytest.raises(nlmcodec.NLMError, match="CRC32 mismatch"):
        nlmcodec.decompress(f[:-1] + bytes([f[-1] ^ 0x80]))


def test_wrong_model(tiny_model):
    f = nlmcodec.compress(word_salad(20000, seed=3), model=tiny_model, adapt=False)
    if nlmcodec.get_frame_info(f).model_id is None:
        pytest.skip("the test model never beats lzma here")
    other = tiny_model.with_config(lr=0.123)
    with pytest.raises(nlmcodec.NLMError, match="model mismatch"):
        nlmcodec.decompress(f, model=other)
    bad_id = f[:6] + bytes(32) + f[38:]          # header CRC catches a changed model id first
    with pytest.raises(nlmcodec.NLMError, match="header checksum mismatch"):
        nlmcodec.decompress(bad_id, model=tiny_model)


def test_header_limits_before_allocation():
    mk = lambda body: _frame.MAGIC + bytes([1, 0x08 | 0x02]) + body
    huge = _frame._varint(_frame.MAX_SIZE)
    # 2**63-1 bytes announced, one stored block claiming it all: rejected from the table, nothing allocated
    f = mk(huge + _frame._varint(1) + b"\x00" + huge + huge)
    f += (0).to_bytes(4, "little")
    with pytest.raises(nlmcodec.NLMError):
        nlmcodec.decompress(f)
    with pytest.raises(nlmcodec.NLMError, match="blocks for"):
        nlmcodec.decompress(mk(_frame._varint(3) + _frame._varint(4)) + bytes(40))
    with pytest.raises(nlmcodec.NLMError, match="varint too long"):
        nlmcodec.decompress(mk(b"\xff" * 12))
    with pytest.raises(nlmcodec.NLMError, match="non-canonical"):
        nlmcodec.decompress(mk(b"\x81\x00" + b"\x00") + bytes(20))
    with pytest.raises(nlmcodec.NLMError, match="unknown type"):
        nlmcodec.decompress(mk(_frame._varint(1) + _frame._varint(1) + b"\x07\x01\x01") + bytes(20))
    with pytest.raises(nlmcodec.NLMError, match="without a model"):
        nlmcodec.decompress(mk(_frame._varint(1) + _frame._varint(1) + b"\x02\x01\x01") + bytes(20))


def test_random_bytes_expansion_bound(tiny_model):
    data = os.urandom(1_000_000)
    f = nlmcodec.compress(data, model=tiny_model)
    assert len(f) <= _frame.max_compressed_size(len(data)) == len(data) + 37
    assert len(f) == len(data) + 25
    assert nlmcodec.decompress(f) == data


def test_random_garbage_never_crashes():
    r = random.Random(7)
    for _ in range(300):
        g = _frame.MAGIC + bytes([1]) + r.randbytes(r.randrange(0, 80))
        with pytest.raises(nlmcodec.NLMError):
            nlmcodec.decompress(g)


def _handmade_model_frame(model_id):
    import zlib
    hdr = bytearray(_frame.MAGIC) + bytes([1, 0x02]) + model_id + _frame._varint(10) + _frame._varint(1)
    hdr += b"\x02" + _frame._varint(10) + _frame._varint(8)
    hdr += zlib.crc32(hdr).to_bytes(4, "little")
    return bytes(hdr) + bytes(8) + bytes(4)


def test_model_mismatch_on_header(tiny_model):
    f = _handmade_model_frame(tiny_model.model_id)
    other = tiny_model.with_config(lr=0.321)
    with pytest.raises(nlmcodec.NLMError, match="model mismatch"):
        nlmcodec.decompress(f, model=other)
    with pytest.raises(nlmcodec.NLMError, match="needs model ee+, which is not bundled"):
        nlmcodec.decompress(_handmade_model_frame(b"\xee" * 32))
    with pytest.raises(nlmcodec.NLMError):     # right model, garbage payload: corrupt block or CRC mismatch
        nlmcodec.decompress(f, model=tiny_model)
