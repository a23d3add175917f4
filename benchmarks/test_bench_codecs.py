"""Compress and decompress speed of nlmcodec (static, heads and dynamic) next to lzma, bz2 and zlib.

One pytest-benchmark group per (direction, file), so the table shows each codec's time relative
to the fastest on the same file.  Every benchmark asserts the round trip and records
``in_bytes``, ``out_bytes``, ``bpb``, ``ratio`` (and the model size) in ``extra_info``.
Run explicitly: ``python -m pytest benchmarks/`` (see benchmarks/conftest.py for options).
"""
import pytest


CODECS = ["nlmcodec-static", "nlmcodec-heads", "nlmcodec-dynamic", "xz-9e", "xz-6", "bz2-9", "zlib-9"]
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


def test_report_quick_smoke(tmp_path):
    """benchmarks/report.py end to end on one small file with the stdlib codecs (not timed)."""
    import csv
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, os.path.join(here, "report.py"), "--files", "paper5", "--runs", "1",
                        "--codecs", "xz-9e,bz2-9,zlib-9", "--out-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with open(tmp_path / "report.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["codec"] for r in rows] == ["xz-9e", "bz2-9", "zlib-9"]
    assert all(r["file"] == "paper5" and int(r["bytes_in"]) == 11954 for r in rows)
    assert float(rows[0]["size_vs_xz9e"]) == 1.0
    assert (tmp_path / "report.md").read_text().count("| paper5 |") == 3
