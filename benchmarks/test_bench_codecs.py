"""Compress and decompress speed of nlmcodec (static and dynamic) next to lzma, bz2 and zlib.

One pytest-benchmark group per (direction, file), so the table shows each codec's time relative
to the fastest on the same file.  Every benchmark asserts the round trip and records
``in_bytes``, ``out_bytes``, ``bpb``, ``ratio`` (and the model size) in ``extra_info``.
Run explicitly: ``python -m pytest benchmarks/`` (see benchmarks/conftest.py for options).
"""
import pytest


CODECS = ["nlmcodec-static", "nlmcodec-dynamic", "xz-9e", "xz-6", "bz2-9", "zlib-9"]
ROUNDS = 3


def _warmup(name):
    return 0 if name.startswith("nlmcodec") else 1  # the neural codec is slow: no warm-up round


def _info(benchmark, codec, name, data, comp):
    benchmark.extra_info.update(
        file=name, codec=codec.name, options=codec.options, version=codec.version,
        in_bytes=len(data), out_bytes=len(comp), bpb=8.0 * len(comp) / len(data),
        ratio=len(data) / len(comp), model_bytes=codec.model_size, model_id=codec.model_id,
        total_bytes=len(comp) + codec.model_size)


@pytest.mark.parametrize("codec_name", CODECS)
def test_compress(benchmark, make_codec, bench_data, codec_name, record_size):
    name, data = bench_data
    codec = make_codec(codec_name)
    benchmark.group = f"compress:{name}"
    comp = benchmark.pedantic(codec.compress, args=(data,), rounds=ROUNDS, iterations=1,
                              warmup_rounds=_warmup(codec_name))
    assert codec.decompress(comp) == data
    _info(benchmark, codec, name, data, comp)
    record_size(name, codec_name, len(data), len(comp))


@pytest.mark.parametrize("codec_name", CODECS)
def test_decompress(benchmark, make_codec, bench_data, codec_name):
    name, data = bench_data
    codec = make_codec(codec_name)
    benchmark.group = f"decompress:{name}"
    comp = codec.compress(data)
    back = benchmark.pedantic(codec.decompress, args=(comp,), rounds=ROUNDS, iterations=1,
                              warmup_rounds=_warmup(codec_name))
    assert back == data
    _info(benchmark, codec, name, data, comp)
