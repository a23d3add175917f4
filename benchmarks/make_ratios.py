#!/usr/bin/env python3
"""Exact compressed sizes per benchmark file and mode, committed and checked by
``tests/test_ratio_regression.py``.

    python benchmarks/make_ratios.py --model default        # -> benchmarks/ratios.csv (13 English files + dickens)
    python benchmarks/make_ratios.py --model tiny           # -> benchmarks/ratios_tiny.csv (a few small files)
    python benchmarks/make_ratios.py --check benchmarks/ratios.csv   # recompress, list differences, rc 1 if any

Any change to nlmcodec's output bytes (format, arithmetic, model) changes these files: regenerate
the CSV in the same commit as the change.  Each row: file, mode (static = adapt=False, dynamic =
adapt=True, heads = adapt="heads"), model name and id ("default": compress() without a model, which
chooses between the bundled default models per frame; the id is the one the frame names), input size and SHA-256, compressed size, bits per byte, the SHA-256
of the frame with each lzma block's payload replaced by the SHA-256 of what it decodes to
(_frame.frame_digest), and the bytes of lzma payloads in the frame.  So the rows pin what nlmcodec
produces and not what the installed liblzma does: frames with lzma blocks are compared on their other
bytes (bytes_out - lzma_bytes) and on what their lzma blocks decode to.  Generating also checks every
round trip.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

FIELDS = ["file", "mode", "model", "model_id", "bytes_in", "sha256_in", "bytes_out", "bpb", "sha256_out",
          "lzma_bytes"]
MODES = {"static": False, "dynamic": True, "heads": "heads"}   # heads: format 12's heads mode (docs/format.md §6.5)
TINY_FILES = ["a.txt", "grammar.lsp", "xargs.1", "fields.c", "paper5", "paper4"]
DEFAULT_FILES = ["english"]
# fields that must match exactly (bpb follows from bytes_out)
COMPARED = ["model_id", "bytes_in", "sha256_in", "bytes_out", "sha256_out"]


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _benchlib import load_bench  # noqa: E402

B = load_bench()


def default_csv(model: str) -> str:
    name = "ratios.csv" if model == "default" else f"ratios_{os.path.splitext(os.path.basename(model))[0]}.csv"
    return os.path.join(HERE, name)


def sha256(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


class Measurer:
    """Compresses benchmark files with one model; caches the model and the inputs."""

    def __init__(self, model: str):
        import nlmcodec
        self.nlmcodec = nlmcodec
        self.model_name = model
        # "default": what compress() does without a model (it chooses between the bundled default models
        # per frame; each row records the id its frame names)
        self.model = None if model == "default" else B.load_nlm_model(model)
        self.model_id = B._hex_id(getattr(self.model, "model_id", None))
        self._data = {}

    def data(self, file: str):
        if file not in self._data:
            self._data[file] = B.read_file(file)[1]
        return self._data[file]

    def row(self, file: str, mode: str, verify: bool = False, frame=None) -> dict:
        """The CSV row of one file and mode (frame: an already compressed frame to describe)."""
        data = self.data(file)
        comp = frame if frame is not None else self.nlmcodec.compress(data, model=self.model, adapt=MODES[mode])
        if verify:
            try:
                back = self.nlmcodec.decompress(comp, model=self.model)
            except TypeError:
                back = self.nlmcodec.decompress(comp)
            if back != data:
                raise AssertionError(f"{file} ({mode}): round trip failed")
        from nlmcodec._frame import frame_digest

        digest, lz = frame_digest(comp)
        named = self.nlmcodec.get_frame_info(comp).model_id
        return {
            "file": file, "mode": mode, "model": self.model_name,
            "model_id": self.model_id or (named.hex() if named else ""),
            "bytes_in": len(data), "sha256_in": sha256(data), "bytes_out": len(comp),
            "bpb": f"{8.0 * len(comp) / len(data):.4f}" if data else "0", "sha256_out": digest, "lzma_bytes": lz,
        }


def read_csv(path: str):
    with open(path, newline="") as f:
        rows = [dict(r) for r in csv.DictReader(f)]
    for r in rows:
        for k in ("bytes_in", "bytes_out", "lzma_bytes"):
            r[k] = int(r.get(k) or 0)
    return rows


def write_csv(path: str, rows) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, 0) for k in FIELDS})


def compare(expected, actual):
    """Differences between two lists of rows, keyed by (file, mode); [] when they agree."""
    exp = {(r["file"], r["mode"]): r for r in expected}
    act = {(r["file"], r["mode"]): r for r in actual}
    out = []
    for key in exp:
        if key not in act:
            out.append(f"{key[0]} ({key[1]}): not measured")
            continue
        e, a = exp[key], act[key]
        for k in COMPARED:
            ev, av = e[k], a[k]
            if k == "bytes_out" and (e.get("lzma_bytes") or a.get("lzma_bytes")):   # lzma payloads: liblzma's
                ev, av = int(ev) - int(e.get("lzma_bytes") or 0), int(av) - int(a.get("lzma_bytes") or 0)
            if str(ev) != str(av):
                what = {"model_id": "model changed", "bytes_in": "input file changed",
                        "sha256_in": "input file changed", "bytes_out": "compressed size changed",
                        "sha256_out": "compressed bytes changed"}[k]
                note = f" (without the lzma payloads: {ev} against {av})" if ev != e[k] or av != a[k] else ""
                out.append(f"{key[0]} ({key[1]}): {what}: {k} expected {e[k]}, got {a[k]}{note}")
                if k in ("model_id", "bytes_in", "sha256_in", "bytes_out"):
                    break  # the later fields follow from this one
    for key in act:
        if key not in exp:
            out.append(f"{key[0]} ({key[1]}): not in the expected table")
    return out


def check(path: str, measurer: "Measurer | None" = None):
    """Recompress every row of the CSV at `path` with its model; return the differences."""
    expected = read_csv(path)
    if not expected:
        return [f"{path}: no rows"]
    models = {r["model"] for r in expected}
    if len(models) != 1:
        return [f"{path}: more than one model ({sorted(models)})"]
    m = measurer or Measurer(models.pop())
    actual = [m.row(r["file"], r["mode"]) for r in expected]
    return compare(expected, actual)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="default", help="bundled model name or .nlmm path (default: default)")
    p.add_argument("--files", nargs="+", default=None,
                   help="files or sets (default: english for the default model, a few small files otherwise)")
    p.add_argument("--modes", default="static,dynamic,heads", help="comma list (default: static,dynamic,heads)")
    p.add_argument("-o", "--out", help="CSV to write (default: benchmarks/ratios.csv, or ratios_<model>.csv)")
    p.add_argument("--check", metavar="CSV", help="recompress the rows of CSV and report differences (rc 1)")
    a = p.parse_args(argv)

    if a.check:
        diffs = check(a.check)
        for d in diffs:
            print(d)
        print(f"{a.check}: {'OK' if not diffs else f'{len(diffs)} difference(s)'}")
        return 1 if diffs else 0

    files = B.expand_files(a.files or (DEFAULT_FILES if a.model == "default" else TINY_FILES))
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            p.error(f"unknown mode {m!r}")
    out = a.out or default_csv(a.model)
    meas = Measurer(a.model)
    print(f"model {a.model} id {meas.model_id or '(chosen per frame)'}; {len(files)} files x {len(modes)} modes -> {out}")
    rows = []
    for f in files:
        for mode in modes:
            t0 = time.perf_counter()
            r = meas.row(f, mode, verify=True)
            rows.append(r)
            print(f"{f:<14} {mode:<8} {r['bytes_in']:>10,} -> {r['bytes_out']:>10,}  {r['bpb']} bpb"
                  f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    write_csv(out, rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
