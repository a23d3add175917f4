"""Decompression CPU time of compress()'s frames, per file and mode, with the block kinds: what a tracked group
(format 15, docs/format.md §7.2) costs the decoder.

    python benchmarks/decode_cost.py [--modes heads,static] [--runs 2] FILE ...

FILE: a path, or a benchmark file's name (`_bench.read_file`). It uses the nlmcodec that Python imports, so a
before/after runs the same script with PYTHONPATH=<a checkout of the older commit, its extension built>/python,
on the same machine under the same load.
"""
from __future__ import annotations

import argparse
import os
import time

import nlmcodec
from nlmcodec import _bench as B, _frame as F


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--modes", default="heads,static")
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args(argv)
    print(f"nlmcodec format {nlmcodec.FORMAT_VERSION}; load average {os.getloadavg()[0]:.1f}")
    for spec in a.files:
        name, raw = B.read_file(spec)
        for mode in a.modes.split(","):
            frame = nlmcodec.compress(raw, adapt=F.adapt_mode({"static": False, "dynamic": True}.get(mode, mode)))
            kinds = {}
            for kind, _, size, _, _ in F.iter_blocks(frame):
                kinds[F.BLOCK_KINDS[kind]] = kinds.get(F.BLOCK_KINDS[kind], 0) + size
            best = None
            for _ in range(a.runs):
                t = time.process_time()
                nlmcodec.decompress(frame)
                t = time.process_time() - t
                best = t if best is None else min(best, t)
            print(f"{name} {mode}: {len(frame):,} bytes, bytes by block kind {kinds}, decompress {best:.2f} s CPU "
                  f"(best of {a.runs})")


if __name__ == "__main__":
    main()
