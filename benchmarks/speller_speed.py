"""What the byte-model speller costs in speed (issue 9: the English files' speed change of format 5's
speller at most -10%), measured inside one build: the same word model codes each file with the byte-model
speller of formats 5 and later (codec/FORMAT.md §5.4) and with the order-4 PPM speller of formats 1-4
(§5.3), everything else (tokens, match flag, blocks) the same.

    python benchmarks/speller_speed.py [--files english] [--modes static,dynamic] [--runs 3] [--out FILE]

Per file and mode: the word-model payloads of the encoder's blocks (each file one group, the codec's state
carried from block to block as in a frame), encoded and then decoded with each speller; CPU time
(time.process_time) of the encode and of the decode, median of --runs, the two spellers alternating run by
run in one interpreter (the model loaded once), so both see the same machine load.  Every decode is checked
against the input.  The report gives KB/s with each speller, the change (byte model / PPM - 1) and the
payload sizes; the last rows are the totals over the files.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from _benchlib import load_bench, write_report  # noqa: E402
from english_speed import FILES as ENGLISH13  # noqa: E402


def code_once(model, text, adapt, speller):
    """(payload bytes, encode CPU s, decode CPU s) of text with this speller; the decode is checked."""
    from nlmcodec._core import Codec
    from nlmcodec._encode import _model_pieces

    pieces = list(_model_pieces(text))
    enc = Codec(model, adapt)
    enc.reset(speller=speller)
    t = time.process_time()
    payloads = [enc.encode_block(text[p:p + k]) for p, k in pieces]
    te = time.process_time() - t
    dec = Codec(model, adapt)
    dec.reset(speller=speller)
    t = time.process_time()
    out = [dec.decode_block(pl, k) for pl, (p, k) in zip(payloads, pieces)]
    td = time.process_time() - t
    if b"".join(out) != text:
        raise SystemExit("decode differs from the input")
    return sum(map(len, payloads)), te, td


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default=",".join(ENGLISH13), help="benchmark files or sets (default: the 13 "
                    "Canterbury/Calgary English files; dickens is left out for time)")
    ap.add_argument("--modes", default="static,dynamic")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", default="default")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "speller_speed.md"))
    a = ap.parse_args(argv)
    import nlmcodec
    from nlmcodec._core import SPELLER_CM, SPELLER_PPM

    bench = load_bench()
    names = bench.expand_files([a.files])
    files = [(n, bench.read_file(n)[1]) for n in names]
    model = nlmcodec.load_model(a.model)
    spellers = (("ppm", SPELLER_PPM), ("cm", SPELLER_CM))
    rows, tot = [], {}
    for mode in [m for m in a.modes.split(",") if m]:
        adapt = mode == "dynamic"
        for name, text in files:
            runs = {s: [] for s, _ in spellers}     # (payload bytes, encode s, decode s) per run
            for _ in range(a.runs):
                for s, kind in spellers:             # alternate the spellers run by run
                    runs[s].append(code_once(model, text, adapt, kind))
            r = {"file": Path(name).name, "bytes": len(text), "mode": mode}
            for s, _ in spellers:
                te = statistics.median(t[1] for t in runs[s])
                td = statistics.median(t[2] for t in runs[s])
                r[s] = (len(text) / te / 1e3, len(text) / td / 1e3, runs[s][0][0])
                t = tot.setdefault((mode, s), [0, 0.0, 0.0])
                t[0] += len(text)
                t[1] += te
                t[2] += td
            rows.append(r)
            print(r, flush=True)
    out = ["# The byte-model speller's speed cost (issue 9)", "",
           f"`python benchmarks/speller_speed.py{'' if a.files == ','.join(ENGLISH13) else ' --files ' + a.files} --modes {a.modes} --runs {a.runs}`: the word "
           "model's payloads with format 5's byte-model speller (cm) against formats 1-4's PPM speller (ppm), "
           f"one build, model `{a.model}`; CPU time, median of {a.runs}, the spellers alternating run by run. "
           "change = cm / ppm - 1.", "",
           "| file | bytes | mode | compress KB/s ppm → cm | change | decompress KB/s ppm → cm | change | "
           "payload bytes ppm → cm |",
           "|---|---:|---|---|---:|---|---:|---|"]
    for r in rows:
        (pe, pd, pn), (ce, cd, cn) = r["ppm"], r["cm"]
        out.append(f"| {r['file']} | {r['bytes']:,} | {r['mode']} | {pe:.1f} → {ce:.1f} | {ce / pe - 1:+.1%} | "
                   f"{pd:.1f} → {cd:.1f} | {cd / pd - 1:+.1%} | {pn:,} → {cn:,} |")
    for mode in [m for m in a.modes.split(",") if m]:
        (nb, pe, pd), (_, ce, cd) = tot[(mode, "ppm")], tot[(mode, "cm")]
        out.append(f"| **all {len(files)}** | {nb:,} | {mode} | {nb / pe / 1e3:.1f} → {nb / ce / 1e3:.1f} | "
                   f"{pe / ce - 1:+.1%} | {nb / pd / 1e3:.1f} → {nb / cd / 1e3:.1f} | {pd / cd - 1:+.1%} | |")
    write_report(out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
