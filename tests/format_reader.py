"""format_reader.py: a second reader of the word-model and byte-model block payloads of formats 13 to 17, written
from docs/format.md §1–§6 and §9 (the byte model: the speller of §5.4, and the runs of byte-model blocks, byte
models 1 and 2, §9.1–§9.5 and §9.7) alone.

Owns nothing of the codec: it exists so that tests/test_format_reader.py can decode the golden vectors
with an implementation that shares no code with csrc/ (numpy float32 arithmetic, one IEEE operation at a
time, and Python integers), which is the check that docs/format.md is complete and right. It reads a frame
(§7.1) only as far as it needs to find the blocks. Slow (pure Python per token); for tests.
"""
import numpy as np

f32 = np.float32
END_SYM = 256
TWO56, TWO48 = 1 << 56, 1 << 48


class Corrupt(Exception):
    pass


# ---- §2.1 float kernels ----

def k_exp(x):
    x = np.asarray(x, dtype=f32)
    x = np.where(x < f32(88), x, f32(88))
    x = np.where(x > f32(-87), x, f32(-87))
    t = x * f32(1.44269504088896341)
    f = (t + f32(12582912.0)) - f32(12582912.0)
    r = (x - f * f32(0.693359375)) - f * f32(-2.12194440e-4)
    p = np.full_like(r, f32(1.9875691500e-4))
    for c in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1):
        p = p * r + f32(c)
    y = ((p * (r * r)) + r) + f32(1)
    two_f = ((f.astype(np.int32) + 127).astype(np.uint32) << np.uint32(23)).view(f32)
    return y * two_f


def k_tanh(x):
    x = np.asarray(x, dtype=f32)
    a = np.abs(x)
    a = np.where(a < f32(9), a, f32(9))
    t = f32(1) - f32(2) / (k_exp(a + a) + f32(1))
    sign = x.view(np.uint32) & np.uint32(0x80000000)
    return (t.view(np.uint32) | sign).view(f32)


def k_log(x):
    """§2.1 log (the Kneser-Ney mixture only): −104 below 2^−126 (and for NaN), +∞ read as the largest float."""
    x = np.asarray(x, dtype=f32)
    bad = ~(x >= f32(2.0 ** -126))
    x = np.where(x == np.inf, np.finfo(f32).max, np.where(bad, f32(1), x)).astype(f32)
    bits = x.view(np.uint32)
    e = ((bits >> np.uint32(23)) & np.uint32(255)).astype(np.int32) - 127
    m = ((bits & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)).view(f32)
    big = m > f32(1.41421354)
    m = np.where(big, m * f32(0.5), m).astype(f32)
    e = (e + big).astype(f32)
    s = (m - f32(1)) / (m + f32(1))
    s2 = s * s
    p = np.full_like(s, f32(0.222222222))
    for c in (0.285714287, 0.400000006, 0.666666687, 2):
        p = p * s2 + f32(c)
    p = p * s
    return np.where(bad, f32(-104), (p + e * f32(-2.12194440e-4)) + e * f32(0.693359375)).astype(f32)


