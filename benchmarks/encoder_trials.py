"""Where compression's time goes beyond decompression's: the encoder's trials (issue "Speed").

    python benchmarks/encoder_trials.py [--file book1] [--runs 3] [--out benchmarks/encoder_trials.md]

The encoder (python/nlmcodec/_encode.py, its policy in docs/format.md §7.4) codes each block with the word
model and keeps it only when it beats its yardsticks: lzma preset 1 of the block and of the group (unless a
zlib level-1 screen already settles it), a fresh byte
model on the group's first block and on the probe, a snapshot before each block for the rollback, and a 16 KB
probe coded by the word model every 16 blocks.  The decoder repeats none of them.  This runs compress() of one
file in one process (the model loaded and one warm-up run first), under cProfile, and sums the time of each
kind of call: the word model's blocks (the probe's among them), the byte model's, lzma's, the snapshots;
median over --runs of each row.  Against decompress() of the same frame in the same process.
"""
from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import nlmcodec  # noqa: E402
from nlmcodec._bench import read_file  # noqa: E402

LZMA_CALLS = ("<method 'compress' of '_lzma.LZMACompressor' objects>",
              "<method 'flush' of '_lzma.LZMACompressor' objects>",
              "<built-in method zlib.compress>")          # the zlib -1 screen in front of the yardstick
ROWS = ["word model: the blocks and the probe (_core.Codec.encode_block)",
        "byte model: first-block estimate, probe (_core.ByteCoder.encode_block)",
        "lzma: preset 1 of each block, the probe, the group (and -9e where tried); zlib -1 screen",
        "snapshots (_core.Codec.save / restore)"]


def profile_once(data, model, adapt):
    """(CPU seconds of compress(), {row: seconds}): a profiled function's cumulative time counts for its row
    (lzma's C methods: their own time)."""
    from nlmcodec import _core

    rows_of = {_core.Codec.encode_block.__code__: ROWS[0], _core.ByteCoder.encode_block.__code__: ROWS[1],
               _core.Codec.save.__code__: ROWS[3], _core.Codec.restore.__code__: ROWS[3]}
    where = {(c.co_filename, c.co_firstlineno, c.co_name): row for c, row in rows_of.items()}
    pr = cProfile.Profile()
    t = time.process_time()
    pr.enable()
    nlmcodec.compress(data, model=model, adapt=adapt)
    pr.disable()
    total = time.process_time() - t
    rows = dict.fromkeys(ROWS, 0.0)
    for key, (_, _, tt, ct, _) in pstats.Stats(pr).stats.items():  # key: (file, line, name)
        if key[2] in LZMA_CALLS:
            rows[ROWS[2]] += tt
        elif key in where:
            rows[where[key]] += ct
    return total, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="book1", help="a benchmark file name or a path")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    name, data = read_file(a.file)
    model = nlmcodec.load_model("default")
    lines = [f"# Encoder trials (issue \"Speed\")", "",
             f"`python benchmarks/encoder_trials.py --file {a.file} --runs {a.runs}`: {name}, {len(data):,} "
             f"bytes, one thread, one process (model loaded, one warm-up run), CPU seconds under cProfile (which "
             f"adds its own overhead to Python calls, not to the C work inside them), median of {a.runs}.", ""]
    for adapt in (False, True):
        mode = "dynamic" if adapt else "static"
        nlmcodec.compress(data[:200000], model=model, adapt=adapt)  # warm-up
        runs = [profile_once(data, model, adapt) for _ in range(a.runs)]
        frame = nlmcodec.compress(data, model=model, adapt=adapt)
        dts = []
        for _ in range(a.runs):
            t = time.process_time()
            assert nlmcodec.decompress(frame, model=model) == data
            dts.append(time.process_time() - t)
        total = statistics.median(r[0] for r in runs)
        lines += [f"## {mode}", "", "| part | seconds | share of compress() |", "|---|---|---|"]
        for label in ROWS:
            v = statistics.median(r[1][label] for r in runs)
            lines.append(f"| {label} | {v:.3f} | {100 * v / total:.1f}% |")
        lines += [f"| **compress() in all** | **{total:.3f}** | 100% |",
                  f"| decompress() of its frame (not profiled) | {statistics.median(dts):.3f} | |", ""]
    text = "\n".join(lines)
    if a.out:
        pathlib.Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
