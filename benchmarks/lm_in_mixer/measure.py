"""Issue 41's first step: measurements on dev documents for the word model inside the byte mixer.

Per sampled document (common.sample), byte by byte:

  frame    today's coding (nlmcodec.explain: the real encoder, default mode): each token's bits spread over its
           bytes; the block kinds say what the encoder chose (word model / byte model / lzma / stored);
  wm       the word model forced on every block (Codec, default mode, per-token trace), each token's bits
           spread over its bytes;
  bm       the byte model alone (lab hook nlm_lab_byte_costs: a fresh run over the document);
  oracle   per token the cheaper of wm and bm (no switching cost: a bound on per-token choice);
  wmbyte   the word model as a byte predictor alone: the static float network (reference arithmetic) gives at each
           token the distribution over (gap, word, case); P(next byte | bytes of the token so far) is the mass of the
           vocabulary strings consistent with the prefix (a sorted string table, range + bincount per byte); the
           mass of <unk> and literal gaps is spread uniformly (1/256 per byte), so outside the vocabulary the
           prediction is flat;
  mix      a float paq-style mixer per bit of stretch(bm), stretch(wmbyte), bias; weight sets chosen by (token phase:
           gap / first body byte / inside body / left the vocabulary) x (confidence of the word side: its top byte's
           probability in 5 buckets); then an APM by (phase, 33 buckets of the mix), averaged 1:1 with the mix.

Writes results/bytes_<tag>.npz (per-byte arrays) and results/tokens_<tag>.npz; report.py makes the tables.

    python benchmarks/lm_in_mixer/measure.py --per-source 60000 --cap 24000 --tag main
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

import nlmcodec  # noqa: E402
from nlmcodec import _encode, _frame  # noqa: E402
from nlmcodec._backend import native  # noqa: E402
from nlmcodec._core import Codec, lex_tokens  # noqa: E402
from nlmcodec._registry import load_model  # noqa: E402

GAPS = (b"", b" ", b"  ", b"\n", b"\n\n", b"\r\n", b"\t")   # gap symbols 0..6; 7 (literal) counts as "other"
# byte categories (what the word side sees): index into CATS
CATS = ("gap", "word", "word-oov", "number", "number-oov", "symbol", "symbol-oov", "end")
KIND_CODER = {"model": 0, "byte": 1, "lzma": 2, "stored": 3}


class WordSide:
    """The static float network and the sorted table of the vocabulary's cased body strings."""

    def __init__(self, m):
        self.m = m
        cfg = m.config
        self.V, self.C = cfg["V"], cfg["C"]
        (self.E, self.Ecase, self.Egap, self.Wx, self.Wh, self.bh, self.Wc, self.bc, self.Wo, self.bo, self.Uc,
         self.Bc, self.Ug, self.Bg) = [np.asarray(t, dtype=np.float32) for t in m.tensors()]
        self.cs = np.asarray(m.class_start, dtype=np.int64)
        self.cls = (np.searchsorted(self.cs, np.arange(self.V), side="right") - 1).astype(np.int32)
        vocab = m.vocab
        self.index = {v: i for i, v in enumerate(vocab) if i >= 2}
        entries = []                                  # (string, id, case)
        for i in range(2, self.V):
            v = vocab[i]
            isword = bool(v) and (v[0] >= 128 or 97 <= v[0] <= 122)
            entries.append((v, i, 0))
            if isword and any(97 <= c <= 122 for c in v):
                entries.append((v[:1].upper() + v[1:], i, 1))
                if sum(97 <= c <= 122 for c in v) >= 2:
                    entries.append((v.upper(), i, 2))
        entries.sort()
        L = max(len(e[0]) for e in entries) + 1
        self.chars = np.full((len(entries), L), -1, dtype=np.int16)
        for k, (s, _, _) in enumerate(entries):
            self.chars[k, :len(s)] = np.frombuffer(s, dtype=np.uint8)
        self.ent_id = np.array([e[1] for e in entries], dtype=np.int64)
        self.ent_case = np.array([e[2] for e in entries], dtype=np.int64)
        self.col0 = self.chars[:, 0].astype(np.int64) + 1
        self.Bc3 = np.ascontiguousarray(self.Bc[:, :3])
        self.ones8, self.ones3 = np.ones(8, dtype=np.float32), np.ones(3, dtype=np.float32)
        self.isword = np.array([bool(v) and (v[0] >= 128 or 97 <= v[0] <= 122) for v in vocab])

    def token_id(self, body: bytes, kind: int, case: int) -> int:
        if kind == 0:
            return 1
        if kind == 1:
            if case == 3:
                return 0
            body = body.lower()
        return self.index.get(body, 0)

    def states(self, ids, cases, gaps):
        """h before each token (the stream's tokens, END excluded by the caller)."""
        T = len(ids)
        X = self.E[ids] + self.Ecase[cases] + self.Egap[gaps]
        XW = X @ self.Wx.T + self.bh
        hs = np.empty((T + 1, self.Wh.shape[0]), dtype=np.float32)
        hs[0] = 0
        WhT = self.Wh.T
        for t in range(T):
            hs[t + 1] = np.tanh(XW[t] + hs[t] @ WhT)
        return hs

    def dists(self, h, zw=None, pc=None):
        """For one state: P(w) (V), P(gap | w) (V, 8), P(case | w) (V, 3), P(class) (C); zw: Wo h + bo if known;
        pc: a class distribution to use instead of the network's (the codec's own, --real-classes)."""
        if pc is None:
            zc = self.Wc @ h + self.bc
            pc = np.exp(zc - zc.max())
            pc /= pc.sum()
        else:
            pc = np.asarray(pc, dtype=np.float64)
            pc = pc / pc.sum()
        if zw is None:
            zw = self.Wo @ h + self.bo
        mx = np.maximum.reduceat(zw, self.cs[:-1])
        e = np.exp((zw - mx[self.cls]).astype(np.float64))
        pw = e * (pc[self.cls] / np.add.reduceat(e, self.cs[:-1])[self.cls])
        pg = np.exp(np.clip((self.Ug @ h)[None, :] + self.Bg, -60, 60))   # bounded logits: no max needed
        pg /= (pg @ self.ones8)[:, None]
        pk = np.exp(np.clip((self.Uc @ h)[:3][None, :] + self.Bc3, -60, 60))
        pk /= (pk @ self.ones3)[:, None]
        return pw, pg, pk, pc


