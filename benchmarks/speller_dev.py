"""The byte-model speller on dev (issue 9 item 3, codec/FORMAT.md §5.4): which speller, and whether the byte
model learns from every body or only from the ones it spells.  Measured on dev/ only.

The set: per source of dev/*.jsonl.xz (gutenberg, python-peps, python-docs), its documents in order up to
PER_SOURCE bytes, each coded as one group of 64 KiB word-model blocks from the trained state (default
model), static and dynamic, with each speller kind of the C core:

    ppm      the primed order-4 PPM (frame formats 1-4)
    cm       the byte model over the token stream, learning from the bodies it spells (format 5)
    cm_all   the same byte model learning from every body (in no format; measured here)

    python benchmarks/speller_dev.py [--per-source 300000] [--out benchmarks/speller_dev.md]

Output: payload bytes, bits per byte, the spelled bodies' bits (cache escapes' spelling) and CPU seconds.
"""
from __future__ import annotations

import argparse
import collections
import json
import lzma
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import nlmcodec  # noqa: E402
from nlmcodec import _core  # noqa: E402
from nlmcodec._bench import require_corpus_dir  # noqa: E402
from nlmcodec._frame import codec_options  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402

KINDS = {"ppm": _core.SPELLER_PPM, "cm": _core.SPELLER_CM, "cm_all": _core.SPELLER_CM_ALL}


def dev_set(per_source: int) -> dict:
    texts = collections.OrderedDict()
    for f in sorted((pathlib.Path(require_corpus_dir()) / "dev").glob("*.jsonl.xz")):
        with lzma.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                src = d["source"]
                cur = texts.setdefault(src, bytearray())
                if len(cur) < per_source:
                    cur += d["text"].encode("utf-8")[: per_source - len(cur)]
    return {k: bytes(v) for k, v in texts.items()}


def code(model, text: bytes, adapt: bool, kind: int):
    # format 5's comparison: the match flag of format 6 off
    sizes, st, dt = code_group(model, text, adapt, **dict(codec_options(5), speller=kind))
    return sum(sizes), st["spell_bits"], dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=300_000)
    ap.add_argument("--out", default=None)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of " + ",".join(KINDS))
    ap.add_argument("--modes", default="static,dynamic")
    a = ap.parse_args(argv)
    kinds = {k: KINDS[k] for k in a.kinds.split(",")}
    model = nlmcodec.load_model("default")
    texts = dev_set(a.per_source)
    rows = [f"Command: `python benchmarks/speller_dev.py --per-source {a.per_source}`; default model "
            f"(id {model.model_id.hex()[:16]}); one group per source, 64 KiB blocks.", "",
            "| source | bytes | mode | speller | payload bytes | bits/byte | spelled bits | CPU s |",
            "|---|---|---|---|---|---|---|---|"]
    sums = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for adapt in [m == "dynamic" for m in a.modes.split(",")]:
        for src, text in texts.items():
            for name, kind in kinds.items():
                n, sb, dt = code(model, text, adapt, kind)
                mode = "dynamic" if adapt else "static"
                s = sums[(mode, name)]
                s[0] += n; s[1] += sb; s[2] += dt
                rows.append(f"| {src} | {len(text)} | {mode} | {name} | {n} | {8 * n / len(text):.4f} | "
                            f"{sb:.0f} | {dt:.1f} |")
                print(rows[-1], flush=True)
    allb = sum(len(t) for t in texts.values())
    rows += ["", "| mode | speller | payload bytes | bits/byte | spelled bits | CPU s |", "|---|---|---|---|---|---|"]
    for (mode, name), (n, sb, dt) in sums.items():
        rows.append(f"| {mode} | {name} | {n} | {8 * n / allb:.4f} | {sb:.0f} | {dt:.1f} |")
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
