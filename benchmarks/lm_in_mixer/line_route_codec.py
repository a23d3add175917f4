"""line_route_codec.py: the line route as the C core codes it (nlm_lab.h nlm_codec_set_route; issue 41, the next
format's candidate, docs/decisions/line-route.md), against the word path of the current format.

Each file is coded as one tracked group would code it: the word model on every block (_encode._model_pieces, one
context across the blocks) from the trained state, with the group's byte-model run (size class for the file) as the
router, every line routed by the encoder's choice; then decoded by a fresh context and run, and compared.  Prints
per file: bits per byte of the current format's word path, of the routed blocks, and of the run's own coding of
every block (made alongside), the CPU seconds of encoding and decoding, and whether the round trip held.

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/lm_in_mixer/line_route_codec.py [--mode heads] FILE...
(bench/ files are reported, never tuned on.)
"""
from __future__ import annotations

import argparse
import pathlib
import time

from nlmcodec import _encode, _frame
from nlmcodec._core import ByteCoder, Codec
from nlmcodec._registry import load_model


def code(m, mode, data, route):
    """(payload bytes, run-alone bytes, encode CPU s, decode CPU s, round trip held)"""
    s = _encode.size_class(len(data))

    def context():
        c = Codec(m, _frame.adapt_mode(mode))
        c.reset(_frame.FORMAT_VERSION)
        run = None
        if route:
            c.lab_line_route()
            run = ByteCoder()
            run.start_run(s)
            c.set_router(run)
        return c

    c = context()
    t0 = time.process_time()
    pays, alone = [], 0
    for pos, ln in _encode._model_pieces(data):
        pays.append((ln, c.encode_block(data[pos:pos + ln])))
        alone += len(c.route_byte_payload() or b"")
    te = time.process_time() - t0
    d = context()
    t0 = time.process_time()
    out = b"".join(d.decode_block(p, ln) for ln, p in pays)
    return sum(len(p) for _, p in pays), alone, te, time.process_time() - t0, out == data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default=_frame.DEFAULT_ADAPT)
    ap.add_argument("--model", default="default")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    m = load_model(a.model)
    print(f"Model `{a.model}`, mode {a.mode}; each file one group.  Bits per byte; CPU seconds.\n")
    print("| file | bytes | word path | routed | change | run alone | encode s (word, routed) | "
          "decode s (word, routed) | round trip |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for f in a.files:
        data = pathlib.Path(f).read_bytes()
        w, _, we, wd, wok = code(m, a.mode, data, False)
        r, alone, re_, rd, rok = code(m, a.mode, data, True)
        n = len(data)
        print(f"| {pathlib.Path(f).name} | {n:,} | {8 * w / n:.4f} | {8 * r / n:.4f} | {(r - w) / w:+.1%} | "
              f"{8 * alone / n:.4f} | {we:.1f}, {re_:.1f} | {wd:.1f}, {rd:.1f} | {'ok' if wok and rok else 'FAILED'} |",
              flush=True)


if __name__ == "__main__":
    main()
