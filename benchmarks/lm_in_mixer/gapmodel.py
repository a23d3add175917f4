"""Issue 41, second round, step 2: the word path with its gaps coded by a byte-level gap model.

The word path codes every token as today (the codec forced on every block, default mode, per-token trace),
except that the whitespace before each token (its gap: symbol 0-6 or a literal run, docs/format.md §1, §3.2
step 5, §5.3) is coded by a byte-level model with line/column contexts instead of the gap head + gap blending
(+ literal-gap model).  Cost = the trace's total minus its gap part + the gap model's cost.  The gap model
codes, at every token, the run of whitespace bytes one by one and then END (the body starts, or the block
ends): the same information as the gap part (which of the 8 symbols, and for symbol 7 the run's bytes).

Three variants:
  A  gap before body: the gap model sees only the bytes before the gap (what a byte-order coder has);
  B  gap after body (today's order, §3.2: the gap is coded after the body): the gap model also sees the
     token's body (its kind, first byte and length), which the decoder knows at that point;
  C  B plus the network's gap head P(gap | w, h) (static float network, reference arithmetic: no heads
     adaptation, no gap blending) as one more mixer input: today's gap prediction and the line contexts mixed;
  D  B plus the codec's own gap distribution (after heads adaptation and gap blending, lab hook
     nlm_lab_trace_dists) as the input: what a product would mix.

The gap model (float, a measuring prototype): the symbol (END, '\\n', ' ', '\\t', '\\r', '\\v', '\\f') as a
binary tree (END? newline? space? tab? CR? VT?); per node and context an adaptive probability (rate 1/(n+1.5),
n capped at 60); a logistic mixer of their stretches with weight sets by (node, position in the run 0/1/2/3+,
line blank so far; B-D: the body's first byte class), starting at 0.25 each (--ext-weight 1, C and D: 1 for the
outside predictor, 0 for the others, so the mix starts as today's prediction); an APM by (node, column bucket) averaged 1:1.  Contexts: the run so far; the last 1, 2, 3
bytes; the column and whether the line so far is blank; the previous line's indentation and the current column;
the previous line's bytes at this column and the next; the last word; the first byte of the current line
(line type) with the column; the previous line's first byte and length bucket.  Cold per document.

    python benchmarks/lm_in_mixer/gapmodel.py --per-source 32000 --cap 16000 --tag r2 [--ext-weight 1]
    (writes results/gap_<tag>.csv and prints the Markdown table)
"""
from __future__ import annotations

import argparse
import csv
import math
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

from nlmcodec import _encode, _frame  # noqa: E402
from nlmcodec._core import Codec, lex_tokens  # noqa: E402
from measure import WordSide  # noqa: E402
from nlmcodec._registry import load_model  # noqa: E402

WS = b" \t\n\r\x0b\x0c"
# binary tree: node 0 END vs whitespace; 1 '\n' vs other; 2 ' ' vs other; 3 '\t'; 4 '\r'; 5 '\v' vs '\f'
PATH = {None: ((0, 1),), 10: ((0, 0), (1, 1)), 32: ((0, 0), (1, 0), (2, 1)), 9: ((0, 0), (1, 0), (2, 0), (3, 1)),
        13: ((0, 0), (1, 0), (2, 0), (3, 0), (4, 1)), 11: ((0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 1)),
        12: ((0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0))}


def stretch(p):
    return math.log(p / (1.0 - p))


def squash(x):
    if x > 30:
        x = 30.0
    elif x < -30:
        x = -30.0
    return 1.0 / (1.0 + math.exp(-x))


def wordclass(c):
    if c is None:
        return 0
    if 97 <= c <= 122:
        return 1
    if 65 <= c <= 90:
        return 2
    if 48 <= c <= 57:
        return 3
    if c >= 128:
        return 4
    if c in b".!?":
        return 5
    if c in b",;:":
        return 6
    if c in WS:
        return 7
    return 8 + (c & 31)


