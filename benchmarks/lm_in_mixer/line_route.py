"""line_route.py: what a per-line route (each line coded by the word path or by the byte model, a flag per line)
would save inside a tracked group, on dev (issue 41, the step after byte model 2).

Per source, the sampled documents (common.sample) are joined into one stream and coded as one group would be:
  word path  the word model forced on every block of the stream (Codec, the default model, default mode, one
             context across the blocks), each token's traced bits attributed exactly (measure.exact: the gap part
             on the gap bytes, the rest on the body);
  byte model the newest byte model over the whole stream (lab hook nlm_lab_byte_costs: as a tracked group's run,
             it learns every byte whichever model codes it);
per line (its newline included): the cheaper of the two (the oracle, no flag), and a causal route: a flag per
line coded with an adaptive probability in a context (the previous line's route and its first byte's class),
the encoder taking the line's cheaper side with the flag's cost counted (it knows both costs: the byte model
learns every byte either way, and the network runs over every token either way, so neither side's state
depends on the route).  Not counted: the word path's redundancy at a line after a byte-coded one (its first
step's gap starts with the newline the byte model already coded), about a gap symbol per switch.

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/lm_in_mixer/line_route.py [--per-source 200000 --cap 48000]
       ... line_route.py --files FILE... (files instead of dev: a report, e.g. of bench/ files, never a tuning set)
Prints Markdown tables (per source or file, and per line type).
"""
from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
from measure import exact  # noqa: E402

import nlmcodec  # noqa: E402
from nlmcodec import _encode, _frame  # noqa: E402
from nlmcodec._backend import native  # noqa: E402
from nlmcodec._core import Codec  # noqa: E402
from nlmcodec._registry import load_model  # noqa: E402


def word_path(m, mode, data):
    """Per-byte bits of the word path over data as one group (exact attribution), and the sorted ends of its
    tokens' bodies."""
    codec = Codec(m, _frame.adapt_mode(mode))
    codec.reset()
    codec.trace(True)
    recs = []
    for pos, ln in _encode._model_pieces(data):
        codec.encode_block(data[pos:pos + ln])
        for r in codec.trace_records():
            recs.append((pos + int(r["off"]), int(r["len"]), r["bits"].copy(), float(r["bits"].sum())))
    codec.trace(False)
    return exact(len(data), data, recs), np.array(sorted(o + n for o, n, _, _ in recs), dtype=np.int64)


def byte_model(data):
    p = np.frombuffer(native.lab_byte_costs(data), dtype="=u2").reshape(-1, 8).astype(np.float64)
    return -np.log2(p / 4096.0).sum(axis=1)


def first_class(line: bytes) -> int:
    """The class of a line's first byte: 0 blank, 1 space/tab, 2 letter, 3 digit, 4 '.', 5 '>', 6 other."""
    c = line[:1]
    if not c or c in b"\r\n":
        return 0
    if c in b" \t":
        return 1
    if c.isalpha() or c[0] >= 128:
        return 2
    if c.isdigit():
        return 3
    return 4 if c == b"." else 5 if c == b">" else 6


class Flag:
    """An adaptive binary probability per context (counts halved at 60), cost in bits."""

    def __init__(self):
        self.n = defaultdict(lambda: [0.4, 0.4])

    def cost(self, ctx, bit):
        n0, n1 = self.n[ctx]
        return -math.log2((n1 if bit else n0) / (n0 + n1))

    def update(self, ctx, bit):
        c = self.n[ctx]
        c[bit] += 1
        if c[0] + c[1] > 60:
            c[0] /= 2
            c[1] /= 2


