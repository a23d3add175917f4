"""Public API: pinned names and signatures, model handling, frame info, incremental == one-shot."""
import inspect
import lzma

import pytest

import nlmcodec
from nlmcodec import _encode, _frame, _registry
from conftest import lzma_block_input, word_salad

TEXT = word_salad(4000) + b"\nThe End.\n"


def test_all_is_pinned():
    assert sorted(nlmcodec.__all__) == sorted([
        "CHECK_CRC32", "CHECK_NONE", "FORMAT_VERSION", "FrameInfo", "ModelFormatError", "NLMCompressor",
        "NLMDecompressor", "NLMError", "NLMFile", "add_model_dir", "backend", "compress", "decompress", "explain", "get_frame_info", "load_model", "open"])
    for name in nlmcodec.__all__:
        assert hasattr(nlmcodec, name), name
    assert nlmcodec.FORMAT_VERSION == 17
    assert (nlmcodec.CHECK_NONE, nlmcodec.CHECK_CRC32) == (0, 1)
    assert nlmcodec.backend in ("cython", "cffi")
    assert isinstance(nlmcodec.__version__, str) and nlmcodec.__version__[0].isdigit()
    assert issubclass(nlmcodec.NLMError, Exception)


def _sig(f):
    return str(inspect.signature(f).replace(return_annotation=inspect.Signature.empty))


def test_signatures():
    assert _sig(nlmcodec.compress) == "(data, /, *, model=None, adapt='heads', check=1, threads=1)"
    assert _sig(nlmcodec.decompress) == "(data, /, *, model=None, threads=1, max_output=None, memlimit=None)"
    assert _sig(nlmcodec.get_frame_info) == "(data)"
    assert _sig(nlmcodec.NLMCompressor) == "(*, model=None, adapt='heads', check=1, threads=1)"
    assert list(inspect.signature(nlmcodec.NLMDecompressor).parameters) == ["model", "threads", "max_output", "memlimit"]
    assert list(inspect.signature(nlmcodec.NLMDecompressor.decompress).parameters)[:3] == ["self", "data", "max_length"]
    assert nlmcodec.FrameInfo._fields == ("format_version", "adapt", "check", "model_id", "decompressed_size",
                                          "blocks", "groups")


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


@pytest.mark.parametrize("adapt", [False, True, "heads"])
def test_frame_info(tiny_model, adapt):
    f = nlmcodec.compress(TEXT, model=tiny_model, adapt=adapt)
    info = nlmcodec.get_frame_info(f)
    assert info.format_version == nlmcodec.FORMAT_VERSION and info.adapt == adapt and info.check == nlmcodec.CHECK_CRC32
    assert type(info.adapt) is type(adapt)
    assert info.decompressed_size == len(TEXT)
    assert sum(b.size for b in info.blocks) == len(TEXT)
    assert all(b.kind in ("stored", "lzma", "model", "byte") for b in info.blocks)
    uses_model = any(b.kind == "model" for b in info.blocks)
    assert (info.model_id == tiny_model.model_id) if uses_model else (info.model_id is None)
    assert nlmcodec.decompress(f, model=tiny_model) == TEXT
    e = nlmcodec.get_frame_info(nlmcodec.compress(b"", model=tiny_model, check=nlmcodec.CHECK_NONE))
    assert (e.decompressed_size, e.blocks, e.model_id, e.check, e.groups) == (0, (), None, 0, ())
    assert sum(g.size for g in info.groups) == len(TEXT) and len(info.groups) == 1


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
    if tiny_model.model_id not in [nlmcodec.load_model(n).model_id for n in _registry.model_files()]:
        with pytest.raises(nlmcodec.NLMError, match=f"needs model {tiny_model.model_id.hex()[:12]}"):
            nlmcodec.decompress(f)
    assert nlmcodec.decompress(f, model=tiny_model) == raw


