"""Tables from measure.py's results (results/bytes_<tag>.npz, tokens_<tag>.npz): bits per byte per source, per line
type and per byte category, the encoder's choices, and the classes needed per token.  Writes results/<tag>_*.csv and
prints the Markdown tables (results.md is this output).

    python benchmarks/lm_in_mixer/report.py --tag main > benchmarks/lm_in_mixer/results.md
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

from measure import CATS  # noqa: E402

COLS = ("frame", "wm", "bm", "oracle", "wmbyte", "mix")
CODERS = ("model", "byte", "lzma", "stored")



def linetype_rows(B, cols, gsel, lt):
    """Rows of a per-line-type table: line type, its share of the selected bytes, bits per byte of each column."""
    rows, tot = [], int(gsel.sum())
    for k, ln in enumerate(common.LINE_TYPES):
        sel = gsel & (lt == k)
        n = int(sel.sum())
        if n:
            rows.append([ln, f"{100 * n / tot:.1f}%"] + [float(B[c][sel].sum() / n) for c in cols])
    return rows

def table(title, head, rows, out_csv):
    print(f"\n### {title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(x if isinstance(x, str) else f"{x:.3f}" for x in r) + " |")
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        for r in rows:
            w.writerow([x if isinstance(x, str) else f"{x:.4f}" for x in r])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="main")
    a = ap.parse_args()
    res = common.HERE / "results"
    B = np.load(res / f"bytes_{a.tag}.npz", allow_pickle=True)
    T = np.load(res / f"tokens_{a.tag}.npz")
    srcs = list(B["sources"])
    src, lt, cat, coder = B["src"], B["lt"], B["cat"], B["coder"]
    docs = B["docs"]
    groups = [(s, src == i) for i, s in enumerate(srcs) if (src == i).any()]
    tech = np.isin(src, [srcs.index(s) for s in common.TECH])
    groups += [("tech (all 4)", tech), ("all", np.ones_like(tech))]

    # 1. per source: bits per byte of each path; the frame's own size (with its headers)
    rows = []
    for name, sel in groups:
        n = int(sel.sum())
        fsize = sum(int(d[3]) for d in docs if name == "all" or d[0] == name or (name.startswith("tech") and d[0] in common.TECH))
        shares = [float((coder[sel] == k).mean()) for k in range(4)]
        rows.append([name, str(n), 8 * fsize / n] + [float(B[c][sel].sum() / n) for c in COLS]
                    + [f"{100 * s:.0f}%" for s in shares])
    table("Bits per byte per source (frame = today's compress; wm = word model forced; bm = byte model alone; "
          "oracle = per-token min(wm, bm); wmbyte = word model as a byte predictor alone; mix = bm + wmbyte mixed)",
          ["source", "bytes", "frame file", "frame", "wm", "bm", "oracle", "wmbyte", "mix"]
          + [f"coded by {c}" for c in CODERS], rows, res / f"{a.tag}_sources.csv")

    # 2. per line type: share of bytes and bpb, tech and non-tech
    for gname, gsel in (("tech", tech), ("gutenberg+python", ~tech)):
        rows = linetype_rows(B, COLS, gsel, lt)
        table(f"Bits per byte by line type, {gname}", ["line type", "bytes"] + list(COLS), rows,
              res / f"{a.tag}_linetypes_{gname.split('+')[0]}.csv")

    # 3. per byte category (what the word side sees), all sources and tech
    for gname, gsel in (("tech", tech), ("all", np.ones_like(tech))):
        rows = []
        tot = int(gsel.sum())
        for k, cn in enumerate(CATS):
            sel = gsel & (cat == k)
            n = int(sel.sum())
            if n == 0:
                continue
            rows.append([cn, f"{100 * n / tot:.1f}%"] + [float(B[c][sel].sum() / n) for c in COLS])
        table(f"Bits per byte by byte category, {gname} (gap = whitespace before a token; -oov = <unk> bodies)",
              ["category", "bytes"] + list(COLS), rows, res / f"{a.tag}_categories_{gname}.csv")

    classes_table(T, srcs, res, a.tag)


def classes_table(T, srcs, res, tag):
    """Classes per token holding 90/99/99.9% of the class mass; rank of the true class."""
    rows = []
    tsrc, K, rank = T["src"], T["k"], T["rank"]
    for i, s in enumerate(srcs):
        sel = tsrc == i
        if not sel.any():
            continue
        r = rank[sel & (rank > 0)]
        rows.append([s, str(int(sel.sum()))]
                    + [f"{np.median(K[sel, j]):.0f} / {np.percentile(K[sel, j], 90):.0f}" for j in range(3)]
                    + [f"{100 * (r <= k).mean():.1f}%" for k in (4, 16, 32)])
    table("Classes (of 192) needed per token to hold the class mass (median / 90th percentile), and how often the "
          "true class is among the top k (in-vocabulary tokens)",
          ["source", "tokens", "90%", "99%", "99.9%", "top-4", "top-16", "top-32"], rows, res / f"{tag}_classes.csv")


if __name__ == "__main__":
    main()
