"""Public API: pinned names and signatures, model handling, frame info, incremental == one-shot."""
import inspect
import lzma

import pytest

import nlmcodec
from nlmcodec import _frame
from conftest import word_salad

TEXT = word_salad(4000) + b"\nThe End.\n"


def test_all_is_pinned():
    assert sorted(nlmcodec.__all__) == sorted([
        "CHECK_CRC32", "CHECK_NONE", "FORMAT_VERSION", "FrameInfo", "NLMCompressor", "NLMDecompressor",
        "NLMError", "backend", "compress", "decompress", "get_frame_info", "load_model"])
    for name in nlmcodec.__all__:
        assert hasattr(nlmcodec, name), name
    assert nlmcodec.FORMAT_VERSION == 1
    assert (nlmcodec.CHECK_NONE, nlmcodec.CHECK_CRC32) == (0, 1)
    assert nlmcodec.backend in ("cython", "cffi")
    assert isinstance(nlmcodec.__version__, str) and nlmcodec.__version__[0].isdigit()
    assert issubclass(nlmcodec.NLMError, Exception)


def _sig(f):
    return str(inspect.signature(f).replace(return_annotation=inspect.Signature.empty))


def test_signatures():
    assert _sig(nlmcodec.compress) == "(data, /, *, model=None, adapt=True, check=1)"
    assert _sig(nlmcodec.decompress) == "(data, /, *, model=None)"
    assert _sig(nlmcodec.get_frame_info) == "(data)"
    assert _sig(nlmcodec.NLMCompressor) == "(*, model=None, adapt=True, check=1)"
    assert list(inspect.signature(nlmcodec.NLMDecompressor).parameters) == ["model"]
    assert list(inspect.signature(nlmcodec.NLMDecompressor.decompress).parameters)[:3] == ["self", "data", "max_length"]
    assert nlmcodec.FrameInfo._fields == ("format_version", "adapt", "check", "model_id", "decompressed_size", "blocks")


def test_bad_arguments(tiny_model):
    with pytest.raises(TypeError):
        nlmcodec.compress("text", model=tiny_model)
    with pytest.raises(TypeError):
        nlmcodec.decompress("text")
    with pytest.raises(ValueError):
        nlmcodec.compress(b"x", model=tiny_model, check=7)
    with pytest.raises(TypeError):
        nlmcodec.compress(b"x", tiny_model)            # options are keyword-only
    with pytest.raises(FileNotFoundError):
        nlmcodec.load_model("no-such-model-name")
    with pytest.raises(TypeError):
        nlmcodec.load_model(42)


def test_load_model_cached(tiny_model_path):
    assert nlmcodec.load_model(tiny_model_path) is nlmcodec.load_model(tiny_model_path)
    m = nlmcodec.load_model(tiny_model_path)
    assert nlmcodec.load_model(m) is m
    assert len(m.model_id) == 32


@pytest.mark.parametrize("adapt", [False, True])
def test_frame_info(tiny_model, adapt):
    f = nlmcodec.compress(TEXT, model=tiny_model, adapt=adapt)
    info = nlmcodec.get_frame_info(f)
    assert info.format_version == 1 and info.adapt is adapt and info.check == nlmcodec.CHECK_CRC32
    assert info.decompressed_size == len(TEXT)
    assert sum(b.size for b in info.blocks) == len(TEXT)
    assert all(b.kind in ("stored", "lzma", "model") for b in info.blocks)
    uses_model = any(b.kind == "model" for b in info.blocks)
    assert (info.model_id == tiny_model.model_id) if uses_model else (info.model_id is None)
    assert nlmcodec.decompress(f, model=tiny_model) == TEXT
    e = nlmcodec.get_frame_info(nlmcodec.compress(b"", model=tiny_model, check=nlmcodec.CHECK_NONE))
    assert (e.decompressed_size, e.blocks, e.model_id, e.check) == (0, (), None, 0)


def _model_frame(model, adapt=False):
    """A frame that really uses the word model (the codec's own payload beats lzma by > 32 bytes)."""
    for n in (3000, 20000):
        f = nlmcodec.compress(word_salad(n, seed=n), model=model, adapt=adapt)
        if nlmcodec.get_frame_info(f).model_id is not None:
            return f, word_salad(n, seed=n)
    pytest.skip("the test model never beats lzma on word salad")


def test_model_mismatch_and_missing(tiny_model):
    f, raw = _model_frame(tiny_model)
    other = tiny_model.with_config(lr=tiny_model.config["lr"] * 2 + 0.001)
    assert other.model_id != tiny_model.model_id
    with pytest.raises(nlmcodec.NLMError, match="model mismatch"):
        nlmcodec.decompress(f, model=other)
    if tiny_model.model_id not in [nlmcodec.load_model(n).model_id for n in nlmcodec._bundled_files()]:
        with pytest.raises(nlmcodec.NLMError, match=f"needs model {tiny_model.model_id.hex()}"):
            nlmcodec.decompress(f)
    assert nlmcodec.decompress(f, model=tiny_model) == raw


def test_no_model_frame_needs_no_model(tiny_model):
    f = nlmcodec.compress(bytes(range(256)) * 10, model=tiny_model)
    assert nlmcodec.get_frame_info(f).model_id is None
    other = tiny_model.with_config(lr=0.5)
    assert nlmcodec.decompress(f, model=other) == bytes(range(256)) * 10


def _chunks(b, n):
    return [b[i:i + n] for i in range(0, len(b), n)] or [b""]


