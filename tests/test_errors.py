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
           "text-heads": nlmcodec.compress(TEXT, model=tiny_model),           # the default mode
           "stored": nlmcodec.compress(random.Random(5).randbytes(300), model=tiny_model, adapt=True)}
    return out


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.one_lane] if n in ("text-static", "text-dynamic")
                                                else [])          # (the cffi lane: the default mode, heads)
                                  for n in ("text-static", "text-dynamic", "text-heads", "stored")])
def test_truncation_at_every_offset(frames, tiny_model, name):
    f = frames[name]
    for k in range(len(f)):
        with pytest.raises(nlmcodec.NLMError, match="truncated frame"):
            nlmcodec.decompress(f[:k], model=tiny_model)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.one_lane] if n in ("text-static", "text-dynamic")
                                                else [])          # (the cffi lane: the default mode, heads)
                                  for n in ("text-static", "text-dynamic", "text-heads", "stored")])
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
    nxt = nlmcodec.FORMAT_VERSION + 1
    with pytest.raises(nlmcodec.NLMError, match=f"unsupported format version {nxt}: written by a newer"):
        nlmcodec.decompress(_edit_header(f, 4, nxt))
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
    h = frames["text-heads"]                              # the heads flag without the adapt flag means nothing
    assert h[5] & _frame.FLAG_HEADS and h[5] & _frame.FLAG_ADAPT
    with pytest.raises(nlmcodec.NLMError, match="unknown flags"):
        nlmcodec.decompress(_edit_header(h, 5, h[5] ^ _frame.FLAG_ADAPT))
    p = _frame.HEADER_SIZE + 3 + 3 + 1 + 10           # a byte of the stored payload
    with pytest.raises(nlmcodec.NLMError, match="CRC32 mismatch"):
        nlmcodec.decompress(_edit_header(f, p, f[p] ^ 0x80))
    with pytest.raises(nlmcodec.NLMError, match="index checksum mismatch"):
        nlmcodec.decompress(_edit_header(f, len(f) - 8, f[-8] ^ 0x01))


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
    mk = lambda body: _frame.header(False, _frame.CHECK_CRC32, None) + body
    huge = _frame.varint(_frame.MAX_SIZE)
    # a stored block claiming 2**63-1 bytes: rejected from its header, nothing allocated
    with pytest.raises(nlmcodec.NLMError, match="larger than"):
        nlmcodec.decompress(mk(b"\x04" + huge + huge) + bytes(40))
    with pytest.raises(nlmcodec.NLMError, match="larger than"):
        nlmcodec.decompress(mk(b"\x05" + _frame.varint(1 << 27) + _frame.varint(5)) + bytes(40))
    with pytest.raises(nlmcodec.NLMError, match="varint too long"):
        nlmcodec.decompress(mk(b"\x04" + b"\xff" * 12))
    with pytest.raises(nlmcodec.NLMError, match="non-canonical"):
        nlmcodec.decompress(mk(b"\x04\x81\x00\x01") + bytes(20))
    with pytest.raises(nlmcodec.NLMError, match="byte-model block 0 has a payload of 1 bytes"):
        nlmcodec.decompress(mk(b"\x07\x01\x01") + bytes(20))       # kind 3: a byte-model block (§7.2)
    with pytest.raises(nlmcodec.NLMError, match="unknown type"):
        nlmcodec.decompress(mk(b"\x0f\x01\x01") + bytes(20))
    with pytest.raises(nlmcodec.NLMError, match="unknown type"):
        nlmcodec.decompress(mk(b"\x0c\x01\x01") + bytes(20))
    with pytest.raises(nlmcodec.NLMError, match="without a model id"):
        nlmcodec.decompress(mk(b"\x06\x01\x01") + bytes(20))
    with pytest.raises(nlmcodec.NLMError, match="does not start a group"):
        nlmcodec.decompress(mk(b"\x00\x01\x01x") + bytes(20))
    with pytest.raises(nlmcodec.NLMError, match="payload larger"):
        nlmcodec.decompress(mk(b"\x05\x01\x02") + bytes(20))


def test_random_bytes_expansion_bound(tiny_model):
    from nlmcodec import _encode
    data = os.urandom(1_000_000)
    f = nlmcodec.compress(data, model=tiny_model)
    assert len(f) <= _encode.max_compressed_size(len(data))
    # one group of 16 stored blocks (7-byte headers), a 10-byte header with the model id (an input over
    # HEADER_WAIT: the header is written before the encoder knows no block uses the model), 25-byte trailer
    assert len(f) == len(data) + 10 + _frame.MODEL_ID_SIZE + 16 * 7 + 25 and len(data) > _encode.HEADER_WAIT
    assert nlmcodec.decompress(f) == data
    big = os.urandom(_encode.GROUP_SIZE + (256 << 10))      # two groups: the model id is written
    f = nlmcodec.compress(big, model=tiny_model)
    assert len(f) <= _encode.max_compressed_size(len(big))
    assert nlmcodec.decompress(f) == big


def test_random_garbage_never_crashes():
    r = random.Random(7)
    for v in (1, 2):
        for _ in range(300):
            g = _frame.MAGIC + bytes([v]) + r.randbytes(r.randrange(0, 80))
            with pytest.raises(nlmcodec.NLMError):
                nlmcodec.decompress(g)


def _handmade_model_frame(model_id):
    blocks = _frame.block_header(_frame.BLOCK_MODEL, True, 10, 8) + bytes(8)
    return (_frame.header(False, _frame.CHECK_CRC32, model_id) + blocks
            + _frame.trailer([(10, len(blocks))], 10, _frame.CHECK_CRC32, 0))


def test_model_mismatch_on_header(tiny_model):
    f = _handmade_model_frame(tiny_model.model_id)
    other = tiny_model.with_config(lr=0.321)
    with pytest.raises(nlmcodec.NLMError, match="model mismatch"):
        nlmcodec.decompress(f, model=other)
    with pytest.raises(nlmcodec.NLMError, match=r"needs model e{12}\.\.\. .*, which is not bundled"):
        nlmcodec.decompress(_handmade_model_frame(b"\xee" * 32))
    with pytest.raises(nlmcodec.NLMError):     # right model, garbage payload: corrupt block or CRC mismatch
        nlmcodec.decompress(f, model=tiny_model)
