"""The byte model's tuning set and tuning command (issue 9): every constant of csrc/bytemodel/cm.c was chosen
on these dev texts only, never on bench/ or ood/.

The tuning set is built from dev/*.jsonl.xz: per source (gutenberg, python-peps, python-docs) the first
1.5 MB of its documents in order ("big"), and the first 4,000 / 12,000 / 25,000 bytes of its last three
documents ("small": start-up behaviour).  tests/c/cm_driver.c is compiled with the build definition of
build_flags.py and codes each file as one run.

    python benchmarks/bytemodel_tune.py                       # the constants as they are
    python benchmarks/bytemodel_tune.py --set MIX_LR=12       # one or more enum constants changed

--set rewrites `NAME = value,` in the constants enum of a temporary copy of cm.c (the repository is not
touched).  The output: bits per byte of each file, of the small set and of the big set.
"""
from __future__ import annotations

import argparse
import collections
import json
import lzma
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "python"))
import build_flags  # noqa: E402
from nlmcodec._bench import require_corpus_dir  # noqa: E402

BIG = 1_500_000
SMALL = (4000, 12000, 25000)


def tuning_set(outdir: pathlib.Path) -> dict:
    """{"big": [paths], "small": [paths]} written under outdir from the dev corpus."""
    dev = pathlib.Path(require_corpus_dir()) / "dev"
    by = collections.defaultdict(list)
    for f in sorted(dev.glob("*.jsonl.xz")):
        with lzma.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                by[d["source"]].append(d["text"].encode("utf-8"))
    out = {"big": [], "small": []}
    for src in sorted(by):
        docs = by[src]
        big = bytearray()
        for t in docs:
            big += t + b"\n"
            if len(big) > BIG:
                break
        p = outdir / f"dev-{src}.txt"
        p.write_bytes(bytes(big[:BIG]))
        out["big"].append(p)
        for k, n in enumerate(SMALL):
            p = outdir / f"small-{src}-{n}.txt"
            p.write_bytes(docs[-1 - k][:n])
            out["small"].append(p)
    return out


def build(outdir: pathlib.Path, sets) -> pathlib.Path:
    src = (ROOT / "csrc" / "bytemodel" / "cm.c").read_text()
    for s in sets:
        name, value = s.split("=", 1)
        src, n = re.subn(rf"(\n    {re.escape(name)} = )[^,]+,", rf"\g<1>{value},", src)
        if n != 1:
            raise SystemExit(f"--set {name}: no such constant in the enum of cm.c")
    tmp = outdir / "csrc"
    shutil.copytree(ROOT / "csrc", tmp)
    (tmp / "bytemodel" / "cm.c").write_text(src)
    exe = outdir / "cm_driver"
    cmd = [c if c != build_flags.CSRC else str(tmp) for c in build_flags.cc_command(
        "gcc", "simd", exe, [ROOT / "tests" / "c" / "cm_driver.c", tmp / "bytemodel" / "cm.c",
                             tmp / "coder" / "rc.c", tmp / "kernels" / "kern.c", tmp / "kernels" / "kern_math.c"])]
    subprocess.run(cmd, check=True)
    return exe


def run(exe, files):
    r = subprocess.run([str(exe), "-e", *map(str, files)], check=True, capture_output=True, text=True)
    rows = []
    for line in r.stdout.splitlines():
        f = line.split()
        if f[0] != "total":
            rows.append((pathlib.Path(f[0]).name, int(f[1]), int(f[2])))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        files = tuning_set(d)
        exe = build(d, a.set)
        for part in ("small", "big"):
            rows = run(exe, files[part])
            for name, n, c in rows:
                print(f"{name:32s} {n:9d} {c:9d} {8 * c / n:6.3f}")
            n, c = sum(r[1] for r in rows), sum(r[2] for r in rows)
            print(f"{part + ' (all)':32s} {n:9d} {c:9d} {8 * c / n:6.3f}")


if __name__ == "__main__":
    main()
