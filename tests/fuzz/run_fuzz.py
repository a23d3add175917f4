"""Fuzzing driver: seed corpora from the golden vectors (codec/vectors, read through its
vectorset.py), the sanitizer builds of the C target, runs of every target, and one summary table (target,
engine, executions, coverage, findings).

    python tests/fuzz/run_fuzz.py [--time S] [--runs N] [--targets a,b] [--workdir DIR]

--time S: at most S seconds per target (the CI short run: .ci/fuzz); --runs N: N executions per target
(the long run: 10^6).  Targets: the Python ones of tests/fuzz/fuzz_py.py (atheris) and the C block
decoder tests/fuzz/fuzz_block.c, built twice with ASan + UBSan: clang + libFuzzer ("block-libfuzzer", when
clang's fuzzer runtime is installed) and gcc with its standalone mutator ("block-gcc").  A finding (a
crash-* file, or a sanitizer report) makes the exit status 1; turn it into an error vector of the current
format (codec/vectors/v<N>/errors/, make_vectors.py) once understood.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "codec" / "vectors"))
import vectorset as VS  # noqa: E402  (the golden vectors' layout)
# the test models (tiny, ...) are found through the model search path, here and in the fuzzing children
os.environ["NLMCODEC_MODEL_PATH"] = os.pathsep.join(
    [str(HERE.parent / "models")] + [d for d in os.environ.get("NLMCODEC_MODEL_PATH", "").split(os.pathsep) if d])
PY_TARGETS = ("decompress", "decompress_tiny", "decompressor", "load_model")
C_TARGETS = ("block-libfuzzer", "block-gcc")
SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]
# Both C builds are the dispatching core (AVX2 or AVX-512 where the CPU has it).  Until kern.c read the F16C
# bit itself, clang 14 could not build it and the libFuzzer build was the scalar core.
CLANG_EXTRA: list = []
# The numeric kernels (csrc/kernels) and the byte model (csrc/bytemodel) are built for libFuzzer without
# comparison tracing (trace-cmp), their edge counters, ASan and UBSan kept.  The kernels' loops compare
# dimensions the model fixes, never input bytes, and their tracing calls took 78% of the time in a perf
# profile (45 executions a second; 166 without them).  The byte model compares its own statistics and the
# bits the range decoder gives it, which no input byte reaches without the arithmetic decoder in between
# (tracing it cannot teach the mutator a value), and its tracing was 45% of a profile (62 executions
# a second).  The decoders' own parsing (codec, coder, speller) keeps its tracing.
NO_TRACE_CMP_DIRS = ("kernels", "bytemodel")
NO_TRACE_CMP = ["-fsanitize=fuzzer-no-link", "-fno-sanitize-coverage=trace-cmp"]
# Input sizes: frames of up to 600 bytes (the small golden frames whole, the big ones cut, which the
# decoder must reject as well) run at ~4k executions a second; a longer input mostly costs decoding time.
FRAME_MAX_LEN = 600
BLOCK_MAX_LEN = 256           # C target: a payload of up to 253 bytes (a block declared up to 64 KiB)
sys.path.insert(0, str(ROOT))
import build_flags  # noqa: E402  (the one build definition: standard and determinism flags)

CFLAGS = build_flags.STD + build_flags.DETERMINISM + ["-I", str(ROOT / "csrc")]


# ---------------------------------------------------------------------------------------------- seeds
def _frames():
    """(name, bytes) of every golden frame (ok, errors, retired) that needs none of the default models
    (default-2, ...: each would cost a second of decoding per execution)."""
    import nlmcodec
    from nlmcodec import _registry

    files = _registry.model_files()
    big = [nlmcodec.load_model(n).model_id for n in files if _registry.default_generation(n) is not None]
    for kind, vectors in (("ok", VS.ok_vectors()), ("errors", VS.error_vectors())):
        for v in vectors:
            b = v.frame()
            if not any(i in b for i in big):
                yield f"{kind}-{v.key.replace('/', '-')}", b


def _block_seeds():
    """C-target inputs: the first word-model or byte-model block of every golden frame (it decodes from the
    reset state), as flags byte (bit 0 adapt, bit 1 byte model, bit 2 heads mode, bit 3 the oldest format read
    rather than the newest, bit 4 a routed block of a tracked group, bits 5-7 its run's size class - 10:
    fuzz_block.c), size - 1 (2 bytes), payload."""
    import nlmcodec
    from nlmcodec import _frame as F

    for name, b in _frames():
        try:                                 # frames this build reads (the retired ones raise)
            version, _ = F.parse_start(b)
            adapt, _check, _model_id, pos = F.parse_header(b)
            blk = F.parse_block_header(b, pos, 0, version)
        except (nlmcodec.NLMError, F.Incomplete):
            continue
        if blk is None or blk[0] not in (F.BLOCK_MODEL, F.BLOCK_BYTE):
            continue
        kind, start, size, psize, p = blk
        routed = kind == F.BLOCK_MODEL and F.routes(version) and start > 1 and start <= F.TRACK_MIN + 7
        if size <= F.MAX_MODEL_BLOCK and p + psize <= len(b):
            flags = (1 if adapt else 0) | (2 if kind == F.BLOCK_BYTE else 0) | (4 if adapt == F.HEADS else 0) | \
                (8 if b[4] == F.READ_VERSIONS[0] < F.FORMAT_VERSION else 0) | \
                (16 | (start - F.TRACK_MIN) << 5 if routed else 0)
            yield name, bytes([flags]) + struct.pack("<H", size - 1) + b[p:p + psize]


KEPT_BLOCK_CORPUS = HERE / "corpus" / "block.tar.xz"   # the block targets' corpus, kept between machines


def write_seeds(work: Path, kept: bool = False) -> dict:
    """Seed corpora per target kind, under work/seeds/ (with kept, the block targets' also hold the corpus kept
    in KEPT_BLOCK_CORPUS: a libFuzzer corpus merged with -merge=1, see README.md); returns {kind: folder}."""
    import tarfile

    import nlmcodec

    dirs = {k: work / "seeds" / k for k in ("frames", "model", "block")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    for name, b in _frames():
        (dirs["frames"] / name).write_bytes(b)
    for name, b in _block_seeds():
        (dirs["block"] / name).write_bytes(b)
    if kept:
        with tarfile.open(KEPT_BLOCK_CORPUS) as tar:
            for m in tar.getmembers():
                if m.isfile() and m.size <= BLOCK_MAX_LEN:
                    (dirs["block"] / f"kept-{Path(m.name).name}").write_bytes(tar.extractfile(m).read())
    tiny = nlmcodec.load_model("tiny").to_bytes()
    (dirs["model"] / "tiny.nlmm").write_bytes(tiny)
    (dirs["model"] / "tiny-kn-small.nlmm").write_bytes(_kn_seed_model())
    return dirs


def _kn_seed_model() -> bytes:
    """The tiny model with a small Kneser-Ney section (docs/model_format.md 13a: counts of a few thousand tokens
    of the ENGLISH-like text below), so load_model's corpus starts with a valid section to mutate."""
    import numpy as np

    import nlmcodec
    from nlmcodec import kn

    m = nlmcodec.load_model("tiny")
    rng = np.random.default_rng(7)
    ids = np.minimum(rng.zipf(1.3, 3000), m.config["V"] - 1)
    return kn.attach(m, kn.build_section(ids, m.config["V"], lam=0.5)).to_bytes()


