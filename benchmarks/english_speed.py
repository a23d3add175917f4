"""The English files' compress and decompress speed, this build against an earlier one, in the same run
(issue 9: the speed change of format 5 against format 4 must be at most -10%).

    git worktree add /tmp/nlm-before dc1dd9b && (cd /tmp/nlm-before && pip wheel --no-deps -w /tmp/w . \\
        && cd /tmp/w && unzip -o *.whl 'nlmcodec/*.so' -d /tmp/nlm-before/python)
    python benchmarks/english_speed.py --before /tmp/nlm-before/python [--runs 3] [--out benchmarks/english_speed.md]
    python benchmarks/english_speed.py --before /tmp/nlm-before/python --ab plrabn12.txt --mode static --runs 7

Each measurement runs in a fresh interpreter of the build under test (PYTHONPATH), one thread, CPU time of
nlmcodec.compress / decompress alone (the model loaded before the clock starts), median of --runs; the two
builds alternate file by file, so both see the same machine load; xz -9e is timed in the same run.  The 13
Canterbury / Calgary English files (dickens, 10 MB, is left out for time).

--ab FILE: one file, one mode, a persistent interpreter per build (the model loaded once), the two builds
alternating run by run, --runs times: the steadier figure for one file on a noisy machine.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
FILES = ["alice29.txt", "asyoulik.txt", "lcet10.txt", "plrabn12.txt", "book1", "book2", "paper1", "paper2",
         "paper3", "paper4", "paper5", "paper6", "news"]

CHILD = r"""
import json, sys, time, nlmcodec
data = open(sys.argv[1], 'rb').read()
m = nlmcodec.load_model('default')
out = {}
for adapt in (False, True):
    t = time.process_time(); f = nlmcodec.compress(data, model=m, adapt=adapt); c = time.process_time() - t
    t = time.process_time(); assert nlmcodec.decompress(f, model=m) == data; d = time.process_time() - t
    out['dynamic' if adapt else 'static'] = [c, d, len(f)]
print(json.dumps(out))
"""


def measure(pythonpath: str, path: pathlib.Path) -> dict:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    r = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


LOOP = r"""
import sys, time, nlmcodec
data = open(sys.argv[1], 'rb').read(); m = nlmcodec.load_model('default')
adapt = {'static': False, 'dynamic': True, 'heads': 'heads'}[sys.argv[2]]
nlmcodec.compress(data, model=m, adapt=adapt)
for _ in sys.stdin:
    t = time.process_time(); f = nlmcodec.compress(data, model=m, adapt=adapt); c = time.process_time() - t
    t = time.process_time(); assert nlmcodec.decompress(f, model=m) == data; d = time.process_time() - t
    print(c, d, flush=True)
"""


def ab(builds: dict, path: pathlib.Path, mode: str, runs: int) -> str:
    """--ab: persistent interpreters, alternating run by run; the medians and the change."""
    procs = {k: subprocess.Popen([sys.executable, "-c", LOOP, str(path), mode], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=v))
             for k, v in builds.items()}
    res = {k: [] for k in procs}
    for _ in range(runs):
        for k, p in procs.items():
            p.stdin.write("go\n")
            p.stdin.flush()
            res[k].append([float(x) for x in p.stdout.readline().split()])
    for p in procs.values():
        p.stdin.close()
        p.wait()
    n = path.stat().st_size
    med = {k: [statistics.median(r[i] for r in v) for i in (0, 1)] for k, v in res.items()}
    (cb, db), (ca, da) = med["before"], med["after"]
    return (f"{path.name} {mode}, {runs} alternating runs: compress {n / 1000 / cb:.1f} -> {n / 1000 / ca:.1f} KB/s "
            f"({100 * (cb / ca - 1):+.1f}%), decompress {n / 1000 / db:.1f} -> {n / 1000 / da:.1f} KB/s "
            f"({100 * (db / da - 1):+.1f}%)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the python/ folder of the earlier build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--ab", default=None, metavar="FILE", help="one file, persistent interpreters (see above)")
    ap.add_argument("--mode", default="static", choices=("static", "dynamic", "heads"))
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "python"))
    from nlmcodec._bench import require_corpus_dir

    corpus = pathlib.Path(require_corpus_dir()) / "bench"
    after = str(ROOT / "python")
    if a.ab:
        print(ab({"before": a.before, "after": after}, next(corpus.glob(f"*/{a.ab}")), a.mode, a.runs))
        return
    rows = ["| file | bytes | mode | KB/s compress before → after | change | KB/s decompress before → after | "
            "change | bytes before → after | xz -9e KB/s |", "|---|---:|---|---|---:|---|---:|---|---:|"]
    tot = {m: [0.0, 0.0, 0.0, 0.0] for m in ("static", "dynamic")}   # c before, c after, d before, d after
    nbytes = 0
    for name in FILES:
        path = next(corpus.glob(f"*/{name}"))
        n = path.stat().st_size
        nbytes += n
        runs = {"before": [], "after": []}
        for _ in range(a.runs):
            runs["before"].append(measure(a.before, path))
            runs["after"].append(measure(after, path))
        data = path.read_bytes()
        xt = []
        for _ in range(a.runs):
            t = time.process_time()
            lzma.compress(data, preset=9 | lzma.PRESET_EXTREME)
            xt.append(time.process_time() - t)
        xz = n / 1000 / statistics.median(xt)
        for mode in ("static", "dynamic"):
            med = {k: [statistics.median(r[mode][i] for r in v) for i in (0, 1)] for k, v in runs.items()}
            size = {k: v[0][mode][2] for k, v in runs.items()}
            cb, ca = med["before"][0], med["after"][0]
            db, da = med["before"][1], med["after"][1]
            for i, x in enumerate((cb, ca, db, da)):
                tot[mode][i] += x
            rows.append(f"| {name} | {n:,} | {mode} | {n / 1000 / cb:.1f} → {n / 1000 / ca:.1f} | {100 * (cb / ca - 1):+.1f}% | "
                        f"{n / 1000 / db:.1f} → {n / 1000 / da:.1f} | {100 * (db / da - 1):+.1f}% | "
                        f"{size['before']:,} → {size['after']:,} | {xz:.0f} |")
            print(rows[-1], flush=True)
    for mode, (cb, ca, db, da) in tot.items():
        rows.append(f"| **all 13** | {nbytes:,} | {mode} | {nbytes / 1000 / cb:.1f} → {nbytes / 1000 / ca:.1f} | "
                    f"{100 * (cb / ca - 1):+.1f}% | {nbytes / 1000 / db:.1f} → {nbytes / 1000 / da:.1f} | "
                    f"{100 * (db / da - 1):+.1f}% | | |")
    text = (f"Command: `python benchmarks/english_speed.py --before BEFORE --runs {a.runs}` (CPU time, one thread, "
            f"median of {a.runs}; change = speed after / before - 1)\n\n" + "\n".join(rows) + "\n")
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
