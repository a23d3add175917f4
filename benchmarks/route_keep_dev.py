"""route_keep_dev.py: the encoder's route probe threshold (ROUTE_KEEP, python/nlmcodec/_encode.py; format 17's line
route, docs/format.md §3.8 and §7.4) measured on dev, the only data it may be tuned on.

Each dev source's sampled documents (benchmarks/lm_in_mixer/common.py sample: --per-source bytes, documents cut to
--cap), each document compressed on its own as a file (the probe decides per group, and a document is a group),
with the default model in the default mode: the summed frames for each threshold, and the CPU time of decoding
them (the route costs the decoder the byte model over every byte of a tracked group).  "no route" is format 16's
policy (no group tracked for the route; its sizes only: its tracked groups' frames are not format 17's).

    OPENBLAS_NUM_THREADS=1 python benchmarks/route_keep_dev.py [--per-source 200000 --cap 64000] [--keeps ...] [-o FILE.md]
"""
import argparse
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "lm_in_mixer"))

import common  # noqa: E402

import nlmcodec  # noqa: E402
from nlmcodec import _encode, _frame  # noqa: E402

KEEPS = [None]      # None: no route (format 16's policy); then --keeps (inf: every group routed)


def label(k):
    return "no route" if k is None else "always" if k == float("inf") else f"{k:.2f}"


def measure(docs, keep):
    """(frame bytes, decode CPU seconds or None, groups tracked) of docs with threshold keep."""
    _encode.ROUTE = keep is not None
    _encode.ROUTE_KEEP = keep if keep is not None else 0.99
    size, cpu, tracked = 0, 0.0, 0
    try:
        for _, d in docs:
            f = nlmcodec.compress(d)
            size += len(f)
            tracked += any(b[1] > 1 for b in _frame.iter_blocks(f))
            if keep is not None:
                t = time.process_time()
                assert nlmcodec.decompress(f) == d
                cpu += time.process_time() - t
    finally:
        _encode.ROUTE, _encode.ROUTE_KEEP = True, 0.99
    return size, (cpu if keep is not None else None), tracked


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=200000)
    ap.add_argument("--cap", type=int, default=64000)
    ap.add_argument("--keeps", default="0.97,0.98,0.99,1.0,inf", help="thresholds after no route (inf: always)")
    ap.add_argument("-o", "--out", type=pathlib.Path)
    a = ap.parse_args()
    KEEPS[1:] = [float(k) for k in a.keeps.split(",")]
    smp = common.sample(a.per_source, a.cap)
    lines = [f"# The route probe's threshold on dev (`python benchmarks/route_keep_dev.py --per-source {a.per_source} "
             f"--cap {a.cap} --keeps {a.keeps}`)", "",
             "Each document one file; frame bytes summed per source (change against no route), decode CPU seconds, "
             "documents tracked for the route.", "",
             "| source | docs | bytes | " + " | ".join(label(k) for k in KEEPS) + " |",
             "|---|---:|---:|" + "---:|" * len(KEEPS)]
    tot = {label(k): [0, 0.0] for k in KEEPS}
    raw_total = 0
    for s, docs in smp.items():
        raw = sum(len(d) for _, d in docs)
        raw_total += raw
        cells, base = [], None
        for k in KEEPS:
            size, cpu, tracked = measure(docs, k)
            tot[label(k)][0] += size
            tot[label(k)][1] += cpu or 0.0
            if base is None:
                base = size
                cells.append(f"{8 * size / raw:.4f} bpb")
            else:
                cells.append(f"{100 * (size - base) / base:+.2f}%, {cpu:.1f} s, {tracked} tracked")
        lines.append(f"| {s} | {len(docs)} | {raw:,} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    base = tot["no route"][0]
    lines.append(f"| **all** | | {raw_total:,} | {8 * base / raw_total:.4f} bpb | " + " | ".join(
        f"{100 * (tot[label(k)][0] - base) / base:+.2f}%, {tot[label(k)][1]:.1f} s" for k in KEEPS[1:]) + " |")
    print(lines[-1])
    if a.out:
        a.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