def test_no_model_frame_needs_no_model(tiny_model):
    f = nlmcodec.compress(bytes(range(256)) * 10, model=tiny_model)
    assert nlmcodec.get_frame_info(f).model_id is None
    other = tiny_model.with_config(lr=0.5)
    assert nlmcodec.decompress(f, model=other) == bytes(range(256)) * 10


def _chunks(b, n):
    return [b[i:i + n] for i in range(0, len(b), n)] or [b""]


@pytest.mark.parametrize("adapt", [False, True, "heads"])
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


def _first_output(data, chunk, **kw):
    """(frame, input bytes fed when the first bytes came out, most input fed between two outputs after that) of
    an NLMCompressor fed data in pieces of chunk bytes."""
    c = nlmcodec.NLMCompressor(**kw)
    out, first, last, gap = [], None, None, 0
    for i in range(0, len(data), chunk):
        o = c.compress(data[i:i + chunk])
        if o:
            fed = min(len(data), i + chunk)
            first = fed if first is None else first
            gap = max(gap, fed - last) if last is not None else gap
            last = fed
        out.append(o)
    out.append(c.flush())
    return b"".join(out), first, gap


@pytest.mark.parametrize("adapt", [False, "heads"], ids=["static", "heads"])
def test_output_as_it_is_made(tiny_model, adapt):
    """Issue 43: the compressor returns blocks as they are decided, not a group at a time: fed 1 MiB of text in
    16 KiB pieces, the first bytes come out before 256 KiB have gone in and then at least every 192 KiB (a 64
    KiB block is decided once the next 64 KiB are in), with one thread or two; the frame is compress()'s."""
    data = (TEXT * 300)[:1 << 20]
    one = nlmcodec.compress(data, model=tiny_model, adapt=adapt)
    for threads in (1, 2):
        frame, first, gap = _first_output(data, 16 << 10, model=tiny_model, adapt=adapt, threads=threads)
        assert frame == one and first < 256 << 10 and gap <= 192 << 10, (threads, first, gap)


@pytest.mark.slow
def test_output_as_it_is_made_default_model():
    """Issue 43's figure: 6 MiB of English fed in 16 KiB pieces to NLMCompressor() (the default models, the
    default mode): bytes come out before 256 KiB of input, and the frame equals compress()'s."""
    import corpus_cache as cc

    data = b"".join(cc.read(cc.find(n)) for n in ("book1", "book2", "lcet10.txt", "plrabn12.txt", "news"))
    data = (data + cc.read(cc.find("dickens")))[:6 << 20]
    frame, first, gap = _first_output(data, 16 << 10)
    assert first < 256 << 10 and gap <= 192 << 10, (first, gap)
    assert frame == nlmcodec.compress(data) and len(nlmcodec.get_frame_info(frame).groups) == 2


@pytest.mark.one_lane      # the frame layer's block cuts; its binding calls are every round trip's
def test_block_split_independent_of_chunking():
    data = (b"line of text " * 7 + b"\n") * 40000          # 3.6 MB, several blocks
    frames = set()
    for chunk in (len(data), 1 << 20, 65537):
        e = _encode.FrameEncoder(None, None, None, True, 1)
        frames.add(b"".join(e.feed(x) for x in _chunks(data, chunk)) + e.finish())
    assert len(frames) == 1
    f = frames.pop()
    assert nlmcodec.decompress(f) == data


def test_block_cut_points():
    B, W = _encode.BLOCK_SIZE, _encode.CUT_WINDOW
    line = b"a" * 99 + b"\n"
    buf = bytearray(line * 2000)
    k = _encode.cut_point(buf, 0, B)
    assert buf[k - 1:k] == b"\n" and B - W < k <= B
    k2 = _encode.cut_point(buf, k, B)
    assert buf[k + k2 - 1:k + k2] == b"\n" and B - W < k2 <= B
    assert _encode.cut_point(bytearray(b"x" * (2 * B)), 0, B) == B
    buf = bytearray((b"y" * 50 + b" ") * 5000)
    k = _encode.cut_point(buf, 0, B)
    assert buf[k - 1:k] == b" " and k > B - W


