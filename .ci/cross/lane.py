"""lane.py: the cross-architecture lane (issue 12): the golden vectors decode and re-encode to the same
bytes on aarch64 and on big-endian s390x as on x86-64.

Steps: export the vectors' word-model blocks (export_blocks.py, on this host); build the C core and
tests/c/vector_driver.c with build_flags.py's flags natively and with Debian's cross compilers
(aarch64-linux-gnu-gcc, s390x-linux-gnu-gcc; static, so qemu-user needs no sysroot); check each
target's core objects for fused multiply-add instructions (cbuild.fma_instructions with the target's
objdump); run tests/c/fpenv_probe.c (the FP environment guard against a hostile rounding mode and
flush-to-zero) and the driver natively and under qemu-aarch64 / qemu-s390x.  A target whose tools are missing
is reported as SKIPPED (.ci/cross.sh installs them with apt-get where it can); a mismatch, a failed build
or an FMA instruction exits 1.  Usage: python .ci/cross/lane.py [--models tiny,default]
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "c"))
import cbuild  # noqa: E402
from cbuild import build_flags  # noqa: E402

# name, compiler, objdump, runner (None = native)
TARGETS = [("x86-64 (native)", "gcc", "objdump", None),
           ("aarch64", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump", "qemu-aarch64"),
           ("s390x (big-endian)", "s390x-linux-gnu-gcc", "s390x-linux-gnu-objdump", "qemu-s390x")]


def build(cc, objdump, out: pathlib.Path):
    """Core objects, FMA check on them, then the static vector driver and FP environment probe.
    Returns ([driver, probe], FMA hits)."""
    out.mkdir(parents=True, exist_ok=True)
    objs, hits = [], []
    for src in build_flags.core_sources():
        o = out / (pathlib.Path(src).stem + ".o")
        cmd = build_flags.cc_command(cc, "simd", o, [src], ["-c"])[:-1]   # no -lm when compiling only
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        objs.append(o)
        hits += cbuild.fma_instructions(o, objdump)[1]
    exes = []
    for prog in ("vector_driver", "fpenv_probe"):
        exes.append(out / prog)
        cmd = build_flags.cc_command(cc, "simd", exes[-1], [ROOT / "tests" / "c" / f"{prog}.c", *objs], ["-static"])
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exes, hits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="only the vectors of these models (default: all)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    failed, ran = [], []
    with tempfile.TemporaryDirectory(prefix="nlm-cross-") as tmp:
        tmp = pathlib.Path(tmp)
        exp = [sys.executable, str(ROOT / ".ci" / "cross" / "export_blocks.py"), str(tmp / "vec")]
        subprocess.run(exp + (["--models", args.models] if args.models else []), check=True)
        for name, cc, objdump, runner in TARGETS:
            missing = [t for t in (cc, objdump, runner) if t and not shutil.which(t)]
            if missing:
                print(f"== {name}: SKIPPED, not installed: {', '.join(missing)}", flush=True)
                continue
            t1 = time.monotonic()
            try:
                (exe, probe), hits = build(cc, objdump, tmp / cc)
            except subprocess.CalledProcessError as e:
                print(f"== {name}: BUILD FAILED\n{' '.join(map(str, e.cmd))}\n{e.stderr}", flush=True)
                failed.append(name)
                continue
            print(f"== {name}: built with {cc} ({time.monotonic() - t1:.0f} s); fused multiply-adds in the core: "
                  f"{len(hits)}{' ' + str(hits[:3]) if hits else ''}", flush=True)
            pre = [runner] if runner else []
            p = subprocess.run(pre + [str(probe)], text=True, capture_output=True)
            sys.stdout.write(p.stdout + p.stderr)
            t1 = time.monotonic()
            r = subprocess.run(pre + [str(exe), str(tmp / "vec" / "blocks.bin")], text=True, capture_output=True)
            sys.stdout.write(r.stdout)
            sys.stderr.write(r.stderr)
            print(f"== {name}: exit {r.returncode} in {time.monotonic() - t1:.0f} s", flush=True)
            ran.append(name)
            if r.returncode != 0 or p.returncode != 0 or hits:
                failed.append(name)
    print(f"cross-architecture lane: ran {', '.join(ran) or 'nothing'}; "
          f"{'FAILED: ' + ', '.join(failed) if failed else 'all identical'} ({time.monotonic() - t0:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
