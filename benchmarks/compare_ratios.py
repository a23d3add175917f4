"""Before and after of the pinned sizes: benchmarks/ratios.csv at a git revision against the working tree's,
per file and mode (bytes, change, bits per byte) and the totals per mode.

    python benchmarks/compare_ratios.py REV [--csv benchmarks/ratios.csv]

REV: any git revision that has the file (e.g. the commit before a format change).  Rows are matched by
(file, mode); a row in only one of the two files is listed as such.
"""
import argparse
import csv
import io
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev")
    ap.add_argument("--csv", default="benchmarks/ratios.csv")
    a = ap.parse_args(argv)
    old_text = subprocess.check_output(["git", "show", f"{a.rev}:{a.csv}"], text=True, cwd=REPO)
    old = {(r["file"], r["mode"]): r for r in csv.DictReader(io.StringIO(old_text))}
    new = {(r["file"], r["mode"]): r for r in csv.DictReader(open(REPO / a.csv))}
    print(f"{a.csv}: {a.rev} -> working tree\n")
    print("| file | mode | bytes before | bytes after | change | bpb before | bpb after |")
    print("|---|---|---:|---:|---:|---:|---:|")
    tot = {}
    for key in list(old) + [k for k in new if k not in old]:
        if key not in old or key not in new:
            print(f"| {key[0]} | {key[1]} | only {'after' if key in new else 'before'} | | | | |")
            continue
        o, n = old[key], new[key]
        ob, nb, raw = int(o["bytes_out"]), int(n["bytes_out"]), int(o["bytes_in"])
        t = tot.setdefault(key[1], [0, 0, 0])
        t[0] += ob; t[1] += nb; t[2] += raw
        print(f"| {key[0]} | {key[1]} | {ob:,} | {nb:,} | {100 * (nb / ob - 1):+.2f}% | {8 * ob / raw:.4f} | "
              f"{8 * nb / raw:.4f} |")
    for mode, (ob, nb, raw) in tot.items():
        print(f"| **all** | {mode} | {ob:,} | {nb:,} | {100 * (nb / ob - 1):+.2f}% | {8 * ob / raw:.4f} | "
              f"{8 * nb / raw:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
