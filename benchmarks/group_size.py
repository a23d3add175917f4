"""Ratio cost of the group size (each group restarts from the trained state): exact frame sizes of one
file for several group sizes, static and dynamic, default model.  Chooses _encode.GROUP_SIZE.

    python benchmarks/group_size.py [--file dickens] [--sizes 1 2 4 8 16] [--modes dynamic static]

Prints a Markdown table (sizes in MiB; cost relative to the largest group size measured).
"""
import argparse
import time

import nlmcodec
from nlmcodec import _encode

from nlmcodec._bench import read_file


def frame_size(data, model, adapt, group_size):
    enc = _encode.FrameEncoder(lambda: nlmcodec._acquire_codec(model, adapt), nlmcodec._release_codec,
                               model.model_id, adapt, nlmcodec.CHECK_CRC32, 1, group_size=group_size)
    frame = enc.feed(data) + enc.finish()
    return len(frame), len(nlmcodec.get_frame_info(frame).groups)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default="dickens")
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 4, 8, 16])
    ap.add_argument("--modes", nargs="+", default=["dynamic", "static"])
    ap.add_argument("--model", default="default")
    a = ap.parse_args()
    data = read_file(a.file)[1]
    model = nlmcodec.load_model(a.model)
    print(f"{a.file}: {len(data):,} bytes, model {a.model}\n")
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