def matvec(W, x):
    """16-lane canonical dot product of every row of W with x: lane j sums W[:, i]·x[i] for i = j mod 16 in
    ascending order from 0, then the lanes pairwise."""
    rows, n = W.shape
    prods = (W * x).reshape(rows, n // 16, 16)
    acc = np.zeros((rows, 16), dtype=f32)
    for i in range(n // 16):
        acc += prods[:, i]
    for h in (8, 4, 2):
        acc = acc[:, :h] + acc[:, h:2 * h]
    return acc[:, 0] + acc[:, 1]


def quant_rows(W):
    """§2.6: each row on its int8 grid: amax = max |w|, sc = amax / 127, q = rne(w / sc) clamped to ±127,
    mul = sc / 127; a row whose amax is 0 is zeros with mul 0."""
    amax = np.abs(W).max(axis=1).astype(f32)
    ok = (amax > f32(0)) & (amax <= np.finfo(f32).max)
    sc = np.where(ok, amax / f32(127), f32(1)).astype(f32)
    q = np.clip(np.rint((W / sc[:, None]).astype(f32)), -127, 127)
    q[~ok] = 0
    return q.astype(np.int64), np.where(ok, (sc / f32(127)).astype(f32), f32(0)).astype(f32)


def act_grid(h):
    """§2.6: h on the grid 1/127 (h16 = rne(h·127) clamped to ±127)."""
    return np.clip(np.rint((h * f32(127)).astype(f32)), -127, 127).astype(np.int64)


def vec_grid(x):
    """§2.6: the input x on its own grid: (g, xs) with xs = max |x|, g = rne(x · (127 / xs)) clamped."""
    xs = f32(np.abs(x).max())
    if not xs > f32(0):
        return np.zeros(x.shape, np.int64), f32(0)
    c = f32(f32(127) / xs)
    return np.clip(np.rint((x * c).astype(f32)), -127, 127).astype(np.int64), xs


def qmatvec(q, mul, h16):
    """§2.6: the exact integer sum of each row, converted to float, times the row's mul."""
    return ((q @ h16).astype(np.int32).astype(f32) * mul).astype(f32)


def t_acc(y, W, d):
    """y + Wᵀd, one row at a time in ascending order."""
    y = np.array(y, dtype=f32)
    for row in W * d[:, None]:
        y += row
    return y


def outer_sum(ds, xs, rows, cols):
    G = np.zeros((rows, cols), dtype=f32)
    for d, x in zip(ds, xs):
        G = G + np.outer(d, x).astype(f32)
    return G


def vmax(z, nan_first):
    """The running maximum m = z[0], then each v > m (nan_first: also each v when m is NaN), as numpy's max
    when z has no NaN."""
    if not np.isnan(z).any():
        return z.max()
    m = z[0]
    for v in z[1:]:
        if v > m or (nan_first and m != m):
            m = v
    return m


def softmax(z):
    e = k_exp(z - vmax(z, False))
    return e / np.cumsum(e, dtype=f32)[-1]         # the sum in float32, left to right from 0


# ---- §4 quantiser and range decoder ----

def quant(z):
    z = np.asarray(z, dtype=f32)
    e = k_exp(z - vmax(z, True))
    e = np.where(e > 0, e, f32(0))                  # (NaN: 0)
    u = [int(x) for x in np.where(e >= 1, np.int64(1) << 40, (e * f32(2.0 ** 40)).astype(np.int64))]   # toward 0
    S = sum(u)
    if S < 1 << 39:
        return [1] * len(u)
    M = (((1 << 30) - len(u)) << 64) // S
    return [1 + ((x * M) >> 64) for x in u]


class RangeDecoder:
    def __init__(self, payload):
        self.buf, self.pos, self.range, self.low, self.code = payload, 0, TWO56 - 1, 0, 0
        for _ in range(7):
            self.code = (self.code << 8) | self._byte()
        if self.code >= self.range:
            raise Corrupt("first window")

    def _byte(self):
        b = self.buf[self.pos] if self.pos < len(self.buf) else 0
        self.pos += 1
        return b

    def decode(self, freqs):
        F = sum(freqs)
        r = self.range // F
        target = self.code // r
        if target >= F:
            raise Corrupt("target")
        cum = 0
        for sym, f in enumerate(freqs):
            if target < cum + f:
                break
            cum += f
        self.code -= r * cum
        self.low = (self.low + r * cum) % TWO56
        self.range = r * f
        if self.code >= self.range:
            raise Corrupt("window")
        while self.range < TWO48:
            self.range <<= 8
            self.code = (self.code << 8) | self._byte()
            self.low = (self.low << 8) % TWO56
        return sym

    def finish(self):
        low = self.low
        v, k = -(-low // TWO56) * TWO56, 0
        if v >= low + self.range:
            v, k = -(-low // TWO48) * TWO48, 1
        if len(self.buf) != self.pos - 7 + k or (low + self.code) % TWO56 != v % TWO56:
            raise Corrupt("end check")


# ---- §1 lexer pieces the decoder needs ----

def first_kind(b):
    c = b[0]
    if 65 <= c <= 90 or 97 <= c <= 122:
        return 1
    if len(b) > 1 and 0x80 <= b[1] <= 0xBF and (
            (c == 0xC3 and b[1] not in (0x97, 0xB7)) or 0xC4 <= c <= 0xC8 or (c == 0xC9 and b[1] <= 0x8F)):
        return 1
    return 2 if 48 <= c <= 57 else 3


def recase(body, case):
    b = bytearray(body)
    if case == 1 and b and 97 <= b[0] <= 122:
        b[0] -= 32
    if case == 2:
        b = bytearray(c - 32 if 97 <= c <= 122 else c for c in b)
    return bytes(b)


GAP_BYTES = [b"", b" ", b"  ", b"\n", b"\n\n", b"\r\n", b"\t"]
WS = b" \t\n\r\x0b\x0c"


# ---- §9 the byte model, with the sizes of §5.4 (the speller) ----

M64 = (1 << 64) - 1


def hash64(x, salt):
    z = (x + salt) & M64
    z = (z * 0x9E3779B97F4A7C15) & M64
    z ^= z >> 29
    z = (z * 0xBF58476D1CE4E5B9) & M64
    return z >> 32


def _tables():
    """squash (index t + 2048), stretch, the bit-history machine and the reciprocals of §9.2."""
    term = total = 1 << 62
    for k in range(1, 12):
        if not term:
            break
        term //= 256 * k
        total = total - term if k & 1 else total + term
    E, e = (total + (1 << 31)) >> 32, 1 << 30
    sq = [0] * 4096
    for t in range(2048):
        q = min(4095, (1 << 42) // ((1 << 30) + e))
        sq[2048 + t] = q
        sq[2048 - t] = max(1, 4096 - q)
        e = (e * E + (1 << 29)) >> 30
    sq[0] = 1
    st, t = [0] * 4096, -2048
    for p in range(4096):
        while t < 2047 and sq[t + 2048] < p:
            t += 1
        st[p] = t
    n0, n1, nex, ids = [0], [0], [], {(0, 0): 0}

    def disc(n):
        return n if n <= 1 else 2 if n <= 3 else n // 2 + 1
    head = 0
    while head < len(n0):
        a, b = n0[head], n1[head]
        row = []
        for y in (0, 1):
            na, nb = (min(a + 1, 35), disc(b)) if y == 0 else (disc(a), min(b + 1, 35))
            if (na, nb) not in ids:
                ids[(na, nb)] = len(n0)
                n0.append(na)
                n1.append(nb)
            row.append(ids[(na, nb)])
        nex.append(row)
        head += 1
    assert len(n0) == 254
    rec = [(1 << 17) // (2 * n + 3) for n in range(1024)]
    return sq, st, n0, n1, nex, rec


SQ, ST, N0, N1, NEX, REC = _tables()


def asr(x, k):
    return x >> k          # Python's >> on negative integers is the floor, as asr


def squash(t):
    return SQ[max(-2047, min(2047, t)) + 2048]


def find_slot(slots, tb, h):
    """§9.3 slot_find in a table of 2^tb slots (a dict of the slots touched): the bucket of 4 at (h >> (32 - tb))
    with its low 2 bits cleared, check byte h mod 256; a new slot replaces the first of the least used."""
    base, chk = (h >> (32 - tb)) & ~3, h & 255
    cand = [slots.setdefault(base + j, bytearray(16)) for j in range(4)]
    for sl in cand:
        if sl[0] == chk:
            return sl
    best = min(range(4), key=lambda j: (N0[cand[j][1]] + N1[cand[j][1]], j))
    sl = cand[best]
    sl[:] = bytes(16)
    sl[0] = chk
    return sl


def sm_update(sm, j, y):
    """§9.5 step 1 on state map sm's entry j: entry = q * 1024 + n; q moves toward the bit at rate rec(n)."""
    q, n = sm[j] >> 10, sm[j] & 1023
    q += asr((((1 << 22) - 1 if y else 0) - q) * REC[n], 16)
    sm[j] = (q << 10) | min(n + 1, 1023)


def word_line_step(m, c):
    """Steps 1 (but the history) to 3 of §9.3's byte step on byte model m after byte c (m.pos counts it)."""
    m.c8 = ((m.c8 << 8) | c) & M64
    m.c0, m.bit, m.mmiss = 1, 0, 0
    if 65 <= c <= 90 or 97 <= c <= 122 or c >= 128:
        m.word = ((m.word + (c + 32 if 65 <= c <= 90 else c) + 1) * 0x2F0F3A55) & 0xFFFFFFFF
    elif m.word:
        m.pword, m.word = m.word, 0
    if c == 10:
        m.pline, m.line = m.line, m.pos


class ByteModel:
    """§9.3-§9.5 with the speller's sizes and differences of §5.4 (ring of 2^20, tb 16, match 2^16,
    nlearn in the rate, x12 from the PPM, initial weights 4,096 and 49,152)."""
    HB, TB, MB = 20, 16, 16

    def __init__(self):
        self.slots = {}                    # slot index -> bytearray(16)
        self.o1, self.o0, self.mt, self.hist = bytearray(65536), bytearray(256), {}, bytearray(1 << self.HB)
        self.pos = self.nlearn = self.c8 = self.bit = self.word = self.pword = self.line = self.pline = 0
        self.c0, self.mlen, self.mptr, self.mmiss = 1, 0, 0, 0
        cnt = [(N0[j], N1[j]) if j < 254 else (0, 0) for j in range(256)]   # 254, 255: never reached
        self.sm = [[(((2 * b + 1) << 22) // (2 * (a + b) + 2)) << 10 for a, b in cnt] for _ in range(10)]
        self.sm.append([((3 << 20) if j & 1 else (1 << 20)) << 10 for j in range(256)])
        self.w1 = [[4096] * 12 + [49152] for _ in range(256)]
        self.w2 = [[4096] * 12 + [49152] for _ in range(1280)]
        row = [16 * squash(128 * (i - 16)) for i in range(33)]
        self.apm_row, self.apm1, self.apm2 = row, [list(row) for _ in range(256)], {}
        self.h = [0] * 8
        self.cur = [self.slot(hash64(0, i + 1)) for i in range(8)]
        self.stale = False

    def slot(self, h):
        return find_slot(self.slots, self.TB, h)

    def see(self, c):
        """Steps 1-4 of §9.3's byte step."""
        mask = (1 << self.HB) - 1
        self.hist[self.pos & mask] = c
        self.pos += 1
        pos = self.pos
        word_line_step(self, c)
        if self.mlen > 0:
            if self.hist[self.mptr & mask] == c and self.mptr + 1 < pos:
                self.mlen += 1
                self.mptr += 1
            else:
                self.mlen = 0
        if pos >= 6:
            hm = hash64(self.c8 & ((1 << 48) - 1), 0x1234567) >> (32 - self.MB)
            cand = self.mt.get(hm, 0)
            if self.mlen == 0 and cand > 0:
                n = 0
                while (n < 32 and n < cand and pos - cand + n <= mask
                       and self.hist[(cand - 1 - n) & mask] == self.hist[(pos - 1 - n) & mask]):
                    n += 1
                if n >= 6:
                    self.mlen, self.mptr = n, cand
            self.mt[hm] = pos
        self.stale = True

    def contexts(self):
        """Step 5 of §9.3."""
        mask, pos, c8 = (1 << self.HB) - 1, self.pos, self.c8
        col = pos - self.line
        ap = self.pline + col
        above = self.hist[ap & mask] if ap < self.line and pos - ap - 1 <= mask else 0
        c1 = c8 & 255
        ctx = [c8 & 0xFFFF, c8 & 0xFFFFFF, c8 & 0xFFFFFFFF, c8 & ((1 << 48) - 1),
               (self.word << 32) | (self.pword ^ ((c1 << 24) if self.word == 0 else 0)),
               (above << 8) | c1, (c8 >> 8) & 0xFFFF, (self.word << 8) | c1]
        self.h = [hash64(x, ((i + 1) * 0x3C6EF372) & 0xFFFFFFFF) for i, x in enumerate(ctx)]
        self.cur = [self.slot(h) for h in self.h]
        self.stale = False

    def _sm_update(self, k, j, y):
        sm_update(self.sm[k], j, y)

    def code_byte(self, rd, tree):
        """Decode one byte (§9.4, §9.5 per bit; x12 from tree, the PPM's sums), then steps 1-4."""
        if self.stale:
            self.contexts()
        for _ in range(8):
            c0, bit, c1 = self.c0, self.bit, self.c8 & 255
            node = c0 if bit < 4 else (1 << (bit - 4)) | (c0 & ((1 << (bit - 4)) - 1))
            sts = [sl[node] for sl in self.cur] + [self.o1[c1 * 256 + c0], self.o0[c0]]
            x = [ST[self.sm[k][s] >> 20] for k, s in enumerate(sts)]
            msel, midx = 0, None
            if self.mlen > 0 and not self.mmiss:
                b = self.hist[self.mptr & ((1 << self.HB) - 1)]
                if (b + 256) >> (8 - bit) == c0:
                    e = (b >> (7 - bit)) & 1
                    n = self.mlen
                    lb = n if n < 16 else 16 + min((n - 16) >> 3, 15)
                    midx = 2 * lb + e
                    x.append(ST[self.sm[10][midx] >> 20])
                    msel = 1 if n < 8 else 2 if n < 16 else 3 if n < 32 else 4
                else:
                    self.mmiss = 1
            if midx is None:
                x.append(0)
            x.append(256)
            allw, one = tree[c0], tree[2 * c0 + 1]
            pe = max(1, min(4095, (4096 * one + allw // 2) // allw)) if allw else 2048
            x.append(ST[pe])
            W1, W2 = self.w1[c0], self.w2[256 * msel + c1]
            t1 = max(-2047, min(2047, asr(sum(w * v for w, v in zip(W1, x)), 16)))
            t2 = max(-2047, min(2047, asr(sum(w * v for w, v in zip(W2, x)), 16)))
            t = int((t1 + t2) / 2)
            pmix = squash(t)
            u = t + 2048
            lo, w = u >> 7, u & 127
            A1 = self.apm1[c0]
            A2 = self.apm2.setdefault(c1 * 256 + c0, list(self.apm_row))
            pa = (A1[lo] * (128 - w) + A1[lo + 1] * w) >> 11
            pb = (A2[lo] * (128 - w) + A2[lo + 1] * w) >> 11
            p = max(1, min(4095, (pmix + 3 * ((pa + pb) // 2) + 2) >> 2))
            y = 1 if rd.decode([p, 4096 - p]) == 0 else 0
            for k, s in enumerate(sts):       # update (§9.5)
                self._sm_update(k, s, y)
                if k < 8:
                    self.cur[k][node] = NEX[s][y]
                elif k == 8:
                    self.o1[c1 * 256 + c0] = NEX[s][y]
                else:
                    self.o0[c0] = NEX[s][y]
            if midx is not None:
                self._sm_update(10, midx, y)
            lr = 96 + (1 << 20) // ((self.nlearn >> 4) + 4096)
            for W, tj in ((W1, t1), (W2, t2)):
                err = (4096 * y - squash(tj)) * lr
                for k in range(13):
                    W[k] = max(-(1 << 24), min(1 << 24, W[k] + asr(x[k] * err, 18)))
            j = lo + (1 if w >= 64 else 0)
            for A in (A1, A2):
                A[j] += asr((65535 if y else 0) - A[j], 6)
            self.c0, self.bit = 2 * c0 + y, bit + 1
            if self.bit == 4:
                self.cur = [self.slot(h ^ hash64(self.c0, 0x5BD1E995)) for h in self.h]
        self.nlearn += 1
        c = self.c0 & 255
        self.see(c)
        return c


class ByteRun:
    """A run of byte-model blocks (§9.1): byte model 1 (§9.3-§9.5) or 2 (§9.7) with the sizes of size class s,
    its history never wrapping.  code(rd, c): one byte decoded through the range decoder rd, or c learnt
    (predicted and updated with c's bits, as a tracked group learns its other blocks, §7.2)."""

    def __init__(self, model, s):
        self.model, self.s = model, s
        self.tb, self.mb, self.rb = min(s + 3, 22), s - 2, min(s - 1, 22)
        self.nh = 8 if model == 1 else 12
        self.slots, self.o1, self.o0, self.mt, self.hist = {}, bytearray(65536), bytearray(256), {}, bytearray()
        self.pos = self.c8 = self.bit = self.word = self.pword = self.line = self.pline = 0
        self.c0, self.mlen, self.mptr, self.mmiss = 1, 0, 0, 0
        cnt = [(N0[j], N1[j]) if j < 254 else (0, 0) for j in range(256)]   # 254, 255: never reached
        ctx_sm = [(((2 * b + 1) << 22) // (2 * (a + b) + 2)) << 10 for a, b in cnt]
        run_sm = [((3 << 20) if j & 1 else (1 << 20)) << 10 for j in range(256)]
        if model == 1:          # maps: 8 contexts, order 1, order 0 (8, 9), the match model (10)
            self.sm = [list(ctx_sm) for _ in range(10)] + [list(run_sm)]
            self.w = [[[16384] * 12 for _ in range(n)] for n in (256, 1280)]
        else:                   # 12 contexts, order 1, order 0 (12, 13), match (14), -, -, runs (17..28)
            self.sm = [list(ctx_sm) for _ in range(14)] + [list(run_sm)] + [None, None] + \
                [list(run_sm) for _ in range(12)]
            init = [8192] * 16 + [49152] + [4096] * 12 + [0] * 3
            self.w = [[list(init) for _ in range(n)] for n in (256, 1280, 3072, 1280)]
            self.fw = [[16384] * 4 for _ in range(256)]
            self.runs, self.ridx, self.rbyte, self.rcnt = {}, [0] * 12, [0] * 12, [0] * 12
            self.apm3 = {}
        row = [16 * squash(128 * (i - 16)) for i in range(33)]
        self.apm_row, self.apm1, self.apm2 = row, [list(row) for _ in range(256)], {}
        self.h = [0] * self.nh
        self.cur = [self.slot(hash64(0, i + 1)) for i in range(self.nh)]

    def slot(self, h):
        return find_slot(self.slots, self.tb, h)

    def _byte_step(self, c):
        """§9.7's run table update (model 2), then §9.3's byte step, steps 1-5."""
        if self.model == 2:
            for i in range(12):
                k, r = self.h[i] & 0xFFFF, self.ridx[i]
                e = self.runs.get(r, 0)
                if e >> 16 == k and (e >> 8) & 255 == c:
                    self.runs[r] = e + 1 if e & 255 < 255 else e
                else:
                    self.runs[r] = (k << 16) | (c << 8) | 1
        hist = self.hist
        hist.append(c)
        self.pos += 1
        pos = self.pos
        word_line_step(self, c)
        if self.mlen > 0:
            if hist[self.mptr] == c and self.mptr + 1 < pos:
                self.mlen += 1
                self.mptr += 1
            else:
                self.mlen = 0
        if pos >= 6:
            hm = hash64(self.c8 & ((1 << 48) - 1), 0x1234567) >> (32 - self.mb)
            cand = self.mt.get(hm, 0)
            if self.mlen == 0 and cand > 0:
                n = 0
                while n < 32 and n < cand and hist[cand - 1 - n] == hist[pos - 1 - n]:
                    n += 1
                if n >= 6:
                    self.mlen, self.mptr = n, cand
            self.mt[hm] = pos
        c8, c1 = self.c8, c
        col = pos - self.line
        ap = self.pline + col
        above = hist[ap] if ap < self.line else 0
        ctx = [c8 & 0xFFFF, c8 & 0xFFFFFF, c8 & 0xFFFFFFFF, c8 & ((1 << 48) - 1),
               (self.word << 32) | (self.pword ^ ((c1 << 24) if self.word == 0 else 0)),
               (above << 8) | c1, (c8 >> 8) & 0xFFFF, (self.word << 8) | c1]
        if self.model == 2:
            first = hist[self.line] if pos > self.line else 256
            above2 = hist[ap + 1] if ap + 1 < self.line else 0
            ctx += [(first << 40) | (min(col, 32) << 16) | (c8 & 0xFFFF),
                    (above << 16) | (above2 << 8) | ((c8 & 0xFFFF) << 24), (min(col, 64) << 8) | c1, c8]
        self.h = [hash64(x, ((i + 1) * 0x3C6EF372) & 0xFFFFFFFF) for i, x in enumerate(ctx)]
        self.cur = [self.slot(h) for h in self.h]
        if self.model == 2:
            for i, h in enumerate(self.h):
                r = self.ridx[i] = h >> (32 - self.rb)
                e = self.runs.get(r, 0)
                if e >> 16 == h & 0xFFFF:
                    self.rbyte[i], self.rcnt[i] = (e >> 8) & 255, e & 255
                else:
                    self.rcnt[i] = 0

    def _sm_update(self, k, j, y):
        sm_update(self.sm[k], j, y)

    def code(self, rd, c=None):
        """One byte: decoded through rd (§9.1's bits, most significant first), or c learnt.  Returns it."""
        m2, nh = self.model == 2, self.nh
        for _ in range(8):
            c0, bit, c1 = self.c0, self.bit, self.c8 & 255
            node = c0 if bit < 4 else (1 << (bit - 4)) | (c0 & ((1 << (bit - 4)) - 1))
            sts = [sl[node] for sl in self.cur] + [self.o1[c1 * 256 + c0], self.o0[c0]]
            x = [ST[self.sm[k][st] >> 20] for k, st in enumerate(sts)]
            mk = nh + 2                            # the match model's map and input
            msel, midx = 0, None
            if self.mlen > 0 and not self.mmiss:
                b = self.hist[self.mptr]
                if (b + 256) >> (8 - bit) == c0:
                    n = self.mlen
                    lb = n if n < 16 else 16 + min((n - 16) >> 3, 15)
                    midx = 2 * lb + ((b >> (7 - bit)) & 1)
                    msel = 1 if n < 8 else 2 if n < 16 else 3 if n < 32 else 4
                else:
                    self.mmiss = 1
            x.append(ST[self.sm[mk][midx] >> 20] if midx is not None else 0)
            x.append(256)
            ridx = []
            if m2:
                x.append(0)                        # x16: the speller's input, never a run's
                for i in range(12):
                    rbi, rci = self.rbyte[i], self.rcnt[i]
                    if rci > 0 and (rbi + 256) >> (8 - bit) == c0:
                        j = 2 * min(rci, 15) + ((rbi >> (7 - bit)) & 1)
                        ridx.append((17 + i, j))
                        x.append(ST[self.sm[17 + i][j] >> 20])
                    else:
                        x.append(0)
                x += [0, 0, 0]
                seen = sum(1 for sl in self.cur[:4] if sl[node]) + (5 if self.mlen > 0 else 0)
                col = self.pos - self.line
                cb = col if col < 8 else 8 if col < 16 else 9 if col < 32 else 10 if col < 64 else 11
                Ws = [self.w[0][c0], self.w[1][256 * msel + c1], self.w[2][256 * cb + c0],
                      self.w[3][16 * (8 * seen + bit) + (c1 & 15)]]
            else:
                Ws = [self.w[0][c0], self.w[1][256 * msel + c1]]
            ts = [max(-2047, min(2047, asr(sum(w * v for w, v in zip(W, x)), 16))) for W in Ws]
            if m2:
                FW = self.fw[c0]
                t = max(-2047, min(2047, asr(sum(f * tj for f, tj in zip(FW, ts)), 16)))
            else:
                t = int((ts[0] + ts[1]) / 2)
            pmix = squash(t)
            u = t + 2048
            lo, w = u >> 7, u & 127
            As = [self.apm1[c0], self.apm2.setdefault(c1 * 256 + c0, list(self.apm_row))]
            if m2:
                r3 = ((hash64(self.c8 & 0xFFFFFF, 77) >> 14) ^ (c0 * 0x9E5)) % 4096
                As.append(self.apm3.setdefault(r3, list(self.apm_row)))
            pa, pb, *pc = [(A[lo] * (128 - w) + A[lo + 1] * w) >> 11 for A in As]
            if m2:
                p = (2 * pmix + 3 * pa + 3 * pb + 8 * pc[0] + 8) >> 4
            else:
                p = (pmix + 3 * ((pa + pb) // 2) + 2) >> 2
            p = max(1, min(4095, p))
            if rd is not None:
                y = 1 if rd.decode([p, 4096 - p]) == 0 else 0
            else:
                y = (c >> (7 - bit)) & 1
            for k, st in enumerate(sts):           # §9.5 step 1
                self._sm_update(k, st, y)
                if k < nh:
                    self.cur[k][node] = NEX[st][y]
                elif k == nh:
                    self.o1[c1 * 256 + c0] = NEX[st][y]
                else:
                    self.o0[c0] = NEX[st][y]
            if midx is not None:
                self._sm_update(mk, midx, y)
            for k, j in ridx:
                self._sm_update(k, j, y)
            if m2:                                 # step 2
                lr = 32 + (12 << 16) // ((self.pos >> 4) + 4096)
            else:
                lr = 96 + (1 << 20) // ((self.pos >> 4) + 4096)
            for W, tj in zip(Ws, ts):
                err = (4096 * y - squash(tj)) * lr
                for k, xk in enumerate(x):
                    if xk:
                        W[k] = max(-(1 << 24), min(1 << 24, W[k] + asr(xk * err, 18)))
            if m2:
                ef = (4096 * y - squash(t)) * 4
                for j in range(4):
                    FW[j] = max(-(1 << 24), min(1 << 24, FW[j] + asr(ts[j] * ef, 16)))
            j = lo + (1 if w >= 64 else 0)         # step 3
            for A in As:
                A[j] += asr((65535 if y else 0) - A[j], 6)
            self.c0, self.bit = 2 * c0 + y, bit + 1
            if self.bit == 4:
                self.cur = [self.slot(h ^ hash64(self.c0, 0x5BD1E995)) for h in self.h]
        out = self.c0 & 255
        self._byte_step(out)
        return out


def byte_block(run, model, payload, size, tracked):
    """§9.1: (run, the bytes) of a byte-model block (payload = run byte, range-coder bytes) continuing run, or
    starting a new run of byte model `model` (1 or 2, §9.7).  tracked: run is the group's (the run byte must be
    0).  Corrupt on any violation."""
    if not payload:
        raise Corrupt("empty byte-model payload")
    s = payload[0]
    if s:
        if tracked or not 10 <= s <= 23:
            raise Corrupt("run byte")
        run = ByteRun(model, s)
        run.left = 1 << s
    if run is None or run.left < size:
        raise Corrupt("no run, or past its size")
    rd = RangeDecoder(payload[1:])
    out = bytes(run.code(rd) for _ in range(size))
    rd.finish()
    run.left -= size
    return run, out


# ---- §3.4 token match flag ----

class TokenMatch:
    """§3.4: the group's token history, context table, unknown bodies and the flag's two APMs."""
    HBITS, DICT, LMAX, ORDERS, NO_ID = 18, 32768, 64, (4, 2, 1), 0xFFFFFFFF

    def __init__(self, V):
        self.V, self.hist, self.gaps, self.tab, self.ptr, self.len = V, [0], [0], {}, 0, 0
        self.bodies, self.index = [], {}
        row = [16 * squash(max(-2047, min(2047, 256 * (j - 8)))) for j in range(17)]
        self.apm_len = [list(row) for _ in range(48)]
        self.apm_run = [list(row) for _ in range(24)]
        self.c_len = [[0] * 17 for _ in range(48)]
        self.c_run = [[0] * 17 for _ in range(24)]
        self.flg, self.run, self.ist, self.own = [0], 0, [0] * 4096, 0

    def prediction(self):
        """(pw, body) or None; body is None for a vocabulary id."""
        if not self.ptr or self.hist[self.ptr] == self.NO_ID:
            return None
        x = self.hist[self.ptr]
        return (x, None) if x < self.V else (0, self.bodies[x - self.V])

    def flag(self, rd, q, unk):
        """Decode the flag (steps 3-5 of step 0) with the network's q (12 bits)."""
        L, x = self.len, self.hist[self.ptr]
        s = ((x * 0x9E3779B1) & 0xFFFFFFFF) >> 20
        cls = L if L < 4 else 4 if L < 8 else 5 if L < 16 else 6 if L < 64 else 7
        r1 = (2 * cls + (1 if unk else 0)) * 3 + self.flg[self.ptr]
        r2 = (3 * (1 if unk else 0) + min(self.run, 2)) * 4 + self.ist[s]
        u = ST[q] + 2048
        lo, phi = u >> 8, u & 255
        rows = ((self.apm_len[r1], self.c_len[r1]), (self.apm_run[r2], self.c_run[r2]))
        p1, p2 = (max(1, min(4095, (A[lo] * (256 - phi) + A[lo + 1] * phi) >> 12)) for A, _ in rows)
        p = squash((ST[p1] + ST[p2]) >> 1)
        h = 1 if rd.decode([p, 4096 - p]) == 0 else 0
        k = lo + (1 if phi >= 128 else 0)
        for A, C in rows:
            d = 2 * (65535 * h - A[k])
            A[k] += abs(d) // (2 * C[k] + 3) * (1 if d >= 0 else -1)     # rounded toward zero
            C[k] = min(C[k] + 1, 255)
        self.ist[s] = (3 if self.ist[s] >= 2 else 2) if h else 1
        self.own = 1 if h else 2
        return h

    def _id(self, w, body):
        if w >= 1:
            return w
        if body in self.index:
            return self.V + self.index[body]
        if len(self.bodies) >= self.DICT:
            return self.NO_ID
        self.index[body] = len(self.bodies)
        self.bodies.append(body)
        return self.V + self.index[body]

    def push(self, w, body, gap):
        if len(self.hist) >= (1 << 24):       # n + 1 >= 2^24
            return
        x = int(self._id(int(w), body))
        if self.ptr and self.hist[self.ptr] == x != self.NO_ID:
            self.ptr, self.len, self.run = self.ptr + 1, min(self.len + 1, 65535), min(self.run + 1, 255)
        else:
            self.ptr, self.len, self.run = 0, 0, 0
        self.hist.append(x)
        self.gaps.append(int(gap))
        self.flg.append(self.own)
        self.own = 0
        n, H = len(self.hist) - 1, self.hist
        for k in self.ORDERS:
            if n < k:
                continue
            s = (k * 0x9E3779B1) & 0xFFFFFFFF
            for y in H[n - k + 1:n + 1]:
                s ^= y
                s = (s * 0x85EBCA77) & 0xFFFFFFFF
                s ^= s >> 15
            i = s >> (32 - self.HBITS)
            if not self.ptr:
                cand = self.tab.get(i, 0)
                if k < cand <= n:
                    L = 0
                    while L < self.LMAX and cand - 1 - L >= 1 and H[cand - 1 - L] == H[n - L] != self.NO_ID:
                        L += 1
                    if L >= k:
                        self.ptr, self.len, self.run = cand, L, 0
            self.tab[i] = n + 1


class TokenCache:
    """§3.6: decayed counts of the group's tokens mixed with the network's class and word frequencies."""
    K, BITS, L1, L2, INC, RATE, WMIN, WMAX = (32, 16), (15, 16), 256, 30, 2, 6, 655, 1 << 20

    def __init__(self, V, C, cls_of):
        self.V, self.C, self.cls_of = V, C, cls_of
        self.cnt1, self.cls1, self.tot1 = [0] * V, [0] * C, 0
        self.slots = ({}, {})                       # order 2, order 3: slot -> [check, tot, [[w, cnt], ...]]
        self.prev1 = self.prev2 = self.seen = 0
        self.W = [[55705, 3277, 3277, 3277] for _ in range(36)]

    @staticmethod
    def _mix(h, x):
        h = ((h ^ x) * 0x85EBCA77) & 0xFFFFFFFF
        return h ^ (h >> 15)

    def _hash(self, k):
        if k == 0:
            return self._mix((2 * 0x9E3779B1) & 0xFFFFFFFF, self.prev1)
        return self._mix(self._mix((3 * 0x9E3779B1) & 0xFFFFFFFF, self.prev2), self.prev1)

    def begin(self):
        self.cur, tots = [None, None], [0, 0]
        for k in range(2):
            if self.seen >= k + 1:
                h = self._hash(k)
                sl = self.slots[k].get(h >> (32 - self.BITS[k]))
                if sl is not None and sl[2] and sl[0] == h:
                    self.cur[k], tots[k] = sl, sl[1]
        b = [0 if t == 0 else min(5, t.bit_length()) for t in tots]
        self.set = 6 * b[0] + b[1]
        W = self.W[self.set]
        present = [True, self.tot1 > 0, self.cur[0] is not None, self.cur[1] is not None]
        self.ws = sum(W[k] for k in range(4) if present[k])
        self.A = [(W[k] << 29) // self.ws if present[k] else 0 for k in range(4)]
        t = [0, self.tot1, tots[0], tots[1]]
        self.R = [0] + [(self.A[k] << 32) // t[k] if self.A[k] else 0 for k in (1, 2, 3)]

    def classes(self, f):
        F, A, R = sum(f), self.A, self.R
        R0 = (A[0] << 32) // F
        out = [1 + (f[c] * R0 >> 32) for c in range(self.C)]
        if A[1]:
            for c in range(self.C):
                out[c] += self.cls1[c] * R[1] >> 32
        for k in range(2):
            sl = self.cur[k]
            if sl is not None:
                m = [0] * self.C
                for w, cnt in sl[2]:
                    m[self.cls_of[w]] += cnt
                for c in range(self.C):
                    out[c] += m[c] * R[2 + k] >> 32
        return out

    def words(self, c, a, f, g):
        F, G, A, R = sum(f), sum(g), self.A, self.R
        X = f[c] * ((A[0] << 32) // F) >> 32
        Rx = (X << 32) // G
        out = [1 + (g[j] * Rx >> 32) for j in range(len(g))]
        if A[1]:
            for j in range(len(g)):
                out[j] += self.cnt1[a + j] * R[1] >> 32
        for k in range(2):
            sl = self.cur[k]
            if sl is not None:
                for w, cnt in sl[2]:
                    if self.cls_of[w] == c:
                        out[w - a] += cnt * R[2 + k] >> 32
        return out

    def learn(self, c, w, f, gj, G):
        A, R = self.A, self.R
        X = f[c] * ((A[0] << 32) // sum(f)) >> 32
        p = [gj * ((X << 32) // G) >> 32, self.cnt1[w] * R[1] >> 32]
        for k in range(2):
            sl = self.cur[k]
            cnt = next((n for x, n in sl[2] if x == w), 0) if sl is not None else 0
            p.append(cnt * R[2 + k] >> 32)
        P = sum(p)
        if not P:
            return
        W = self.W[self.set]
        for k in range(4):
            if A[k]:
                W[k] = max(self.WMIN, min(self.WMAX, W[k] + ((p[k] * self.ws // P - W[k]) >> self.RATE)))

    def push(self, w, x):
        self.cnt1[w] += 1
        self.cls1[self.cls_of[w]] += 1
        self.tot1 += 1
        if self.tot1 > self.L1:
            self.cnt1 = [n >> 1 for n in self.cnt1]
            self.cls1 = [0] * self.C
            for v, n in enumerate(self.cnt1):
                self.cls1[self.cls_of[v]] += n
            self.tot1 = sum(self.cnt1)
        for k in range(2):
            if self.seen < k + 1:
                continue
            h = self._hash(k)
            i = h >> (32 - self.BITS[k])
            sl = self.slots[k].get(i)
            if sl is None or not sl[2] or sl[0] != h:
                sl = self.slots[k][i] = [h, 0, []]
            e = next((e for e in sl[2] if e[0] == w), None)
            if e is None:
                if len(sl[2]) < self.K[k]:
                    e = [w, 0]
                    sl[2].append(e)
                else:
                    e = min(sl[2], key=lambda e: e[1])     # the first of the smallest count
                    sl[1] -= e[1]
                    e[0], e[1] = w, 0
            e[1] += self.INC
            sl[1] += self.INC
            if sl[1] > self.L2:
                sl[2] = [[x, n >> 1] for x, n in sl[2] if n >> 1]
                sl[1] = sum(n for _, n in sl[2])
        self.prev2, self.prev1, self.seen = self.prev1, x, min(2, self.seen + 1)


class BodyMix:
    """§5.1.1: the spelling cache's symbol from its PPM-C counts mixed with three experts over
    the group's unknown bodies (followers of the previous token and of the previous two, recency)."""
    K, BITS, INC, L, RI, RL, RATE, WMIN, WMAX = (16, 8), (14, 15), 2, 30, 4, 100, 5, 655, 1 << 20

    def __init__(self):
        self.slots = ({}, {})       # slot index -> [check, [[symbol, count], ...]]
        self.rec = []               # [[symbol, count], ...] in order of entry
        self.W = [[32768, 13107, 13107, 6554] for _ in range(16)]
        self.prev1 = self.prev2 = self.seen = 0

    def _hash(self, k):
        mix = lambda h, x: (lambda h: h ^ (h >> 15))(((h ^ x) * 0x85EBCA77) & 0xFFFFFFFF)
        return mix(mix(0x2545F491, self.prev1), 0x68E31DA4) if k == 0 else mix(mix(0x9E3779B9, self.prev2), self.prev1)

    def _list(self, k):
        if self.seen < k + 1:
            return None
        h = self._hash(k)
        sl = self.slots[k].get(h >> (32 - self.BITS[k]))
        return sl[1] if sl is not None and sl[0] == h and sl[1] else None

    def code(self, rd, v):
        """Decode the cache symbol over v (v[0] the escape, v[i] the (i-1)-th body's count)."""
        n, T = len(v), sum(v)
        lists = [None, self._list(0), self._list(1), self.rec or None]
        tot = [T] + [sum(c for _, c in l) if l else 0 for l in lists[1:]]
        W = self.W[4 * min(3, tot[1].bit_length()) + min(3, tot[2].bit_length())]
        ws = W[0] + sum(W[k] for k in (1, 2, 3) if tot[k])
        A = [(W[k] << 24) // ws if k == 0 or tot[k] else 0 for k in range(4)]
        cand = sorted({x for l in lists[1:] if l for x, _ in l if 1 <= x < n})
        fa = [1 + A[0] * v[0] // T] + [1 + A[0] * v[x] // T for x in cand]
        for k in (1, 2, 3):
            for x, c in lists[k] or []:
                if x < n:
                    fa[0 if x == 0 else 1 + cand.index(x)] += A[k] * c // tot[k]
        other = T - v[0] - sum(v[x] for x in cand)
        a = rd.decode(fa + [1 + A[0] * other // T if other else 0])
        if a == 0:
            x = 0
        elif a <= len(cand):
            x = cand[a - 1]
        else:
            x = rd.decode([0] + [0 if i in cand else v[i] for i in range(1, n)])
        part = [A[0] * v[x] // T] + [A[k] * sum(c for y, c in lists[k] if y == x) // tot[k] if tot[k] else 0
                                     for k in (1, 2, 3)]
        S = sum(part)
        if S:
            for k in range(4):
                if k == 0 or tot[k]:
                    W[k] = min(self.WMAX, max(self.WMIN, W[k] + ((part[k] * ws // S - W[k]) >> self.RATE)))
        return x

    def push(self, sym, newsym, x):
        if sym >= 0:
            for k in range(2):
                if self.seen < k + 1:
                    continue
                h = self._hash(k)
                i = h >> (32 - self.BITS[k])
                sl = self.slots[k].get(i)
                if sl is None or not sl[1] or sl[0] != h:
                    sl = self.slots[k][i] = [h, []]
                e = next((e for e in sl[1] if e[0] == sym), None)
                if e is None:
                    if len(sl[1]) < self.K[k]:
                        e = [sym, 0]
                        sl[1].append(e)
                    else:
                        e = min(sl[1], key=lambda e: e[1])     # the first of the smallest count
                        e[0], e[1] = sym, 0
                e[1] += self.INC
                if sum(c for _, c in sl[1]) > self.L:
                    for e in sl[1]:
                        e[1] = (e[1] + 1) >> 1
            for y in ([sym, newsym] if sym == 0 else [sym]):
                e = next((e for e in self.rec if e[0] == y), None)
                if e is None:
                    e = [y, 0]
                    self.rec.append(e)
                e[1] += self.RI
            if sum(c for _, c in self.rec) > self.RL:
                self.rec = [[y, c >> 1] for y, c in self.rec if c >> 1]
        self.prev2, self.prev1, self.seen = self.prev1, x, min(2, self.seen + 1)


# ---- §5 speller, cache, literal gaps ----

class Speller:
    def __init__(self, prime):
        self.base, self.delta = {}, None
        for piece in bytes(prime).split(b"\n"):
            if piece:
                self.update(piece[:32], 32)
        self.reset()

    def reset(self):
        """A group start: the escaped bodies are spelled by a fresh ByteModel (§5.4) over the PPM's sums."""
        self.delta = {}  # the primed tables (base) stay as they are; changes since the reset go here
        self.cache, self.counts = [], []
        self.gap = [[1] * 7 for _ in range(7)]
        self.cm = ByteModel()

    def see_body(self, body):
        """A known body or a cache hit, then ' ': seen by the byte model (§5.4)."""
        for c in body + b" ":
            self.cm.see(c)

    def _dist(self, body, p):
        """§5.4: the PPM's weights at position p as a tree of sums over bytes (END counts as ' ')."""
        hist = [-1] + list(body)
        excl = {END_SYM} if p == 0 else set()
        mass, leaf = 1 << 40, [0] * 256
        for c, live in self._levels(hist, p, excl):
            q = mass // (sum(2 * c[0][y] - 1 for y in live) + len(live))
            for y in live:
                leaf[32 if y == END_SYM else y] += q * (2 * c[0][y] - 1)
                excl.add(y)
            mass = q * len(live)
        r = 257 - len(excl)
        for y in range(257):
            if r and y not in excl:
                leaf[32 if y == END_SYM else y] += mass // r
        tree = [0] * 256 + leaf
        for k in range(255, 0, -1):
            tree[k] = tree[2 * k] + tree[2 * k + 1]
        return tree

    def _get(self, key):
        if self.delta is None:
            return self.base.get(key)
        return self.delta[key] if key in self.delta else self.base.get(key)

    def _own(self, key):
        if self.delta is None:
            return self.base.setdefault(key, [{}, 0])
        if key not in self.delta:
            c = self.base.get(key)
            self.delta[key] = [dict(c[0]), c[1]] if c else [{}, 0]
        return self.delta[key]

    @staticmethod
    def _key(hist, o):
        return o, tuple(hist[len(hist) - o:])

    def update(self, body, maxlen):
        hist = [-1]  # BOW
        for p in range(min(len(body), maxlen - 1) + 1):
            y = body[p] if p < len(body) else END_SYM
            top = min(4, p + 1)
            lo = next((o for o in range(top, -1, -1)
                       if (c := self._get(self._key(hist, o))) is not None and y in c[0]), 0)
            for o in range(top, lo - 1, -1):
                c = self._own(self._key(hist, o))
                c[0][y] = c[0].get(y, 0) + 1
                c[1] += 1
                if c[1] > 1 << 16:
                    for s in c[0]:
                        c[0][s] = (c[0][s] + 1) // 2
                    c[1] = sum(c[0].values())
            hist.append(y)

    def _levels(self, hist, p, excl):
        """(context, its non-excluded symbols) from order min(4, p + 1) down to 0, skipping a missing
        context and one whose symbols are all excluded; excl is read as the caller leaves it."""
        for o in range(min(4, p + 1), -1, -1):
            c = self._get(self._key(hist, o))
            live = [y for y in c[0] if y not in excl] if c is not None else []
            if live:
                yield c, live

    def symbol_of(self, body):
        """The cache symbol of a body (§5.1.1): i + 1 for the i-th cached body, 0 if it is not cached."""
        return self.cache.index(body) + 1 if body in self.cache else 0

    def unknown(self, rd, mix, maxlen=32):
        """An unknown word's body (§5.1-§5.2, §5.4): the cache symbol coded by mix (a BodyMix, §5.1.1), then
        on an escape the body spelled by the byte model."""
        u = len(self.cache)
        i = mix.code(rd, [max(u, 1)] + self.counts)
        self.last_hit = i > 0
        if i:
            self.counts[i - 1] += 1
            if max(u, 1) + sum(self.counts) > 1 << 28:
                self.counts = [(c + 1) // 2 for c in self.counts]
            self.see_body(self.cache[i - 1])
            return self.cache[i - 1]
        body = bytearray()
        for p in range(maxlen + 1):
            if p == maxlen:
                self.cm.see(32)
                break
            c = self.cm.code_byte(rd, self._dist(body, p))
            if c == 32 and p >= 1:
                break
            if c in WS:
                raise Corrupt("whitespace in a spelled body")
            body.append(c)
        body = bytes(body)
        if body in self.cache:
            raise Corrupt("escape to a cached body")
        self.update(body, maxlen)
        self.cache.append(body)
        self.counts.append(1)
        return body

    def literal_gap(self, rd):
        run, prev = bytearray(), 6
        for p in range(65535):
            g = self.gap[prev]
            x = rd.decode(g[:6] + [0] if p == 0 else g)
            g[x] += 16
            if sum(g) > 1 << 16:
                g[:] = [(v + 1) // 2 for v in g]
            if x == 6:
                break
            run.append(WS[x])
            prev = x
        return bytes(run)


class GapMix:
    def __init__(self):
        self.col, self.cnt, self.tot = 0, {}, {}

    def freqs(self, f, blen, m=8):
        F = sum(f)
        a = min(self.col + 1 + blen, 127)
        t = max(range(8), key=lambda i: (f[i], -i))
        q = 1 if f[t] >= F - F // 16 else 0
        ctx = ((a * 8 + t) * 2 + q) * 9 + m
        cnt, tot = self.cnt.get(ctx, [0] * 8), self.tot.get(ctx, 0)
        return ctx, [((24 * ((fi << 16) // F) + (ci << 16)) // (24 + tot)) + 1 for fi, ci in zip(f, cnt)]

    def update(self, ctx, sym, gap, blen):
        cnt = self.cnt.setdefault(ctx, [0] * 8)
        cnt[sym] += 2
        self.tot[ctx] = self.tot.get(ctx, 0) + 2
        if self.tot[ctx] > 250:
            cnt[:] = [c >> 1 for c in cnt]
            self.tot[ctx] = sum(cnt)
        for b in gap:
            self.col = 0 if b == 10 else self.col + 1
        self.col = min(self.col + blen, 1 << 20)


# ---- §3.7 the gap mixer (format 14) ----

GAP_ORDER = (1, 0, 3, 4, 7, 2, 6, 5)
RUN_ALPHABET = b"\n \t\r\x0b\x0c"


def byte_cls(c):
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
    return 5 if c in b".!?" else 6 if c in b",;:" else 7


def body_hash(body):
    h = 0
    for c in body:
        h = ((h + c + 1) * 0x2F0F3A55) & 0xFFFFFFFF
    return h


class GapMixer:
    """§3.7: the gap symbol and literal runs by a binary mixer of §3.3's blend and line-structure contexts."""

    def __init__(self):
        self.cur, self.prev, self.curlen, self.prevlen, self.last, self.pword = bytearray(), bytearray(), 0, 0, 0, 0
        self.q = [[32768] * (1 << 14) for _ in range(12)]
        self.n = [[0] * (1 << 14) for _ in range(12)]
        self.w = [[49152] + [8192] * 12 + [0] * 3 for _ in range(13 * 80)]
        self.apm = [[16 * squash(128 * (i - 16)) for i in range(33)] for _ in range(13 * 24)]

    @staticmethod
    def _indent(b):
        k = 0
        while k < len(b) and b[k] in b" \t":
            k += 1
        return k

    def _contexts(self, body, j, rh):
        col = self.curlen
        cc = min(col, 90)
        ind, pind = self._indent(self.cur), self._indent(self.prev)
        blank = 1 if ind >= col else 0
        above = self.prev[col] if col < self.prevlen and col < 256 else 256
        above2 = self.prev[col + 1] if col + 1 < self.prevlen and col + 1 < 256 else 256
        first = self.cur[ind] if not blank and ind < 256 else None
        pfirst = self.prev[pind] if pind < self.prevlen and pind < 256 else 256
        pl = min(self.prevlen // 8, 12)
        b1, b2, b3 = self.last & 255, (self.last >> 8) & 255, (self.last >> 16) & 255
        c1, bk, bl = byte_cls(b1), byte_cls(body[0] if body else None), min(len(body), 8)
        ind_, pind_ = min(ind, 255), min(pind, 255)
        v = [b1 << 8 | bk | j << 40 | rh << 44,
             b1 << 16 | b2 << 8 | bk | j << 40,
             b1 << 16 | b2 << 8 | b3,
             cc << 8 | blank << 4 | bk,
             pind_ << 16 | cc << 8 | blank | j << 40,
             above << 20 | above2 << 8 | blank << 4 | c1,
             self.pword << 8 | bk | j << 40,
             byte_cls(first) << 16 | (cc // 4) << 8 | c1,
             pfirst << 24 | pl << 16 | (cc // 8) << 8 | blank,
             ind_ << 32 | pind_ << 24 | above << 8 | b1,
             bk << 24 | bl << 16 | (cc // 4) << 8 | blank,
             body_hash(body) << 8 | c1 | j << 40]
        idx = [hash64(x, ((k + 1) * 0x3C6EF372) & 0xFFFFFFFF) for k, x in enumerate(v)]
        return idx, (2 * j + blank) * 8 + bk, min(cc // 4, 23)

    def _bit(self, rd, ctx, d, pn):
        idx, s, a = ctx
        q, n, dd = self.q, self.n, (d + 1) * 0x9E3779B1
        slots = [((i + dd) & 0xFFFFFFFF) >> 18 for i in idx]
        x = [ST[pn] if pn else 0] + [ST[q[k][sl] >> 4] if n[k][sl] else 0 for k, sl in enumerate(slots)]
        x += [256, 0, 0]
        W = self.w[80 * d + s]
        t = max(-2047, min(2047, sum(wi * xi for wi, xi in zip(W, x)) >> 16))
        pm = squash(t)
        A = self.apm[24 * d + a]
        u = t + 2048
        lo, phi = u >> 7, u & 127
        pa = (A[lo] * (128 - phi) + A[lo + 1] * phi) >> 11
        p = max(1, min(4095, (pm + pa + 1) >> 1))
        y = 1 if rd.decode([p, 4096 - p]) == 0 else 0
        for k, sl in enumerate(slots):
            qk, nk = q[k], n[k]
            dq = 2 * (65535 * y - qk[sl])
            qk[sl] += abs(dq) // (2 * nk[sl] + 3) * (1 if dq >= 0 else -1)
            if nk[sl] < 60:
                nk[sl] += 1
        e = (4096 * y - pm) * 320
        for i, xi in enumerate(x):
            if xi:              # (a zero input leaves its weight, which is inside the clamp, as it is)
                v = W[i] + ((xi * e) >> 18)
                W[i] = -(1 << 24) if v < -(1 << 24) else (1 << 24) if v > (1 << 24) else v
        kk = lo + (1 if phi >= 64 else 0)
        A[kk] += asr((65535 if y else 0) - A[kk], 5)
        return y

    def symbol(self, rd, g, body):
        ctx = self._contexts(body, 0, 0)
        R = sum(g)
        for d in range(7):
            go = g[GAP_ORDER[d]]
            pn = max(1, min(4095, (go * 4096 + R // 2) // R))
            if self._bit(rd, ctx, d, pn):
                return GAP_ORDER[d]
            R -= go
        return GAP_ORDER[7]

    def run(self, rd, body):
        out, rh = bytearray(), 0
        for r in range(65535):
            ctx = self._contexts(body, 1 + min(r, 3), rh)
            if r > 0 and self._bit(rd, ctx, 7, 0):
                break
            i = 0
            while i < 5 and not self._bit(rd, ctx, 8 + i, 0):
                i += 1
            out.append(RUN_ALPHABET[i])
            self.push(RUN_ALPHABET[i:i + 1], b"")
            rh = (16 * rh + i) & 0xFFFF
        return bytes(out)

    def push(self, gap, body):
        for c in bytes(gap) + bytes(body):
            self.last = ((self.last << 8) | c) & 0xFFFFFFFF
            if c == 10:
                self.prev, self.prevlen, self.cur, self.curlen = self.cur, self.curlen, bytearray(), 0
            else:
                if self.curlen < 256:
                    self.cur.append(c)
                self.curlen = min(self.curlen + 1, 1 << 20)
        if body:
            self.pword = body_hash(body)


# ---- §2.5 the Kneser-Ney expert ----

class KneserNey:
    """§2.5: the expert's class and word probabilities over the context (u, v) of the two previous tokens,
    from the model file's Kneser-Ney section (docs/model_format.md field 13a)."""

    def __init__(self, blob, V, class_start):
        lam, m3, n2, n3 = np.frombuffer(blob, "<f4", 1, 0)[0], *np.frombuffer(blob, "<u4", 3, 4)
        o = 16

        def take(dtype, n):
            nonlocal o
            a = np.frombuffer(blob, dtype, n, o)
            o += a.nbytes
            return a
        self.lam = f32(lam)
        self.p1, self.g2, o2 = take("<f4", V), take("<f4", V), take("<u4", V + 1)
        e2 = take([("w", "<u4"), ("a", "<f4")], n2)
        k3, g3, o3 = take("<u8", m3), take("<f4", m3), take("<u4", m3 + 1)
        e3 = take([("w", "<u4"), ("a", "<f4")], n3)
        assert o == len(blob)
        self.bi = [[(int(w), f32(a)) for w, a in e2[o2[v]:o2[v + 1]]] for v in range(V)]
        self.tri = {int(k): (f32(g), [(int(w), f32(a)) for w, a in e3[o3[i]:o3[i + 1]]])
                    for i, (k, g) in enumerate(zip(k3, g3))}
        self.V, self.cs = V, class_start
        self.cls_of = [c for c in range(len(class_start) - 1) for _ in range(class_start[c + 1] - class_start[c])]
        self.P1c = []
        for c in range(len(class_start) - 1):
            s = f32(0)
            for w in range(class_start[c], class_start[c + 1]):
                s = s + self.p1[w]
            self.P1c.append(s)
        self.reset()

    def reset(self):
        self.u = self.v = 1

    def push(self, w):
        self.u, self.v = self.v, w

    def _ctx(self):
        g3, tri = self.tri.get(self.u * self.V + self.v, (f32(1), []))
        return g3, g3 * self.g2[self.v], self.bi[self.v], tri

    def classes(self):
        g3, base, bi, tri = self._ctx()
        P = [base * pc for pc in self.P1c]
        for w, a2 in bi:
            P[self.cls_of[w]] = P[self.cls_of[w]] + (g3 * a2)
        for w, a3 in tri:
            P[self.cls_of[w]] = P[self.cls_of[w]] + a3
        return np.array(P, dtype=f32)

    def words(self, a, b):
        g3, base, bi, tri = self._ctx()
        p = [base * self.p1[w] for w in range(a, b)]
        for w, a2 in bi:
            if a <= w < b:
                p[w - a] = p[w - a] + (g3 * a2)
        for w, a3 in tri:
            if a <= w < b:
                p[w - a] = p[w - a] + a3
        return np.array(p, dtype=f32)


# ---- §2, §3, §6: the model, the token step, dynamic evaluation ----

HEADS_LR_MUL, HEADS_DECAY_MUL = 2, 1      # §6.5: heads mode's rates a and b

NAMES = ("E", "Ecase", "Egap", "Wx", "Wh", "bh", "Wc", "bc", "Wo", "bo", "Uc", "Bc", "Ug", "Bg")


def sigmoid(z):
    """§2.4 (lstm): σ(z) = (0.5·tanh(0.5·z)) + 0.5."""
    return (f32(0.5) * k_tanh(f32(0.5) * z)) + f32(0.5)


class Reader:
    """The word model of §2 (elman, lstm or nplm; with the Kneser-Ney expert of §2.5 when the model has one)
    and the token step of §3 over it, one group at a time (reset at a group start)."""

    def __init__(self, cfg, params, ms, vocab, class_start, prime, adapt, kn=b""):
        V, D, H, C = cfg["V"], cfg["D"], cfg["H"], cfg["C"]
        self.arch, K = cfg.get("arch", "elman"), cfg.get("context", 0)
        G = 4 if self.arch == "lstm" else 1          # §2.4: the body's tensors in the places of Wx, Wh, bh
        wh = (H, (K - 1) * D) if self.arch == "nplm" else (G * H, H)
        shapes = [(V, D), (4, D), (8, D), (G * H, D), wh, (G * H,), (C, H), (C,), (V, H), (V,), (4, H), (V, 4),
                  (8, H), (V, 8)]
        flat, self.p0, o = np.asarray(params, dtype=f32), {}, 0
        for name, s in zip(NAMES, shapes):
            n = int(np.prod(s))
            self.p0[name] = flat[o:o + n].reshape(s).copy()
            o += n
        assert o == len(flat), (o, len(flat))
        self.H, self.D, self.K = H, D, K
        self.cs, self.vocab, self.adapt, self.seg_len = list(class_start), vocab, adapt, cfg["seg_len"]
        self.cls_of = [c for c in range(C) for _ in range(self.cs[c + 1] - self.cs[c])]   # id -> class
        self.V = V
        lr, decay, eps = f32(cfg["lr"]), f32(cfg["decay"]), f32(cfg["eps"])
        self.decay0, self.lim0 = decay, lr * f32(16)
        self.step0 = {}
        for name, m in zip(NAMES, np.asarray(ms, dtype=f32)):
            den = m + eps
            self.step0[name] = lr / den if den > 0 else f32(0)
        self.rates = None
        self.speller = Speller(prime)
        self.kn = KneserNey(bytes(kn), V, self.cs) if kn else None
        self.q8 = None                                    # §2.6's tables, made the first time a frame needs them
        self.version = 13
        self.reset()

    def reset(self, adapt=None, version=None):
        """The state at a group start (§7.2); adapt: switch between static (False), dynamic (True) and heads
        ("heads") mode; version: the frame's format (13 to 16; 15 and 16 read as 14)."""
        if adapt is not None:
            self.adapt = adapt
        if version is not None:
            self.version = version
        self.p = {k: v.copy() for k, v in self.p0.items()}
        H = self.H
        self.h = np.zeros(H, dtype=f32)
        self.c = np.zeros(H, dtype=f32)                                   # lstm: the cell
        self.u = np.zeros(max(self.K - 1, 0) * self.D, dtype=f32)         # nplm: the older inputs
        self.int8 = not self.adapt                          # the integer heads of §2.6 (static mode)
        self.heads_only = self.adapt == "heads"             # heads mode (§6.5): only the heads adapt ...
        # ... and, as in static mode, the transition's products with h and x are §2.6's integer ones (nplm's
        # stay in float)
        self.int8_body = (self.int8 or self.heads_only) and self.arch != "nplm"
        self._set_rates((HEADS_LR_MUL, HEADS_DECAY_MUL) if self.heads_only else (1, 1))
        if (self.int8 or self.int8_body) and self.q8 is None:
            self.q8 = {name: quant_rows(self.p0[name]) for name in ("Wc", "Wo", "Wh", "Wx")
                       if not (self.arch == "nplm" and name in ("Wh", "Wx"))}
        self.seg, self.seg_no = [], 0
        self.last = {"E": {}, "O": {}, "B": {}}
        self.speller.reset()
        self.gapmix = GapMix()
        self.gapmixer = GapMixer()
        self.match = TokenMatch(self.V)
        self.cache = TokenCache(self.V, len(self.cs) - 1, self.cls_of)
        self.bmix = BodyMix()
        if self.kn is not None:
            self.kn.reset()

    def _set_rates(self, rates):
        """§6.1, §6.5: step_t·a, lim·a, decay·b (float) and the catch-up factors q_k of decay·b."""
        if rates == self.rates:
            return
        a, b = f32(rates[0]), f32(rates[1])
        self.rates, self.step = rates, {k: v * a for k, v in self.step0.items()}
        self.lim, self.decay = self.lim0 * a, self.decay0 * b
        self.q = [f32(1)]
        keep = f32(1) - self.decay
        for _ in range(4096):
            v = self.q[-1] * keep
            self.q.append(f32(0) if v < f32(2.0 ** -100) else v)
        self.qa = np.array(self.q, dtype=f32)

    # -- §2.3, §2.6: products --

    def hprod(self, name, a=0, b=None):
        """(W[a:b]·h) for a head or the recurrent matrix: the float product of §2.3, or §2.6's integer one."""
        if not (self.int8_body if name == "Wh" else self.int8):
            return matvec(self.p[name][a:b], self.h)
        q, mul = self.q8[name]
        return qmatvec(q[a:b], mul[a:b], act_grid(self.h))

    def xprod(self, x):
        """Wx·x: the float product of §2.3, or §2.6's integer one on x's own grid, times xs."""
        if not self.int8_body:
            return matvec(self.p["Wx"], x)
        g, xs = vec_grid(x)
        q, mul = self.q8["Wx"]
        return (qmatvec(q, mul, g) * xs).astype(f32)

    # -- §2.4: the transitions --

    def state(self):
        return (self.h, self.c) if self.arch == "lstm" else (self.h, self.u) if self.arch == "nplm" else (self.h,)

    def _gates(self, a):
        H = self.H
        return sigmoid(a[:H]), sigmoid(a[H:2 * H]), k_tanh(a[2 * H:3 * H]), sigmoid(a[3 * H:])

    def advance(self, x):
        P = self.p
        if self.arch == "elman":
            self.h = k_tanh((self.xprod(x) + self.hprod("Wh")) + P["bh"])
        elif self.arch == "lstm":
            i, f, g, o = self._gates((self.xprod(x) + self.hprod("Wh")) + P["bh"])
            self.c = (f * self.c) + (i * g)
            self.h = o * k_tanh(self.c)
        else:                                         # nplm: both products in float in every mode
            self.h = k_tanh((matvec(P["Wx"], x) + matvec(P["Wh"], self.u)) + P["bh"])
            self.u = np.concatenate([x, self.u[:(self.K - 2) * self.D]]).astype(f32)

    def _back(self, t, dh, carry, x):
        """The backward of the transition that made token t's state (§6.3; §2.4 for lstm and nplm):
        (da, dx, dh_next, the state part gWh pairs da with, carry for t − 1)."""
        P, seg, z = self.p, self.seg, lambda n: np.zeros(n, dtype=f32)  # noqa: E731
        S, Sp = seg[t]["S"], seg[t - 1]["S"]
        if self.arch == "elman":
            s = S[0]
            da = dh * (f32(1) - (s * s))
            return da, t_acc(z(self.D), P["Wx"], da), t_acc(z(self.H), P["Wh"], da), Sp[0], None
        if self.arch == "lstm":
            (hp, cp), ct = Sp, S[1]
            dc = carry if carry is not None else z(self.H)
            i, f, g, o = self._gates((matvec(P["Wx"], x) + matvec(P["Wh"], hp)) + P["bh"])
            tau = k_tanh(ct)
            do = dh * tau
            u = f32(1) - (tau * tau)
            dcp = dc + ((dh * o) * u)
            di, dg, df, dc_next = dcp * g, dcp * i, dcp * cp, dcp * f
            da = np.concatenate([di * (i * (f32(1) - i)), df * (f * (f32(1) - f)), dg * (f32(1) - (g * g)),
                                 do * (o * (f32(1) - o))]).astype(f32)
            return da, t_acc(z(self.D), P["Wx"], da), t_acc(z(self.H), P["Wh"], da), hp, dc_next
        s, up = S[0], Sp[1]                           # nplm
        du = carry if carry is not None else z(len(up))
        da = dh * (f32(1) - (s * s))
        dx = t_acc(z(self.D), P["Wx"], da) + du[:self.D]
        du_next = t_acc(z(len(up)), P["Wh"], da)
        n = (self.K - 2) * self.D
        du_next[:n] = du_next[:n] + du[self.D:]
        return da, dx, z(self.H), up, du_next

    # -- §6: dynamic evaluation --

    def _clamp(self, s):
        a = np.where(s < self.lim, s, self.lim)
        return np.where(a > -self.lim, a, -self.lim).astype(f32)

    def _sgd(self, name, idx, g, k):
        th, th0, step = self.p[name][idx], self.p0[name][idx], self.step[name]
        if k == 0:
            self.p[name][idx] = (th - self._clamp(step * g)) + self.decay * (th0 - th)
        else:
            a = th0 + ((th - th0) * self.q[min(k, 4096)])
            self.p[name][idx] = (a - self._clamp(step * g)) + self.decay * (th0 - a)

    def _sgd_rows(self, name, rows, ks, g):
        """_sgd of each of the distinct rows of a sparse table, row i with its own k = ks[i] (elementwise, so
        done for all rows at once: k = 0 is the catch-up with a = θ)."""
        th, th0 = self.p[name][rows], self.p0[name][rows]
        qk = self.qa[np.minimum(ks, 4096)].reshape((-1,) + (1,) * (th.ndim - 1))
        a = np.where((ks == 0).reshape(qk.shape), th, th0 + ((th - th0) * qk))
        self.p[name][rows] = (a - self._clamp(self.step[name] * g)) + self.decay * (th0 - a)

    def _end_segment(self):
        if not self.adapt or not self.seg:
            self.seg = []
            return
        P, seg, T = self.p, self.seg, len(self.seg)
        H, D, C = self.H, self.D, P["Wc"].shape[0]
        z = lambda n: np.zeros(n, dtype=f32)  # noqa: E731
        gbc, gbh, gEcase, gEgap = z(C), z(P["bh"].shape[0]), np.zeros((4, D), f32), np.zeros((8, D), f32)
        gE, gbo, gBc, gBg = {}, {}, {}, {}
        for tok in seg:
            a, b = self.cs[tok["c"]], self.cs[tok["c"] + 1]
            for r in range(a, b):
                gbo.setdefault(r, f32(0))
            gBc.setdefault(tok["w"], z(4))
            gBg.setdefault(tok["w"], z(8))
        deep = not self.heads_only                    # §6.5: no gradient into h, nothing below the heads
        for tok in seg[:-1] if deep else ():
            gE.setdefault(tok["w"], z(D))
        dcs, dws, dks, dgs, das, xs, prevs = {}, {}, {}, {}, {}, {}, {}
        dh_next, carry = z(H), None
        for t in range(T - 1, -1, -1):
            tok = seg[t]
            w, c, a = tok["w"], tok["c"], self.cs[tok["c"]]
            dh = dh_next
            dc = softmax(tok["zc"])
            dc[c] -= f32(1)
            gbc = gbc + dc
            dh = t_acc(dh, P["Wc"], dc)
            dw = softmax(tok["zw"])
            dw[w - a] -= f32(1)
            for j, v in enumerate(dw):
                gbo[a + j] = gbo[a + j] + v
            dh = t_acc(dh, P["Wo"][a:a + len(dw)], dw)
            if tok["coded"]:
                dk = softmax(tok["zk"][:3])
                dk[tok["case"]] -= f32(1)
                gBc[w][:3] = gBc[w][:3] + dk
                dh = t_acc(dh, P["Uc"][:3], dk)
                dks[t] = dk
            dg = softmax(tok["zg"])
            dg[tok["gap"]] -= f32(1)
            gBg[w] = gBg[w] + dg
            dh = t_acc(dh, P["Ug"], dg)
            dcs[t], dws[t], dgs[t] = dc, dw, dg
            if t == 0 or not deep:
                continue
            prev = seg[t - 1]
            x = (P["E"][prev["w"]] + P["Ecase"][prev["case"]]) + P["Egap"][prev["gap"]]
            da, dx, dh_next, prevs[t], carry = self._back(t, dh, carry, x)
            gbh = gbh + da
            gE[prev["w"]] = gE[prev["w"]] + dx
            gEcase[prev["case"]] = gEcase[prev["case"]] + dx
            gEgap[prev["gap"]] = gEgap[prev["gap"]] + dx
            das[t], xs[t] = da, x
        order = range(T - 1, -1, -1)
        g = {"Ecase": gEcase, "Egap": gEgap, "bh": gbh, "bc": gbc,
             "Wc": outer_sum([dcs[t] for t in order], [seg[t]["s"] for t in order], C, H),
             "Ug": outer_sum([dgs[t] for t in order], [seg[t]["s"] for t in order], 8, H)}
        if deep:
            g["Wx"] = outer_sum([das[t] for t in order if t], [xs[t] for t in order if t], *P["Wx"].shape)
            g["Wh"] = outer_sum([das[t] for t in order if t], [prevs[t] for t in order if t], *P["Wh"].shape)
        gUc = np.zeros((4, H), f32)
        gUc[:3] = outer_sum([dks[t] for t in order if t in dks], [seg[t]["s"] for t in order if t in dks], 3, H)
        g["Uc"] = gUc
        gWo = {}
        for c in {tok["c"] for tok in seg}:
            a, b = self.cs[c], self.cs[c + 1]
            G = outer_sum([dws[t] for t in order if seg[t]["c"] == c],
                          [seg[t]["s"] for t in order if seg[t]["c"] == c], b - a, H)
            for r in range(a, b):
                gWo[r] = G[r - a]
        self.seg_no += 1
        for name in ("Ecase", "Egap", "Wx", "Wh", "bh", "Wc", "bc", "Uc", "Ug") if deep else ("Wc", "bc", "Uc", "Ug"):
            self._sgd(name, slice(None), g[name], 0)
        for table, rows in (("E", [("E", gE)]), ("O", [("Wo", gWo), ("bo", gbo)]),
                            ("B", [("Bc", gBc), ("Bg", gBg)])):
            last, rs = self.last[table], list(rows[0][1])
            if not rs:
                continue
            ks = np.array([self.seg_no - last.get(r, 0) - 1 for r in rs])
            for name, grads in rows:
                self._sgd_rows(name, np.array(rs), ks, np.array([grads[r] for r in rs], dtype=f32))
            for r in rs:
                last[r] = self.seg_no
        self.seg = []

    # -- §3: the token step --

    def decode_block(self, payload, size):
        rd, out, P, kn = RangeDecoder(payload), bytearray(), self.p, self.kn
        n = 0
        while True:
            if n >= 16384:                            # tokens of a block, <end> included (§3.5)
                raise Corrupt("more tokens than a block may hold")
            n += 1
            zc = self.hprod("Wc") + P["bc"]           # the network's logits: the ones §6 learns from
            if kn is not None:                        # §2.5: the mixture's logits are the ones coded
                qc = softmax(zc)
                zc_coded = k_log((kn.lam * qc) + ((f32(1) - kn.lam) * kn.classes()))
            else:
                zc_coded = zc
            fc = fnet = quant(zc_coded)               # fnet: the model's own (§3.6)
            tc = self.cache
            tc.begin()
            fc = tc.classes(fnet)

            def words(c):
                """Class c's word logits (the network's), the model's word frequencies and those coded with."""
                a, b = self.cs[c], self.cs[c + 1]
                z = self.hprod("Wo", a, b) + P["bo"][a:b]
                if kn is not None:
                    t = kn.lam * qc[c]
                    g = quant(k_log((t * softmax(z)) + ((f32(1) - kn.lam) * kn.words(a, b))))
                else:
                    g = quant(z)
                return z, g, tc.words(c, a, fnet, g)
            pred = self.match.prediction()
            hit, fw = 0, None
            if pred is not None:                      # step 0 (§3.4)
                pw, pbody = pred
                cs = self.cls_of[pw]
                a = self.cs[cs]
                zp, gnet, g = words(cs)
                Fc, Fp, js = sum(fc), sum(g), pw - a
                q = max(1, min(4095, (fc[cs] * g[js]) // max(1, (Fc * Fp) >> 12)))
                hit = self.match.flag(rd, q, pw == 0)
                if hit:
                    w, c, zw, gw = pw, cs, zp, gnet
                else:
                    if pw != 0:                       # exclusion
                        fc[cs] -= (fc[cs] * g[js]) // Fp
                        g[js] = 0
                    fw = (cs, g, zp, gnet)
            if not hit:
                c = rd.decode(fc)
                a = self.cs[c]
                if fw is not None and fw[0] == c:
                    zw, gw = fw[2], fw[3]
                    w = a + rd.decode(fw[1])
                else:
                    zw, gw, g = words(c)
                    w = a + rd.decode(g)
            tc.learn(c, w, fnet, gw[w - self.cs[c]], sum(gw))
            bsym = bnew = -1
            if hit and w == 0:
                body = pbody
                self.speller.see_body(body)
                bsym = self.speller.symbol_of(body)
            else:
                body = b"" if w == 1 else self.speller.unknown(rd, self.bmix) if w == 0 else self.vocab[w]
                if w == 0:
                    bnew = self.speller.symbol_of(body)
                    bsym = bnew if self.speller.last_hit else 0
                if w >= 2:
                    self.speller.see_body(body)
            kind = 0 if w == 1 else first_kind(body)
            zk = matvec(P["Uc"], self.h) + P["Bc"][w]
            case, coded = 0, False
            if kind == 1:
                if any(65 <= ch <= 90 for ch in body):
                    case = 3
                else:
                    case, coded = rd.decode(quant(zk[:3])), True
            zg = matvec(P["Ug"], self.h) + P["Bg"][w]
            mg = self.match.gaps[self.match.ptr] if hit else 8
            ctx, gf = self.gapmix.freqs(quant(zg), len(body), mg)
            if self.version >= 14:                    # §3.7: the gap mixer
                gap = self.gapmixer.symbol(rd, gf, body)
                gap_bytes = self.gapmixer.run(rd, body) if gap == 7 else GAP_BYTES[gap]
                self.gapmixer.push(b"" if gap == 7 else gap_bytes, body)
            else:
                gap = rd.decode(gf)
                gap_bytes = self.speller.literal_gap(rd) if gap == 7 else GAP_BYTES[gap]
            self.gapmix.update(ctx, gap, gap_bytes, len(body))
            self.match.push(w, body, gap)
            x_id = self.match.hist[-1] if len(self.match.hist) > 1 else TokenMatch.NO_ID
            tc.push(w, x_id)
            self.bmix.push(bsym, bnew, x_id)
            out += gap_bytes + recase(body, case)
            if len(out) > size:
                raise Corrupt("block too long")
            if w == 1:                                # a block's <end> does not advance the network (§3.2)
                break
            if self.adapt:
                self.seg.append({"w": w, "c": c, "case": case, "gap": gap, "coded": coded, "s": self.h,
                                 "S": self.state(), "zc": zc, "zw": zw, "zk": zk, "zg": zg})
            self.advance((P["E"][w] + P["Ecase"][case]) + P["Egap"][gap])
            if kn is not None:
                kn.push(w)
            if self.adapt and len(self.seg) >= self.seg_len:
                self._end_segment()
        self._end_segment()
        rd.finish()
        if len(out) != size:
            raise Corrupt("block too short")
        return bytes(out)


def read_varint(buf, p):
    v, shift = 0, 0
    while True:
        b = buf[p]
        v |= (b & 0x7F) << shift
        p, shift = p + 1, shift + 7
        if not b & 0x80:
            return v, p


def word_blocks(frame):
    """(adapt, [(group start, block kind, size, payload)]) of a format-13 to 17 frame (§7.1: a CRC32 follows
    each word-model and byte-model block); adapt is False, True or "heads" (flag bit 4, §6.5); group start: 0,
    1, or the size class of a tracked group's run (§7.2).  The version is frame[4]."""
    assert frame[:4] == b"\xb1NLM" and frame[4] in (13, 14, 15, 16, 17)
    flags = frame[5]
    p = 6 + (32 if flags & 8 else 0) + 4
    blocks = []
    while frame[p] != 0x80:
        t = frame[p]
        size, p = read_varint(frame, p + 1)
        psize, p = read_varint(frame, p)
        blocks.append(((t >> 3 or 1) if t & 4 else 0, t & 3, size, bytes(frame[p:p + psize])))
        p += psize + (4 if (t & 3) in (2, 3) else 0)
    return ("heads" if flags & 0x10 else bool(flags & 1)), blocks
