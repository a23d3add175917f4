"""What a block the word model does not see costs it (dev): the reason a tracked group's block goes to the
byte model only when that is at most SWITCH_RATIO x the word model (_encode.py, docs/format.md §7.4).

    python benchmarks/skip_cost.py -o benchmarks/skip_cost.md

Each dev source's documents, joined (up to --bytes per source), cut into the encoder's blocks; for every second
block i from the second on (at most --samples per source), the default model in heads mode codes the blocks
before it, then block i+1 twice: after coding block i, and after skipping it (the state rolled back, as when the
byte model codes block i).  The extra bytes of the second coding, against block i's own word-model payload, are
what the switch must save to pay; they are a lower bound (the blocks after i+1 pay a little too).
"""
from __future__ import annotations

import argparse
import glob
import json
import lzma
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from nlmcodec import _encode as E, _frame as F  # noqa: E402
from nlmcodec._bench import require_corpus_dir  # noqa: E402
from nlmcodec._core import Codec  # noqa: E402
from nlmcodec._registry import load_model  # noqa: E402


def dev_streams(limit):
    streams = {}
    for path in sorted(glob.glob(os.path.join(require_corpus_dir(), "dev", "*.jsonl.xz"))):
        with lzma.open(path, "rt") as fh:
            for line in fh:
                d = json.loads(line)
                buf = streams.setdefault(d["source"], bytearray())
                if len(buf) < limit:
                    buf += d["text"].encode() + b"\n\n"
    return {k: bytes(v[:limit]) for k, v in sorted(streams.items())}


def skip_cost(model, data, samples):
    pieces = list(E._model_pieces(data))
    extra = own = n = 0
    for i in range(1, len(pieces) - 1, 2):
        if n == samples:
            break
        c = Codec(model, F.adapt_mode("heads"))
        c.reset()
        for p, q in pieces[:i]:
            c.encode_block(data[p:p + q])
        c.save()
        own += len(c.encode_block(data[pieces[i][0]:sum(pieces[i])]))
        nxt = data[pieces[i + 1][0]:sum(pieces[i + 1])]
        seen = len(c.encode_block(nxt))
        c.restore()
        extra += len(c.encode_block(nxt)) - seen
        n += 1
    return n, extra, own


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bytes", type=int, default=700_000)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    model = load_model("default")
    lines = ["# The word model's cost of a block it does not see (dev)", "",
             f"`python benchmarks/skip_cost.py --bytes {a.bytes} --samples {a.samples}`; the default model "
             f"(`{model.name}`), heads mode. *extra*: bytes the next block costs more after the word model skipped "
             "a block than after it coded it; *own*: the skipped blocks' own word-model payloads.", "",
             "| source | blocks skipped | extra | own | extra / own |", "|---|---:|---:|---:|---:|"]
    te = to = 0
    for src, data in dev_streams(a.bytes).items():
        n, extra, own = skip_cost(model, data, a.samples)
        te, to = te + extra, to + own
        lines.append(f"| {src} | {n} | {extra:,} | {own:,} | {extra / own:.2%} |")
        print(lines[-1], file=sys.stderr, flush=True)
    lines.append(f"| **all** | | {te:,} | {to:,} | {te / to:.2%} |")
    lines += ["", f"A switch to the byte model must save more than this share of the block's word-model payload: "
              f"`SWITCH_RATIO` = {E.SWITCH_RATIO} (the block goes to the byte model when it is at most that times "
              "the word model's payload) leaves room for the blocks after the next one, which pay a little too."]
    text = "\n".join(lines) + "\n"
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