def test_concatenated_frames(tiny_model):
    a, b = TEXT[:2000], bytes(range(200))
    fa = nlmcodec.compress(a, model=tiny_model, adapt=True)
    fb = nlmcodec.compress(b, model=tiny_model, adapt=False, check=nlmcodec.CHECK_NONE)
    assert nlmcodec.decompress(fa + fb + fa, model=tiny_model) == a + b + a
    d = nlmcodec.NLMDecompressor(model=tiny_model)       # the object stops after one frame
    assert d.decompress(fa + fb) == a and d.eof and d.unused_data == fb


def test_lzma_block_is_documented_raw_lzma2():
    data = lzma_block_input()                        # lzma beats the byte model on it
    e = _encode.FrameEncoder(None, None, None, False, 0)
    f = e.feed(data) + e.finish()
    info = nlmcodec.get_frame_info(f)
    assert [b.kind for b in info.blocks] == ["lzma"]
    start = _frame.HEADER_SIZE + len(_frame.block_header(_frame.BLOCK_LZMA, True, len(data),
                                                              info.blocks[0].compressed_size))
    payload = f[start:start + info.blocks[0].compressed_size]
    filters = [{"id": lzma.FILTER_LZMA2, "dict_size": _frame.lzma_dict_size(len(data))}]
    assert lzma.decompress(payload, format=lzma.FORMAT_RAW, filters=filters) == data
    assert _frame.lzma_dict_size(1) == 4096 and _frame.lzma_dict_size(5000) == 8192
    assert _frame.lzma_dict_size(1 << 30) == 1 << 26


def test_refused_block_leaves_the_codec_state(tiny_model):
    """The real C codec refuses a block it cannot code (a whitespace run over 65,535 bytes) before touching
    any state: the next block codes exactly as if the attempt had never been made, in every mode."""
    from nlmcodec._core import Codec
    from nlmcodec._errors import ERR_UNSUPPORTED
    x, z = TEXT[:3000], TEXT[3000:6000]
    y = TEXT[6000:7000] + b"\t" * 70000 + TEXT[7000:8000]       # tokens first, then the refused run
    for adapt in (False, True, "heads"):
        a, b = Codec(tiny_model, adapt), Codec(tiny_model, adapt)
        a.reset(), b.reset()
        assert a.encode_block(x) == b.encode_block(x)
        with pytest.raises(nlmcodec.NLMError) as ei:
            a.encode_block(y)
        assert ei.value.code == ERR_UNSUPPORTED
        assert a.encode_block(z) == b.encode_block(z)


def test_internal_errors_are_not_fallbacks(tiny_model):
    """Only 'not codable' makes the encoder fall back; any other core error reaches the caller."""
    from nlmcodec._errors import ERR_STATE, ERR_UNSUPPORTED, check
    with pytest.raises(nlmcodec.NLMError) as ei:
        check(ERR_STATE, "encode")
    assert ei.value.code == ERR_STATE and "invalid call sequence" in str(ei.value)
    with pytest.raises(MemoryError):
        check(-1)
    assert nlmcodec.NLMError("x").code is None and ERR_UNSUPPORTED == -9


@pytest.mark.parametrize("adapt", [False, True, "heads"])
def test_fallback_between_model_blocks(tiny_model, adapt):
    """Word-model blocks on both sides of refused blocks decode (the real codec, the real encoder)."""
    data = TEXT[:30000] + b"\t" * 140000 + TEXT[30000:]
    f = nlmcodec.compress(data, model=tiny_model, adapt=adapt)
    blocks = nlmcodec.get_frame_info(f).blocks
    pos = 0
    for b in blocks:                # no word-model block holds a whitespace run the word model refuses
        assert b.kind != "model" or b"\t" * 65536 not in data[pos:pos + b.size]
        pos += b.size
    assert nlmcodec.decompress(f, model=tiny_model) == data


