"""build_flags.py: the one definition of how the C core is compiled (sources, include dirs, flags).

Imported by setup.py and build_cffi.py (the two bindings) and, through tests/c/cbuild.py, by every test
that compiles C.  The determinism contract (DESIGN.md §3, docs/format.md §2) lives here and in
csrc/common/fpenv.h: ISO C11 (``-std=gnu11`` is GCC's contracting dialect), ``-ffp-contract=off``, no
fast-math, no ``-march``; SIMD paths are chosen at run time inside the core.  fpenv.h also turns
contraction off by pragma, so a build that forgets the flag still emits no fused multiply-add
(tests/test_build.py disassembles the built extensions to check).  Nothing here depends on a machine path.
"""
from __future__ import annotations

import glob
import os
import platform
import shutil

ROOT = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(ROOT, "csrc")

# relative to ROOT, as setuptools wants them
CORE_SOURCES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(CSRC, "**", "*.c"), recursive=True))
INCLUDE_DIRS = ["csrc"]

STD = ["-std=c11"]
DETERMINISM = ["-ffp-contract=off", "-fno-fast-math", "-fno-unsafe-math-optimizations"]
# GCC on s390x reports FLT_EVAL_METHOD 1 in ISO mode and then really evaluates float expressions in double
# (glibc's float_t there is double); -fexcess-precision=fast gives native float evaluation (FLT_EVAL_METHOD
# 0), which csrc/common/fpenv.h checks.  Keyed by the target's machine name (platform.machine(), or the
# first part of a cross compiler's triplet).
TARGET_FLAGS = {"s390x": ["-fexcess-precision=fast"]}
WARNINGS = ["-Wall", "-Wno-unused-function"]
STRICT_WARNINGS = ["-Wall", "-Wextra", "-Wdouble-promotion", "-Werror"]   # the C test harnesses

# Optimisation flavours of the core.  "simd" is what the bindings ship (-O2, run-time SIMD dispatch); "ref"
# is the scalar reference (the definition of the arithmetic); the others are how an optimiser or a packager
# might build it.
FLAVOURS = {
    "simd": ["-O2"],
    "ref": ["-O0", "-DNLM_NO_SIMD"],
    "scalar_o2": ["-O2", "-DNLM_NO_SIMD"],    # the scalar code as the auto-vectoriser sees it
    "o3": ["-O3", "-funroll-loops"],
}

# The bindings: the release flavour, or the scalar-only core with NLMCODEC_NO_SIMD=1 (the dual-build test).
EXTRA_COMPILE_ARGS = FLAVOURS["simd"] + STD + DETERMINISM + TARGET_FLAGS.get(platform.machine(), []) + WARNINGS
DEFINE_MACROS = [("NLM_NO_SIMD", "1")] if os.environ.get("NLMCODEC_NO_SIMD") == "1" else []


def core_sources(absolute: bool = True) -> list:
    """Every C file of the core (absolute paths by default)."""
    return [os.path.join(ROOT, p) for p in CORE_SOURCES] if absolute else list(CORE_SOURCES)


def compilers() -> list:
    """The C compilers of the determinism tests that are installed: a subset of ("gcc", "clang")."""
    return [cc for cc in ("gcc", "clang") if shutil.which(cc)]


def target_flags(cc: str) -> list:
    """TARGET_FLAGS for the machine `cc` compiles for ("s390x-linux-gnu-gcc" -> s390x, "gcc" -> this one)."""
    name = os.path.basename(cc)
    machine = name.split("-")[0] if name.count("-") >= 2 else platform.machine()
    return TARGET_FLAGS.get(machine, [])


def cc_command(cc: str, flavour: str, out: str, sources, extra=(), strict: bool = False) -> list:
    """The command line that builds `sources` into the executable `out` with one flavour."""
    return [cc, *FLAVOURS[flavour], *STD, *DETERMINISM, *target_flags(cc), *(STRICT_WARNINGS if strict else WARNINGS),
            "-I", CSRC, *extra, "-o", str(out), *map(str, sources), "-lm"]
