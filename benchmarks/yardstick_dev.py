"""The encoder's SCREEN_RATIO (python/nlmcodec/_encode.py), chosen on dev/ only: when is zlib level 1 a safe
stand-in for the lzma preset-1 yardstick?

The encoder asks, of every block the word model codes and of every all-word-model group, whether the word
model's size is above BYTE_TRY_RATIO (0.7) x lzma preset 1 of the same bytes (then it tries lzma -9e and the
byte model too).  The screen answers "no" without the yardstick when the size is at most SCREEN_RATIO x zlib
level 1 (of the block; of the group: the sum over its blocks).  This script compresses each text with the
real encoder, answering every such question with the yardstick as before (so the frames are the ones
without the screen), and records size, zlib -1 and lzma -1 of each.  For each candidate ratio it counts the
questions the screen answers (the speed) and those it would answer wrongly (a frame that would change).

Texts: dev/*.jsonl.xz, per source (gutenberg, python-peps, python-docs) its documents in order up to
--per-source bytes, one compress() each (the tuning set); ood/ and the Calgary and Canterbury files are
reported only, never tuned on.

    python benchmarks/yardstick_dev.py [--per-source 4000000] [--modes static,dynamic,heads] [--out benchmarks/yardstick_dev.md]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import nlmcodec  # noqa: E402
from nlmcodec import _encode  # noqa: E402
from nlmcodec import _frame as F  # noqa: E402
from nlmcodec._bench import require_corpus_dir  # noqa: E402
from _benchlib import write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402

CANDIDATES = (0.45, 0.5, 0.55, 0.6, 0.65)
REPORT_FILES = ("calgary/book1", "calgary/book2", "calgary/news", "calgary/paper1", "calgary/progc",
                "calgary/obj1", "calgary/geo", "canterbury/alice29.txt", "canterbury/cp.html",
                "canterbury/fields.c", "canterbury/kennedy.xls", "canterbury/ptt5")


def record(text: bytes, adapt) -> list:
    """(size, zlib -1, lzma -1 of the bytes, the yardstick's answer) of every question compress(text) asks
    _above_try_ratio; it is answered by the yardstick, so the frame is the one without the screen."""
    seen = []

    def exact(raw, size, zsize):
        lz = len(F.lzma_compress(raw, 1))
        seen.append((size, zsize, lz, size > _encode.BYTE_TRY_RATIO * lz))
        return seen[-1][3]

    real = _encode._above_try_ratio
    _encode._above_try_ratio = exact
    try:
        nlmcodec.compress(text, adapt=adapt)
    finally:
        _encode._above_try_ratio = real
    return seen


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=4_000_000)
    ap.add_argument("--modes", default="static,dynamic,heads")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    corpus = pathlib.Path(require_corpus_dir())
    texts = [("dev", k, v) for k, v in dev_set(a.per_source).items()]
    texts += [("ood", p.name, p.read_bytes()) for p in sorted((corpus / "ood").iterdir())]
    texts += [("bench", n, (corpus / "bench" / n).read_bytes()) for n in REPORT_FILES
              if (corpus / "bench" / n).is_file()]
    rows = [f"Command: `python benchmarks/yardstick_dev.py --per-source {a.per_source} --modes {a.modes}`; "
            f"default model, format {nlmcodec.FORMAT_VERSION}.  Per question of `_encode._above_try_ratio` "
            "(is the word model above 0.7 x lzma -1?): the word model's size over zlib -1 and zlib -1 over "
            "lzma -1 of the same bytes; per candidate SCREEN_RATIO s, the questions the screen answers "
            "(size <= s x zlib -1) and, of those, the ones where the yardstick says yes (the screen would "
            "change the frame).", "",
            "| set | text | mode | questions | yardstick yes | size / zlib-1 (no's, max) | zlib-1 / lzma-1 (max) | "
            + " | ".join(f"s={s}: screened, wrong" for s in CANDIDATES) + " |",
            "|---|---|---|---|---|---|---|" + "---|" * len(CANDIDATES)]
    worst, dev_zl = {}, 0.0
    for mode in a.modes.split(","):
        for kind, name, text in texts:
            seen = record(text, mode)
            yes = sum(q[3] for q in seen)
            r_no = max((s / z for s, z, _, above in seen if not above), default=0.0)
            r_zl = max((z / lz for _, z, lz, _ in seen), default=0.0)
            if kind == "dev":
                dev_zl = max(dev_zl, r_zl)
            cells = []
            for c in CANDIDATES:
                screened = [q for q in seen if q[0] <= c * q[1]]
                wrong = [q for q in screened if q[3]]
                cells.append(f"{len(screened)}, {len(wrong)}")
                w = worst.setdefault((kind, c), [0, 0, 0])
                w[0] += len(seen)
                w[1] += len(screened)
                w[2] += len(wrong)
            rows.append(f"| {kind} | {name} | {mode} | {len(seen)} | {yes} | {r_no:.3f} | {r_zl:.3f} | "
                        + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
    rows += ["", "| set | " + " | ".join(f"s={c}" for c in CANDIDATES) + " |", "|---|" + "---|" * len(CANDIDATES)]
    for kind in ("dev", "ood", "bench"):
        rows.append(f"| {kind} | " + " | ".join(
            "{1}/{0} screened, {2} wrong".format(*worst.get((kind, c), (0, 0, 0))) for c in CANDIDATES) + " |")
    rows += ["", f"On dev zlib -1 is at most {dev_zl:.3f} x lzma -1, so a screen below BYTE_TRY_RATIO / {dev_zl:.3f} = "
             f"{_encode.BYTE_TRY_RATIO / dev_zl:.3f} answers as the yardstick on every dev block and group whatever "
             f"the word model's size.  The encoder's SCREEN_RATIO = {_encode.SCREEN_RATIO} (the bound it keeps on "
             f"zlib -1 / lzma -1: {_encode.BYTE_TRY_RATIO / _encode.SCREEN_RATIO:.2f})."]
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
