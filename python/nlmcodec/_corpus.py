"""Training corpus reading and tokenisation (training side only; never imported on the codec path).

* ``iter_documents(paths)`` yields the bytes of each document: a ``.jsonl.xz`` / ``.jsonl`` shard gives one
  document per line (its ``"text"`` field, UTF-8 encoded), any other file is one document (raw bytes).
* ``lex(data)`` -> dict of numpy arrays as ``nlmcodec._core.lex_tokens`` (the C lexer of docs/format.md §1) when it
  is importable, else a pure-Python regex transcription of docs/format.md §1 (same token boundaries, kinds, cases
  and gap symbols; used only until the C lexer lands, and recorded in the training metadata).
* ``TokenTable``: the corpus as parallel arrays (key index, case, gap, kind) over a table of distinct
  vocabulary keys (the ASCII-lowercased body for case 0..2 and non-words, ``<end>`` for END, the exact body for
  case 3, which is never in-vocabulary), built with a small process pool.

Any file a user names is read.  Our own models are trained on the corpus ``train/`` and ``dev/`` splits only
(DESIGN.md contract 6); tests/test_train.py checks the recorded training commands and that training opens
nothing but the files it is given.
"""

from __future__ import annotations

import json
import lzma
import re

import numpy as np

GAPS = {b"": 0, b" ": 1, b"  ": 2, b"\n": 3, b"\n\n": 4, b"\r\n": 5, b"\t": 6}

_WS = rb"[ \t\n\r\v\f]"
# word characters: ASCII letters, and the 2-byte UTF-8 letters U+00C0..U+024F except U+00D7, U+00F7
_WCH = rb"(?:[A-Za-z]|\xC3[\x80-\x96\x98-\xB6\xB8-\xBF]|[\xC4-\xC8][\x80-\xBF]|\xC9[\x80-\x8F])"
_UTF8 = (rb"(?:[\xC2-\xDF][\x80-\xBF]|\xE0[\xA0-\xBF][\x80-\xBF]|[\xE1-\xEC\xEE\xEF][\x80-\xBF]{2}"
         rb"|\xED[\x80-\x9F][\x80-\xBF]|\xF0[\x90-\xBF][\x80-\xBF]{2}|[\xF1-\xF3][\x80-\xBF]{3}"
         rb"|\xF4[\x80-\x8F][\x80-\xBF]{2})")
_TOKEN_RE = re.compile(rb"(" + _WS + rb"*)(" + _WCH + rb"+|[0-9]+|" + _UTF8 + rb"|[^ \t\n\r\v\f])", re.DOTALL)
_WORD_FULL = re.compile(_WCH + rb"+")

END_KEY = b"\x00<end>"      # internal key of END tokens (cannot collide with a body: bodies have no NUL+text)


def iter_documents(paths):
    for p in paths:
        p = str(p)
        if p.endswith(".jsonl.xz") or p.endswith(".jsonl"):
            opener = lzma.open if p.endswith(".xz") else open
            with opener(p, "rb") as f:      # json.loads decodes the UTF-8 (errors name the file and line)
                for n, line in enumerate(f, 1):
                    line = line.strip()
                    if line:
                        try:
                            text = json.loads(line)["text"]
                        except (ValueError, KeyError, TypeError):
                            text = None
                        if not isinstance(text, str):
                            raise ValueError(f'{p}: line {n}: not a JSON object with a "text" string')
                        yield text.encode("utf-8")
        else:
            with open(p, "rb") as f:
                yield f.read()


def _case_of(body: bytes) -> int:
    low = body.lower()
    if low == body:
        return 0
    b0 = body[0]
    if 65 <= b0 <= 90 and low[1:] == body[1:]:
        return 1
    if 65 <= b0 <= 90 and body.upper() == body and sum(1 for c in body if 65 <= c <= 90) >= 2:
        return 2
    return 3


