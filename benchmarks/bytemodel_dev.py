"""Byte model 1 against byte model 2 (docs/format.md §9, §9.7) on dev: the measurement behind
docs/decisions/byte-model-2.md.

    python benchmarks/bytemodel_dev.py -o benchmarks/bytemodel_dev.md

Each dev source's documents, joined (skip_cost.dev_streams); its first --big bytes are one run ("big"), and the
pieces of 1,000, 4,000, 16,000 and 64,000 bytes that follow them are one run each ("small": how fast a fresh
model learns).  Every file goes through tests/c/cm_driver.c (the optimised build of this machine) with each
model; sizes are the range-coder payloads, times the encoder's CPU seconds (the decoder does the same work).
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "c"))

import cbuild  # noqa: E402
from skip_cost import dev_streams  # noqa: E402

SMALL = (1000, 4000, 16000, 64000)


def run_driver(exe, model, files):
    """{file name: (payload bytes, encode CPU seconds)} of cm_driver -e -m model."""
    r = subprocess.run([str(exe), "-e", "-m", str(model), *map(str, files)], capture_output=True, text=True,
                       check=True)
    out = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if f and f[0] != "total":
            out[Path(f[0].rsplit("@", 1)[0]).name] = (int(f[2]), float(f[f.index("enc") + 1].rstrip("s")))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", type=int, default=512_000, help="bytes of each source's big run")
    ap.add_argument("-o", "--out")
    a = ap.parse_args(argv)
    streams = dev_streams(a.big + sum(SMALL))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        exe = cbuild.build("cm_driver.c", cbuild.BYTEMODEL, tmp, "simd")
        files = {}
        for src, data in streams.items():
            files[(src, "big")] = data[:a.big]
            off = a.big
            for n in SMALL:
                files[(src, n)] = data[off:off + n]
                off += n
        paths = []
        for (src, kind), data in files.items():
            p = tmp / f"{src}.{kind}"
            p.write_bytes(data)
            paths.append(p)
        res = {m: run_driver(exe, m, paths) for m in (1, 2)}
    lines = ["# Byte model 1 and byte model 2 on dev", "",
             f"`python benchmarks/bytemodel_dev.py -o benchmarks/bytemodel_dev.md` ({platform.machine()}, load "
             f"{os.getloadavg()[0]:.1f} at the start); payload bytes of one run per file, encoder CPU seconds.", "",
             "| source | bytes | model 1 | model 2 | change | model 1 s | model 2 s |", "|---|---:|---:|---:|---:|---:|---:|"]
    tot = {1: [0, 0.0], 2: [0, 0.0]}
    for src in streams:
        name = f"{src}.big"
        (b1, t1), (b2, t2) = res[1][name], res[2][name]
        for m, (b, t) in ((1, (b1, t1)), (2, (b2, t2))):
            tot[m][0] += b
            tot[m][1] += t
        lines.append(f"| {src} | {len(files[(src, 'big')]):,} | {b1:,} | {b2:,} | {100 * (b2 / b1 - 1):+.2f}% | "
                     f"{t1:.2f} | {t2:.2f} |")
    lines.append(f"| **all** | {sum(len(files[(s, 'big')]) for s in streams):,} | {tot[1][0]:,} | {tot[2][0]:,} | "
                 f"**{100 * (tot[2][0] / tot[1][0] - 1):+.2f}%** | {tot[1][1]:.2f} | {tot[2][1]:.2f} |")
    lines += ["", "Small runs (a fresh model per piece; the pieces of every source added up):", "",
              "| piece | pieces | model 1 | model 2 | change |", "|---:|---:|---:|---:|---:|"]
    for n in SMALL:
        s1 = sum(res[1][f"{src}.{n}"][0] for src in streams)
        s2 = sum(res[2][f"{src}.{n}"][0] for src in streams)
        lines.append(f"| {n:,} | {len(streams)} | {s1:,} | {s2:,} | {100 * (s2 / s1 - 1):+.2f}% |")
    text = "\n".join(lines) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
