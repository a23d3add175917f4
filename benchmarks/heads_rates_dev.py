"""Heads mode's rates on dev (format 13, FORMAT.md §6.5): the trained step sizes times a and decay times b.

    python benchmarks/heads_rates_dev.py [--per-source 4000000] [--grid 1,1 2,1 3,1 2,2 3,3] [--out benchmarks/heads_rates_dev.md]

The model's lr and decay were tuned for dynamic mode, where every part adapts.  Heads mode adapts the heads
only, so it may want larger steps.  The text is speller_dev.py's dev set: per dev source its first
--per-source bytes (dev has about 4 MB of gutenberg, 1.07 MB of python-peps and 0.65 MB of python-docs, so the
default takes all of the last two).  Each source is coded as one group of the encoder's word-model blocks in
heads mode (_benchlib.code_group, schedule (0, 0, 0), the integer transition, Codec.reset's rates), from the
trained state.  Word-model payload bytes; the first row (1, 1) is format 12's heads mode.  The choice: the
smallest total with no source larger than at (1, 1).
"""
import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import nlmcodec  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402
from nlmcodec import _core, _frame  # noqa: E402
from speller_dev import dev_set  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=4_000_000)
    ap.add_argument("--grid", nargs="+", default=["1,1", "2,1", "3,1", "2,2", "3,3"], help="a,b pairs")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    m = nlmcodec.load_model("default")
    texts = dev_set(a.per_source)
    grid = [tuple(int(v) for v in g.split(",")) for g in a.grid]
    sizes = {}
    for rates in grid:
        sizes[rates] = {src: sum(code_group(m, t, _frame.HEADS, schedule=(0, 0, 0), forward=_core.FORWARD_INT8,
                                            rates=rates)[0]) for src, t in texts.items()}
        print(rates, sizes[rates], sum(sizes[rates].values()), flush=True)
    base = sizes[grid[0]]
    ok = [r for r in grid if all(sizes[r][s] <= base[s] for s in texts)]
    best = min(ok, key=lambda r: sum(sizes[r].values()))
    n = sum(len(t) for t in texts.values())
    cmd = "python benchmarks/heads_rates_dev.py" + (f" --per-source {a.per_source}" if a.per_source != 4_000_000
                                                     else "") + " --grid " + " ".join(a.grid)
    rows = [f"Model `default`, dev/ first {a.per_source:,} bytes per source ("
            + ", ".join(f"{s} {len(t):,}" for s, t in texts.items()) + f"; {n:,} bytes), heads mode, one group each, "
            f"word-model payload bytes.  Command: `{cmd}`.", "",
            "| a (steps) | b (decay) | " + " | ".join(texts) + " | all | vs (1, 1) |",
            "|---:|---:|" + "---:|" * len(texts) + "---:|---:|"]
    for r in grid:
        tot = sum(sizes[r].values())
        cells = " | ".join(f"{sizes[r][s]:,} ({100 * (sizes[r][s] / base[s] - 1):+.2f}%)" for s in texts)
        mark = " **(chosen)**" if r == best else ""
        rows.append(f"| {r[0]} | {r[1]}{mark} | {cells} | {tot:,} ({8 * tot / n:.4f} bpb) | "
                    f"{100 * (tot / sum(base.values()) - 1):+.2f}% |")
    rows += ["", f"Chosen: the smallest total with no source larger than at {grid[0]}: a = {best[0]}, b = {best[1]} "
             f"(python/nlmcodec/_frame.py HEADS_LR_MUL, HEADS_DECAY_MUL: {_frame.HEADS_LR_MUL}, "
             f"{_frame.HEADS_DECAY_MUL})."]
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
