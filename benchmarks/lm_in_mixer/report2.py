"""Second-round tables: exact attribution of the word path's bits (the gap part on the gap bytes, the rest on the
body bytes: measure.py's wmx / framex / oraclex) per source, line type and byte category, with the byte model,
round 1's mix and mix2.py's mixers with structure contexts (if results/bytes_<tag>_mix2.npz exists); the classes
needed per token (of the codec's own class distribution with measure.py --real-classes).

    python benchmarks/lm_in_mixer/report2.py --tag r2 > benchmarks/lm_in_mixer/results2.md
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

from measure import CATS  # noqa: E402
from report import classes_table, linetype_rows, table  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="r2")
    a = ap.parse_args()
    res = common.HERE / "results"
    B = dict(np.load(res / f"bytes_{a.tag}.npz", allow_pickle=True))
    m2 = res / f"bytes_{a.tag}_mix2.npz"
    cols = ["wm", "wmx", "oraclex", "bm", "mix"]
    if m2.exists():
        M = np.load(m2)
        for k in M.files:
            B[k] = M[k]
        cols += ["bmctx", "mixctx", "mixsel"]
    names = {"wm": "word path (spread)", "wmx": "word path (exact)", "oraclex": "oracle (exact)",
             "bm": "byte model", "mix": "mix r1", "bmctx": "bm + ctx", "mixctx": "mix + ctx",
             "mixsel": "mix + ctx, word input at body bytes only"}
    srcs = list(B["sources"])
    src, lt, cat = B["src"], B["lt"], B["cat"]
    tech = np.isin(src, [srcs.index(s) for s in common.TECH])
    prose = src == srcs.index("gutenberg")
    assert np.allclose(B["framex"].sum(), B["frame"].sum()) and np.allclose(B["wmx"].sum(), B["wm"].sum())
    same = np.allclose(B["framex"], B["wmx"])
    print(f"\nframe (today's compress) per byte = word path forced per byte: {same} (the encoder chose the word "
          "model for every block of this sample)")
    groups = [(s, src == i) for i, s in enumerate(srcs) if (src == i).any()]
    groups += [("tech (all 4)", tech), ("all", np.ones_like(tech))]
    rows = []
    for name, sel in groups:
        n = int(sel.sum())
        wm = float(B["wmx"][sel].sum())
        rows.append([name, str(n)] + [float(B[c][sel].sum() / n) for c in cols[1:]]
                    + [f"{100 * (B[c][sel].sum() / wm - 1):+.1f}%" for c in cols[2:] if c != "bm"])
    table("Bits per byte per source (exact attribution; vs word path in %)",
          ["source", "bytes"] + [names[c] for c in cols[1:]] + [f"{names[c]} vs wp" for c in cols[2:] if c != "bm"],
          rows, res / f"{a.tag}_sources.csv")
    for gname, gsel in (("tech", tech), ("gutenberg", prose), ("python-docs+peps", ~tech & ~prose)):
        rows = linetype_rows(B, cols, gsel, lt)
        table(f"Bits per byte by line type, {gname}", ["line type", "bytes"] + [names[c] for c in cols], rows,
              res / f"{a.tag}_linetypes_{gname.split('+')[0]}.csv")
    for gname, gsel in (("tech", tech), ("gutenberg", prose), ("all", np.ones_like(tech))):
        rows = []
        tot = int(gsel.sum())
        bits = float(B["wmx"][gsel].sum())
        for k, cn in enumerate(CATS):
            sel = gsel & (cat == k)
            n = int(sel.sum())
            if n == 0:
                continue
            rows.append([cn, f"{100 * n / tot:.1f}%", f"{100 * B['wmx'][sel].sum() / bits:.1f}%"]
                        + [float(B[c][sel].sum() / n) for c in cols])
        table(f"Bits per byte by byte category, {gname} (gap = whitespace before a token, with the gap part; an "
              "empty gap's part is on the body's first byte; -oov = <unk> bodies)",
              ["category", "bytes", "share of word-path bits"] + [names[c] for c in cols], rows,
              res / f"{a.tag}_categories_{gname}.csv")
    classes_table(np.load(res / f"tokens_{a.tag}.npz"), srcs, res, a.tag)


if __name__ == "__main__":
    main()
