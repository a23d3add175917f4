"""lane.py: the cross-architecture lane (issue 12): the golden vectors decode and re-encode to the same
bytes on aarch64 and on big-endian s390x as on x86-64.

Steps: export the vectors' word-model blocks (export_blocks.py, on this host); build the C core and
tests/c/vector_driver.c with build_flags.py's flags natively and with Debian's cross compilers
(aarch64-linux-gnu-gcc, s390x-linux-gnu-gcc; static, so qemu-user needs no sysroot); check each
target's core objects for fused multiply-add instructions (cbuild.fma_instructions with the target's
objdump); run tests/c/fpenv_probe.c (the FP environment guard against a hostile rounding mode and
flush-to-zero) and the driver natively and under qemu-aarch64 / qemu-s390x; and the byte model:
tests/c/cm_driver.c codes the raw inputs of golden vectors (CM_INPUTS) on each target, and its payloads
(size and FNV-1a hash) must equal x86-64's.  Every target replays blocks_light.bin (export_blocks.py says what
it leaves out; the list is in this lane's output); every vector decodes and re-encodes on x86-64 in the test
lanes (tests/test_golden.py), so the native run replays the emulated targets' file, not all of blocks.bin.
Fails closed: a target whose tools are missing is reported as NOT RUN and fails the lane like a mismatch, a
failed build or an FMA instruction (.ci/cross.sh installs the tools with apt-get where it can).
--targets native runs the native replay alone (the emulated targets are then reported as not asked for).
Usage: python .ci/cross/lane.py [--models tiny,default-2] [--targets native,aarch64,s390x]
"""
import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "c"))
sys.path.insert(0, str(ROOT / "codec" / "vectors"))
import cbuild  # noqa: E402
import vectorset as VS  # noqa: E402
from cbuild import build_flags  # noqa: E402