def test_decompressor_error_is_sticky(tiny_model):
    """After an NLMError the object refuses every further call with the same error (like zstd)."""
    f = nlmcodec.compress(TEXT, model=tiny_model)
    bad = f[:-12] + bytes([f[-12] ^ 0xFF]) + f[-11:]
    d = nlmcodec.NLMDecompressor(model=tiny_model)
    with pytest.raises(nlmcodec.NLMError) as e1:
        d.decompress(bad)
    with pytest.raises(nlmcodec.NLMError) as e2:
        d.decompress(b"")
    assert e2.value is e1.value and not d.eof


def test_max_length_holds_one_block(tiny_model):
    """max_length=1 on a high-ratio frame returns one byte and keeps at most one block of output."""
    data = b"All work and no play makes Jack a dull boy.\n" * 100000          # 4.4 MB, lzma blocks
    f = nlmcodec.compress(data, model=tiny_model)
    d = nlmcodec.NLMDecompressor(model=tiny_model)
    assert d.decompress(f, max_length=1) == data[:1] and not d.needs_input and not d.eof
    assert len(d._out) <= 1 << 20                         # one piece of at most 1 MiB is held
    got = bytearray(data[:1])
    while not d.eof:
        got += d.decompress(b"", max_length=100000)
    assert bytes(got) == data


def test_heads_mode_is_its_own_coding(tiny_model):
    """adapt="heads" (docs/format.md §6.5): a frame of its own (flag 0x10), smaller than static and not
    the dynamic frame, decoded without options; the mode's other spellings; bad values are refused."""
    from nlmcodec import _frame

    text = TEXT * 8
    z = {a: nlmcodec.compress(text, model=tiny_model, adapt=a) for a in (False, True, "heads")}
    assert len({bytes(v) for v in z.values()}) == 3
    assert z["heads"][5] & _frame.FLAG_HEADS and z["heads"][5] & _frame.FLAG_ADAPT
    assert not z[True][5] & _frame.FLAG_HEADS
    for v in z.values():
        assert nlmcodec.decompress(v, model=tiny_model) == text
    assert nlmcodec.compress(text, model=tiny_model, adapt="dynamic") == z[True]
    assert nlmcodec.compress(text, model=tiny_model, adapt="static") == z[False]
    # heads mode is the default of every writer (why: docs/decisions/default-mode.md)
    assert nlmcodec.compress(text, model=tiny_model) == z["heads"]
    c = nlmcodec.NLMCompressor(model=tiny_model)
    assert c.adapt == "heads" and c.compress(text) + c.flush() == z["heads"]
    assert nlmcodec.get_frame_info(z["heads"]).adapt == "heads"
    for bad in ("fast", 2, None, "HEADS"):
        with pytest.raises(ValueError, match="adapt must be"):
            nlmcodec.compress(text, model=tiny_model, adapt=bad)


def test_heads_flag_needs_the_adapt_flag():
    """A static header with flag 0x10 (its checksum right) is corrupt: heads mode is a dynamic mode."""
    import zlib

    from nlmcodec import _frame

    frame = bytearray(_frame.header(False, nlmcodec.CHECK_CRC32, None))
    frame[5] |= _frame.FLAG_HEADS
    head = bytes(frame[:6]) + zlib.crc32(bytes(frame[:6])).to_bytes(4, "little")
    with pytest.raises(nlmcodec.NLMError, match="unknown flags"):
        _frame.parse_header(head)
    ok = bytearray(_frame.header(True, nlmcodec.CHECK_CRC32, None))
    assert _frame.parse_header(bytes(_frame.header("heads", nlmcodec.CHECK_CRC32, None)))[0] == "heads"
    assert _frame.parse_header(bytes(ok))[0] is True