def token_vectors(ws: WordSide, pw, pg, pk, tok_bytes: bytes, gap_len: int):
    """Unnormalised next-byte vectors for the positions of one token: a list, for j = 1..len (prefix tok[:j]),
    of (D (256), E (exact mass), O (other mass)); and the root vector R (256, normalised, prefix "").
    D: mass of strings extending the prefix by each byte; E: mass of strings equal to the prefix (the token may
    end here; its continuation is the next token's root); O: <unk>, literal-gap and case-3 mass (flat)."""
    pg7 = pg[:, :7]
    inv = float(pw[2:] @ pg7[2:].sum(axis=1))          # mass of vocabulary strings with a gap symbol 0..6
    other = max(0.0, 1.0 - inv)
    # per entry weight for gap g: P(w) P(g|w) P(case|w) (non-words: case 0 with P = 1)
    cw = np.where(ws.isword[ws.ent_id], pk[ws.ent_id, ws.ent_case], 1.0)
    base = pw[ws.ent_id] * cw

    def first_body(g):
        q = base * pg[ws.ent_id, g]
        return np.bincount(ws.col0, weights=q, minlength=257)[1:], q

    out = []
    n = len(tok_bytes)
    # root (prefix ""): gap bytes of every gap symbol, or the body's first byte for gap 0
    def gap_vec(j, s):
        D = np.zeros(256)
        for g, gs in enumerate(GAPS):
            if len(gs) > j and gs[:j] == s:
                D[gs[j]] += float(pw[2:] @ pg[2:, g])
        E_body = None
        for g, gs in enumerate(GAPS):
            if gs == s:
                E_body, q = first_body(g)
                D += E_body
        return D

    R = gap_vec(0, b"") + other / 256.0
    R = R / R.sum()
    gap = tok_bytes[:gap_len]
    g_act = GAPS.index(gap) if gap in GAPS else 7
    o = other
    for j in range(1, gap_len + 1):                     # prefixes inside the gap (and the gap complete)
        s = tok_bytes[:j]
        o /= 256.0
        out.append((gap_vec(j, s), 0.0, o))
    if g_act == 7:                                      # a literal gap: the body is out of the word side's table
        for j in range(gap_len + 1, n + 1):
            o /= 256.0
            out.append((np.zeros(256), 0.0, o))
        return out, R
    q = base * pg[ws.ent_id, g_act]
    lo, hi = 0, len(q)
    for k in range(n - gap_len):                        # body prefixes body[:k+1]
        b = tok_bytes[gap_len + k]
        col = ws.chars[lo:hi, k]
        if hi > lo:
            a = lo + int(np.searchsorted(col, b, "left"))
            z = lo + int(np.searchsorted(col, b, "right"))
            lo, hi = a, z
        o /= 256.0
        if hi > lo and k + 1 < ws.chars.shape[1]:
            col = ws.chars[lo:hi, k + 1].astype(np.int64) + 1
            m = np.bincount(col, weights=q[lo:hi], minlength=257)
            out.append((m[1:], float(m[0]), o))
        else:
            out.append((np.zeros(256), 0.0, o))
    return out, R


