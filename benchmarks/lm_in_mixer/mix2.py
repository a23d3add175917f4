"""Issue 41, second round, step 3: the float mixer of round 1 with the byte-model structure contexts.

Reads measure.py's per-byte arrays (results/bytes_<tag>.npz: the word side's bit probabilities pwm1, its
phase and confidence, exact word-path costs wmx), recomputes the byte model's bit probabilities (lab hook
nlm_lab_byte_costs) on the same sample, and runs, per bit, one pass of five structure context models feeding
four float mixers (each the round-1 mixer: 40 weight sets by token phase x word-side confidence x first bit,
learning rate 0.02, an APM by (phase, confident) averaged 1:1):

  mix1   stretch(bm), stretch(wmbyte), bias                       (round 1's mix, rerun: a check)
  bmctx  stretch(bm), the five structure contexts, bias           (the byte model side alone, with the contexts)
  mixctx stretch(bm), stretch(wmbyte), the five contexts, bias
  mixsel as mixctx, but the word side's input is 0 outside in-vocabulary body bytes (phase 1 and 2): at gap
         bytes and once the bytes left the vocabulary the mix is the byte side's

Structure contexts (each an adaptive bit probability per (context, partial byte), rate 1/(n+1.5), n <= 255,
hashed into a dict; cold per document):
  col    column (capped 80), indentation of the current and of the previous line
  above  the previous line's bytes at this column and the next, and the last byte
  ltype  the previous line's type (common.line_type), the current line's first non-blank byte, the last byte
  word   the current word so far (letters/digits, hashed) and the previous word
  sparse the bytes at -2 and -3 (skipping -1), and the byte at -4 with the column parity

    python benchmarks/lm_in_mixer/mix2.py --tag r2 --per-source 32000 --cap 16000
    (writes results/bytes_<tag>_mix2.npz; report2.py makes the tables)
"""
from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

from measure import Mixer, stretch  # noqa: E402
from nlmcodec._backend import native  # noqa: E402

WS = b" \t\n\r\x0b\x0c"
NCTX = 5


def contexts(data):
    """Per byte: NCTX context hashes (ints), computed from the bytes before it."""
    n = len(data)
    out = np.zeros((n, NCTX), dtype=np.int64)
    ls, pls, ple = 0, -1, -1          # current line start; previous line start/end (index of its '\n')
    ind, pind = 0, 0
    in_indent = True
    plt = 5
    first = 256
    word, pword = 0, 0
    for i in range(n):
        col = i - ls
        b1 = data[i - 1] if i >= 1 else 256
        b2 = data[i - 2] if i >= 2 else 256
        b3 = data[i - 3] if i >= 3 else 256
        b4 = data[i - 4] if i >= 4 else 256
        if pls >= 0:
            above = data[pls + col] if pls + col < ple else 257
            above2 = data[pls + col + 1] if pls + col + 1 < ple else 257
        else:
            above = above2 = 258
        out[i, 0] = hash((0, min(col, 80), min(ind, 40), min(pind, 40), in_indent))
        out[i, 1] = hash((1, above, above2, b1))
        out[i, 2] = hash((2, plt, first, b1))
        out[i, 3] = hash((3, word, pword))
        out[i, 4] = hash((4, b2, b3, b4 if col & 1 else -1))
        c = data[i]
        # advance the state over byte c
        if c == 10:
            pls, ple = ls, i
            pind = ind
            plt = common.line_type(data[ls:i])
            ls, ind, in_indent, first = i + 1, 0, True, 256
        else:
            if in_indent and c in b" \t":
                ind += 1
            elif in_indent:
                in_indent = False
                first = c
        if 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c >= 128:
            word = hash((word, c | 32 if c < 128 else c))
        elif word:
            pword, word = word, 0
    return out


