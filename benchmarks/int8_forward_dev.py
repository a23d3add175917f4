"""Format 11's integer static forward on dev (issue 11: "the ratio change on dev ... for the new defaults"): the
word-model payload of static coding with format 10's float products against format 11's int8 products
(codec/FORMAT.md §2.6), and the encoding speed of both.

    python benchmarks/int8_forward_dev.py [--per-source 300000] [--runs 3] [--out benchmarks/int8_forward_dev.md]

The text is speller_dev.py's dev set (per source of dev/*.jsonl.xz its first --per-source bytes), each coded as
one group of the encoder's word-model blocks from the trained state (_benchlib.code_group) with the codec options
of format 10 and of format 11 (_frame.codec_options), which differ only in the forward arithmetic of a static
stream.  Bytes are exact; the time is the CPU time of encoding, median of --runs, the two interleaved run by run.
Dynamic streams compute in float in both formats, so their bytes are the same (benchmarks/ratios.csv).
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import nlmcodec  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402
from nlmcodec import _frame  # noqa: E402
from speller_dev import dev_set  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-source", type=int, default=300_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--model", default="default")
    p.add_argument("--out")
    a = p.parse_args(argv)
    model = nlmcodec.load_model(a.model)
    texts = dev_set(a.per_source)
    formats = (10, 11)
    size = {f: {} for f in formats}
    secs = {f: [] for f in formats}
    for run in range(a.runs):
        t = {f: 0.0 for f in formats}
        for src, text in texts.items():
            for f in formats:
                sizes, _, s = code_group(model, text, False, **_frame.codec_options(f))
                size[f][src] = sum(sizes)
                t[f] += s
        for f in formats:
            secs[f].append(t[f])
    n = sum(len(t) for t in texts.values())
    lines = [f"Model `{model.name}`, dev/: the first {a.per_source:,} bytes per source ({n:,} bytes), static mode, "
             "each source one group.  Command: `python benchmarks/int8_forward_dev.py "
             f"--per-source {a.per_source} --runs {a.runs}`.  Word-model payload bytes; KB/s: encoding, CPU time, "
             f"median of {a.runs}.", "",
             "| source | bytes | format 10 (float products) | format 11 (int8 products) | change |",
             "|---|---|---|---|---|"]
    for src, text in texts.items():
        b10, b11 = size[10][src], size[11][src]
        lines.append(f"| {src} | {len(text):,} | {b10:,} | {b11:,} | {100 * (b11 - b10) / b10:+.3f}% |")
    t10, t11 = sum(size[10].values()), sum(size[11].values())
    lines.append(f"| all | {n:,} | {t10:,} ({8 * t10 / n:.4f} bits/byte) | {t11:,} ({8 * t11 / n:.4f} bits/byte) | "
                 f"{100 * (t11 - t10) / t10:+.3f}% |")
    k10, k11 = (n / 1000 / statistics.median(secs[f]) for f in formats)
    lines.append(f"| KB/s | | {k10:.1f} | {k11:.1f} | {k11 / k10:.2f}x |")
    write_report(lines, a.out)


if __name__ == "__main__":
    main()
