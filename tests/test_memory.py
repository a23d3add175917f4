"""The memory limit of decoding (python/nlmcodec/_memory.py): its estimates bound the real codecs, a frame that
needs more than memlimit on one thread is refused before any codec is made, several threads are cut to what
fits, and the encoder does not write what decoders would refuse by default."""
import sys
from pathlib import Path

import pytest

import nlmcodec
from nlmcodec import _memory, _stream
from nlmcodec._core import ByteCoder, Codec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codec" / "vectors"))
import vectorset as VS  # noqa: E402

MODELS = ("tiny", "tiny-lstm", "tiny-nplm", "tiny-kn", "default")


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("adapt", [False, True, "heads"], ids=["static", "dynamic", "heads"])
def test_the_codec_estimate_is_an_upper_bound(name, adapt):
    from conftest import word_salad

    model = nlmcodec.load_model(name)
    c = Codec(model, adapt)
    c.reset()
    c.encode_block(word_salad(3000) + b" Zorvathian Quillmarsh 1984-07-21 x86_64 " * 30)
    assert c.memory() <= _memory.codec_bytes(model, adapt)
    assert _memory.codec_bytes(model, adapt) <= c.memory() + 16 * _memory.MIB       # and not a wild one


def test_the_byte_model_estimate_is_an_upper_bound():
    b = ByteCoder()
    b.encode_block(bytes(range(256)) * 64, 1 << 23)              # the largest size class
    assert _memory.BYTE_MODEL_MAX - 4 * _memory.MIB <= b.memory() <= _memory.BYTE_MODEL_MAX


def _default_frame(adapt):
    return VS.ok_vector(f"v13/alice_4k-default-2-{ {False: 'static', True: 'dynamic', 'heads': 'heads'}[adapt] }")


@pytest.mark.parametrize("adapt", [False, True, "heads"], ids=["static", "dynamic", "heads"])
def test_a_frame_over_the_limit_is_refused_before_any_codec(adapt, monkeypatch):
    vec = _default_frame(adapt)
    model = nlmcodec.load_model("default-2")
    need = _memory.decode_need(model, adapt, 1)

    def no_codec(*a):
        raise AssertionError("a codec was made")

    monkeypatch.setattr(_stream, "acquire_codec", no_codec)
    with pytest.raises(nlmcodec.NLMError) as ei:
        nlmcodec.decompress(vec.frame(), memlimit=need - 1)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("memory limit") and f"memlimit={need - 1}" in msg
    monkeypatch.undo()
    assert nlmcodec.decompress(vec.frame(), memlimit=need) == vec.raw()
    assert nlmcodec.decompress(vec.frame(), memlimit=0) == vec.raw()               # 0: no limit


def test_threads_are_cut_to_what_fits():
    vec = _default_frame("heads")
    model = nlmcodec.load_model("default-2")
    for fit in (1, 2, 3):
        d = nlmcodec.NLMDecompressor(threads=8, memlimit=_memory.decode_need(model, "heads", fit))
        assert d.decompress(vec.frame()) == vec.raw()
        assert d._dec._threads == fit
    d = nlmcodec.NLMDecompressor(threads=8)                                        # the default limit: 1 GiB
    d.decompress(vec.frame())
    assert _memory.decode_need(model, "heads", d._dec._threads) <= _memory.DEFAULT_MEMLIMIT


def test_every_model_on_the_search_path_fits_the_default_limit_on_two_threads():
    from nlmcodec import _registry

    for name in _registry.model_files():
        model = nlmcodec.load_model(name)
        for adapt in (False, True, "heads"):
            assert _memory.decode_need(model, adapt, 2) <= _memory.DEFAULT_MEMLIMIT


def test_the_encoder_does_not_write_what_decoders_refuse(monkeypatch):
    model = nlmcodec.load_model("default")
    need = _memory.decode_need(model, True, 1)
    monkeypatch.setattr(_memory, "DEFAULT_MEMLIMIT", need - 1)
    with pytest.raises(nlmcodec.NLMError, match="memory limit"):
        nlmcodec.compress(b"text", model=model, adapt=True)
    nlmcodec.compress(b"text", model=model, adapt=False)          # static mode needs less


@pytest.mark.parametrize("bad", [-1, 1.5, "1GiB", True])
def test_bad_memlimit(bad):
    with pytest.raises((TypeError, ValueError)):
        nlmcodec.NLMDecompressor(memlimit=bad)