# Emulated targets replay blocks_light.bin: the vectors whose work (decoded bytes x model parameters x the mode's
# cost under emulation, export_blocks.py) is at most this, and the default model's heads-mode vectors up to
# export_blocks.HEADS_BUDGET.  1.5e11 takes every vector of the tiny models and the default model's inputs up
# to 13 KB in static mode (about 4 s each under qemu-aarch64); the rest (export_blocks.py's docstring) would
# take 20 minutes more of CPU per target.  The native run replays the same file (274 s of CPU for every vector in
# the format-16 CI rehearsal, beside the test lanes, which decode and re-encode every vector already).
LIGHT_BUDGET = 1.5e11
# key, name, compiler, objdump, runner (None = native)
TARGETS = [("native", "x86-64 (native)", "gcc", "objdump", None),
           ("aarch64", "aarch64", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump", "qemu-aarch64"),
           ("s390x", "s390x (big-endian)", "s390x-linux-gnu-gcc", "s390x-linux-gnu-objdump", "qemu-s390x")]


def build(cc, objdump, out: pathlib.Path):
    """Core objects, FMA check on them, then the static vector driver and FP environment probe.
    Returns ([driver, probe, byte-model driver], FMA hits)."""
    out.mkdir(parents=True, exist_ok=True)
    objs, hits = [], []
    for src in build_flags.core_sources():
        o = out / (pathlib.Path(src).stem + ".o")
        cmd = build_flags.cc_command(cc, "simd", o, [src], ["-c"])[:-1]   # no -lm when compiling only
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        objs.append(o)
        hits += cbuild.fma_instructions(o, objdump)[1]
    exes = []
    for prog in ("vector_driver", "fpenv_probe", "cm_driver"):
        exes.append(out / prog)
        cmd = build_flags.cc_command(cc, "simd", exes[-1], [ROOT / "tests" / "c" / f"{prog}.c", *objs], ["-static"])
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exes, hits


# raw inputs of golden vectors for the byte model (a log run over two blocks, binary, mixed, text)
CM_INPUTS = ["v13/log_270k-nomodel-static", "v13/binary-nomodel-static", "v13/mixed-tiny-static",
             "v13/alice_4k-tiny-static"]


def cm_payloads(stdout):
    """{input: (size, payload size, fnv)} from cm_driver's output (its timings left out)."""
    out = {}
    for line in stdout.splitlines():
        f = line.split()
        if f and f[0] != "total" and "fnv" in f:
            out[pathlib.Path(f[0]).name] = (f[1], f[2], f[f.index("fnv") + 1], f[-1])
    return out


def run_target(key, name, cc, objdump, runner, tmp):
    """Build and run one target: (name, "not run" | "build failed" | "ran" | "failed", its log, byte-model
    payloads)."""
    missing = [t for t in (cc, objdump, runner) if t and not shutil.which(t)]
    if missing:
        return name, "not run", f"== {name}: NOT RUN, not installed: {', '.join(missing)}\n", None
    t1 = time.monotonic()
    try:
        (exe, probe, cm), hits = build(cc, objdump, tmp / cc)
    except subprocess.CalledProcessError as e:
        return name, "build failed", f"== {name}: BUILD FAILED\n{' '.join(map(str, e.cmd))}\n{e.stderr}\n", None
    log = [f"== {name}: built with {cc} ({time.monotonic() - t1:.0f} s); fused multiply-adds in the core: "
           f"{len(hits)}{' ' + str(hits[:3]) if hits else ''}\n"]
    pre = [runner] if runner else []
    p = subprocess.run(pre + [str(probe)], text=True, capture_output=True)
    log.append(p.stdout + p.stderr)
    t1 = time.monotonic()
    blocks = tmp / "vec" / ("blocks_light.bin" if LIGHT_BUDGET else "blocks.bin")
    r = subprocess.run(pre + [str(exe), str(blocks)], text=True, capture_output=True)
    log += [r.stdout, r.stderr, f"== {name}: exit {r.returncode} in {time.monotonic() - t1:.0f} s\n"]
    t1 = time.monotonic()
    inputs = [VS.ok_vector(k).raw_path for k in CM_INPUTS]
    c = subprocess.run(pre + [str(cm), *map(str, inputs)], text=True, capture_output=True)
    payloads = cm_payloads(c.stdout)
    log.append(f"== {name}: byte models 1 and 2, {len(payloads)} codings of {len(inputs)} inputs, decoded, exit "
               f"{c.returncode} in {time.monotonic() - t1:.0f} s\n{c.stderr}")
    ok = r.returncode == 0 and p.returncode == 0 and c.returncode == 0 and len(payloads) == 2 * len(inputs) and not hits
    return name, "ran" if ok else "failed", "".join(log), payloads


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="only the vectors of these models (default: all)")
    ap.add_argument("--targets", default=",".join(t[0] for t in TARGETS),
                    help="comma-separated targets to run (default: all of %(default)s); one left out is reported")
    args = ap.parse_args(argv)
    keys = set(filter(None, args.targets.split(",")))
    unknown = keys - {t[0] for t in TARGETS}
    if unknown or not keys:
        ap.error(f"unknown targets {sorted(unknown)}; known: {', '.join(t[0] for t in TARGETS)}")
    t0 = time.monotonic()
    failed, ran, not_asked = [], [], [t[1] for t in TARGETS if t[0] not in keys]
    with tempfile.TemporaryDirectory(prefix="nlm-cross-") as tmp:
        tmp = pathlib.Path(tmp)
        exp = [sys.executable, str(ROOT / ".ci" / "cross" / "export_blocks.py"), str(tmp / "vec"),
               "--light-budget", str(LIGHT_BUDGET), "--light-only"]
        subprocess.run(exp + (["--models", args.models] if args.models else []), check=True)
        targets = [t for t in TARGETS if t[0] in keys]
        with ThreadPoolExecutor(len(targets)) as pool:     # the qemu runs take minutes: in parallel
            results = list(pool.map(lambda t: run_target(*t, tmp), targets))
        native = results[0][3] if targets[0][0] == "native" else None
        for name, status, log, payloads in results:
            sys.stdout.write(log)
            if status in ("ran", "failed"):
                ran.append(name)
            if payloads is not None and native is not None and payloads != native:
                sys.stdout.write(f"== {name}: byte-model payloads differ from x86-64: {payloads} != {native}\n")
                status = "failed"
            elif payloads is not None and native:
                sys.stdout.write(f"== {name}: byte-model payloads identical to x86-64 "
                                 f"({', '.join(f'{k} {v[1]} B' for k, v in sorted(payloads.items()))})\n")
            if status != "ran":              # a target that could not run fails the lane (fail closed)
                failed.append(f"{name} ({status})")
    print(f"cross-architecture lane: ran {', '.join(ran) or 'nothing'}"
          f"{'; not asked for: ' + ', '.join(not_asked) if not_asked else ''}; "
          f"{'FAILED: ' + ', '.join(failed) if failed else 'all identical'} ({time.monotonic() - t0:.0f} s)")
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