def byte_probs(vec):
    """(8,) probabilities of the bits of each byte given a 256-vector (normalised inside), for all bytes b:
    returns cumulative sums to query."""
    c = np.concatenate([[0.0], np.cumsum(vec)])
    return c


def bit_p1(cs, byte):
    """P(bit = 1) of the 8 bits of byte under the cumulative sums cs, and the mass of the prefix ranges."""
    out = np.empty(8)
    lo, width = 0, 256
    for k in range(8):
        half = width // 2
        tot = cs[lo + width] - cs[lo]
        one = cs[lo + width] - cs[lo + half]
        out[k] = one / tot if tot > 0 else 0.5
        if (byte >> (7 - k)) & 1:
            lo += half
        width = half
    return out


def stretch(p):
    return math.log(p / (1.0 - p))


def squash(x):
    if x > 40:
        return 1.0
    if x < -40:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


class Mixer:
    """Float logistic mixer of n inputs with selectable weight sets, and an APM (measurement prototype)."""

    def __init__(self, nsets, nin, lr=0.02, apm_sets=8, w0=None):
        self.w = [list(w0 or [0.3] * nin) for _ in range(nsets)]
        self.lr = lr
        self.apm = [[squash((j - 16) / 2.0) for j in range(33)] for _ in range(apm_sets)]

    def code(self, x, s, a, y):
        """Mix inputs x with set s, refine with APM row a, learn bit y; returns the probability of y."""
        w = self.w[s]
        t = sum(wi * xi for wi, xi in zip(w, x))
        t = max(-12.0, min(12.0, t))
        p = squash(t)
        u = (t + 8.0) * 2.0
        u = max(0.0, min(31.999, u))
        lo = int(u)
        fr = u - lo
        row = self.apm[a]
        pa = row[lo] * (1 - fr) + row[lo + 1] * fr
        pf = 0.5 * p + 0.5 * pa
        pf = min(max(pf, 1.0 / 4096), 4095.0 / 4096)
        err = y - p
        for i in range(len(w)):
            w[i] += self.lr * err * x[i]
        j = lo + (fr >= 0.5)
        row[j] += (y - row[j]) / 64.0
        return pf if y else 1.0 - pf


def spread(n, pieces):
    """Per-byte costs from (offset, length, bits) pieces (each spread evenly)."""
    out = np.zeros(n)
    for off, ln, bits in pieces:
        if ln > 0:
            out[off:off + ln] += bits / ln
    return out


WS = frozenset(b" \t\n\r\x0b\x0c")
GAP_PART = 6                                            # TRACE_PARTS index of "gap" (gap symbol + literal run)


