"""Format 7's block end (codec/FORMAT.md §3.2 step 6, §3.5): the figures the README and FORMAT.md quote.

    python benchmarks/block_end.py

1. What one cut costs: alice29's first 120 KB as one word-model block against two blocks of one group, cut
   after a newline near each given fraction, static, as format 6 and format 7 code blocks (exact bytes).
2. Which of the 14 English files have 64 KiB pieces over the 16,384-token bound (the encoder's extra cuts).
"""
from __future__ import annotations

import lzma
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import nlmcodec  # noqa: E402
from nlmcodec import _core, _frame as F  # noqa: E402
from nlmcodec._bench import require_corpus_dir  # noqa: E402
from nlmcodec._encode import BLOCK_SIZE, _model_pieces, _pieces  # noqa: E402

ENGLISH = ["canterbury/alice29.txt", "canterbury/asyoulik.txt", "canterbury/lcet10.txt",
           "canterbury/plrabn12.txt", "calgary/book1", "calgary/book2", "calgary/news", "calgary/paper1",
           "calgary/paper2", "calgary/paper3", "calgary/paper4", "calgary/paper5", "calgary/paper6",
           "silesia/dickens.xz"]


def payload(model, version, blocks):
    c = _core.Codec(model, False)
    c.reset(**dict(F.codec_options(version), max_tokens=0))
    return sum(len(c.encode_block(b)) for b in blocks)


def main():
    bench = pathlib.Path(require_corpus_dir()) / "bench"
    model = nlmcodec.load_model("default")
    text = (bench / "canterbury" / "alice29.txt").read_bytes()[:120000]
    text = text[:text.rindex(b"\n") + 1]
    print("| cut after byte | format 6: bytes over one block | format 7 |\n|---|---|---|")
    one = {v: payload(model, v, [text]) for v in (6, 7)}
    for frac in (0.27, 0.4, 0.5, 0.55, 0.6):
        cut = text.rindex(b"\n", 0, int(len(text) * frac)) + 1
        print(f"| {cut:,} | " + " | ".join(str(payload(model, v, [text[:cut], text[cut:]]) - one[v])
                                        for v in (6, 7)) + " |")
    print("\n| file | 64 KiB pieces | word-model blocks (format 7) |\n|---|---|---|")
    for name in ENGLISH:
        data = (bench / name).read_bytes()
        data = lzma.decompress(data) if name.endswith(".xz") else data
        print(f"| {name.split('/')[-1]} | {len(list(_pieces(data, BLOCK_SIZE)))} | {len(list(_model_pieces(data)))} |")


if __name__ == "__main__":
    main()
