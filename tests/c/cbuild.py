"""Compile the C test harnesses of tests/c with gcc (used by tests/test_kernels.py, tests/test_elman_c.py).

Two flavours: "simd" = the production flags (-O2, run-time SSE2/AVX2 dispatch) and "ref" = the scalar
reference (-O0 -DNLM_NO_SIMD).  Both with -ffp-contract=off and no fast-math, as the core is built.
"""
from __future__ import annotations

import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
COMMON = ["-I", str(CSRC), "-ffp-contract=off", "-fno-fast-math", "-fno-unsafe-math-optimizations", "-std=gnu11",
          "-Wall", "-Wextra", "-Wdouble-promotion", "-Werror"]
FLAVOURS = {
    "simd": ["-O2"],
    "ref": ["-O0", "-DNLM_NO_SIMD"],
    "scalar_o2": ["-O2", "-DNLM_NO_SIMD"],   # the scalar code as the optimiser (auto-vectoriser) sees it
}
KERNELS = [CSRC / "kernels" / "kern.c", CSRC / "kernels" / "kern_math.c", CSRC / "coder" / "quant.c"]
MODEL = [CSRC / "model" / "elman.c"]


def have_gcc() -> bool:
    return shutil.which("gcc") is not None


def build(harness: str, sources, outdir: pathlib.Path, flavour: str) -> pathlib.Path:
    exe = pathlib.Path(outdir) / f"{pathlib.Path(harness).stem}_{flavour}"
    cmd = ["gcc", *FLAVOURS[flavour], *COMMON, "-o", str(exe), str(ROOT / "tests" / "c" / harness),
           *map(str, sources)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


def build_all(harness: str, sources, outdir: pathlib.Path, flavours) -> dict:
    """build() for several flavours, the gcc runs in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(flavours)) as ex:
        futs = {fl: ex.submit(build, harness, sources, outdir, fl) for fl in flavours}
        return {fl: f.result() for fl, f in futs.items()}