def route(data, wm, bm, ends=None):
    """Per line: (bytes, line type, word bits, byte bits, line oracle's bits, causal route's bits, route).
    With ends (the word path's token ends), the variant "after the first token": the line's first token (its
    indentation and body) is always the word path's, and the flag, coded after it, routes the rest of the line
    (its context then also sees the class of that token's first byte)."""
    rows, flag, prev = [], Flag(), (0, 0)
    pos = 0
    for line in data.splitlines(keepends=True):
        a, e = pos, pos + len(line)
        pos = e
        t, ctx = a, prev
        if ends is not None:
            body = line.lstrip()
            if body.strip():
                f = e - len(body)
                k = min(int(np.searchsorted(ends, f, side="right")), len(ends) - 1)
                t = min(e, max(f + 1, int(ends[k])))
                ctx = (prev[0], first_class(body))
            else:
                t = e
        head, w, b = float(wm[a:t].sum()), float(wm[t:e].sum()), float(bm[t:e].sum())
        c0, c1 = w + flag.cost(ctx, 0), b + flag.cost(ctx, 1)
        bit = int(c1 < c0) if t < e else 0
        if t < e:
            flag.update(ctx, bit)
        rows.append((len(line), common.line_type(line), head + w, float(bm[a:e].sum()), head + min(w, b),
                     head + (min(c0, c1) if t < e else w), bit))
        prev = (bit, first_class(line))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=200000)
    ap.add_argument("--cap", type=int, default=48000)
    ap.add_argument("--mode", default=_frame.DEFAULT_ADAPT)
    ap.add_argument("--model", default="default")
    ap.add_argument("--files", nargs="*", default=None, help="code these files (each one stream) instead of dev")
    ap.add_argument("--after-first-token", action="store_true",
                    help="the variant whose flag follows the line's first token (route(): ends)")
    a = ap.parse_args()
    m = load_model(a.model)
    if a.files:
        streams = {pathlib.Path(f).name: pathlib.Path(f).read_bytes() for f in a.files}
    else:
        smp = common.sample(a.per_source, a.cap)
        streams = {s: b"".join(b for _, b in smp[s]) for s in common.SOURCES}
    tot, per_type = {}, defaultdict(lambda: np.zeros(5))
    for s, data in streams.items():
        t0 = time.time()
        (wm, ends), bm = word_path(m, a.mode, data), byte_model(data)
        rows = route(data, wm, bm, ends if a.after_first_token else None)
        r = np.array([x[:6] for x in rows] + [[0] * 6], dtype=np.float64)
        n, w, b, o = r[:, 0].sum(), r[:, 2].sum(), r[:, 3].sum(), r[:, 4].sum()
        tot[s] = (n, w, b, o, r[:, 5].sum(), sum(x[6] for x in rows), len(rows))
        grp = s if a.files else "gutenberg" if s == "gutenberg" else "python" if s.startswith("python") else "tech"
        for x in rows:
            per_type[(grp, x[1])] += [x[0], x[2], x[3], x[4], x[5]]
        print(f"{s}: {int(n)} B in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    what = ("each file one stream" if a.files else f"per source the sampled documents (`--per-source "
            f"{a.per_source} --cap {a.cap}`) joined into one stream")
    variant = (" The flag follows each line's first token, which the word path codes (`--after-first-token`)."
               if a.after_first_token else " The flag precedes each line.")
    print(f"Model `{a.model}`, mode {a.mode}; {what}.{variant} Bits per byte.\n")
    print("| source | bytes | word path | byte model | line oracle | causal route | change | lines to the byte model |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    allv = np.zeros(5)
    for s, (n, w, b, o, c, k, nl) in tot.items():
        allv += [n, w, b, o, c]
        print(f"| {s} | {int(n):,} | {w / n:.3f} | {b / n:.3f} | {o / n:.3f} | {c / n:.3f} | {(c - w) / w:+.1%} | "
              f"{k:,} of {nl:,} |")
    n, w, b, o, c = allv
    print(f"| **all** | {int(n):,} | {w / n:.3f} | {b / n:.3f} | {o / n:.3f} | {c / n:.3f} | {(c - w) / w:+.1%} | |")
    print("\n| group | line type | share of bytes | word path | byte model | line oracle | causal route | change |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for grp in (list(streams) if a.files else ("gutenberg", "python", "tech")):
        gn = sum(v[0] for (g, _), v in per_type.items() if g == grp)
        for t, name in enumerate(common.LINE_TYPES):
            v = per_type.get((grp, t))
            if v is None or not v[0]:
                continue
            n, w, b, o, c = v
            print(f"| {grp} | {name} | {n / gn:.1%} | {w / n:.3f} | {b / n:.3f} | {o / n:.3f} | {c / n:.3f} | "
                  f"{(c - w) / w:+.1%} |")


if __name__ == "__main__":
    main()