def _kind_of(body: bytes) -> int:
    b0 = body[0]
    if 48 <= b0 <= 57:
        return 2
    if (65 <= b0 <= 90) or (97 <= b0 <= 122) or (0xC3 <= b0 <= 0xC9 and _WORD_FULL.fullmatch(body)):
        return 1
    return 3


def _split_long(body: bytes, kind: int):
    """Pieces of at most 32 (word) or 16 (number) bytes; a word is never cut inside a two-byte letter
    (docs/format.md §1: a letter that does not fit starts the next piece)."""
    lim, out, i = (32 if kind == 1 else 16), [], 0
    while i < len(body):
        j = min(i + lim, len(body))
        if j < len(body) and 0x80 <= body[j] <= 0xBF:
            j -= 1
        out.append(body[i:j])
        i = j
    return out


def lex_python(data: bytes) -> dict:
    """Pure-Python docs/format.md §1 lexer returning the arrays of nlmcodec._core.lex_tokens."""
    pairs = _TOKEN_RE.findall(data)
    off, ln, goff, glen, kind, case, gap = [], [], [], [], [], [], []
    pos = 0
    for g, b in pairs:
        k = _kind_of(b)
        pieces = _split_long(b, k) if (k in (1, 2) and len(b) > (32 if k == 1 else 16)) else [b]
        first = True
        for piece in pieces:
            gg = g if first else b""
            goff.append(pos); glen.append(len(gg)); pos += len(gg)
            off.append(pos); ln.append(len(piece)); pos += len(piece)
            kind.append(k); case.append(_case_of(piece) if k == 1 else 0); gap.append(GAPS.get(gg, 7))
            first = False
    trail = data[pos:]
    goff.append(pos); glen.append(len(trail)); off.append(len(data)); ln.append(0)
    kind.append(0); case.append(0); gap.append(GAPS.get(trail, 7))
    u32 = lambda a: np.asarray(a, dtype=np.uint32)
    u8 = lambda a: np.asarray(a, dtype=np.uint8)
    return {"off": u32(off), "len": u32(ln), "gap_off": u32(goff), "gap_len": u32(glen),
            "kind": u8(kind), "case": u8(case), "gap": u8(gap)}


def lexer_name() -> str:
    try:
        from nlmcodec._core import lex_tokens  # noqa: F401
        return "c"
    except Exception:
        return "python"


def lex(data: bytes) -> dict:
    try:
        from nlmcodec._core import lex_tokens
    except Exception:
        return lex_python(data)
    return lex_tokens(data)


def key_of(body: bytes, kind: int, case: int) -> bytes:
    if kind == 0:
        return END_KEY
    if case == 3:
        return body
    return body.lower()


def _doc_keys(data: bytes, memo: dict):
    """Fast path: (keys list, case list, gap list, kind list) of one document."""
    t = lex(data)
    off, ln, kind, case, gap = t["off"], t["len"], t["kind"], t["case"], t["gap"]
    keys = [None] * len(off)
    offl, lnl, kl, cl = off.tolist(), ln.tolist(), kind.tolist(), case.tolist()
    for i in range(len(offl) - 1):
        o = offl[i]
        b = data[o:o + lnl[i]]
        keys[i] = b if cl[i] == 3 else b.lower()
    keys[-1] = END_KEY
    return keys, case, gap, kind


