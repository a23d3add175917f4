"""Shared helpers of the lm_in_mixer measurements: the dev sample (documents per source) and a line classifier.

The corpus is found at $NLMCODEC_CORPUS or ../shared/corpus (relative to the repository root).  Only dev/ is read.
"""
from __future__ import annotations

import json
import lzma
import os
import pathlib
import random
import re

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent

# the sources of the dev files, in report order; "tech" sources are the technical English of issue 41
SOURCES = ("gutenberg", "python-docs", "python-peps", "debian-manpages", "debian-linux-doc", "gnu-info", "pypi-docs")
TECH = ("debian-manpages", "debian-linux-doc", "gnu-info", "pypi-docs")


def corpus_dir() -> pathlib.Path:
    env = os.environ.get("NLMCODEC_CORPUS")
    return pathlib.Path(env) if env else (ROOT / ".." / "shared" / "corpus").resolve()


def sample(per_source: int, cap: int, seed: int = 41):
    """{source: [(doc id, bytes)]}: documents drawn at random (seeded) per source until per_source bytes; a
    document longer than 2 cap is cut to cap bytes from a line start a third of the way in (a book's middle,
    not its licence header), a shorter one longer than cap to its first cap bytes (cut at a line end)."""
    docs = {s: [] for s in SOURCES}
    for f in sorted((corpus_dir() / "dev").glob("*.jsonl.xz")):
        with lzma.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                if d["source"] in docs:
                    docs[d["source"]].append((d["id"], d["text"]))
    out = {}
    for s in SOURCES:
        r = random.Random(f"{seed}:{s}")
        pool = sorted(docs[s])
        r.shuffle(pool)
        got, n = [], 0
        for did, text in pool:
            b = text.encode("utf-8")
            if len(b) < 512:
                continue
            if len(b) > 2 * cap:
                start = b.find(b"\n", len(b) // 3) + 1
                b = b[start:start + cap]
            if len(b) > cap:
                b = b[:cap]
            cut = b.rfind(b"\n")
            if cut > cap // 2:
                b = b[:cut + 1]
            got.append((str(did), b))
            n += len(b)
            if n >= per_source:
                break
        out[s] = got
    return out


LINE_TYPES = ("prose", "markup", "code", "quoted", "header", "blank", "other")
_TROFF = re.compile(rb"^[.'][A-Za-z\\\"]")
_TEXI = re.compile(rb"^@[A-Za-z]")
_RST = re.compile(rb"^\s*\.\. |^\s*:[A-Za-z_][\w -]*:(\s|$)|^([=\-~^*#\"'`+_])\2{2,}\s*$|^#{1,6} ")
_QUOTE = re.compile(rb"^\s*>")
_HEADER = re.compile(rb"^[A-Z][A-Za-z0-9-]{1,30}: \S")
_CODE = re.compile(rb"^\s*(>>>|\.\.\.|\$ |# |//|/\*|\*/|[{}]|def |class |import |from \S+ import|return\b|if \(|for \()")


def line_type(line: bytes) -> int:
    """Index into LINE_TYPES of one line (without or with its newline)."""
    s = line.rstrip(b"\r\n")
    if not s.strip():
        return 5
    if _TROFF.match(s) or _TEXI.match(s) or _RST.match(s):
        return 1
    if _QUOTE.match(s):
        return 3
    if _HEADER.match(s):
        return 4
    t = s.strip()
    letters = sum(1 for c in t if 65 <= c <= 90 or 97 <= c <= 122 or c >= 128)
    sym = sum(1 for c in t if not (65 <= c <= 90 or 97 <= c <= 122 or c >= 128 or 48 <= c <= 57 or c == 32))
    indent = len(s) - len(s.lstrip())
    if _CODE.match(s) or (indent >= 4 or s[:1] == b"\t") and sym >= 0.12 * len(t):
        return 2
    if letters >= 0.6 * len(t.replace(b" ", b"")) and len(t.split()) >= 3 or letters >= 0.75 * len(t):
        return 0
    return 6


def line_types(data: bytes) -> np.ndarray:
    """Line type of every byte (the newline belongs to its line)."""
    out = np.empty(len(data), dtype=np.int8)
    pos = 0
    for line in data.splitlines(keepends=True):
        out[pos:pos + len(line)] = line_type(line)
        pos += len(line)
    return out
