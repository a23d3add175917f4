"""The token match model on dev (issue 10, codec/FORMAT.md §3.4): what the match flag saves, static and
dynamic, and the figures its constants were chosen by.  Measured on dev/ only.

The set is speller_dev.py's: per source of dev/*.jsonl.xz (gutenberg, python-peps, python-docs), its
documents in order up to PER_SOURCE bytes, each coded as one group of 64 KiB word-model blocks from the
trained state (default model), with the match flag off (format 5) and on (format 6).

    python benchmarks/match_dev.py [--per-source 300000] [--modes static,dynamic] [--out benchmarks/match_dev.md]

Output per source and mode: payload bytes off / on, the change, the predictions and hits, the flags' bits
and what the network would have spent on the hit tokens (nlm_codec_stats), CPU seconds off / on.
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import nlmcodec  # noqa: E402
from nlmcodec._frame import codec_options  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402


def code(model, text: bytes, adapt: bool, match: bool):
    sizes, st, dt = code_group(model, text, adapt, **codec_options(6 if match else 5))   # match off / on
    return sum(sizes), st, dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=300_000)
    ap.add_argument("--modes", default="static,dynamic")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    model = nlmcodec.load_model("default")
    texts = dev_set(a.per_source)
    rows = [f"Command: `python benchmarks/match_dev.py --per-source {a.per_source}`; default model "
            f"(id {model.model_id.hex()[:16]}); one group per source, 64 KiB blocks.", "",
            "| source | bytes | mode | payload off | payload on | change | predicted | hits | flag bits | "
            "network bits of the hits | CPU s off / on |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    sums = collections.defaultdict(lambda: [0, 0, 0.0, 0.0])
    for mode in a.modes.split(","):
        adapt = mode == "dynamic"
        for src, text in texts.items():
            off, _, t0 = code(model, text, adapt, False)
            on, st, t1 = code(model, text, adapt, True)
            s = sums[mode]
            s[0] += off; s[1] += on; s[2] += t0; s[3] += t1
            rows.append(f"| {src} | {len(text)} | {mode} | {off} | {on} | {100 * (on / off - 1):+.2f}% | "
                        f"{st['match_preds']:.0f} | {st['match_hits']:.0f} | {st['match_bits']:.0f} | "
                        f"{st['match_net_cost']:.0f} | {t0:.1f} / {t1:.1f} |")
            print(rows[-1], flush=True)
    allb = sum(len(t) for t in texts.values())
    rows += ["", "| mode | payload off | payload on | change | bits/byte off / on | CPU s off / on |",
             "|---|---|---|---|---|---|"]
    for mode, (off, on, t0, t1) in sums.items():
        rows.append(f"| {mode} | {off} | {on} | {100 * (on / off - 1):+.2f}% | {8 * off / allb:.4f} / "
                    f"{8 * on / allb:.4f} | {t0:.1f} / {t1:.1f} |")
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
