"""Unknown-token rate of every benchmark file at a model's vocabulary -> benchmarks/unk_rates.md.

    OPENBLAS_NUM_THREADS=1 python benchmarks/unk_rates.py [--model PATH] [-o benchmarks/unk_rates.md]

Model (vocabulary): ``--model``, else the bundled ``default`` (the newest ``python/nlmcodec/models/default-N.nlmm``) if there is one, else
``runs/default/best.nlmm`` (the default training run's current best checkpoint; every checkpoint of that run
has the same vocabulary).

Files: every file under bench/ of the shared corpus ($NLMCODEC_CORPUS or ../shared/corpus) (Silesia ``*.xz`` decompressed in memory) and under
ood/, each lexed as one block with the C lexer (``nlmcodec._core.lex_tokens``, FORMAT.md
§1); plus the dev split dev/dev-00.jsonl.xz as a reference row (each document one block).

A token is unknown when the codec sends it as ``<unk>``: a case-3 word (verbatim mixed case) always;
otherwise when its key -- the ASCII-lowercased body for words of case 0..2, the exact body for numbers and
symbols -- is not one of the vocabulary entries (ids >= 2).  END tokens are excluded from every count.

Columns: bytes; tokens (END excluded); unknown tokens % (of tokens); unknown words % (unknown WORD tokens of
WORD tokens); distinct unknown bodies (distinct exact bodies of the unknown tokens).
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
from nlmcodec._bench import corpus_dir
from nlmcodec._core import lex_tokens
from nlmcodec._model import Model

CORPUS = corpus_dir() or "../shared/corpus"
DEV = os.path.join(CORPUS, "dev", "dev-00.jsonl.xz")
KIND_END, KIND_WORD = 0, 1


def default_model_path() -> str:
    import nlmcodec
    bundled = nlmcodec._bundled_files().get("default")     # the newest default-N
    return str(bundled) if bundled else os.path.join(ROOT, "runs", "default", "best.nlmm")


def load_model(path: str, tries: int = 5) -> Model:
    """Read the file once into memory (the training run may rewrite best.nlmm), retry on a torn read."""
    for i in range(tries):
        try:
            with open(path, "rb") as f:
                return Model.from_bytes(f.read())
        except Exception:
            if i == tries - 1:
                raise
            time.sleep(2)


class Counter:
    def __init__(self, vocab_keys):
        self.vocab = vocab_keys
        self.bytes = self.tokens = self.unk = self.words = self.unk_words = 0
        self.unk_bodies = set()

    def add(self, data: bytes):
        t = lex_tokens(data)
        self.bytes += len(data)
        off, ln = t["off"].tolist(), t["len"].tolist()
        kind, case = t["kind"].tolist(), t["case"].tolist()
        vocab, bodies = self.vocab, self.unk_bodies
        for o, n, k, c in zip(off, ln, kind, case):
            if k == KIND_END:
                continue
            self.tokens += 1
            body = data[o:o + n]
            if k == KIND_WORD:
                self.words += 1
                unk = c == 3 or body.lower() not in vocab     # bytes.lower(): ASCII A-Z only
                self.unk_words += unk
            else:
                unk = body not in vocab
            if unk:
                self.unk += 1
                bodies.add(body)

    def row(self, name):
        return dict(file=name, bytes=self.bytes, tokens=self.tokens, unk_tokens=self.unk,
                    unk_pct=100.0 * self.unk / max(self.tokens, 1), words=self.words, unk_words=self.unk_words,
                    unk_words_pct=100.0 * self.unk_words / max(self.words, 1), distinct_unk=len(self.unk_bodies))


def bench_files():
    out = []
    for sub in ("bench", "ood"):
        top = os.path.join(CORPUS, sub)
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for f in sorted(files):
                if not f.startswith("."):
                    out.append(os.path.join(d, f))
    return out


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".xz") and os.path.basename(os.path.dirname(path)) == "silesia":
        data = lzma.decompress(data)                           # in memory, never on disk
    return data


def dev_documents(path: str):
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)["text"].encode("utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model file (default: the bundled default, else runs/default/best.nlmm)")
    ap.add_argument("-o", "--output", default=os.path.join(HERE, "unk_rates.md"))
    ap.add_argument("--no-dev", action="store_true", help="skip the dev reference row")
    ap.add_argument("--check", default="calgary/paper5,canterbury/alice29.txt,calgary/geo,calgary/obj1",
                    help="comma list of bench files (relative to bench/) whose unknown count is compared with "
                         "the C codec's own unk_tokens statistic (static encode); '' to skip")
    args = ap.parse_args(argv)
    mpath = args.model or default_model_path()
    model = load_model(mpath)
    vocab = set(model.vocab[2:])
    assert len(vocab) == len(model.vocab) - 2, "duplicate vocabulary entries"

    rows = []
    t0 = time.time()
    for p in bench_files():
        c = Counter(vocab)
        c.add(read(p))
        name = os.path.relpath(p, CORPUS)
        if name.endswith(".xz") and "/silesia/" in "/" + name:
            name = name[:-3]
        rows.append(c.row(name))
        print(f"{name:<36} {rows[-1]['tokens']:>10,} tokens  {rows[-1]['unk_pct']:6.2f}% unk", flush=True)
    dev = None
    if not args.no_dev:
        c = Counter(vocab)
        for doc in dev_documents(DEV):
            c.add(doc)
        dev = c.row(os.path.relpath(DEV, CORPUS) + " (reference)")
        print(f"{dev['file']:<36} {dev['tokens']:>10,} tokens  {dev['unk_pct']:6.2f}% unk", flush=True)

    checked = []
    for f in [x for x in args.check.split(",") if x]:
        from nlmcodec._core import Codec
        p = os.path.join(CORPUS, "bench", f)
        codec = Codec(model, adapt=False)
        codec.encode_block(read(p))
        n_codec = int(codec.stats()["unk_tokens"])
        r = next(r for r in rows if r["file"] == os.path.relpath(p, CORPUS))
        if n_codec != r["unk_tokens"]:
            raise SystemExit(f"{f}: counted {r['unk_tokens']} unknown tokens, the codec sent {n_codec}")
        checked.append(f"{os.path.basename(f)} ({n_codec:,})")
        print(f"check {f}: codec unk_tokens {n_codec} == counted", flush=True)

    rel = os.path.relpath(mpath, ROOT)
    cmd = "OPENBLAS_NUM_THREADS=1 python benchmarks/unk_rates.py" + (f" --model {rel}" if args.model else "")
    meta = model.metadata or {}
    lines = [
        "# Unknown-token rates at the default model's vocabulary",
        "",
        f"Command: `{cmd}` (from the repository root; {time.time() - t0:.0f} s).  ",
        f"Model: `{rel}`, model id (SHA-256) `{model.model_id.hex()}`, "
        f"V={model.config['V']}, checkpoint step {meta.get('steps')}, generated {time.strftime('%Y-%m-%d %H:%M')}.",
        "",
        "A token is unknown when the codec sends it as `<unk>`: a case-3 (verbatim mixed-case) word always, "
        "otherwise when its key (ASCII-lowercased body of a case 0–2 word, exact body of a number or symbol) "
        "is not in the vocabulary.  END tokens are excluded from every count.  Each file is one block (C lexer, "
        "FORMAT.md §1); Silesia `.xz` files are decompressed in memory; dev: one block per document.  "
        "*unk words %* = unknown WORD tokens / WORD tokens; *distinct unk* = distinct exact bodies of the "
        "unknown tokens."
        + (f"  Cross-check: the unknown-token counts equal the C codec's own `unk_tokens` statistic (static "
           f"encode) for {', '.join(checked)}." if checked else ""),
        "",
        "| file | bytes | tokens | unk tokens % | unk words % | distinct unk |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows + ([dev] if dev else []):
        name = f"**{r['file']}**" if r is dev else r["file"]
        lines.append(f"| {name} | {r['bytes']:,} | {r['tokens']:,} | {r['unk_pct']:.2f} | "
                     f"{r['unk_words_pct']:.2f} | {r['distinct_unk']:,} |")
    tot_t = sum(r["tokens"] for r in rows)
    tot_u = sum(r["unk_tokens"] for r in rows)
    tot_w = sum(r["words"] for r in rows)
    tot_uw = sum(r["unk_words"] for r in rows)
    lines += ["", f"All benchmark files together (bench + ood, token-weighted): {tot_u:,} of {tot_t:,} tokens unknown "
              f"({100.0 * tot_u / max(tot_t, 1):.2f} %), {tot_uw:,} of {tot_w:,} words "
              f"({100.0 * tot_uw / max(tot_w, 1):.2f} %).", ""]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print(f"written {os.path.relpath(args.output)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