def exact(n, data, recs, bm=None):
    """Per-byte costs from per-token records (off, len, bits[8] or None, total): the gap part on the gap bytes,
    the rest on the body bytes (exact attribution).  A token without gap bytes (gap symbol 0) puts its gap part
    on its first body byte; END's trailing whitespace takes all of END's bits; an empty END goes to the last
    byte.  Records without parts (plain blocks) are spread evenly.  With bm (per-byte byte-model costs) the
    token's cost is min(word path, byte model) (the per-token oracle) and a token the byte model wins gets bm."""
    out = np.zeros(n)
    for off, ln, parts, total in recs:
        if ln == 0:
            out[n - 1] += total
            continue
        if bm is not None:
            bb = bm[off:off + ln].sum()
            if bb < total:
                out[off:off + ln] += bm[off:off + ln]
                continue
        if parts is None:
            out[off:off + ln] += total / ln
            continue
        gl = 0
        while gl < ln and data[off + gl] in WS:
            gl += 1
        g = float(parts[GAP_PART])
        if gl == ln:
            out[off:off + ln] += total / ln
        elif gl == 0:
            out[off] += g
            out[off:off + ln] += (total - g) / ln
        else:
            out[off:off + gl] += g / gl
            out[off + gl:off + ln] += (total - g) / (ln - gl)
    return out


