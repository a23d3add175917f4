"""Speed against xz -9e in the same run (issue "Speed"): book1, one core, compress and decompress.

    python benchmarks/speed.py [--file calgary/book1] [--runs 3] [--out benchmarks/speed.md]

Each measurement runs in a fresh child process (so the peak RSS is that coder's own: the child's VmHWM) on
one thread: xz -9e is Python's lzma module at preset 9 | PRESET_EXTREME (the liblzma of this machine),
nlmcodec without a model (the bundled default models, chosen per frame) in static, dynamic and heads mode (`compress(threads=1)` / `decompress`).  Times are
CPU seconds of the coding call (the machine is shared, so CPU time is the fairer figure; wall time is shown
too); the figure that travels between machines is the ratio to xz -9e's compression speed measured in the
same run, median of RUNS.  Output sizes are exact and the decompressed bytes are checked.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

CHILD = r"""
import json, lzma, sys, time
path, what = sys.argv[1], sys.argv[2]
data = open(path, 'rb').read()
if what == 'xz':
    f = lambda: lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)
    g = lzma.decompress
else:
    import nlmcodec
    adapt = {'static': False, 'dynamic': True, 'heads': 'heads'}[what]
    from nlmcodec import _registry
    for m in _registry.default_models():        # compress() chooses between them: both loaded first
        m.native()
    f = lambda: nlmcodec.compress(data, adapt=adapt, threads=1)
    g = lambda z: nlmcodec.decompress(z, threads=1)
t, w = time.process_time(), time.perf_counter()
z = f()
tc, wc = time.process_time() - t, time.perf_counter() - w
t, w = time.process_time(), time.perf_counter()
out = g(z)
td, wd = time.process_time() - t, time.perf_counter() - w
assert out == data
with open('/proc/self/status') as fh:
    hwm = int([l for l in fh if l.startswith('VmHWM:')][0].split()[1])
print(json.dumps({'n': len(data), 'out': len(z), 'tc': tc, 'td': td, 'wc': wc, 'wd': wd, 'rss_kb': hwm}))
"""


def measure(path, what):
    r = subprocess.run([sys.executable, "-c", CHILD, str(path), what], capture_output=True, text=True,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout)


def main(argv=None):
    from nlmcodec._bench import corpus_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="calgary/book1", help="a file under the corpus's bench/ folder")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "speed.md"))
    a = ap.parse_args(argv)
    path = Path(corpus_dir() or "../shared/corpus") / "bench" / a.file
    whats = ("xz", "static", "dynamic", "heads")
    res = {w: [] for w in whats}
    for _ in range(a.runs):          # interleaved, so a change of load hits every coder alike
        for w in whats:
            res[w].append(measure(path, w))
    n = res["xz"][0]["n"]
    xz_c = statistics.median(n / r["tc"] for r in res["xz"])
    load = os.getloadavg()
    lines = ["# Speed against xz -9e (issue \"Speed\")", "",
             f"`python benchmarks/speed.py --file {a.file} --runs {a.runs}`: {path.name}, {n:,} bytes, one thread, "
             f"median of {a.runs} interleaved runs, each in a fresh process.  KB/s from CPU time (wall in brackets); "
             f"the ratio is to xz -9e's compression speed in the same run.  Load average at the end: "
             f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} on {os.cpu_count()} cores.", "",
             "| coder | bytes out | compress KB/s | decompress KB/s | compress / xz -9e | decompress / xz -9e | peak RSS MB |",
             "|---|---|---|---|---|---|---|"]
    for w in whats:
        rs = res[w]
        c = statistics.median(n / r["tc"] for r in rs) / 1e3
        d = statistics.median(n / r["td"] for r in rs) / 1e3
        cw = statistics.median(n / r["wc"] for r in rs) / 1e3
        dw = statistics.median(n / r["wd"] for r in rs) / 1e3
        name = {"xz": "xz -9e (lzma preset 9e)", "static": "nlmcodec default, static",
                "dynamic": "nlmcodec default, dynamic", "heads": "nlmcodec default, heads mode (the default mode)"}[w]
        lines.append(f"| {name} | {rs[0]['out']:,} | {c:,.1f} ({cw:,.1f}) | {d:,.1f} ({dw:,.1f}) | "
                     f"{c * 1e3 / xz_c:.3f} | {d * 1e3 / xz_c:.3f} | {max(r['rss_kb'] for r in rs) / 1024:.0f} |")
    lines.append("")
    Path(a.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
