"""The token cache on dev (issue 10, codec/FORMAT.md §3.6): what it saves, static and dynamic, per expert,
and the figures its constants were chosen by.  Measured on dev/ only.

The set is speller_dev.py's: per source of dev/*.jsonl.xz (gutenberg, python-peps, python-docs), its
first --per-source bytes, each coded as one group of the encoder's word-model blocks from the trained
state, with the cache off (format 7) and on (format 8), from the same build.  Per expert: the tokens whose
coded identity it gave a count (unigram, order 2, order 3); "net bits": what the network's own class and
word distributions would have cost the tokens the class stage coded, against the bits those stages spent.

--tune: the table of constants.  The cache's constants are part of the format (no build switch may change
them, tests/test_format_contract.py), so they were chosen on a model of the cache in Python floats, run
over the per-token records of format-7 coding (nlmcodec.explain): each token's probability under the whole
coder (match flag, class and word stages, from the codec's per-token trace) is mixed with the three
experts as §3.6 mixes the network's (the same counts, limits, replacement, weight sets and update, in
floats; unknown words one id in the counts, each body its own id in the contexts).  The shipped build's own figures are the first table.

    python benchmarks/cache_dev.py [--per-source 300000] [--modes static,dynamic] [--tune] [--out FILE]
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
from nlmcodec._frame import codec_options  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402

# the shipped constants (csrc/codec/tokcache.c) and the variants --tune measures, one changed at a time
SHIPPED = {"K2": 32, "K3": 16, "L1": 256, "L2": 30, "R": 6, "wmin": 0.01}
VARIANTS = [("K2", 16), ("K2", 64), ("K3", 8), ("L1", 512), ("L1", 1024), ("L1", 4096), ("L2", 62), ("L2", 126),
            ("R", 5), ("R", 7), ("wmin", 0.002), ("wmin", 0.02)]


# ------------------------------------------------------------------------------------------ the codec
def code(model, text: bytes, adapt: bool, version: int):
    sizes, st, dt = code_group(model, text, adapt, **codec_options(version))
    return sum(sizes), st, dt


# ------------------------------------------------------------------------------ the float model (--tune)
def records(model, text: bytes, adapt: bool):
    """[(w, context id, bits of the token's identity)] of text coded as format 7 (the cache off) in one group:
    w the vocabulary id (0 for an unknown word), the context id w or the unknown body (as the match model's ids
    of §3.4), the bits those of the match flag, class and word stages (the codec's per-token trace)."""
    from nlmcodec import _core
    from nlmcodec._encode import _model_pieces

    c = _core.Codec(model, adapt)
    c.reset(**codec_options(7))
    c.trace(True)
    out = []
    for pos, k in _model_pieces(text):
        c.encode_block(text[pos:pos + k])
        block = text[pos:pos + k]
        for t in c.trace_records():
            b = t["bits"]      # TRACE_PARTS: class, word, unk, cache, spell, case, gap, match
            w = int(t["word"])
            raw = block[t["off"]:t["off"] + t["len"]]
            ctx = w if w else raw.lstrip(b" \t\r\n\v\f").lower()
            out.append((w, ctx, float(b[0] + b[1] + b[2] + b[7])))
    return out


def simulate(rows, K2, K3, L1, L2, R, wmin):
    """Bits of the format-7 identities, and of the same tokens with the float cache mixed in."""
    def bucket(t):
        return 0 if t == 0 else min(5, t.bit_length())

    def add(tab, key, w, K):
        c = tab.setdefault(key, [0, {}])
        if w not in c[1] and len(c[1]) >= K:
            m = min(c[1], key=lambda k: c[1][k])
            c[0] -= c[1].pop(m)
        c[1][w] = c[1].get(w, 0) + 2
        c[0] += 2
        if c[0] > L2:
            c[1] = {k: v // 2 for k, v in c[1].items() if v // 2}
            c[0] = sum(c[1].values())
    c1, tot1, t2, t3, W = collections.Counter(), 0, {}, {}, {}
    before = after = 0.0
    h1 = h2 = None
    for key, ctx, ident in rows:
        pm = 2.0 ** -ident
        C2 = t2.get(h1) if h1 is not None else None
        C3 = t3.get((h2, h1)) if h2 is not None else None
        ps = [pm, c1[key] / tot1 if tot1 else 0.0, C2[1].get(key, 0) / C2[0] if C2 and C2[0] else 0.0,
              C3[1].get(key, 0) / C3[0] if C3 and C3[0] else 0.0]
        pres = [True, tot1 > 0, bool(C2 and C2[0]), bool(C3 and C3[0])]
        w = W.setdefault((bucket(C2[0] if C2 else 0), bucket(C3[0] if C3 else 0)), [0.85, 0.05, 0.05, 0.05])
        ww = [w[k] if pres[k] else 0.0 for k in range(4)]
        s = sum(ww)
        p = sum(a * b for a, b in zip(ww, ps)) / s
        before += ident
        after -= math.log2(p)
        for k in range(4):
            if pres[k]:
                w[k] = max(wmin, w[k] + (ww[k] * ps[k] / p - w[k]) * 2.0 ** -R)
        c1[key] += 1
        tot1 += 1
        if tot1 > L1:
            c1 = collections.Counter({k: v // 2 for k, v in c1.items()})
            tot1 = sum(c1.values())
        if h1 is not None:
            add(t2, h1, key, K2)
        if h2 is not None:
            add(t3, (h2, h1), key, K3)
        h2, h1 = h1, ctx
    return before / 8, after / 8


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=300_000)
    ap.add_argument("--modes", default="static,dynamic")
    ap.add_argument("--tune", action="store_true", help="also the float model's table of constants (dynamic)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    model = nlmcodec.load_model("default")
    texts = dev_set(a.per_source)
    cmd = f"python benchmarks/cache_dev.py --per-source {a.per_source}" + (" --tune" if a.tune else "")
    rows = [f"Command: `{cmd}`; default model (id {model.model_id.hex()[:16]}); one group per source.", "",
            "| source | bytes | mode | payload off (v7) | payload on (v8) | change | tokens | unigram had it | "
            "order 2 had it | order 3 had it | network bits / class+word bits | CPU s off / on |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    sums = collections.defaultdict(lambda: [0, 0, 0.0, 0.0])
    for mode in a.modes.split(","):
        adapt = mode == "dynamic"
        for src, text in texts.items():
            off, _, t0 = code(model, text, adapt, 7)
            on, st, t1 = code(model, text, adapt, 8)
            s = sums[mode]
            s[0] += off; s[1] += on; s[2] += t0; s[3] += t1
            cw = st["word_bits"] + st["unk_bits"]
            rows.append(f"| {src} | {len(text)} | {mode} | {off} | {on} | {100 * (on / off - 1):+.2f}% | "
                        f"{st['tc_tokens']:.0f} | {st['tc_u1']:.0f} | {st['tc_o2']:.0f} | {st['tc_o3']:.0f} | "
                        f"{st['tc_net_cost']:.0f} / {cw:.0f} | {t0:.1f} / {t1:.1f} |")
            print(rows[-1], flush=True)
    allb = sum(len(t) for t in texts.values())
    rows += ["", "| mode | payload off (v7) | payload on (v8) | change | bits/byte off / on | CPU s off / on |",
             "|---|---|---|---|---|---|"]
    for mode, (off, on, t0, t1) in sums.items():
        rows.append(f"| {mode} | {off} | {on} | {100 * (on / off - 1):+.2f}% | {8 * off / allb:.4f} / "
                    f"{8 * on / allb:.4f} | {t0:.1f} / {t1:.1f} |")
    if a.tune:
        rows += ["", "## How the constants were chosen (dev only, dynamic, the float model of --tune)", "",
                 "Each row changes one constant from the shipped set "
                 f"({', '.join(f'{k} {v}' for k, v in SHIPPED.items())}; K2, K3: entries per order-2 / order-3 "
                 "list, L1: unigram total before halving, L2: list total before halving, R: the weight rate "
                 "2^-R, wmin: the smallest weight) and gives the float model's change of the dev set's "
                 "identity bits against format 7 (lower is better).", "",
                 "| variant | change |", "|---|---:|"]
        recs = [records(model, t, True) for t in texts.values()]
        for var in [None] + VARIANTS:
            P = dict(SHIPPED)
            if var:
                P[var[0]] = var[1]
            b = n = 0.0
            for r in recs:
                x, y = simulate(r, **P)
                b += x; n += y
            rows.append(f"| {'shipped' if var is None else f'{var[0]} {var[1]}'} | {100 * (n / b - 1):+.3f}% |")
            print(rows[-1], flush=True)
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
