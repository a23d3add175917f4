"""pytest-benchmark suite for nlmcodec and its baselines (not part of the default test run).

    python -m pytest benchmarks/                                  # all codecs, default files
    python -m pytest benchmarks/ --nlm-model tiny                 # while the default model is missing
    python -m pytest benchmarks/ --bench-files alice29.txt,paper5 --benchmark-json=/tmp/bench.json
    python -m pytest benchmarks/ --benchmark-disable              # each body once: round trips only

``testpaths = ["tests"]`` keeps these files out of a plain ``python -m pytest``.  The console table
shows times only; the sizes (bits per byte, against xz-9e) are printed after it and stored in each
benchmark's ``extra_info`` (``--benchmark-json``).
"""
import importlib.util
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FILES = "alice29.txt,book1,paper1,paper5"


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _benchlib import load_bench  # noqa: E402

B = load_bench()


def pytest_addoption(parser):
    g = parser.getgroup("nlmcodec benchmarks")
    g.addoption("--nlm-model", default=os.environ.get("NLMCODEC_BENCH_MODEL", "default"),
                help="nlmcodec model for the benchmarks: bundled name or .nlmm path (default: default)")
    g.addoption("--bench-files", default=os.environ.get("NLMCODEC_BENCH_FILES", DEFAULT_FILES),
                help=f"comma list of benchmark files or sets (default: {DEFAULT_FILES})")


def pytest_generate_tests(metafunc):
    if "bench_file" in metafunc.fixturenames:
        files = B.expand_files([metafunc.config.getoption("--bench-files")])
        metafunc.parametrize("bench_file", files, scope="session")


_DATA = {}
_CODECS = {}
_SIZES = {}  # (file, codec) -> (bytes in, bytes out)


@pytest.fixture(scope="session")
def bench_data(bench_file):
    if bench_file not in _DATA:
        try:
            _DATA[bench_file] = B.read_file(bench_file)
        except FileNotFoundError as exc:
            pytest.skip(str(exc))
    return _DATA[bench_file]


@pytest.fixture
def make_codec(request):
    model = request.config.getoption("--nlm-model")

    def make(name):
        if name not in _CODECS:
            try:
                _CODECS[name] = B.make_codec(name, model)
            except Exception as exc:
                _CODECS[name] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        c = _CODECS[name]
        if isinstance(c, str):
            pytest.skip(f"{name} not available: {c}")
        return c
    return make


@pytest.fixture
def record_size():
    def rec(file, codec, n_in, n_out):
        _SIZES[(file, codec)] = (n_in, n_out)
    return rec


def pytest_terminal_summary(terminalreporter):
    if not _SIZES:
        return
    tr = terminalreporter
    tr.section("compressed sizes (same run; bits per byte = 8 x out / in)")
    files = sorted({f for f, _ in _SIZES}, key=lambda f: [f2 for f2, _ in _SIZES].index(f))
    for f in files:
        ref = _SIZES.get((f, "xz-9e"))
        for (f2, c), (n_in, n_out) in _SIZES.items():
            if f2 != f:
                continue
            vs = f"  {n_out / ref[1]:.3f} of xz-9e" if ref else ""
            tr.write_line(f"{f:<14} {c:<17} {n_in:>10,} -> {n_out:>10,}  {8 * n_out / n_in:6.3f} bpb{vs}")
