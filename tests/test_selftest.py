"""The run-time arithmetic self-test (csrc/codec/selftest.c, nlm_selftest) that nlm_codec_new runs once per
process: it passes on the builds we ship, and it can fail.

Failing builds: the test-only define NLM_SELFTEST_PERTURB_ROUNDING (the self-test computes in
round-toward-zero): nlm_codec_new must then refuse with NLM_ERR_SELFTEST (C driver), and the Python API
must raise NLMError naming NLM_ERR_SELFTEST (cffi module built with the define, slow: one core build);
and a real contracting build (clang -mfma -ffp-contract=fast), which the self-test must catch too.
The FP environment guard (csrc/common/fpenv.h) keeps the self-test's bits under a host's round-toward-zero
and flush-to-zero and gives the host its environment back (tests/c/fpenv_probe.c; the cross lane runs the
same probe on aarch64 and s390x).
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import nlmcodec

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402

PERTURB = "-DNLM_SELFTEST_PERTURB_ROUNDING"
TEXT = b"the cat and the dog went to the market, and the cat came back. " * 20


def test_codec_creation_passes_the_selftest(tiny_model):
    # every codec creation runs it (once per process); a passing build codes and decodes as usual
    assert nlmcodec.decompress(nlmcodec.compress(TEXT, model=tiny_model)) == TEXT


@pytest.mark.one_lane          # a C driver built and run: no binding
@pytest.mark.skipif(not cbuild.have_gcc(), reason="gcc not available")
def test_c_codec_refuses_when_the_selftest_fails(tmp_path):
    ok = cbuild.build("codec_driver.c", cbuild.CORE, tmp_path, "simd", strict=False, name="drv_ok")
    bad = cbuild.build("codec_driver.c", cbuild.CORE, tmp_path, "simd", extra=[PERTURB], strict=False,
                       name="drv_perturbed")
    r = subprocess.run([str(ok), "1", "3"], input=TEXT, capture_output=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(bad), "1", "3"], input=TEXT, capture_output=True)
    # model creation runs the self-test first (as does every codec creation): -8 = NLM_ERR_SELFTEST
    assert r.returncode == 2 and b"model_new failed: -8" in r.stderr, r.stderr
    assert r.stdout == b""


def cpu_has_fma():
    try:
        return any(line.startswith("flags") and " fma " in line + " " for line in open("/proc/cpuinfo"))
    except OSError:
        return False


@pytest.mark.one_lane          # a C driver built and run: no binding
def test_selftest_catches_a_contracting_build(tmp_path):
    """clang -mfma -ffp-contract=fast (a packager's flags; clang then disregards the pragma) fuses the
    kernels' multiply-adds: the bits change, and the self-test refuses to create a codec."""
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed (.ci/run installs it with apt-get where it can)")
    if not cpu_has_fma():
        pytest.skip("this CPU has no FMA")
    exe = tmp_path / "drv_fma"
    cmd = ["clang", "-O2", *cbuild.build_flags.STD, "-mfma", "-ffp-contract=fast", "-I", str(cbuild.CSRC),
           "-o", str(exe), str(cbuild.ROOT / "tests" / "c" / "codec_driver.c"), *map(str, cbuild.CORE), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True)
    r = subprocess.run([str(exe), "1", "3"], input=TEXT, capture_output=True)
    assert r.returncode == 2 and b"model_new failed: -8" in r.stderr, r.stderr


@pytest.mark.one_lane          # a C driver built and run: no binding
@pytest.mark.skipif(not cbuild.have_gcc(), reason="gcc not available")
def test_fpenv_guard_against_a_hostile_host_environment(tmp_path):
    exe = cbuild.build("fpenv_probe.c", cbuild.CORE, tmp_path, "simd", strict=False)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    print(r.stdout)
    assert r.returncode == 0 and "FPENV OK" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_python_raises_nlmerror_naming_selftest(tmp_path, tiny_model_path):
    import build_cffi
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(build_cffi.CDEF)
    ffi.set_source("nlmcodec._nlm_cffi", build_cffi.PREAMBLE, sources=cbuild.build_flags.core_sources(),
                   include_dirs=[str(cbuild.CSRC)], extra_compile_args=build_cffi.EXTRA_COMPILE_ARGS + [PERTURB],
                   define_macros=build_cffi.DEFINE_MACROS)
    so = ffi.compile(tmpdir=str(tmp_path))
    prog = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("nlmcodec._nlm_cffi", {so!r})
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.modules["nlmcodec._nlm_cffi"] = mod
import nlmcodec
assert nlmcodec.backend == "cffi"
try:
    nlmcodec.compress(b"the cat and the dog " * 50, model={tiny_model_path!r})
except nlmcodec.NLMError as e:
    print("NLMError", e.code, e)
"""
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, NLMCODEC_BACKEND="cffi"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("NLMError -8 ") and "NLM_ERR_SELFTEST" in r.stdout, r.stdout
