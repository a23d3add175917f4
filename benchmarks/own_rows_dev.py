"""Issue 10, item 3: would a word spelled once pay for its own output row and embedding, learned by the
dynamic update, instead of `<unk>` + a spelling-cache pointer (formats 9-10)?  Measured on the dev sample.

    python tools/dev_sample.py runs/dev_sample
    python benchmarks/own_rows_dev.py runs/dev_sample/dev_*.txt [--out benchmarks/own_rows_dev.md]

For each text, the lowercase-able unknown words (WORD tokens of case 0-2 whose body is not in the vocabulary)
that occur at least twice are added to the default model as vocabulary words of `<unk>`'s class, each row
(embedding E, output Wo and bo, case and gap biases Bc and Bg) a copy of `<unk>`'s, so the variant starts by
giving each of them `<unk>`'s probability and the dynamic update then learns its rows from its occurrences.
Both models code the text as one group of the encoder's word-model blocks (dynamic mode, the current format)
with the codec's per-token trace on, and the exact bits are compared by token:

* repeats: the second and later occurrences of the added words: `<unk>` + pointer (+ match flag, case, gap)
  against the word's own row;
* first occurrences: not comparable (the real scheme would spell them as today; the variant knows them
  already), reported and left out of the estimate;
* every other token: what the added rows cost them (the rows take probability from `<unk>`'s class, and in
  the variant they do so from the start of the text, before each word first appears: so this column
  over-states the cost, which biases the estimate against the rows).

Estimate of what the rows would save = (repeats' bits today - with rows) + (other tokens' bits today - with
rows), in bytes, against the text's payload today.  Exact bits from the coder's quantised frequencies
(nlm_codec trace); the variant is a measurement device, not a format.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

import nlmcodec
from nlmcodec import _core
from nlmcodec._encode import _model_pieces
from nlmcodec._model import Model
from nlmcodec.reference import join_params, shapes, split_params

ROWS = ("E", "Wo", "bo", "Bc", "Bg")     # the V-indexed tensors (FORMAT.md §2.2)


def unknown_repeats(model, text: bytes):
    """The bodies (lowercased, as sent) of WORD tokens of case 0-2 not in the vocabulary, seen twice or more."""
    known = set(model.vocab)
    counts = {}
    for t in _core.lex_tokens(text):
        if t["kind"] == _core.KIND_WORD and t["case"] <= 2:
            b = text[t["off"]:t["off"] + t["len"]].lower()
            if b not in known:
                counts[b] = counts.get(b, 0) + 1
    return sorted(b for b, n in counts.items() if n >= 2)


def with_rows(model, bodies):
    """The model with `bodies` appended to <unk>'s class, each row a copy of <unk>'s."""
    cfg = dict(model.config)
    V, D, H, C, arch = cfg["V"], cfg["D"], cfg["H"], cfg["C"], cfg["arch"]
    names = [n for n, _ in shapes(V, D, H, C, arch)]
    T = dict(zip(names, (np.array(t) for t in split_params(model.params, V, D, H, C, arch))))
    cs = np.array(model.class_start, dtype=np.int64)
    c0 = int(np.searchsorted(cs, 0, side="right") - 1)            # the class of id 0
    pos, k = int(cs[c0 + 1]), len(bodies)
    for n in ROWS:
        T[n] = np.insert(T[n], pos, np.repeat(T[n][:1], k, axis=0), axis=0)
    vocab = list(model.vocab)
    vocab[pos:pos] = list(bodies)
    cs[c0 + 1:] += k
    cfg["V"] = V + k
    return Model(cfg, join_params([T[n] for n in names]), model.ms, vocab, cs, model.speller_prime,
                 name="own-rows", param_dtype=model.param_dtype, kn=model.kn), pos


def traced_group(model, text: bytes):
    """(payload bytes, per-token bits, per-token body or None for END) of text as one dynamic group."""
    c = _core.Codec(model, True)
    c.reset()
    c.trace(True)
    size, bits, bodies = 0, [], []
    for pos, k in _model_pieces(text):
        piece = text[pos:pos + k]
        size += len(c.encode_block(piece))
        tr = c.trace_records()
        toks = _core.lex_tokens(piece)
        assert len(tr) == len(toks), (len(tr), len(toks))
        bits.append(tr["bits"].sum(axis=1))
        bodies += [piece[t["off"]:t["off"] + t["len"]].lower() if t["kind"] == _core.KIND_WORD and t["case"] <= 2
                   else None for t in toks]
    return size, np.concatenate(bits), bodies


def measure(model, path):
    text = pathlib.Path(path).read_bytes()
    added = unknown_repeats(model, text)
    variant, _ = with_rows(model, added)
    base_size, base_bits, bodies = traced_group(model, text)
    var_size, var_bits, _ = traced_group(variant, text)
    added_set, seen = set(added), set()
    kind = np.zeros(len(bodies), dtype=np.int8)                  # 0 other, 1 first occurrence, 2 repeat
    for i, b in enumerate(bodies):
        if b in added_set:
            kind[i] = 2 if b in seen else 1
            seen.add(b)
    row = {"file": pathlib.Path(path).name, "bytes": len(text), "tokens": len(bodies), "added": len(added),
           "base_size": base_size, "var_size": var_size}
    for k, name in ((2, "repeats"), (1, "first"), (0, "other")):
        row[name] = (int((kind == k).sum()), float(base_bits[kind == k].sum()), float(var_bits[kind == k].sum()))
    saved_bits = (row["repeats"][1] - row["repeats"][2]) + (row["other"][1] - row["other"][2])
    row["saved_bytes"] = saved_bits / 8
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("texts", nargs="+")
    ap.add_argument("--model", default="default")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    model = nlmcodec.load_model(a.model)
    lines = [f"`python benchmarks/own_rows_dev.py {' '.join(argv or sys.argv[1:])}` (model {a.model}, dynamic, "
             f"format {nlmcodec.FORMAT_VERSION})", "",
             "| text | bytes | tokens | words added | repeats: n, bits today → with rows | "
             "first occurrences: n, bits today → with rows | other tokens: n, bits today → with rows | "
             "payload today | estimated change with rows |",
             "|---|---:|---:|---:|---|---|---|---:|---:|"]
    for p in a.texts:
        r = measure(model, p)
        f = lambda t: f"{t[0]:,}, {t[1]:,.0f} → {t[2]:,.0f}"     # noqa: E731
        lines.append(f"| {r['file']} | {r['bytes']:,} | {r['tokens']:,} | {r['added']:,} | {f(r['repeats'])} | "
                     f"{f(r['first'])} | {f(r['other'])} | {r['base_size']:,} | "
                     f"{-r['saved_bytes']:+,.0f} B ({-100 * r['saved_bytes'] / r['base_size']:+.2f}%) |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if a.out:
        pathlib.Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
