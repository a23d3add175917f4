"""Range coder, Fenwick tree and quantiser (csrc/coder): builds tests/c/test_coder.c twice, -O2 and
-O0 -DNLM_NO_SIMD, runs both and checks they agree bit for bit (quantiser output, coded bytes); the portable
128-bit steps of the quantiser (csrc/coder/wide.h) against unsigned __int128 (tests/c/test_wide.c)."""
import pathlib
import re
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402

pytestmark = [pytest.mark.skipif(not cbuild.have_gcc(), reason="gcc not available"),
              pytest.mark.one_lane,   # no binding involved: the cffi lane skips it
              pytest.mark.xdist_group("coder")]   # one worker builds the module's C programs, once


def build(tmp_path, name, flavour):
    return str(cbuild.build("test_coder.c", cbuild.CODER, tmp_path, flavour, strict=False, name=name))


def run(exe):
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ALL OK" in r.stdout, r.stdout + r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("coder")
    o2 = run(build(tmp, "t_o2", "simd"))
    o0 = run(build(tmp, "t_o0", "ref"))
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


def test_wide_matches_int128(tmp_path):
    exe = cbuild.build("test_wide.c", [], tmp_path, "simd")
    r = subprocess.run([str(exe), "2000000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "ALL OK" in r.stdout, r.stdout + r.stderr
    assert re.search(r"wide cases (\d+) fails 0", r.stdout) and int(r.stdout.split()[2]) > 10_000_000
