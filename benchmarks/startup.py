"""Start-up table (issue "Speed"): wall time, CPU time and peak RSS of the steps a small file pays for.

    python benchmarks/startup.py [--runs 7] [--out benchmarks/startup.md]

Each row runs a fresh interpreter RUNS times (median wall, median user+sys CPU from os.wait4, largest
peak RSS as the child's VmHWM; the CLI rows run `python -m nlmcodec` through runpy in the same wrapper): `python -c pass` (the interpreter alone), `import nlmcodec`, loading the default model,
`python -m nlmcodec -c` of the first 5,000 bytes of alice29.txt (static, heads: the default, and dynamic) and `-dc` of the
result.  The last section checks in one process that threads share one model: four threads compress at
once, every codec is built on the same native model object, and the resident memory they add is reported
against the model file's size.  The package is byte-compiled first, as an installed package is.  Wall time depends on the machine's load: the CPU column and the load
average printed with the table say how quiet it was.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from nlmcodec._bench import corpus_dir  # noqa: E402


# The child reports its own peak RSS (VmHWM, counted from its exec: wait4's ru_maxrss would include the
# parent's size at fork time) on stderr at exit; `code` is Python source, or "-m nlmcodec ARGS...".
WRAP = """import atexit, sys
def _hwm():
    with open('/proc/self/status') as f:
        sys.stderr.write([l for l in f if l.startswith('VmHWM:')][0].replace('VmHWM:', '@@VMHWM'))
atexit.register(_hwm)
code = sys.argv[1]
if code.startswith('-m '):
    import runpy
    sys.argv = ['nlmcodec'] + sys.argv[2:]
    runpy.run_module('nlmcodec', run_name='__main__', alter_sys=True)
else:
    exec(compile(code, '<bench>', 'exec'))
"""


def run(cmd, stdin=None, stdout=subprocess.DEVNULL):
    """(wall s, user+sys s, peak RSS KB) of one child."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed: {err.decode(errors='replace')}")
    hwm = [ln for ln in err.decode().splitlines() if ln.startswith("@@VMHWM")]
    return wall, ru.ru_utime + ru.ru_stime, int(hwm[-1].split()[1]) if hwm else ru.ru_maxrss


def row(name, cmd, runs, stdin_path=None, stdout_path=None):
    res = []
    for _ in range(runs):
        fin = open(stdin_path, "rb") if stdin_path else None
        fout = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
        try:
            res.append(run(cmd, fin, fout))
        finally:
            if fin:
                fin.close()
            if stdout_path:
                fout.close()
    return (name, statistics.median(r[0] for r in res), statistics.median(r[1] for r in res),
            max(r[2] for r in res))


def threads_share_one_model(data):
    import nlmcodec

    def rss_kb():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    m = nlmcodec.load_model("default")
    nlmcodec.compress(data, model=m, adapt=False)          # warm: model mapped, native tables built
    before = rss_kb()
    natives, errors = [], []

    def work():
        try:
            mm = nlmcodec.load_model("default")
            natives.append(mm.native())
            assert nlmcodec.decompress(nlmcodec.compress(data, model=mm, adapt=False)) == data
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return (len({id(n) for n in natives}), rss_kb() - before, m.nbytes // 1024)


# run in a fresh child, which imports nlmcodec the way the rows above do (PYTHONPATH first), so a run against
# another build measures that build
PARTS = r"""
import statistics, time
import nlmcodec
from nlmcodec._core import Codec
m = nlmcodec.load_model("default")
build, codec = [], []
for _ in range(15):
    t = time.perf_counter(); m._build_native(); build.append(time.perf_counter() - t)
for _ in range(40):
    t = time.perf_counter(); c = Codec(m, True); c.reset(); codec.append(time.perf_counter() - t); del c
print(1000 * statistics.median(build), 1000 * statistics.median(codec))
"""


def in_process_parts():
    """(ms to build the default model's native form again, ms to create and reset a dynamic codec): medians in
    one fresh process, the model file already mapped (what the `load_model` and `-c`/`-dc` rows pay once each)."""
    out = subprocess.run([sys.executable, "-c", PARTS], capture_output=True, text=True, check=True).stdout
    build_ms, codec_ms = map(float, out.split())
    return build_ms, codec_ms


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "startup.md"))
    a = ap.parse_args(argv)
    # what a normal install has (pip byte-compiles the package): the bytecode of every module, written here
    # even when PYTHONDONTWRITEBYTECODE is set (it stops writing, not reading)
    import compileall
    import nlmcodec

    compileall.compile_dir(str(Path(nlmcodec.__file__).parent), quiet=1)
    src = Path(corpus_dir() or "../shared/corpus") / "bench" / "canterbury" / "alice29.txt"
    data = src.read_bytes()[:5000]
    py = sys.executable
    with tempfile.TemporaryDirectory() as d:
        small = Path(d) / "a5k.txt"
        small.write_bytes(data)
        frames = {mode: Path(d) / f"a5k.{mode}.nlm" for mode in ("static", "heads", "dynamic")}
        w = [py, "-c", WRAP]
        rows = [row("python -c pass (the interpreter alone)", w + ["pass"], a.runs),
                row("import nlmcodec", w + ["import nlmcodec"], a.runs),
                row("import + load_model('default')",
                    w + ["import nlmcodec; nlmcodec.load_model('default').native()"], a.runs)]
        for mode, flag in (("static", ["--static"]), ("heads", []), ("dynamic", ["--dynamic"])):
            label = f"{mode} (the default)" if not flag else mode
            rows.append(row(f"python -m nlmcodec -c {label} (5,000 B)", w + ["-m nlmcodec", "-c"] + flag +
                            [str(small)], a.runs, stdout_path=frames[mode]))
            rows.append(row(f"python -m nlmcodec -dc {label} ({frames[mode].stat().st_size:,} B)",
                            w + ["-m nlmcodec", "-dc", str(frames[mode])], a.runs))
    build_ms, codec_ms = in_process_parts()
    nmod, added_kb, model_kb = threads_share_one_model(data)
    load = os.getloadavg()
    lines = ["# Start-up (issue \"Speed\")", "",
             f"`python benchmarks/startup.py --runs {a.runs}`: median of {a.runs} fresh interpreters per row; "
             f"CPU = user + sys; peak RSS from wait4.  Load average during the run: "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} on {os.cpu_count()} cores.", "",
             "| step | wall (s) | CPU (s) | peak RSS (MB) |", "|---|---|---|---|"]
    for name, w, c, r in rows:
        lines.append(f"| {name} | {w:.3f} | {c:.3f} | {r / 1024:.1f} |")
    lines += ["", f"Four threads compressing at once with `load_model('default')`: {nmod} native model object(s) "
              f"among their codecs; resident memory added by the four codecs and their work: "
              f"{added_kb / 1024:.1f} MB (the model file is {model_kb / 1024:.1f} MB and is mapped once).", "",
              f"In one fresh process, the model file mapped (median): building the default model's native form (most of "
              f"it priming the speller) {build_ms:.1f} ms; creating and resetting a dynamic codec {codec_ms:.1f} ms.",
              ""]
    Path(a.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