class GapModel:
    LIMIT = 60.0

    def __init__(self, lr=0.02, ext_weight=0.25):
        self.ext_weight = ext_weight
        self.t = {}
        self.w = {}
        self.lr = lr
        self.apm = {}

    def cost(self, ctxs, sel, apm_ctx, sym, ext=None):
        """Code sym (a whitespace byte or None = END) under the context tuples ctxs; ext: {node: P(bit = 1)} of
        an outside predictor (the network's gap head), one more input; returns bits and learns."""
        bits = 0.0
        for node, y in PATH[sym]:
            slots = []
            xs = []
            if ext is not None:
                q = min(max(ext[node], 1e-4), 1 - 1e-4)
                xs.append(stretch(q))
            for k, c in enumerate(ctxs):
                key = (k, node, c)
                s = self.t.get(key)
                if s is None:
                    s = self.t[key] = [0.5, 0.0]
                slots.append(s)
                p = min(max(s[0], 1e-4), 1 - 1e-4)
                xs.append(stretch(p) if s[1] > 0 else 0.0)
            xs.append(0.3)
            wkey = (node, sel)
            w = self.w.get(wkey)
            if w is None:       # --ext-weight 1: with an outside predictor the mix starts as it (the others 0)
                w = self.w[wkey] = [0.25] * len(xs)
                if ext is not None and self.ext_weight != 0.25:
                    w = self.w[wkey] = [self.ext_weight] + [0.0] * (len(xs) - 1)
            t = sum(a * b for a, b in zip(w, xs))
            p = squash(t)
            # APM
            akey = (node, apm_ctx)
            row = self.apm.get(akey)
            if row is None:
                row = self.apm[akey] = [squash((j - 12) / 2.0) for j in range(25)]
            u = min(max((max(-12.0, min(12.0, t)) + 12.0), 0.0), 23.999)
            lo = int(u)
            fr = u - lo
            pa = row[lo] * (1 - fr) + row[lo + 1] * fr
            pf = min(max(0.5 * p + 0.5 * pa, 1 / 4096), 4095 / 4096)
            bits -= math.log2(pf if y else 1.0 - pf)
            err = y - p
            for i in range(len(w)):
                w[i] += self.lr * err * xs[i]
            j = lo + (fr >= 0.5)
            row[j] += (y - row[j]) * 0.03
            for s in slots:
                s[1] = min(s[1] + 1.0, self.LIMIT)
                s[0] += (y - s[0]) / (s[1] + 0.5)
        return bits


def line_info(data, i):
    """(column of i, start of i's line, start of the previous line or -1)."""
    ls = data.rfind(b"\n", 0, i) + 1
    pls = data.rfind(b"\n", 0, ls - 1) + 1 if ls > 0 else -1
    return i - ls, ls, pls


def indent(data, a, b):
    k = a
    while k < b and data[k] in b" \t":
        k += 1
    return k - a


GAPS = (b"", b" ", b"  ", b"\n", b"\n\n", b"\r\n", b"\t")
SYMS = (None, 10, 32, 9, 13, 11, 12)


def head_nodes(pg, run):
    """{node: P(bit = 1)} at a run position from the gap head's 8 probabilities: the symbols 0-6 consistent
    with the run so far, the literal symbol's mass spread evenly over the 7 outcomes."""
    m = {s: 0.0 for s in SYMS}
    for g, gs in enumerate(GAPS):
        if gs == run:
            m[None] += pg[g]
        elif len(gs) > len(run) and gs[:len(run)] == run:
            m[gs[len(run)]] += pg[g]
    lit = pg[7] * (0.5 ** len(run))
    for s in SYMS:
        m[s] += lit / 7 + 1e-6
    out = {}
    rest = sum(m.values())
    order = (None, 10, 32, 9, 13, 11)
    for node, s in enumerate(order):
        out[node] = m[s] / rest if rest > 0 else 0.5
        rest -= m[s]
    return out


