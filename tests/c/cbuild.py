"""Compile the C test harnesses of tests/c (used by the tests that build C: kernels, Elman, coder, speller,
dual build, build checks, and by the cross-architecture lane .ci/cross/lane.py), and find fused
multiply-add instructions in a disassembly.

The flags come from build_flags.py at the repository root, the one build definition the bindings use too:
-std=c11, -ffp-contract=off, no fast-math.  Flavours (build_flags.FLAVOURS): "simd" = the production
optimisation (-O2, run-time SSE2/AVX2 dispatch), "ref" = the scalar reference (-O0 -DNLM_NO_SIMD),
"scalar_o2", "o3".
"""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
import build_flags  # noqa: E402  (the repository root is not a package)

CSRC = ROOT / "csrc"
FLAVOURS = build_flags.FLAVOURS
KERNELS = [CSRC / "kernels" / "kern.c", CSRC / "kernels" / "kern_math.c", CSRC / "kernels" / "kern_q8.c", CSRC / "coder" / "quant.c"]  # quant: the kernels harness checks it
MODEL = sorted((CSRC / "model").glob("*.c"))   # lm.c, the model types and the Kneser-Ney expert
CODER = [CSRC / "coder" / "rc.c"] + KERNELS
BYTEMODEL = [CSRC / "bytemodel" / "cm.c"] + CODER   # the byte model: its mixers use the kernels
CORE = [pathlib.Path(p) for p in build_flags.core_sources()]


def have_gcc() -> bool:
    return shutil.which("gcc") is not None


def build(harness: str, sources, outdir: pathlib.Path, flavour: str, cc: str = "gcc", extra=(),
          strict: bool = True, name: str | None = None) -> pathlib.Path:
    """Build tests/c/<harness> with `sources` into outdir; raises AssertionError with the compiler's output."""
    exe = pathlib.Path(outdir) / (name or f"{pathlib.Path(harness).stem}_{cc}_{flavour}")
    cmd = build_flags.cc_command(cc, flavour, exe, [ROOT / "tests" / "c" / harness, *sources], extra, strict)
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr
    return exe


def build_all(harness: str, sources, outdir: pathlib.Path, flavours, cc: str = "gcc", strict: bool = True) -> dict:
    """build() for several flavours, the compiler runs in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(flavours)) as ex:
        futs = {fl: ex.submit(build, harness, sources, outdir, fl, cc, (), strict) for fl in flavours}
        return {fl: f.result() for fl, f in futs.items()}


# FMA mnemonics: x86 FMA3/FMA4/AVX-512/4FMAPS (vfmadd231ps, vfnmsub213ss, vfmaddsub…, vfmaddps,
# v4fmaddps); AArch64 (fmadd, fmsub, fnmadd, fnmsub, fmla, fmls); s390x (maeb, madb, mseb, msdb, wfmasb,
# vfma, vfms, vfnma).
FMA_RE = re.compile(r"^(v4?fn?m(add|sub)\w*|fn?m(add|sub)|fml[as]|ma[ed]br?|ms[ed]br?|wfn?m[as][sd]b|vfn?m[as]\w*)$")


def fma_instructions(path, objdump="objdump"):
    """(number of instructions, list of 'address: instruction' lines that are fused multiply-adds) in the
    disassembly of `path` (objdump: the target's objdump for a cross-built file)."""
    r = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(path)], capture_output=True,
                       text=True, check=True)
    n, hits = 0, []
    for line in r.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not parts[0].strip().endswith(":"):
            continue
        n += 1
        if FMA_RE.match(parts[1].split(" ")[0].strip()):
            hits.append(line.strip())
    return n, hits
