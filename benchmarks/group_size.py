"""Ratio cost of the group size (each group restarts from the trained state): exact frame sizes of one
text for several group sizes, static and dynamic, default model.  Chooses _encode.GROUP_SIZE on dev.

    python benchmarks/group_size.py --dev [--sizes 2 4 8 16] [--modes dynamic static]
    python benchmarks/group_size.py [--file dickens] ...        (a benchmark file: reported, not chosen on)

--dev: every document of dev/*.jsonl.xz in file order, concatenated (10.25 MB: Gutenberg books, PEPs and
Python docs as they come).

Prints a Markdown table (sizes in MiB; cost relative to the largest group size measured).
"""
import argparse
import json
import lzma
import pathlib
import time

import nlmcodec
from nlmcodec import _encode

from nlmcodec._bench import read_file, require_corpus_dir


def dev_stream() -> bytes:
    out = bytearray()
    for f in sorted((pathlib.Path(require_corpus_dir()) / "dev").glob("*.jsonl.xz")):
        with lzma.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                out += json.loads(line)["text"].encode("utf-8")
    return bytes(out)


def frame_size(data, model, adapt, group_size):
    enc = _encode.FrameEncoder(lambda: nlmcodec._acquire_codec(model, adapt), nlmcodec._release_codec,
                               model.model_id, adapt, nlmcodec.CHECK_CRC32, 1, group_size=group_size)
    frame = enc.feed(data) + enc.finish()
    return len(frame), len(nlmcodec.get_frame_info(frame).groups)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default="dickens")
    ap.add_argument("--dev", action="store_true", help="the dev stream instead of --file")
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--modes", nargs="+", default=["dynamic", "static"])
    ap.add_argument("--model", default="default")
    a = ap.parse_args()
    name, data = ("dev/ (all documents, file order)", dev_stream()) if a.dev else read_file(a.file)
    model = nlmcodec.load_model(a.model)
    print(f"{name}: {len(data):,} bytes, model {a.model}, format {nlmcodec.FORMAT_VERSION}\n")
    print("| mode | group MiB | groups | frame bytes | vs largest | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode in a.modes:
        rows = []
        for mib in a.sizes:
            g = int(mib * (1 << 20))
            t = time.perf_counter()
            n, groups = frame_size(data, model, mode == "dynamic", g)
            rows.append((mib, groups, n, time.perf_counter() - t))
        ref = rows[-1][2]
        for mib, groups, n, sec in rows:
            print(f"| {mode} | {mib:g} | {groups} | {n:,} | {100 * (n - ref) / ref:+.3f}% | {sec:.0f} |", flush=True)


if __name__ == "__main__":
    main()
