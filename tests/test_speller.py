"""Spelling cache, speller and literal gaps (csrc/speller): builds tests/c/test_speller.c (-O2 and
-O0 -DNLM_NO_SIMD) and runs it on word lists made here:

* priming list: lowercased words of the first ~12 MB of corpus/train outside its 16k most frequent words;
* novel words: distinct out-of-vocabulary words of corpus/dev that are not in the priming list;
* stream: the out-of-vocabulary tokens of corpus/dev in text order (repeats: the cache).

Only train and dev are read (never bench or ood)."""
import collections
import os
import pathlib
import re
import subprocess
import sys

import pytest

from corpus_cache import CORPUS as _CORPUS, head_text

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402

pytestmark = pytest.mark.one_lane   # no binding involved: the cffi lane skips it

CSRC = cbuild.CSRC

CORPUS = str(_CORPUS)
SOURCES = [CSRC / "speller" / "speller.c", *cbuild.BYTEMODEL]
WORD = re.compile(rb"[A-Za-z]+")


def read_text(path, limit):
    return head_text(path, limit)


@pytest.fixture(scope="module")
def lists(tmp_path_factory):
    train_p = os.path.join(CORPUS, "train", "train-00.jsonl.xz")
    dev_p = os.path.join(CORPUS, "dev", "dev-00.jsonl.xz")
    if not (os.path.exists(train_p) and os.path.exists(dev_p)):
        pytest.skip("corpus not available")
    tmp = tmp_path_factory.mktemp("speller")
    train = read_text(train_p, 12_000_000)
    dev = read_text(dev_p, 3_000_000)
    cnt = collections.Counter(w.lower() for w in WORD.findall(train))
    vocab = {w for w, _ in cnt.most_common(16000)}
    prime = sorted(w for w in cnt if w not in vocab)
    unk = [w.lower() for w in WORD.findall(dev) if w.lower() not in vocab]
    pset, seen, novel = set(prime), set(), []
    for w in unk:
        if w not in pset and w not in seen:
            seen.add(w)
            novel.append(w)
    paths = [str(tmp / n) for n in ("prime.txt", "novel.txt", "stream.txt")]
    for p, ws in zip(paths, (prime, novel, unk[:20000])):
        with open(p, "wb") as f:
            f.write(b"\n".join(ws))
    return tmp, paths


def build_run(tmp, name, flavour, paths, extra=()):
    exe = str(cbuild.build("test_speller.c", SOURCES, tmp, flavour, strict=False, name=name))
    r = subprocess.run([exe, *paths, *extra], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ALL OK" in r.stdout, r.stdout + r.stderr
    return r.stdout


def test_speller(lists):
    tmp, paths = lists
    o2 = build_run(tmp, "s_o2", "simd", paths)
    print(o2)
    o0 = build_run(tmp, "s_o0", "ref", paths, ["quick"])
    assert re.findall(r"^hash .*$", o2, re.M) == re.findall(r"^hash .*$", o0, re.M)
    primed = float(re.search(r"novel_primed .*?spell_bits_per_symbol_incl_end ([0-9.]+)", o2).group(1))
    unprimed = float(re.search(r"novel_unprimed .*?spell_bits_per_symbol_incl_end ([0-9.]+)", o2).group(1))
    assert primed < unprimed  # priming helps
    assert primed < 3.45  # measured ~3.16 bits/symbol (END included) on novel dev words
    m = re.search(r"bits_per_token ([0-9.]+) approx_spell_every_token ([0-9.]+)", o2)
    assert float(m.group(1)) < 0.85 * float(m.group(2))  # the cache pays for itself on repeats
