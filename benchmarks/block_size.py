#!/usr/bin/env python3
"""What a smaller word-model block would cost (the choice of 64 KiB in format 3, codec/FORMAT.md §7.6).

    python benchmarks/block_size.py [--file alice29.txt] [--mode static]

Compresses one benchmark file with the encoder's block size set to 16, 32 and 64 KiB in this process
(any of them decodes: the limit is 64 KiB; nothing is written), and codes the first 64 KiB as one block
and as two, with the default model: the cost of one block boundary.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _benchlib import load_bench  # noqa: E402

B = load_bench()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="alice29.txt")
    ap.add_argument("--mode", choices=("static", "dynamic"), default="static")
    a = ap.parse_args(argv)
    import nlmcodec
    from nlmcodec import _encode
    from nlmcodec._core import Codec

    adapt = a.mode == "dynamic"
    data = B.read_file(a.file)[1]
    model = nlmcodec.load_model("default")
    sizes = {}
    for bs in (1 << 16, 1 << 15, 1 << 14):
        _encode.BLOCK_SIZE = bs
        f = nlmcodec.compress(data, model=model, adapt=adapt)
        sizes[bs] = len(f)
        assert nlmcodec.decompress(f) == data
        print(f"{a.file} {a.mode}: {bs // 1024:>2} KiB blocks: {len(f):,} bytes "
              f"({len(f) - sizes[1 << 16]:+,} B, {100 * (len(f) - sizes[1 << 16]) / sizes[1 << 16]:+.2f}% against 64 KiB)")
    head = data[:1 << 16]
    k = head.rfind(b"\n", 0, 1 << 15) + 1
    c = Codec(model, adapt)
    c.reset()
    one = len(c.encode_block(head))
    c.reset()
    two = len(c.encode_block(head[:k])) + len(c.encode_block(head[k:]))
    print(f"first 64 KiB: one block {one:,} bytes of payload, two blocks {two:,} ({two - one:+,} B per boundary)")


if __name__ == "__main__":
    main()
