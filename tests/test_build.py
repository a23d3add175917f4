"""The build definition (build_flags.py) and what it guarantees in the machine code: no fused multiply-add.

* The built extensions (Cython and cffi) are disassembled with objdump; any FMA instruction fails.
* The check can fail: a deliberately contracting build (clang -mfma -ffp-contract=fast, which by clang's
  documentation disregards the pragmas) of the core's kernels, and tests/c/contract_probe.c built with
  gcc and clang -mfma -ffp-contract=fast, are flagged; the probe with csrc/common/fpenv.h force-included
  is not (the pragma alone stops the contraction, gcc even against -ffp-contract=fast).
* Every C file of the core includes common/fpenv.h (the pragma) first; no test or build script spells
  the determinism flags itself (one build definition).
"""
import importlib
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402
from cbuild import build_flags  # noqa: E402

ROOT = cbuild.ROOT
OBJDUMP = shutil.which("objdump")
needs_objdump = pytest.mark.skipif(OBJDUMP is None, reason="objdump (binutils) is not installed")
CLANG_MISSING = "clang is not installed (.ci/run installs it with apt-get where it can)"

FMA_RE, fma_instructions = cbuild.FMA_RE, cbuild.fma_instructions


def assert_no_fma(paths, objdump=None):
    for p in paths:
        n, hits = fma_instructions(p, objdump or OBJDUMP)
        assert n > 1000, f"{p}: only {n} instructions disassembled"
        assert not hits, (f"{p}: {len(hits)} fused multiply-add instructions (the format forbids contraction), "
                          f"e.g. {hits[:3]}")


def built_extensions():
    out = []
    for name in ("nlmcodec._nlm_cy", "nlmcodec._nlm_cffi"):
        try:
            out.append(pathlib.Path(importlib.import_module(name).__file__))
        except ImportError:
            pass
    return out


@needs_objdump
def test_built_extensions_have_no_fma():
    exts = built_extensions()
    assert exts, "no built extension found (pip install -e .)"
    assert_no_fma(exts)


def build_shared(tmp_path, cc, sources, extra, name):
    """A shared object built with a packager's own flags (-O2, ISO C, `extra`): not build_flags' DETERMINISM,
    whose -fno-unsafe-math-optimizations alone makes clang 14 honour the pragma even after -ffp-contract=fast."""
    so = tmp_path / name
    cmd = [cc, "-O2", *build_flags.STD, "-I", str(cbuild.CSRC), "-shared", "-fPIC", *extra, "-o", str(so),
           *map(str, sources)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr
    return so


CONTRACT = ["-mfma", "-ffp-contract=fast"]
PROBE = [ROOT / "tests" / "c" / "contract_probe.c"]


@needs_objdump
def test_check_fails_on_a_contracting_build_of_the_core(tmp_path):
    if shutil.which("clang") is None:
        pytest.skip(CLANG_MISSING)
    so = build_shared(tmp_path, "clang", cbuild.KERNELS, CONTRACT, "kernels_contracting.so")
    with pytest.raises(AssertionError, match="fused multiply-add") as e:
        assert_no_fma([so])
    print(e.value)


@needs_objdump
@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_check_fails_on_a_contracting_probe_and_the_pragma_stops_it(tmp_path, cc):
    if shutil.which(cc) is None:
        pytest.skip(CLANG_MISSING if cc == "clang" else "gcc is not installed")
    bad = build_shared(tmp_path, cc, PROBE, CONTRACT, "probe_contracting.so")
    assert fma_instructions(bad)[1], f"{cc} -mfma -ffp-contract=fast did not contract the probe"
    # fpenv.h's pragma: GCC honours it even against -ffp-contract=fast; clang against its default (on)
    guard = ["-mfma", "-ffp-contract=fast" if cc == "gcc" else "-ffp-contract=on", "-include", "common/fpenv.h"]
    good = build_shared(tmp_path, cc, PROBE, guard, "probe_guarded.so")
    assert not fma_instructions(good)[1]


def test_every_core_file_includes_fpenv_first():
    for p in build_flags.core_sources():
        text = pathlib.Path(p).read_text()
        first = re.search(r"^#\s*(include|pragma|if|define).*$", text, re.M)
        assert first and re.match(r'#include "(\.\./)?common/fpenv\.h"', first.group(0)), f"{p}: {first.group(0)}"


def test_one_build_definition():
    """No build script or test spells the determinism flags or -std itself: they come from build_flags.py."""
    files = [ROOT / "setup.py", ROOT / "build_cffi.py", *sorted((ROOT / "tests").rglob("*.py"))]
    for f in files:
        if f.name == "test_build.py":
            continue
        text = f.read_text()
        for flag in ("-ffp-contract=off", "-std=gnu11", "-std=c11", "-fno-fast-math"):
            assert f'"{flag}"' not in text, f"{f.relative_to(ROOT)} spells {flag}: use build_flags.py"
    assert "-std=c11" in build_flags.EXTRA_COMPILE_ARGS and "-ffp-contract=off" in build_flags.EXTRA_COMPILE_ARGS


def test_flt_eval_method_16_is_accepted(tmp_path):
    """GCC with AVX512-FP16 in a GNU dialect reports FLT_EVAL_METHOD 16 (_Float16 evaluated as _Float16,
    float as float): fpenv.h accepts it, and still refuses 1 (float evaluated in double: s390x GCC in ISO
    mode, when its cross compiler is installed).  Compile-only: this machine need not run AVX512-FP16 code."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    probe = tmp_path / "fem.c"
    probe.write_text('#include <float.h>\nint fem = FLT_EVAL_METHOD;\n')
    pre = subprocess.run(["gcc", "-std=gnu11", "-mavx512fp16", "-E", str(probe)], capture_output=True, text=True)
    if pre.returncode != 0:
        pytest.skip("this gcc has no -mavx512fp16")
    assert "int fem = 16;" in pre.stdout
    core = [str(cbuild.CSRC / "kernels" / "kern_math.c"), str(cbuild.CSRC / "coder" / "quant.c")]
    r = subprocess.run(["gcc", "-std=gnu11", "-mavx512fp16", "-O2", "-I", str(cbuild.CSRC), "-fsyntax-only", *core],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # s390x GCC in ISO mode reports 1 (and evaluates float in double): refused unless build_flags' target flag
    s390x = "s390x-linux-gnu-gcc"
    if shutil.which(s390x):
        base = [s390x, "-std=c11", "-O2", "-I", str(cbuild.CSRC), "-fsyntax-only", *core]
        r = subprocess.run(base, capture_output=True, text=True)
        assert r.returncode != 0 and "FLT_EVAL_METHOD" in r.stderr
        assert subprocess.run(base + build_flags.target_flags(s390x), capture_output=True).returncode == 0
