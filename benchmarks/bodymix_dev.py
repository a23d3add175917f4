"""The body mixer on dev (issue 10 item 3, codec/FORMAT.md §5.1.1): what treating the group's unknown
bodies as tokens saves on the spelling cache's symbol, static and dynamic, and the figures its constants
were chosen by.  Measured on dev/ only.

The set is speller_dev.py's: per source of dev/*.jsonl.xz (gutenberg, python-peps, python-docs), its first
--per-source bytes, each coded as one group of the encoder's word-model blocks from the trained state, as
format 8 (the cache's symbol coded by its PPM-C counts) and format 9 (mixed with the body experts), from the
same build.  "cache bits" are the symbol's bits (hits and escapes); "named" the symbols the experts named.

--tune: the table of constants.  They are part of the format, so they were chosen on a model of the mixer in
Python floats run over the coder's records (nlmcodec.explain): the cache's symbols in coding order, the
cache's counts replayed exactly, the experts and their weights as §5.1.1 has them (same contexts, counts,
limits and update, in floats, without hashing).  The first row is the shipped set.

    python benchmarks/bodymix_dev.py [--per-source 300000] [--modes static,dynamic] [--tune] [--out FILE]
"""
from __future__ import annotations

import argparse
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import nlmcodec  # noqa: E402
from nlmcodec._frame import codec_options  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402

# the shipped constants (csrc/codec/bodymix.c) and the variants --tune measures, one changed at a time
SHIPPED = {"K1": 16, "K2": 8, "L": 30, "RI": 4, "RL": 100, "R": 5, "W0": (0.5, 0.2, 0.2, 0.1)}
VARIANTS = [("K1", 64), ("K2", 32), ("L", 254), ("L", 14), ("RL", 50), ("RL", 300), ("RL", 1000),
            ("R", 4), ("R", 6), ("RI", 2), ("RL", 10 ** 9)]


def symbols(model, text: bytes):
    """The tokens of text in coding order (format 9, static; which symbols the cache codes does not depend on
    the mode or the mixer): (key, unknown, coded by the cache) with key the body (or the vocabulary word)."""
    ex = nlmcodec.explain(text, model=model, adapt=False)
    vocab = set(bytes(v) for v in model.vocab)
    out = []
    for t in ex.tokens:
        if t.coder != "model":
            continue
        body = bytes(t.bytes).lstrip(b" \t\r\n\v\f") if t.kind != "end" else b"<end>"
        unknown = t.kind != "end" and (t.bits.get("cache", 0) > 0 or body.lower() not in vocab)
        out.append((body if unknown else body.lower(), unknown, t.bits.get("cache", 0) > 0))
    return out


def simulate(toks, P):
    """Bits of the cache's symbols: (PPM-C counts alone, mixed with the experts), floats."""
    K, L, RI, RL, R = (P["K1"], P["K2"]), P["L"], P["RI"], P["RL"], P["R"]
    idx, cnt, lists, rec, W = {}, [], ({}, {}), {}, {}
    h1 = h2 = None
    base = mixed = 0.0
    for key, unknown, coded in toks:
        if unknown:
            k = idx.get(key)
            sym = 0 if k is None else k + 1
            if coded:
                T = max(len(cnt), 1) + sum(cnt)
                pb = (max(len(cnt), 1) if sym == 0 else cnt[sym - 1]) / T
                ex = [lists[0].get(h1), lists[1].get((h2, h1)), rec or None]
                tots = [sum(e.values()) if e else 0 for e in ex]
                w = W.setdefault((min(3, tots[0].bit_length()), min(3, tots[1].bit_length())), list(P["W0"]))
                ps = [pb] + [e.get(sym, 0) / t if e else None for e, t in zip(ex, tots)]
                ws = sum(w[i] for i in range(4) if ps[i] is not None)
                p = sum(w[i] * ps[i] for i in range(4) if ps[i] is not None) / ws
                base += -math.log2(pb)
                mixed += -math.log2(p)
                for i in range(4):
                    if ps[i] is not None:
                        w[i] = max(0.01, w[i] + (w[i] * ps[i] / p - w[i]) * 2.0 ** -R)
            if k is None:
                idx[key] = len(cnt)
                cnt.append(1)
            elif coded:
                cnt[k] += 1
            for o, c in enumerate((h1, (h2, h1))):
                e = lists[o].setdefault(c, {})
                if sym not in e and len(e) >= K[o]:
                    del e[min(e, key=lambda y: e[y])]
                e[sym] = e.get(sym, 0) + 2
                if sum(e.values()) > L:
                    for y in e:
                        e[y] = (e[y] + 1) // 2
            for y in ([0, len(cnt)] if sym == 0 else [sym]):
                rec[y] = rec.get(y, 0) + RI
            if sum(rec.values()) > RL:
                rec = {y: c // 2 for y, c in rec.items() if c // 2}
            key = ("U", idx[key])
        h2, h1 = h1, key
    return base, mixed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--per-source", type=int, default=300_000)
    p.add_argument("--modes", default="static,dynamic")
    p.add_argument("--model", default="default")
    p.add_argument("--tune", action="store_true")
    p.add_argument("--out")
    a = p.parse_args(argv)
    model = nlmcodec.load_model(a.model)
    texts = dev_set(a.per_source)
    rows = [f"Model `{a.model}`, dev/ first {a.per_source:,} bytes per source, one group each. Command: "
            f"`python benchmarks/bodymix_dev.py --per-source {a.per_source} --modes {a.modes}"
            f"{' --tune' if a.tune else ''}`", "",
            "| source | mode | bytes | format 8 | format 9 | change | cache symbols | named | cache bits 8 → 9 |",
            "|---|---|---|---|---|---|---|---|---|"]
    tot = {}
    for name, text in texts.items():
        for mode in a.modes.split(","):
            adapt = mode == "dynamic"
            s8, st8, _ = code_group(model, text, adapt, **codec_options(8))
            s9, st9, _ = code_group(model, text, adapt, **codec_options(9))
            b8, b9 = sum(s8), sum(s9)
            t = tot.setdefault(mode, [0, 0, 0])
            t[0], t[1], t[2] = t[0] + len(text), t[1] + b8, t[2] + b9
            n = st9["cache_hits"] + st9["spelled"]
            rows.append(f"| {name} | {mode} | {len(text):,} | {b8:,} | {b9:,} | {100 * (b9 - b8) / b8:+.2f}% | "
                        f"{int(n):,} | {int(st9['bm_candidates']):,} | {st8['cache_bits'] / 8:,.0f} → "
                        f"{st9['cache_bits'] / 8:,.0f} B |")
    for mode, (n, b8, b9) in tot.items():
        rows.append(f"| all | {mode} | {n:,} | {b8:,} | {b9:,} | {100 * (b9 - b8) / b8:+.2f}% | | | |")
    if a.tune:
        toks = {name: symbols(model, text) for name, text in texts.items()}
        rows += ["", "Float model of the mixer (--tune): bytes of the cache's symbols over the three sources.", "",
                 "| constants | PPM-C alone | mixed | saved |", "|---|---|---|---|"]
        for label, P in [("shipped", SHIPPED)] + [(f"{k} = {v}", {**SHIPPED, k: v}) for k, v in VARIANTS]:
            b = m = 0.0
            for t in toks.values():
                x, y = simulate(t, P)
                b, m = b + x, m + y
            rows.append(f"| {label} | {b / 8:,.0f} | {m / 8:,.0f} | {100 * (b - m) / b:.1f}% |")
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
