"""The files the word model cannot help: exact sizes in the three modes against the anchors
(xz -9e and PPMd order 16 from benchmarks/anchor_sizes.json), the block kinds the encoder chose, and CPU
speed of compress and decompress (one core, median of --runs) with xz -9e and PPMd (pyppmd order 16, when
installed) measured in the same run.

    python benchmarks/byte_targets.py [--runs N] [--files a,b,...] [-o benchmarks/byte_targets.md]

Speed: CPU seconds (time.process_time) of nlmcodec.compress / decompress without a model (each frame uses the
bundled default model its probe chooses), and of
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

MODES = (("static", False), ("heads", "heads"), ("dynamic", True))
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
    model = None        # what compress() does without a model: it chooses between the bundled default models
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
        for mode, adapt in MODES:
            f, tc = cpu(lambda: nlmcodec.compress(data, model=model, adapt=adapt), a.runs)
            out, td = cpu(lambda: nlmcodec.decompress(f), a.runs)
            assert out == data, name
            kinds = sorted({b.kind for b in nlmcodec.get_frame_info(f).blocks})
            row[mode] = {"size": len(f), "kinds": kinds, "c_kbs": n / 1000 / tc, "d_kbs": n / 1000 / td}
        rows.append(row)
        print(f"{name:22s} {n:>10,} " + " ".join(f"{m} {row[m]['size']:>9,} ({row[m]['size'] / row['ppmd']:.3f} PPMd)"
                                                 for m, _ in MODES) + f"  {'+'.join(row['heads']['kinds'])}", flush=True)
    lines = ["# The files the word model cannot help", "",
             f"`python benchmarks/byte_targets.py --runs {a.runs} -o benchmarks/byte_targets.md`: exact sizes with "
             "compress() without a model (each frame's default model chosen by its probe) in the three modes against xz -9e and PPMd order 16 (`benchmarks/anchor_sizes.json`); "
             "block kinds of the heads-mode (default) frame; CPU speed of one core (median of the runs), xz -9e "
             f"measured in the same run (load average at the start: {os.getloadavg()[0]:.1f}).", "",
             "| file | bytes | xz -9e | PPMd o16 | static | heads | dynamic | heads / PPMd | heads / xz | blocks (heads) "
             "| compress KB/s s / h / d | decompress KB/s s / h / d | xz -9e KB/s | PPMd KB/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        s_, h, d = r["static"], r["heads"], r["dynamic"]
        lines.append(f"| {r['file']} | {r['bytes']:,} | {r['xz']:,} | {r['ppmd']:,} | {s_['size']:,} | {h['size']:,} "
                     f"| {d['size']:,} | {h['size'] / r['ppmd']:.3f} | {h['size'] / r['xz']:.3f} | {'+'.join(h['kinds'])} "
                     f"| {s_['c_kbs']:.0f} / {h['c_kbs']:.0f} / {d['c_kbs']:.0f} "
                     f"| {s_['d_kbs']:.0f} / {h['d_kbs']:.0f} / {d['d_kbs']:.0f} | {r['xz_kbs']:.0f} "
                     f"| {'%.0f' % r['ppmd_kbs'] if r['ppmd_kbs'] else '-'} |")
    text = "\n".join(lines) + "\n"
    if a.output:
        with open(a.output, "w") as fh:
            fh.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