class CtxModels:
    def __init__(self):
        self.t = {}

    def predict(self, hs, c0):
        """Stretches of P(bit = 1) for the contexts hs at partial byte c0 (1..255); remembers the slots."""
        self.slots = []
        xs = []
        for k, h in enumerate(hs):
            key = (h, c0)
            s = self.t.get(key)
            if s is None:
                s = self.t[key] = [0.5, 0.0]
            self.slots.append(s)
            p = min(max(s[0], 1.0 / 4096), 4095.0 / 4096)
            xs.append(stretch(p) if s[1] > 0 else 0.0)
        return xs

    def update(self, y):
        for s in self.slots:
            s[1] = min(s[1] + 1.0, 255.0)
            s[0] += (y - s[0]) / (s[1] + 0.5)


VARIANTS = ("mix1", "bmctx", "mixctx", "mixsel")


def run_doc(data, pwm1, phase, conf):
    n = len(data)
    p = np.frombuffer(native.lab_byte_costs(data), dtype="=u2").astype(np.float64).reshape(n, 8) / 4096.0
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8)).reshape(n, 8)
    pbm1 = np.where(bits == 1, p, 1.0 - p)
    ctx = contexts(data)
    cm = CtxModels()
    mixers = [Mixer(40, 3, apm_sets=8), Mixer(40, 2 + NCTX, apm_sets=8), Mixer(40, 3 + NCTX, apm_sets=8),
              Mixer(40, 3 + NCTX, apm_sets=8)]
    cost = np.zeros((len(VARIANTS), n))
    clip = 4095.0 / 4096
    for i in range(n):
        hs = ctx[i].tolist()
        ph, cf = int(phase[i]), int(conf[i])
        s0 = (ph * 5 + cf) * 2
        arow = ph * 2 + (1 if cf >= 3 else 0)
        wordin = ph in (1, 2)
        c0 = 1
        for k in range(8):
            y = int(bits[i, k])
            a = stretch(min(max(float(pbm1[i, k]), 1 - clip), clip))
            b = stretch(min(max(float(pwm1[i, k]), 1 - clip), clip))
            xs = cm.predict(hs, c0)
            s = s0 + (1 if k == 0 else 0)
            py = mixers[0].code((a, b, 0.3), s, arow, y)
            cost[0, i] -= math.log2(py)
            py = mixers[1].code([a] + xs + [0.3], s, arow, y)
            cost[1, i] -= math.log2(py)
            py = mixers[2].code([a, b] + xs + [0.3], s, arow, y)
            cost[2, i] -= math.log2(py)
            py = mixers[3].code([a, b if wordin else 0.0] + xs + [0.3], s, arow, y)
            cost[3, i] -= math.log2(py)
            cm.update(y)
            c0 = c0 * 2 + y
    return cost


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tag", default="r2")
    ap.add_argument("--per-source", type=int, default=32000)
    ap.add_argument("--cap", type=int, default=16000)
    a = ap.parse_args()
    res = common.HERE / "results"
    B = np.load(res / f"bytes_{a.tag}.npz", allow_pickle=True)
    smp = common.sample(a.per_source, a.cap)
    bydoc = {(s, did): data for s in smp for did, data in smp[s]}
    docs = B["docs"]
    pos = 0
    out = np.zeros((len(VARIANTS), len(B["src"])))
    for d, (s, did, ln, _) in enumerate(docs):
        ln = int(ln)
        data = bydoc[(s, did)]
        assert len(data) == ln
        t0 = time.time()
        sl = slice(pos, pos + ln)
        out[:, sl] = run_doc(data, B["pwm1"][sl], B["phase"][sl], B["conf"][sl])
        print(f"{s:17s} {did[:28]:28s} {ln:6d} B  wmx {B['wmx'][sl].sum() / ln:.3f}  bm {B['bm'][sl].sum() / ln:.3f}  "
              + "  ".join(f"{v} {out[j, sl].sum() / ln:.3f}" for j, v in enumerate(VARIANTS))
              + f"  ({time.time() - t0:.1f} s)", flush=True)
        pos += ln
    np.savez_compressed(res / f"bytes_{a.tag}_mix2.npz", **{v: out[j] for j, v in enumerate(VARIANTS)})


if __name__ == "__main__":
    main()
