"""The encoder's PROBE_BYTE_MARGIN (python/nlmcodec/_encode.py), chosen on dev/ only: at a group's start, the
frozen probe's word-model payload (block check included) over a fresh byte model's coding of the same
PROBE_SIZE bytes.  The probe rules the word model out of the group when that ratio is above the margin, so
the margin must sit above every dev text's ratio (English prose and technical text, which the word model
codes best) and as far below 1 as that allows: a text on which the word model is barely ahead of a cold byte
model over 16 KiB (source code, zlib-source.c at format 10: 0.988) is one the byte model wins over the group.

The texts: per source of dev/*.jsonl.xz (gutenberg, python-peps, python-docs), its documents in order up to
PIECES x PIECE bytes, cut into pieces of PIECE bytes; each piece's first PROBE_SIZE bytes (cut as the encoder
cuts them) are the probe, at the current format.

    python benchmarks/probe_dev.py [--piece 100000] [--pieces 8] [--out benchmarks/probe_dev.md]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import nlmcodec  # noqa: E402
from nlmcodec import _core, _encode  # noqa: E402
from nlmcodec import _frame as F  # noqa: E402
from _benchlib import write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402


def probe_ratio(codec, text: bytes) -> float:
    """What _encode._probe_says_model compares: (word payload + block check) / byte model, on the probe."""
    codec.reset()
    probe, payload = _encode._probe(codec, text, 0)
    if payload is None:
        return float("inf")
    return (len(payload) + F.BLOCK_CHECK_SIZE) / _encode._coded_size(_encode._byte_parts(probe))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--piece", type=int, default=100_000)
    ap.add_argument("--pieces", type=int, default=8)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    model = nlmcodec.load_model("default")
    codec = _core.Codec(model, True)            # the probe is frozen: the same bytes as a static context's
    rows = [f"Command: `python benchmarks/probe_dev.py --piece {a.piece} --pieces {a.pieces}`; default model, "
            f"format {nlmcodec.FORMAT_VERSION}.", "", "| text | probe: word model + check / byte model |", "|---|---|"]
    ratios = []
    for src, text in dev_set(a.pieces * a.piece).items():
        for j in range(0, len(text), a.piece):
            r = probe_ratio(codec, text[j:j + a.piece])
            ratios.append(r)
            rows.append(f"| {src} {j // a.piece} | {r:.3f} |")
            print(rows[-1], flush=True)
    ratios.sort()
    rows += ["", f"{len(ratios)} probes: median {ratios[len(ratios) // 2]:.3f}, largest {ratios[-1]:.3f}.  "
             f"The encoder's margin: PROBE_BYTE_MARGIN = {_encode.PROBE_BYTE_MARGIN} (the word model must code the "
             "probe in at most that x the byte model's bytes)."]
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
