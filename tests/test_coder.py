"""Range coder, Fenwick tree and quantiser (csrc/coder): builds tests/c/test_coder.c twice, -O2 and
-O0 -DNLM_NO_SIMD, runs both and checks they agree bit for bit (quantiser output, coded bytes)."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")
FLAGS = ["-ffp-contract=off", "-fno-fast-math", "-std=gnu11", "-Wall", "-Wno-unused-function"]
SOURCES = [os.path.join(CSRC, "coder", "rc.c"), os.path.join(CSRC, "coder", "quant.c"),
           os.path.join(CSRC, "kernels", "kern.c"), os.path.join(CSRC, "kernels", "kern_math.c")]


def build(tmp_path, name, opt):
    exe = str(tmp_path / name)
    srcs = [os.path.join(ROOT, "tests", "c", "test_coder.c")] + [s for s in SOURCES if os.path.exists(s)]
    cmd = ["gcc", *opt, *FLAGS, "-I", CSRC, *srcs, "-lm", "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe


def run(exe):
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ALL OK" in r.stdout, r.stdout + r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("coder")
    o2 = run(build(tmp, "t_o2", ["-O2"]))
    o0 = run(build(tmp, "t_o0", ["-O0", "-DNLM_NO_SIMD"]))
    return o2, o0


def test_all_pass(outputs):
    o2, _ = outputs
    print(o2)
    for name in ("fenwick", "quant", "roundtrip", "mixed", "carry", "carry_direct", "truncation", "short_streams"):
        assert re.search(r"^ok %s\b" % name, o2, re.M), name


def test_builds_agree(outputs):
    o2, o0 = outputs
    h2 = re.findall(r"^hash .*$", o2, re.M)
    h0 = re.findall(r"^hash .*$", o0, re.M)
    assert len(h2) == 3 and h2 == h0


def test_flush_is_short(outputs):
    o2, _ = outputs
    m = re.search(r"max_bytes_one_symbol (\d+)", o2)
    assert int(m.group(1)) <= 5  # one symbol of F <= 2^30: at most 30 bits of information + flush
