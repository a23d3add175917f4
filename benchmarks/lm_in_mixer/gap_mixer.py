"""Issue 41: the gap mixer of format 14 (docs/format.md §3.7) against format 13's gap coding, on dev.

Per dev document (the sample of common.sample, each document on its own, the model compress() would choose for it),
the word path's payload bytes: every word-model piece of the encoder (_encode._model_pieces) coded by one codec
reset to format 13 and one reset to format 14, in the given mode.  The word model is forced on every piece (as
in the other measurements here), so the figures are the word path's, not whole frames.  The first --check
documents are decoded back with format 14.

    python benchmarks/lm_in_mixer/gap_mixer.py --per-source 150000 --cap 64000 --mode heads
    (prints a Markdown table; -o FILE also writes it)
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

from nlmcodec import _encode, _frame  # noqa: E402
from nlmcodec._core import Codec  # noqa: E402
from nlmcodec._registry import candidates  # noqa: E402


def word_path(model, adapt, data, version):
    """[(payload, size)] of data's word-model pieces coded with format `version`'s rows."""
    c = Codec(model, adapt)
    c.reset(version)
    return [(c.encode_block(data[p:p + n]), n) for p, n in _encode._model_pieces(data)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-source", type=int, default=150000)
    ap.add_argument("--cap", type=int, default=64000)
    ap.add_argument("--mode", default="heads", help="static, dynamic or heads (the default mode)")
    ap.add_argument("--check", type=int, default=3, help="documents decoded back (format 14)")
    ap.add_argument("--sources", default=",".join(common.SOURCES), help="comma list of dev sources")
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    adapt = _frame.adapt_mode(a.mode)
    smp = common.sample(a.per_source, a.cap)
    rows, tot, checked, t0 = [], {}, 0, time.process_time()
    for s in a.sources.split(","):
        for did, data in smp[s]:
            m = _encode.choose_model(candidates(None), data, adapt)
            old = sum(len(p) for p, _ in word_path(m, adapt, data, 13))
            new = word_path(m, adapt, data, 14)
            if checked < a.check:
                d = Codec(m, adapt)
                d.reset(14)
                assert b"".join(d.decode_block(p, n) for p, n in new) == data, did
                checked += 1
            r = tot.setdefault(s, [0, 0, 0, 0])
            r[0] += 1
            r[1] += len(data)
            r[2] += old
            r[3] += sum(len(p) for p, _ in new)
    groups = [(s, tot[s]) for s in common.SOURCES if s in tot]
    tech = [tot[s] for s in common.TECH if s in tot]
    if len(tech) > 1:
        groups.append(("tech (4 sources)", [sum(x) for x in zip(*tech)]))
    if "python-docs" in tot and "python-peps" in tot:
        groups.append(("python docs + peps", [sum(x) for x in zip(tot["python-docs"], tot["python-peps"])]))
    if len(tot) > 1:
        groups.append(("all", [sum(x) for x in zip(*tot.values())]))
    lines = [f"Mode {a.mode}; dev sample --per-source {a.per_source} --cap {a.cap}; word path forced on every piece; "
             f"{checked} documents decoded back; {time.process_time() - t0:.0f} s of CPU.", "",
             "| source | documents | bytes | format 13 | bpb | format 14 | bpb | change |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, (k, n, o, w) in groups:
        lines.append(f"| {name} | {k} | {n:,} | {o:,} | {8 * o / n:.4f} | {w:,} | {8 * w / n:.4f} | "
                     f"{100 * (w / o - 1):+.2f}% |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