def measure_doc(ws, m, data, mode, real=False):
    n = len(data)
    rec = {}
    # -- frame (today's coding)
    ex = nlmcodec.explain(data, adapt=mode)
    rec["frame"] = spread(n, [(t.offset, len(t.bytes), t.total) for t in ex.tokens])
    er = ex.records
    rec["framex"] = exact(n, data, [(int(r["off"]), int(r["len"]), r["bits"] if r["coder"] == 0 else None,
                                     float(r["total"])) for r in er])
    coder = np.zeros(n, dtype=np.int8)
    for b in ex.blocks:
        coder[b.offset:b.offset + b.size] = KIND_CODER[b.kind]
    rec["coder"] = coder
    frame_bytes = ex.frame_size
    # -- the word model forced on every block
    codec = Codec(m, _frame.adapt_mode(mode))
    codec.reset()
    codec.trace(True)
    if real:
        codec._c.lab_trace_dists(1)
    pieces, xrecs, real_d = [], [], []
    for pos, ln in _encode._model_pieces(data):
        codec.encode_block(data[pos:pos + ln])
        if real:
            raw, width = codec._c.lab_trace_dists_records()
            real_d.append(np.frombuffer(raw, dtype="=f4").reshape(-1, width))
        for r in codec.trace_records():
            pieces.append((pos + int(r["off"]), int(r["len"]), float(r["bits"].sum())))
            xrecs.append((pos + int(r["off"]), int(r["len"]), r["bits"].copy(), float(r["bits"].sum())))
    codec.trace(False)
    rec["wm"] = spread(n, pieces)
    rec["wmx"] = exact(n, data, xrecs)
    # -- the byte model alone
    p = np.frombuffer(native.lab_byte_costs(data), dtype="=u2").astype(np.float64).reshape(n, 8)
    rec["bm"] = -np.log2(p / 4096.0).sum(axis=1)
    # bm's P(bit = 1)
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8)).reshape(n, 8)
    pbm1 = np.where(bits == 1, p / 4096.0, 1.0 - p / 4096.0)
    # -- oracle per token (the trace's tokens)
    orc = np.zeros(n)
    for off, ln, b in pieces:
        if ln > 0:
            bb = rec["bm"][off:off + ln].sum()
            orc[off:off + ln] = min(b, bb) / ln
    rec["oracle"] = orc
    rec["oraclex"] = exact(n, data, xrecs, rec["bm"])
    rec["trace"] = np.array([(o, ln, *b) for o, ln, b, _ in xrecs], dtype=np.float64).reshape(-1, 10)
    # -- the word side as a byte predictor, and the mix
    toks = lex_tokens(data)
    if real:
        real_d = np.concatenate(real_d)
        assert len(real_d) == len(toks)
    ids, cases, gaps, cats = [], [], [], np.zeros(n, dtype=np.int8)
    for t in toks:
        body = data[t["off"]:t["off"] + t["len"]]
        w = ws.token_id(body, int(t["kind"]), int(t["case"]))
        ids.append(w)
        cases.append(int(t["case"]) if t["kind"] == 1 and t["case"] < 3 else 0)
        gaps.append(int(t["gap"]))
        g0, b0 = int(t["gap_off"]), int(t["off"])
        cats[g0:b0] = 0
        k = int(t["kind"])
        cats[b0:b0 + int(t["len"])] = {1: 1, 2: 3, 3: 5, 0: 7}[k] + (1 if (w == 0 and k in (1, 2, 3)) else 0)
    ids, cases, gaps = np.array(ids), np.array(cases), np.array(gaps)
    hs = ws.states(ids[:-1], cases[:-1], gaps[:-1])          # END (the last token) never advances the state
    T = len(toks)
    vecs_all, roots, kcls, rank = [], [], np.zeros((T, 3), dtype=np.int32), np.zeros(T, dtype=np.int32)
    for ti, t in enumerate(toks):
        g0, end = int(t["gap_off"]), int(t["off"]) + int(t["len"])
        if ti % 128 == 0:
            ZW = hs[ti:ti + 128] @ ws.Wo.T + ws.bo
        pw, pg, pk, pc = ws.dists(hs[ti], ZW[ti % 128], real_d[ti, :ws.C] if real else None)
        srt = np.sort(pc)[::-1]
        cum = np.cumsum(srt)
        kcls[ti] = [int(np.searchsorted(cum, q)) + 1 for q in (0.9, 0.99, 0.999)]
        rank[ti] = int((pc > pc[ws.cls[ids[ti]]]).sum()) + 1 if ids[ti] >= 2 else -1
        if t["kind"] == 0:                                  # END: trailing whitespace, flat
            v = [(np.zeros(256), 0.0, 1.0) for _ in range(end - g0)]
            vecs_all.append((g0, end, v))
            roots.append(np.full(256, 1 / 256))
            continue
        v, R = token_vectors(ws, pw, pg, pk, data[g0:end], int(t["off"]) - g0)
        vecs_all.append((g0, end, v))
        roots.append(R)
    # per byte: P(byte) vector -> bit probabilities; byte i at token position j (prefix len j)
    pwm1 = np.full((n, 8), 0.5)
    wmcost = np.zeros(n)
    phase = np.zeros(n, dtype=np.int8)                      # 0 gap, 1 first body byte, 2 in body, 3 left vocab
    conf = np.zeros(n, dtype=np.int8)
    for ti, (g0, end, v) in enumerate(vecs_all):
        nxt = roots[ti + 1] if ti + 1 < len(roots) else np.full(256, 1 / 256)
        bstart = int(toks[ti]["off"])
        for j in range(end - g0 + 1):                       # predict byte g0 + j from prefix tok[:j]
            i = g0 + j
            if i >= n or (j == end - g0 and ti + 1 < T and int(toks[ti + 1]["gap_off"]) != end):
                break
            if j == 0:
                if ti == 0:
                    vec = roots[0]
                else:
                    continue                                # predicted as the previous token's last position
            else:
                D, E, O = v[j - 1]
                vec = D + E * nxt + O / 256.0
            tot = vec.sum()
            if tot <= 0:
                vec = np.full(256, 1 / 256)
                tot = 1.0
            vec = vec / tot
            cs = byte_probs(vec)
            pwm1[i] = bit_p1(cs, data[i])
            wmcost[i] = -math.log2(max(vec[data[i]], 1e-12))
            top = vec.max()
            conf[i] = 0 if top < 0.3 else 1 if top < 0.6 else 2 if top < 0.9 else 3 if top < 0.99 else 4
            inbody = i >= bstart if j < end - g0 else False
            if j == end - g0:
                phase[i] = 0 if data[i] in b" \t\n\r\x0b\x0c" else 1
            elif not inbody:
                phase[i] = 0
            else:
                D, E, O = v[j - 1]
                phase[i] = 1 if i == bstart else (2 if D.sum() + E > 0 else 3)
    rec["wmbyte"] = wmcost
    rec["pwm1"] = pwm1.astype(np.float32)
    rec["conf"] = conf
    # -- the mix, per bit
    mx = Mixer(4 * 5 * 2, 3, apm_sets=8)
    clip = 4095.0 / 4096
    mixc = np.zeros(n)
    for i in range(n):
        c = 0.0
        s0 = (int(phase[i]) * 5 + int(conf[i])) * 2
        for k in range(8):
            y = int(bits[i, k])
            a = min(max(float(pbm1[i, k]), 1 - clip), clip)
            b = min(max(float(pwm1[i, k]), 1 - clip), clip)
            x = (stretch(a), stretch(b), 0.3)
            s = s0 + (1 if k == 0 else 0)
            py = mx.code(x, s, int(phase[i]) * 2 + (1 if conf[i] >= 3 else 0), y)
            c -= math.log2(py)
        mixc[i] = c
    rec["mix"] = mixc
    rec["lt"] = common.line_types(data)
    rec["cat"] = cats
    rec["phase"] = phase
    return rec, frame_bytes, kcls, rank


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-source", type=int, default=60000, help="bytes per source (default 60000)")
    ap.add_argument("--cap", type=int, default=24000, help="bytes per document at most (default 24000)")
    ap.add_argument("--sources", default=",".join(common.SOURCES))
    ap.add_argument("--mode", default=_frame.DEFAULT_ADAPT)
    ap.add_argument("--tag", default="main")
    ap.add_argument("--real-classes", action="store_true",
                    help="the word side's class distribution is the codec's own per token (after adaptation and the "
                         "token cache; lab hook nlm_lab_trace_dists) instead of the static network's")
    a = ap.parse_args()
    m = load_model("default-2")          # the model of the recorded results (the default of 1.0)
    ws = WordSide(m)
    smp = common.sample(a.per_source, a.cap)
    outdir = common.HERE / "results"
    outdir.mkdir(exist_ok=True)
    cols = ("frame", "wm", "bm", "oracle", "wmbyte", "mix")
    xcols = ("framex", "wmx", "oraclex", "pwm1", "conf")
    acc = {k: [] for k in cols + xcols + ("coder", "lt", "cat", "phase", "src", "doc")}
    tok = {"src": [], "k": [], "rank": [], "trace": [], "tdoc": []}
    docs = []
    for si, s in enumerate(common.SOURCES):
        if s not in a.sources.split(","):
            continue
        for did, data in smp[s]:
            t0 = time.time()
            rec, fb, kcls, rank = measure_doc(ws, m, data, a.mode, a.real_classes)
            for k in cols + xcols + ("coder", "lt", "cat", "phase"):
                acc[k].append(rec[k])
            tok["trace"].append(rec["trace"])
            tok["tdoc"].append(np.full(len(rec["trace"]), len(docs), dtype=np.int32))
            acc["src"].append(np.full(len(data), si, dtype=np.int8))
            acc["doc"].append(np.full(len(data), len(docs), dtype=np.int32))
            tok["src"].append(np.full(len(rank), si, dtype=np.int8))
            tok["k"].append(kcls)
            tok["rank"].append(rank)
            docs.append((s, did, len(data), fb))
            print(f"{s:17s} {did[:28]:28s} {len(data):6d} B  frame {8 * fb / len(data):.3f}  "
                  + "  ".join(f"{k} {rec[k].sum() / len(data):.3f}" for k in cols[1:])
                  + f"  ({time.time() - t0:.1f} s)", flush=True)
    np.savez_compressed(outdir / f"bytes_{a.tag}.npz", **{k: np.concatenate(v) for k, v in acc.items()},
                        docs=np.array(docs, dtype=object), sources=np.array(common.SOURCES))
    np.savez_compressed(outdir / f"tokens_{a.tag}.npz", **{k: np.concatenate(v) for k, v in tok.items()})


if __name__ == "__main__":
    main()
