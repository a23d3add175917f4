"""The byte model's memory against its size class (issue 9, "the levels' ratio/speed/memory table").

The tables of a byte-model run are sized by its size class s (codec/FORMAT.md §9.1: a run of at most 2^s
bytes, a hashed table of min(2^(s+3), 2^22) slots, a 2^s-byte history); the encoder picks the smallest s
that holds the run, runs being at most 8 MiB (s = 23).  Here each file is cut into runs of at most 2^S
bytes for S = 16 ... 23 and coded the encoder's way (256 KiB blocks, one model per run) through the byte
model alone: total payload bytes, bits per byte, CPU speed of the coding, and the bytes one run's model
allocates (ByteCoder.memory(), the decoder's figure too; pages of the zeroed tables are touched only as
they are used).

    python benchmarks/byte_levels.py [--files reymont,xml,zlib-source.c] [--peak] [-o benchmarks/byte_levels.md]

--peak adds the default level's whole-process peak: `python -m nlmcodec -c` (static and dynamic) and `-dc`
of each file, each in a fresh interpreter (the child's VmHWM, as benchmarks/startup.py measures it), so the
figure holds the interpreter, the word model and the encoder's probes, not the byte model alone.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from nlmcodec import _bench  # noqa: E402
from nlmcodec._core import ByteCoder  # noqa: E402
from nlmcodec._encode import BYTE_BLOCK_SIZE  # noqa: E402

CLASSES = (16, 18, 20, 22, 23)


def code(data: bytes, s: int):
    """(payload bytes, CPU seconds, bytes of the largest run's model) with runs of at most 2^s bytes."""
    total, mem, t = 0, 0, time.process_time()
    for r in range(0, len(data), 1 << s):
        run = data[r:r + (1 << s)]
        bc = ByteCoder()
        for p in range(0, len(run), BYTE_BLOCK_SIZE):
            total += len(bc.encode_block(run[p:p + BYTE_BLOCK_SIZE], len(run) if p == 0 else 0))
        mem = max(mem, bc.memory())
    return total, time.process_time() - t, mem


def peak_row(name, data):
    """| name | peak MB of -c static | -c dynamic | -dc |: fresh interpreters, each child's own VmHWM."""
    import tempfile

    from startup import WRAP, run

    cli = lambda *args: [sys.executable, "-c", WRAP, "-m nlmcodec", *args]
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, name), os.path.join(d, name + ".nlm")
        with open(src, "wb") as f:
            f.write(data)
        peaks = [run(cli("-c", "--static", src))[2]]
        peaks.append(run(cli("-k", "-f", src))[2])                   # dynamic, writes src.nlm
        peaks.append(run(cli("-dc", out))[2])
    return f"| {name} | " + " | ".join(f"{kb / 1024:.0f}" for kb in peaks) + " |"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", default="reymont,xml,zlib-source.c")
    ap.add_argument("--peak", action="store_true", help="add the CLI's peak RSS per file (default level)")
    ap.add_argument("-o", "--out", default=None)
    a = ap.parse_args(argv)
    rows = ["| file | bytes | runs of at most | bytes out | bits/byte | KB/s (coding) | model MiB per run |",
            "|---|---:|---|---:|---:|---:|---:|"]
    for spec in _bench.expand_files(a.files.split(",")):
        name, data = _bench.read_file(spec)
        for s in CLASSES:
            n, dt, mem = code(data, s)
            rows.append(f"| {name} | {len(data):,} | 2^{s} | {n:,} | {8 * n / len(data):.4f} | "
                        f"{len(data) / 1000 / dt:.0f} | {mem / 2 ** 20:.1f} |")
            print(rows[-1], flush=True)
    if a.peak:
        rows += ["", "Peak RSS of the whole process (MB), default level:", "",
                 "| file | -c static | -c dynamic | -dc |", "|---|---:|---:|---:|"]
        for spec in _bench.expand_files(a.files.split(",")):
            rows.append(peak_row(*_bench.read_file(spec)))
            print(rows[-1], flush=True)
    text = (f"Command: `python benchmarks/byte_levels.py --files {a.files}{' --peak' if a.peak else ''}` (one core, "
            "CPU time, one run)\n\n" + "\n".join(rows) + "\n")
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