@pytest.mark.parametrize("adapt", [False, True])
@pytest.mark.parametrize("chunk", [1, 7, 4096, 10 ** 7])
def test_incremental_equals_one_shot(tiny_model, adapt, chunk):
    data = TEXT[:3000] if chunk == 1 else TEXT
    one = nlmcodec.compress(data, model=tiny_model, adapt=adapt)
    c = nlmcodec.NLMCompressor(model=tiny_model, adapt=adapt)
    out = b"".join(c.compress(x) for x in _chunks(data, chunk)) + c.flush()
    assert out == one
    with pytest.raises(ValueError):
        c.flush()
    with pytest.raises(ValueError):
        c.compress(b"more")
    d = nlmcodec.NLMDecompressor(model=tiny_model)
    got, rest = b"", b""
    for x in _chunks(one + b"TAIL", chunk):
        if d.eof:
            rest += x
            continue
        got += d.decompress(x, max_length=1000)
        while not d.needs_input and not d.eof:
            got += d.decompress(b"", max_length=1000)
    assert got == data and d.eof and d.unused_data + rest == b"TAIL" and not d.needs_input
    with pytest.raises(EOFError):
        d.decompress(b"x")


def test_block_split_independent_of_chunking():
    data = (b"line of text " * 7 + b"\n") * 40000          # 3.6 MB, several blocks
    frames = set()
    for chunk in (len(data), 1 << 20, 65537):
        e = _frame.FrameEncoder(None, None, True, 1)
        for x in _chunks(data, chunk):
            e.feed(x)
        frames.add(e.finish())
    assert len(frames) == 1
    f = frames.pop()
    assert nlmcodec.decompress(f) == data


def test_block_cut_points():
    line = b"a" * 99 + b"\n"
    buf = bytearray(line * 12000)
    k = _frame.cut_point(buf)
    assert buf[k - 1:k] == b"\n" and _frame.BLOCK_MAX - _frame.CUT_WINDOW < k <= _frame.BLOCK_MAX
    buf = bytearray(b"x" * (2 << 20))
    assert _frame.cut_point(buf) == _frame.BLOCK_MAX
    buf = bytearray((b"y" * 50 + b" ") * 50000)
    k = _frame.cut_point(buf)
    assert buf[k - 1:k] == b" " and k > _frame.BLOCK_MAX - _frame.CUT_WINDOW


def test_concatenated_frames(tiny_model):
    a, b = TEXT[:2000], bytes(range(200))
    fa = nlmcodec.compress(a, model=tiny_model, adapt=True)
    fb = nlmcodec.compress(b, model=tiny_model, adapt=False, check=nlmcodec.CHECK_NONE)
    assert nlmcodec.decompress(fa + fb + fa, model=tiny_model) == a + b + a
    d = nlmcodec.NLMDecompressor(model=tiny_model)       # the object stops after one frame
    assert d.decompress(fa + fb) == a and d.eof and d.unused_data == fb


def test_lzma_block_is_documented_raw_lzma2():
    data = b"abcabcabd" * 1000
    e = _frame.FrameEncoder(None, None, False, 0)
    e.feed(data)
    f = e.finish()
    info = nlmcodec.get_frame_info(f)
    assert [b.kind for b in info.blocks] == ["lzma"]
    payload = f[len(f) - info.blocks[0].compressed_size:]
    filters = [{"id": lzma.FILTER_LZMA2, "dict_size": _frame.lzma_dict_size(len(data))}]
    assert lzma.decompress(payload, format=lzma.FORMAT_RAW, filters=filters) == data
    assert _frame.lzma_dict_size(1) == 4096 and _frame.lzma_dict_size(5000) == 8192
    assert _frame.lzma_dict_size(1 << 30) == 1 << 26


class StatefulFakeCodec:
    """A deterministic stand-in for _core.Codec whose payload depends on all earlier encoded blocks, to test
    that the frame layer restores the state after a fallback block and carries it across blocks."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.state, self.saved = 0, None

    def save(self):
        self.saved = self.state

    def restore(self):
        self.state = self.saved

    def _key(self, i):
        return (self.state * 31 + i) & 0xFF

    def encode_block(self, data):
        if data.startswith(b"!"):
            raise nlmcodec.NLMError("encode: input not codable by the word model")
        if data.startswith(b"?"):           # the model is bad here: payload larger than lzma and stored
            self.state = (self.state + len(data) + 1) & 0xFFFF
            return bytes(len(data) + 1)
        out = bytes([data[0] ^ self._key(0), len(data) & 0xFF, (len(data) >> 8) & 0xFF, (len(data) >> 16) & 0xFF])
        self.state = (self.state + data[0]) & 0xFFFF
        return out

    def decode_block(self, payload, size):
        first = payload[0] ^ self._key(0)
        self.state = (self.state + first) & 0xFFFF
        return bytes([first]) + b"x" * (size - 1)


def test_state_restored_after_fallback_blocks():
    big = 1 << 20
    blocks = [b"A" + b"x" * (big - 1), b"?" + b"q" * (big - 1),
              b"!" + b"z" * (big - 1), b"C" + b"x" * 5000]
    data = b"".join(blocks)
    codec = StatefulFakeCodec()
    e = _frame.FrameEncoder(codec, b"\x11" * 32, False, 1)
    e.feed(data)
    f = e.finish()
    kinds = [b.kind for b in nlmcodec.get_frame_info(f).blocks]
    assert kinds[0] == "model" and kinds[1] != "model" and kinds[2] != "model" and kinds[3] == "model"
    dec = _frame.FrameDecoder(lambda mid, adapt: StatefulFakeCodec())
    assert dec.feed(f, complete=True) == data and dec.eof
