"""The encoder's TRACK_RATIO (python/nlmcodec/_encode.py), chosen on dev/ only: on the first 64 KiB block of a
group, a cold byte model's payload over the word model's, against the byte model's whole-text size over the
word model's (below 1: the byte model wins the group, so the encoder must code it alongside).

The texts: per source of dev/*.jsonl.xz (gutenberg, python-peps, python-docs), its documents in order up to
4 x PIECE bytes, cut into pieces of PIECE bytes, each one group (default model), static and dynamic.

    python benchmarks/track_dev.py [--piece 300000] [--out benchmarks/track_dev.md]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import nlmcodec  # noqa: E402
from nlmcodec._core import ByteCoder  # noqa: E402
from nlmcodec._encode import BLOCK_SIZE, _ByteParts, _coded_size  # noqa: E402
from nlmcodec._frame import codec_options  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--piece", type=int, default=300_000)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    model = nlmcodec.load_model("default")
    rows = [f"Command: `python benchmarks/track_dev.py --piece {a.piece}`; default model.", "",
            "| text | mode | first block: byte estimate / word | whole: byte / word |", "|---|---|---|---|"]
    gaps = []
    for src, text in dev_set(4 * a.piece).items():
        for j in range(0, len(text), a.piece):
            piece = text[j:j + a.piece]
            first = piece[:BLOCK_SIZE]
            est = len(ByteCoder().encode_block(first, len(first)))   # a fresh byte model's payload (no cap)
            whole_b = _coded_size(_ByteParts(piece).finish())
            for adapt in (False, True):
                sizes = code_group(model, piece, adapt, **codec_options(6))[0]   # where TRACK_RATIO was chosen
                rows.append(f"| {src} {j // a.piece} | {'dynamic' if adapt else 'static'} | "
                            f"{est / sizes[0]:.3f} | {whole_b / sum(sizes):.3f} |")
                gaps.append(est / sizes[0] - whole_b / sum(sizes))
                print(rows[-1], flush=True)
    gaps.sort()
    rows += ["", f"The cold start's cost (first-block ratio minus whole-text ratio): median {gaps[len(gaps) // 2]:.3f}, "
             f"range {gaps[0]:.3f} to {gaps[-1]:.3f}.  A group the byte model wins (whole ratio below 1) has a "
             "first-block ratio below about 1 + that median, rounded up: TRACK_RATIO = 1.2."]
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
