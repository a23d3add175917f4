"""What a document cache could save (issue 10, item 2), estimated from the codec's own trace, on dev only.

A unigram cache predicts token w with probability q(w) = n(w) / N, where n(w) counts (with decay d per
token) the earlier tokens of the group with w's body (lowercased) and N is the decayed count of all of
them.  Mixed linearly with the network, p' = (1 - lam) p + lam q, the cost of a token the network codes
with probability p (its class, word, unknown-word, cache and spelling bits in the trace) would be
-log2 p'.  Only the coded token's p is needed for that, so the estimate is exact for this mixture, except
that it keeps the token match flag as it is (tokens the flag hits keep their cost; the flag's own bits
and the case and gap bits are unchanged).  It is an upper bound of what the mixture could give with a
fixed lam, not a coder.

    python benchmarks/cache_estimate.py [--per-source 300000] [--out benchmarks/cache_estimate.md]

The set is speller_dev.py's (per dev source, its documents up to --per-source bytes, one group each).
"""
from __future__ import annotations

import argparse
import collections
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import nlmcodec  # noqa: E402
from nlmcodec import _core  # noqa: E402
from nlmcodec._encode import _model_pieces  # noqa: E402
from _benchlib import write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402

LAMS = (0.02, 0.05, 0.08, 0.12, 0.2)
DECAYS = (1.0, 0.999, 0.995, 0.99)
PARTS = list(_core.TRACE_PARTS)
ID_PARTS = [PARTS.index(p) for p in ("class", "word", "unk", "cache", "spell")]


def records(model, text, adapt):
    """(key, bits of the token's identity, all its bits, match hit) per token of text as one group."""
    c = _core.Codec(model, adapt)
    c.reset()
    c.trace(True)
    out = []
    for pos, k in _model_pieces(text):
        block = text[pos:pos + k]
        c.encode_block(block)
        for r in c.trace_records():
            body = block[r["off"]:r["off"] + r["len"]].strip().lower()
            out.append((body, float(r["bits"][ID_PARTS].sum()), float(r["bits"].sum()), bool(r["flags"] & 4)))
    return out


def mixed_bits(recs, lam, decay):
    counts, t, bits = {}, 0, 0.0
    for key, idb, allb, hit in recs:
        total = t if decay == 1.0 else (1 - decay ** t) / (1 - decay)
        n, last = counts.get(key, (0.0, t))
        n *= decay ** (t - last)
        if hit or t == 0:
            bits += allb
        else:
            bits += allb - idb - math.log2((1 - lam) * 2.0 ** -idb + lam * n / total)
        counts[key] = (n + 1.0, t)
        t += 1
    return bits


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=300_000)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    model = nlmcodec.load_model("default")
    texts = dev_set(a.per_source)
    rows = [f"Command: `python benchmarks/cache_estimate.py --per-source {a.per_source}`; default model, dev only, "
            "one group per source.", "", "| mode | lam | decay | bits / byte | change against the codec's own |",
            "|---|---|---|---|---|"]
    n = sum(len(t) for t in texts.values())
    for mode in ("static", "dynamic"):
        recs = {src: records(model, text, mode == "dynamic") for src, text in texts.items()}
        base = sum(x[2] for r in recs.values() for x in r)
        res = collections.OrderedDict()
        for lam in LAMS:
            for d in DECAYS:
                res[(lam, d)] = sum(mixed_bits(r, lam, d) for r in recs.values())
        best = min(res, key=res.get)
        rows.append(f"| {mode} | 0 (the codec) | | {base / n:.4f} | |")
        for (lam, d), v in res.items():
            mark = " **best**" if (lam, d) == best else ""
            rows.append(f"| {mode} | {lam} | {d} | {v / n:.4f} | {100 * (v / base - 1):+.2f}%{mark} |")
        print(rows[-1], flush=True)
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
