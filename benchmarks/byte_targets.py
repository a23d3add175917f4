"""Issue 9's table: the files the word model cannot help, exact sizes in both modes against the anchors
(xz -9e and PPMd order 16 from benchmarks/anchor_sizes.json), the block kinds the encoder chose, and CPU
speed of compress and decompress (one core, median of --runs) with xz -9e and PPMd (pyppmd order 16, when
installed) measured in the same run.

    python benchmarks/byte_targets.py [--runs N] [--files a,b,...] [-o benchmarks/byte_targets.md]

Speed: CPU seconds (time.process_time) of nlmcodec.compress / decompress with the default model, and of
lzma.compress(preset 9 | PRESET_EXTREME) on the same bytes; "vs xz" is nlmcodec's compress speed over xz's.
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import nlmcodec  # noqa: E402
from nlmcodec._bench import require_corpus_dir  # noqa: E402

FILES = ["zlib-source.c", "apache-access.log", "company-tickers.json", "german-gutenberg.txt", "bib", "bible.txt",
         "cp.html", "fields.c", "progc", "progl", "progp", "trans", "world192.txt", "xargs.1", "xml", "reymont"]


def find(name):
    root = require_corpus_dir()
    for sub, _, files in os.walk(root):
        if os.path.basename(sub) in ("train", "dev"):
            continue
        for f in files:
            if f == name or f == name + ".xz":
                p = os.path.join(sub, f)
                data = open(p, "rb").read()
                return lzma.decompress(data) if f.endswith(".xz") else data
    raise FileNotFoundError(name)


def cpu(fn, runs):
    ts = []
    for _ in range(runs):
        t = time.process_time()
        out = fn()
        ts.append(time.process_time() - t)
    return out, statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--files", default=",".join(FILES))
    ap.add_argument("-o", "--output", default=None)
    a = ap.parse_args(argv)
    anchors = json.load(open(os.path.join(HERE, "anchor_sizes.json")))
    model = nlmcodec.load_model("default")
    rows = []
    for name in a.files.split(","):
        data = find(name)
        n = len(data)
        xz, t_xz = cpu(lambda: lzma.compress(data, preset=9 | lzma.PRESET_EXTREME), a.runs)
        row = {"file": name, "bytes": n, "xz": anchors[name]["xz-9e"], "ppmd": anchors[name]["ppmd-o16"],
               "xz_kbs": n / 1000 / t_xz, "ppmd_kbs": None}
        try:
            import pyppmd
        except ImportError:
            pyppmd = None
        if pyppmd is not None:
            _, t_pp = cpu(lambda: pyppmd.compress(data, max_order=16, mem_size=256 << 20, variant="I"), a.runs)
            row["ppmd_kbs"] = n / 1000 / t_pp
        for mode, adapt in (("static", False), ("dynamic", True)):
            f, tc = cpu(lambda: nlmcodec.compress(data, model=model, adapt=adapt), a.runs)
            out, td = cpu(lambda: nlmcodec.decompress(f), a.runs)
            assert out == data, name
            kinds = sorted({b.kind for b in nlmcodec.get_frame_info(f).blocks})
            row[mode] = {"size": len(f), "kinds": kinds, "c_kbs": n / 1000 / tc, "d_kbs": n / 1000 / td}
        rows.append(row)
        s, d = row["static"], row["dynamic"]
        print(f"{name:22s} {n:>10,} static {s['size']:>9,} ({s['size'] / row['ppmd']:.3f} PPMd, "
              f"{s['size'] / row['xz']:.3f} xz) dynamic {d['size']:>9,} ({d['size'] / row['ppmd']:.3f} PPMd, "
              f"{d['size'] / row['xz']:.3f} xz)  {'+'.join(d['kinds'])}  c {s['c_kbs']:.0f}/{d['c_kbs']:.0f} "
              f"d {s['d_kbs']:.0f}/{d['d_kbs']:.0f} KB/s, xz -9e {row['xz_kbs']:.0f}", flush=True)
    lines = ["# The files the word model cannot help (issue 9)", "",
             f"`python benchmarks/byte_targets.py --runs {a.runs}`: exact sizes with the default model against "
             "xz -9e and PPMd order 16 (`benchmarks/anchor_sizes.json`); block kinds of the dynamic frame; CPU "
             "speed of one core (median), xz -9e measured in the same run.", "",
             "| file | bytes | xz -9e | PPMd o16 | static | dynamic | dynamic / PPMd | dynamic / xz | static / PPMd "
             "| static / xz | blocks | compress KB/s s / d | decompress KB/s s / d | xz -9e KB/s | PPMd KB/s "
             "| compress / xz (s / d) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        s, d = r["static"], r["dynamic"]
        lines.append(f"| {r['file']} | {r['bytes']:,} | {r['xz']:,} | {r['ppmd']:,} | {s['size']:,} | {d['size']:,} "
                     f"| {d['size'] / r['ppmd']:.3f} | {d['size'] / r['xz']:.3f} | {s['size'] / r['ppmd']:.3f} "
                     f"| {s['size'] / r['xz']:.3f} | {'+'.join(d['kinds'])} | {s['c_kbs']:.0f} / {d['c_kbs']:.0f} "
                     f"| {s['d_kbs']:.0f} / {d['d_kbs']:.0f} | {r['xz_kbs']:.0f} "
                     f"| {'%.0f' % r['ppmd_kbs'] if r['ppmd_kbs'] else '-'} "
                     f"| {s['c_kbs'] / r['xz_kbs']:.2f} / {d['c_kbs'] / r['xz_kbs']:.2f} |")
    text = "\n".join(lines) + "\n"
    if a.output:
        with open(a.output, "w") as fh:
            fh.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
