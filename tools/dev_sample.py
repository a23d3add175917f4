"""Write a fixed sample of the dev split (held out from training) to stdout-named files, for tuning.

Every tuned constant of the codec (gap blending, dynamic-evaluation step) is chosen on this sample,
never on benchmark files.  Usage: python tools/dev_sample.py OUT_DIR  -> OUT_DIR/dev_book.txt, dev_tech.txt
"""
import json
import lzma
import pathlib
import sys

DEV = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "dev" / "dev-00.jsonl.xz"


def main(out_dir):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    books, tech = [], []
    with lzma.open(DEV, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            (books if d["source"] == "gutenberg" else tech).append(d["text"])
    # the middle 300 kB of the longest book (skips the Gutenberg header), and the first 150 kB of tech docs
    b = max(books, key=len).encode()
    mid = len(b) // 2
    (out / "dev_book.txt").write_bytes(b[mid - 150_000:mid + 150_000])
    (out / "dev_tech.txt").write_bytes("\n".join(tech).encode()[:150_000])
    for p in sorted(out.glob("dev_*.txt")):
        print(p, p.stat().st_size)


def texts(out_dir):
    """[dev_book, dev_tech] as bytes, written into out_dir first if they are not there."""
    out = pathlib.Path(out_dir)
    if not (out / "dev_book.txt").exists() or not (out / "dev_tech.txt").exists():
        main(out)
    return [(out / "dev_book.txt").read_bytes(), (out / "dev_tech.txt").read_bytes()]


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/dev_sample")
