"""What the token cache costs in speed (issue 10: at most 10% on book1 and news, both modes, in the same run
as xz -9e), measured inside one build: the same word model codes each file as two formats, by default
format 7 (no cache) and format 9 (the token cache of codec/FORMAT.md §3.6 and the body mixer of §5.1.1;
--versions 7,8 measures the token cache alone, 8,9 the body mixer alone), everything else (tokens, match
flag, speller, blocks) the same.

    python benchmarks/cache_speed.py [--files book1,news] [--modes static,dynamic] [--runs 5] [--versions 7,9]
                                     [--out FILE]

Per file and mode: the word-model payloads of the encoder's blocks (each file one group, the codec's state
carried from block to block as in a frame), encoded and then decoded each way; CPU time
(time.process_time), median of --runs, the two formats and xz -9e alternating run by run in one interpreter
(the model loaded once), so all three see the same machine load.  Every decode is checked against the
input.  The report gives KB/s each way, the change (the later format / the earlier - 1), each as a ratio to xz -9e's
compression speed in the same runs, and the payload sizes.
"""
from __future__ import annotations

import argparse
import lzma
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from _benchlib import load_bench, write_report  # noqa: E402


def code_once(model, text, adapt, version):
    """(payload bytes, encode CPU s, decode CPU s) of text coded as this format; the decode is checked."""
    from nlmcodec._core import Codec
    from nlmcodec._encode import _model_pieces
    from nlmcodec._frame import codec_options

    pieces = list(_model_pieces(text))
    enc = Codec(model, adapt)
    enc.reset(**codec_options(version))
    t = time.process_time()
    payloads = [enc.encode_block(text[p:p + k]) for p, k in pieces]
    te = time.process_time() - t
    dec = Codec(model, adapt)
    dec.reset(**codec_options(version))
    t = time.process_time()
    out = [dec.decode_block(pl, k) for pl, (p, k) in zip(payloads, pieces)]
    td = time.process_time() - t
    if b"".join(out) != text:
        raise SystemExit("decode differs from the input")
    return sum(map(len, payloads)), te, td


def xz_once(text):
    t = time.process_time()
    lzma.compress(text, preset=9 | lzma.PRESET_EXTREME)
    return time.process_time() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default="book1,news")
    ap.add_argument("--modes", default="static,dynamic")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--model", default="default")
    ap.add_argument("--versions", default="7,9", help="the two formats, earlier first (default 7,9)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "cache_speed.md"))
    a = ap.parse_args(argv)
    v0, v1 = (int(x) for x in a.versions.split(","))
    import nlmcodec

    bench = load_bench()
    files = [(n, bench.read_file(n)[1]) for n in bench.expand_files(a.files.split(","))]
    model = nlmcodec.load_model(a.model)
    what = {7: "no cache", 8: "the token cache, FORMAT.md §3.6", 9: "the token cache and the body mixer, §5.1.1"}
    out = ["# The token cache's speed cost (issue 10)", "",
           f"`python benchmarks/cache_speed.py --files {a.files} --modes {a.modes} --runs {a.runs} --versions "
           f"{v0},{v1}`: the word model's payloads as format {v0} ({what.get(v0, '')}) and format {v1} "
           f"({what.get(v1, '')}), one build, model `{a.model}`; CPU time, median of {a.runs}, the formats and "
           f"xz -9e alternating run by run. change = format {v1} / format {v0} - 1; in brackets each speed as a "
           "ratio to xz -9e's compression speed in the same runs.", "",
           f"| file | bytes | mode | xz -9e KB/s | compress KB/s v{v0} → v{v1} | change | decompress KB/s v{v0} → "
           f"v{v1} | change | payload bytes v{v0} → v{v1} |",
           "|---|---:|---|---:|---|---:|---|---:|---|"]
    for mode in [m for m in a.modes.split(",") if m]:
        adapt = mode == "dynamic"
        for name, text in files:
            runs = {v0: [], v1: []}
            xz = []
            for _ in range(a.runs):
                for v in (v0, v1):
                    runs[v].append(code_once(model, text, adapt, v))
                xz.append(xz_once(text))
            n = len(text)
            kx = n / statistics.median(xz) / 1e3
            r = {}
            for v in (v0, v1):
                r[v] = (n / statistics.median(t[1] for t in runs[v]) / 1e3,
                        n / statistics.median(t[2] for t in runs[v]) / 1e3, runs[v][0][0])
            (e7, d7, p7), (e8, d8, p8) = r[v0], r[v1]
            out.append(f"| {Path(name).name} | {n:,} | {mode} | {kx:,.0f} | {e7:.1f} ({e7 / kx:.3f}) → {e8:.1f} "
                       f"({e8 / kx:.3f}) | {e8 / e7 - 1:+.1%} | {d7:.1f} ({d7 / kx:.3f}) → {d8:.1f} ({d8 / kx:.3f}) | "
                       f"{d8 / d7 - 1:+.1%} | {p7:,} → {p8:,} |")
            print(out[-1], flush=True)
    write_report(out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