def _fast_doc(data: bytes):
    """Python-lexer fast path straight to keys (avoids building offsets)."""
    pairs = _TOKEN_RE.findall(data)
    keys, cases, gaps, kinds = [], [], [], []
    kmemo = _fast_doc.memo
    pos = 0
    for g, b in pairs:
        info = kmemo.get(b)
        if info is None:
            k = _kind_of(b)
            if k in (1, 2) and len(b) > (32 if k == 1 else 16):
                info = [(p, k, _case_of(p) if k == 1 else 0) for p in _split_long(b, k)]
            else:
                info = [(b, k, _case_of(b) if k == 1 else 0)]
            info = [(p if c == 3 else p.lower(), k, c) for p, k, c in info]
            if len(kmemo) < 2_000_000:
                kmemo[b] = info
        gs = GAPS.get(g, 7)
        for j, (key, k, c) in enumerate(info):
            keys.append(key); kinds.append(k); cases.append(c); gaps.append(gs if j == 0 else 0)
        pos += len(g) + len(b)
    trail = data[pos:]
    keys.append(END_KEY); kinds.append(0); cases.append(0); gaps.append(GAPS.get(trail, 7))
    return keys, cases, gaps, kinds


_fast_doc.memo = {}


def tokenize_file(path: str):
    """(distinct keys list, key index int32, case u8, gap u8, kind u8) of one file (all its documents)."""
    use_c = lexer_name() == "c"
    table = {}
    kidx, cases, gaps, kinds = [], [], [], []
    for doc in iter_documents([path]):
        if use_c:
            keys, c, g, k = _doc_keys(doc, None)
            c, g, k = c.tolist(), g.tolist(), k.tolist()
        else:
            keys, c, g, k = _fast_doc(doc)
        sd = table.setdefault
        kidx.extend([sd(x, len(table)) for x in keys])
        cases.extend(c); gaps.extend(g); kinds.extend(k)
    keys = list(table.keys())
    return (keys, np.asarray(kidx, dtype=np.int32), np.asarray(cases, dtype=np.uint8),
            np.asarray(gaps, dtype=np.uint8), np.asarray(kinds, dtype=np.uint8))


class TokenTable:
    """A tokenised corpus: parallel arrays over a global table of distinct keys."""

    def __init__(self, keys, kidx, case, gap, kind):
        self.keys = keys                      # list[bytes]
        self.kidx = kidx                      # int32 (N,)
        self.case = case
        self.gap = gap
        self.kind = kind

    def __len__(self):
        return len(self.kidx)

    def key_counts(self):
        return np.bincount(self.kidx, minlength=len(self.keys))

    @classmethod
    def from_files(cls, paths, processes: int = 2, key_index: dict | None = None):
        paths = [str(p) for p in paths]
        if processes > 1 and len(paths) > 1:
            import multiprocessing as mp
            with mp.get_context("fork").Pool(processes) as pool:
                results = pool.map(tokenize_file, paths, chunksize=1)
        else:
            results = [tokenize_file(p) for p in paths]
        table = {} if key_index is None else dict(key_index)
        keys = [None] * len(table)
        for k, i in table.items():
            keys[i] = k
        kidx, case, gap, kind = [], [], [], []
        for lk, li, c, g, k in results:
            remap = np.empty(len(lk), dtype=np.int32)
            for j, key in enumerate(lk):
                i = table.get(key)
                if i is None:
                    i = table[key] = len(keys)
                    keys.append(key)
                remap[j] = i
            kidx.append(remap[li]); case.append(c); gap.append(g); kind.append(k)
        cat = lambda a, dt: np.concatenate(a) if a else np.zeros(0, dt)
        return cls(keys, cat(kidx, np.int32), cat(case, np.uint8), cat(gap, np.uint8), cat(kind, np.uint8))

    def save(self, path):
        lens = np.array([len(k) for k in self.keys], dtype=np.int32)
        np.savez(path, kidx=self.kidx, case=self.case, gap=self.gap, kind=self.kind, key_len=lens,
                 key_bytes=np.frombuffer(b"".join(self.keys), dtype=np.uint8))

    @classmethod
    def load(cls, path):
        z = np.load(path)
        raw = z["key_bytes"].tobytes()
        ends = np.cumsum(z["key_len"]).tolist()
        starts = [0] + ends[:-1]
        keys = [raw[a:b] for a, b in zip(starts, ends)]
        return cls(keys, z["kidx"], z["case"], z["gap"], z["kind"])