def write_model_dump(m, path: Path) -> None:
    """The model dump fuzz_block.c reads (its header comment gives the layout)."""
    import numpy as np

    c = m.config
    out = [struct.pack("<5i3f", c["V"], c["D"], c["H"], c["C"], c["seg_len"], c["lr"], c["decay"], c["eps"]),
           np.asarray(m.params, "<f4").tobytes(), np.asarray(m.ms, "<f4").tobytes()]
    vb = m.vocab_blob()
    out += [struct.pack("<I", len(vb)), vb, np.asarray(m.class_start, "<i4").tobytes(),
            struct.pack("<I", len(m.speller_prime)), m.speller_prime]
    path.write_bytes(b"".join(out))


# ---------------------------------------------------------------------------------------------- builds
def _sources():
    return [str(p) for p in build_flags.core_sources()]


def build_c(work: Path) -> dict:
    """{target: executable} of the C builds that work on this machine (each reported when it does not)."""
    exes = {}
    src = str(HERE / "fuzz_block.c")
    if shutil.which("clang"):
        exe = work / "fuzz_block_libfuzzer"
        kern = [s for s in _sources() if Path(s).parent.name in NO_TRACE_CMP_DIRS]
        objs = [str(work / (Path(s).stem + ".libfuzzer.o")) for s in kern]
        r = None
        for s, o in zip(kern, objs):
            r = subprocess.run(["clang", *CFLAGS, *SAN, *CLANG_EXTRA, *NO_TRACE_CMP, "-c", "-o", o, s],
                               capture_output=True, text=True)
            if r.returncode != 0:
                break
        if r is None or r.returncode == 0:
            rest = [s for s in _sources() if s not in kern]
            r = subprocess.run(["clang", *CFLAGS, *SAN, *CLANG_EXTRA, "-fsanitize=fuzzer", "-o", str(exe), src,
                                *rest, *objs], capture_output=True, text=True)
        if r.returncode == 0:
            exes["block-libfuzzer"] = exe
        else:
            print("block-libfuzzer: NOT BUILT (clang without its fuzzer/sanitizer runtime; Debian: "
                  "apt-get install libclang-rt-14-dev):", r.stderr.strip().splitlines()[-1:], flush=True)
    else:
        print("block-libfuzzer: NOT BUILT (no clang)", flush=True)
    if shutil.which("gcc"):
        exe = work / "fuzz_block_gcc"
        r = subprocess.run(["gcc", *CFLAGS, *SAN, "-DNLM_FUZZ_STANDALONE", "-o", str(exe), src, *_sources(), "-lm"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            exes["block-gcc"] = exe
        else:   # gcc is the compiler the project builds with: a target that does not compile is a failure
            raise SystemExit("block-gcc: tests/fuzz/fuzz_block.c does not compile with the core:\n" + r.stderr[-2000:])
    return exes


# ---------------------------------------------------------------------------------------------- runs
def _libfuzzer_stats(text: str):
    """(executions, coverage) from libFuzzer's output ("#N ... cov: C ft: F", "Done N runs")."""
    execs = re.findall(r"Done (\d+) runs", text) or re.findall(r"^#(\d+)\s", text, re.M)
    cov = re.findall(r"cov: (\d+) ft: (\d+)", text)
    return (int(execs[-1]) if execs else 0), (f"cov {cov[-1][0]} ft {cov[-1][1]}" if cov else "-")


def run_target(name, cmd, work: Path, env, budget):
    art = work / "artifacts" / name
    art.mkdir(parents=True, exist_ok=True)
    log = work / f"{name}.log"
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=art,
                           timeout=None if budget is None else budget * 3 + 300)
    text = log.read_text(errors="replace")
    if name == "block-gcc":
        m = re.search(r"(\d+) executions", text)
        execs, cov = (int(m.group(1)) if m else 0), "- (gcc: no coverage counters)"
    else:
        execs, cov = _libfuzzer_stats(text)
    crashes = sorted(p.name for p in art.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-")))
    failed = r.returncode != 0 or crashes
    return {"target": name, "executions": execs, "coverage": cov, "seconds": round(time.time() - t0, 1),
            "findings": crashes or ([f"exit {r.returncode}, see {log}"] if failed else []), "log": str(log)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time", type=int, default=None, help="seconds per target")
    ap.add_argument("--runs", type=int, default=None, help="executions per target")
    ap.add_argument("--targets", default=",".join(PY_TARGETS + C_TARGETS))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--seed", type=int, default=1,
                    help="block-gcc's mutation seed: a run that continues an earlier one takes a new seed, or it "
                         "repeats the earlier run's inputs")
    ap.add_argument("--kept", action="store_true",
                    help="add the corpus kept in tests/fuzz/corpus to the block targets' seeds (a long run that goes "
                         "on where the last one stopped; the CI's short runs start from the vectors)")
    ap.add_argument("--timeout", type=int, default=20,
                    help="libFuzzer/atheris per-input limit in wall-clock seconds (raise it on a loaded machine or "
                         "under nice: a starved process can pass 20 s on an input that takes 0.1 s of CPU)")
    args = ap.parse_args(argv)
    if args.time is None and args.runs is None:
        args.time = 15
    work = Path(args.workdir or tempfile.mkdtemp(prefix="nlmfuzz-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    targets = args.targets.split(",")
    dirs = write_seeds(work, args.kept)
    import nlmcodec

    dump = work / "tiny.fuzzmodel"
    write_model_dump(nlmcodec.load_model("tiny"), dump)
    env = dict(os.environ, NLM_FUZZ_MODEL=str(dump),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1", UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    limits = ([f"-max_total_time={args.time}"] if args.time else []) + ([f"-runs={args.runs}"] if args.runs else [])
    results = []
    exes = build_c(work) if any(t in C_TARGETS for t in targets) else {}
    for t in targets:
        if t in PY_TARGETS:
            try:
                import atheris  # noqa: F401
            except ImportError:
                print(f"{t}: NOT RUN (atheris is not installed: pip install atheris)", flush=True)
                continue
            corpus = work / "corpus" / t
            if not corpus.exists():
                shutil.copytree(dirs["model" if t == "load_model" else "frames"], corpus)
            max_len = max(p.stat().st_size for p in dirs["model"].iterdir()) + 256 if t == "load_model" \
                else FRAME_MAX_LEN
            cmd = [sys.executable, str(HERE / "fuzz_py.py"), t, *limits, f"-max_len={max_len}", f"-timeout={args.timeout}",
                   "-rss_limit_mb=3072", "-print_final_stats=1", str(corpus)]
        elif t in exes:
            if t == "block-gcc":
                n = args.runs or 10 ** 9          # with --time alone, -max_total_time ends it
                cmd = [str(exes[t]), f"-runs={n}", f"-seed={args.seed}", f"-max_len={BLOCK_MAX_LEN}",
                       *([f"-max_total_time={args.time}"] if args.time else []), str(dirs["block"])]
            else:
                corpus = work / "corpus" / t
                if not corpus.exists():
                    shutil.copytree(dirs["block"], corpus)
                cmd = [str(exes[t]), *limits, f"-max_len={BLOCK_MAX_LEN}", f"-timeout={args.timeout}", "-print_final_stats=1",
                       str(corpus)]
        else:
            continue
        print(f"fuzzing {t} ...", flush=True)
        results.append(run_target(t, cmd, work, env, args.time))
        r = results[-1]
        print(f"  {r['executions']} executions in {r['seconds']} s, {r['coverage']}, findings: "
              f"{', '.join(r['findings']) or 'none'}", flush=True)
    print("\n| target | executions | coverage | seconds | findings |\n|---|---|---|---|---|")
    for r in results:
        print(f"| {r['target']} | {r['executions']} | {r['coverage']} | {r['seconds']} | "
              f"{', '.join(r['findings']) or 'none'} |")
    print(f"(work folder: {work})")
    return 1 if any(r["findings"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