def gap_costs(data, toks, with_body, heads=None, ext_weight=0.25):
    """Bits of the gap model over the document's tokens [(gap_off, gap_len, body_off, body_len)]; heads: per
    token the network's 8 gap probabilities P(gap | w, h) (variant C: one more mixer input)."""
    gm = GapModel(ext_weight=ext_weight)
    out = np.zeros(len(toks))
    for ti, (g0, gl, b0, bl) in enumerate(toks):
        body_kind = wordclass(data[b0]) if bl > 0 else 0
        body_len = min(bl, 8)
        bits = 0.0
        for j in range(gl + 1):
            i = g0 + j
            sym = data[i] if j < gl else None
            col, ls, pls = line_info(data, i)
            blank = data[ls:i].strip() == b""
            ind = indent(data, ls, i)
            if pls >= 0:
                ple = ls - 1
                pind = indent(data, pls, ple)
                above = data[pls + col] if pls + col < ple else 256
                above2 = data[pls + col + 1] if pls + col + 1 < ple else 256
                pfirst = data[pls + pind] if pls + pind < ple else 256
                plen = min((ple - pls) // 8, 12)
            else:
                pind, above, above2, pfirst, plen = -1, 257, 257, 257, -1
            b1 = data[i - 1] if i >= 1 else 256
            b2 = data[i - 2] if i >= 2 else 256
            b3 = data[i - 3] if i >= 3 else 256
            run = data[g0:i][-4:]
            # last word: the bytes back to the previous whitespace (at most 12)
            k = i
            while k > 0 and i - k < 12 and data[k - 1] not in WS:
                k -= 1
            lastword = data[k:i] if k < i else data[max(0, i - 12):i].rstrip(WS)[-12:]
            first = data[ls + ind] if ls + ind < i else 256
            cb = min(col, 90)
            ctxs = [
                (min(j, 4), run),
                (b1, min(j, 2)),
                (b1, b2, min(j, 2)),
                (b1, b2, b3),
                (cb, blank, b1 == 10),
                (pind, cb, blank, min(j, 3)),
                (above, above2, blank, wordclass(b1) if b1 < 256 else 256),
                (lastword, min(j, 2)),
                (wordclass(first) if first < 256 else 256, min(col // 4, 24), wordclass(b1) if b1 < 256 else 256),
                (pfirst, plen, cb // 8, blank),
                (ind, pind, above, b1),
            ]
            if with_body:
                ctxs += [(body_kind, b1, min(j, 3)), (body_kind, body_len, cb // 4, blank),
                         (data[b0] if bl > 0 else 256, wordclass(b1) if b1 < 256 else 256, min(j, 2))]
            sel = (min(j, 3), blank, body_kind if with_body else 0)
            ext = head_nodes(heads[ti], data[g0:i]) if heads is not None else None
            bits += gm.cost(ctxs, sel, min(cb // 4, 20), sym, ext)
        out[ti] = bits
    return out


def gap_heads(ws, data):
    """Per token of lex_tokens(data): the static float network's gap head P(gap | w, h) (8 symbols)."""
    toks = lex_tokens(data)
    ids = np.array([ws.token_id(data[t["off"]:t["off"] + t["len"]], int(t["kind"]), int(t["case"])) for t in toks])
    cases = np.array([int(t["case"]) if t["kind"] == 1 and t["case"] < 3 else 0 for t in toks])
    gaps = np.array([int(t["gap"]) for t in toks])
    hs = ws.states(ids[:-1], cases[:-1], gaps[:-1])
    z = hs[:len(toks)] @ ws.Ug.T + ws.Bg[ids]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True), toks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-source", type=int, default=32000)
    ap.add_argument("--cap", type=int, default=16000)
    ap.add_argument("--sources", default=",".join(common.SOURCES))
    ap.add_argument("--mode", default=_frame.DEFAULT_ADAPT)
    ap.add_argument("--tag", default="r2")
    ap.add_argument("--ext-weight", type=float, default=0.25,
                    help="C, D: the outside predictor's initial weight; 0.25 (default): every input 0.25; else that "
                         "weight and 0 for the others")
    a = ap.parse_args()
    m = load_model("default-2")          # the model of the recorded results (the default of 1.0)
    ws = WordSide(m)
    smp = common.sample(a.per_source, a.cap)
    acc = {}
    for s in common.SOURCES:
        if s not in a.sources.split(","):
            continue
        for did, data in smp[s]:
            t0 = time.time()
            codec = Codec(m, _frame.adapt_mode(a.mode))
            codec.reset()
            codec.trace(True)
            codec._c.lab_trace_dists(1)
            real = []
            toks, total, gapbits, emptygap = [], 0.0, 0.0, 0.0
            for pos, ln in _encode._model_pieces(data):
                codec.encode_block(data[pos:pos + ln])
                raw, width = codec._c.lab_trace_dists_records()
                real.append(np.frombuffer(raw, dtype="=f4").reshape(-1, width)[:, -8:].astype(np.float64))
                for r in codec.trace_records():
                    off, L = pos + int(r["off"]), int(r["len"])
                    gl = 0
                    while gl < L and data[off + gl] in WS:
                        gl += 1
                    toks.append((off, gl, off + gl, L - gl))
                    total += float(r["bits"].sum())
                    gapbits += float(r["bits"][6])
                    if gl == 0:
                        emptygap += float(r["bits"][6])
            codec.trace(False)
            ga = gap_costs(data, toks, False)
            gb = gap_costs(data, toks, True)
            heads, lt = gap_heads(ws, data)
            assert len(lt) == len(toks) and all(int(t["gap_off"]) == g[0] for t, g in zip(lt, toks))
            gc = gap_costs(data, toks, True, heads, a.ext_weight)
            gd = gap_costs(data, toks, True, np.concatenate(real), a.ext_weight)
            gbytes = sum(t[1] for t in toks)
            row = acc.setdefault(s, np.zeros(10))
            row += [len(data), gbytes, len(toks), total, gapbits, emptygap, ga.sum(), gb.sum(), gc.sum(), gd.sum()]
            print(f"{s:17s} {did[:28]:28s} {len(data):6d} B  wm {total / len(data):.3f}  gap part "
                  f"{gapbits / len(data):.3f}  A {ga.sum() / len(data):.3f}  B {gb.sum() / len(data):.3f}  "
                  f"C {gc.sum() / len(data):.3f}  D {gd.sum() / len(data):.3f}  "
                  f"({time.time() - t0:.1f} s)", flush=True)
    rows = []
    groups = [(s, acc[s]) for s in common.SOURCES if s in acc]
    tech = [acc[s] for s in common.TECH if s in acc]
    if tech:
        groups.append(("tech (all 4)", sum(tech)))
    groups.append(("all", sum(acc.values())))
    head = ["source", "bytes", "gap bytes", "tokens", "word path", "its gap part (bpb)", "of which empty gaps",
            "gap model A", "gap model B", "gap model C", "gap model D", "hybrid A", "hybrid B", "hybrid C",
            "hybrid D", "A vs word path", "B vs word path", "C vs word path", "D vs word path"]
    for name, r in groups:
        n, gb_, nt, tot, gp, eg, ga, gbb, gc, gd = r
        hA, hB, hC, hD = tot - gp + ga, tot - gp + gbb, tot - gp + gc, tot - gp + gd
        rows.append([name, f"{int(n)}", f"{100 * gb_ / n:.1f}%", f"{int(nt)}", f"{tot / n:.3f}", f"{gp / n:.3f}",
                     f"{eg / n:.3f}", f"{ga / n:.3f}", f"{gbb / n:.3f}", f"{gc / n:.3f}", f"{gd / n:.3f}",
                     f"{hA / n:.3f}", f"{hB / n:.3f}", f"{hC / n:.3f}", f"{hD / n:.3f}", f"{100 * (hA / tot - 1):+.2f}%",
                     f"{100 * (hB / tot - 1):+.2f}%", f"{100 * (hC / tot - 1):+.2f}%", f"{100 * (hD / tot - 1):+.2f}%"])
    out = common.HERE / "results" / f"gap_{a.tag}{'' if a.ext_weight == 0.25 else f'_w{a.ext_weight:g}'}.csv"
    with open(out, "w", newline="") as f:
        csv.writer(f).writerows([head] + rows)
    print("\n### The word path with a byte-level gap model (bits per byte of the whole input; A = gap coded before "
          "the body from the bytes before it; B = after the body, as today, also seeing the body; C = B plus the "
          "static network gap head P(gap | w, h) as a mixer input; D = B plus the codec's own blended gap distribution)\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
