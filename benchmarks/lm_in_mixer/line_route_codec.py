"""line_route_codec.py: the line route as the C core codes it (nlm_lab.h nlm_codec_set_route; issue 41, the next
format's candidate, docs/decisions/line-route.md), against the word path of the current format.

Each file is coded as one tracked group would code it: the word model on every block (_encode._model_pieces, one
context across the blocks) from the trained state, with the group's byte-model run (size class for the file) as the
router, every line routed by the encoder's choice ("routed"), or each block given the smaller of its routed
coding and the current format's with the route byte 0 ("per block": both coded, the smaller kept); then decoded by
a fresh context and run, and compared.  Prints per file: bits per byte of the current format's word path, of the
routed blocks, of the per-block choice (and how many blocks route lines), of the run's own coding of every block
(made alongside), the share of the bytes the run codes and of the routed payload the route bits take, the CPU
seconds of encoding and decoding, and whether the round trips held.

Usage: OPENBLAS_NUM_THREADS=1 python benchmarks/lm_in_mixer/line_route_codec.py [--mode heads] FILE...
(bench/ files are reported, never tuned on), or --dev [--per-source 400000 --cap 64000]: each dev source's sampled
documents joined into one stream (common.sample, as line_route.py).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

from nlmcodec import _encode, _frame  # noqa: E402
from nlmcodec._core import ByteCoder, Codec  # noqa: E402
from nlmcodec._registry import load_model  # noqa: E402


def code(m, mode, data, route):
    """(payload bytes, run-alone bytes, encode CPU s, decode CPU s, round trip held, blocks routing lines,
    blocks, the encoder's statistics).
    route: None (the current format), "lines" (every block routes lines) or "block" (each block the smaller of
    routed and route byte 0)."""
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
        return c, run

    c, run = context()
    t0 = time.process_time()
    pays, alone, routing = [], 0, 0
    for pos, ln in _encode._model_pieces(data):
        block = data[pos:pos + ln]
        if route == "block":
            c.save()
            c.set_router(None)
            plain = b"\x00" + c.encode_block(block)     # the route byte 0, then the current format's payload
            c.restore()
            c.set_router(run)
        p = c.encode_block(block)
        alone += len(c.route_byte_payload() or b"")
        if route == "block" and len(plain) <= len(p):
            c.restore()                                    # the run learnt the block (the decoder's feeds it)
            c.set_router(None)
            c.encode_block(block)
            c.set_router(run)
            p = plain
        routing += bool(route) and p[0] == 1
        pays.append((ln, p))
    te = time.process_time() - t0
    d, _ = context()
    t0 = time.process_time()
    out = b"".join(d.decode_block(p, ln) for ln, p in pays)
    return (sum(len(p) for _, p in pays), alone, te, time.process_time() - t0, out == data, routing, len(pays),
            c.stats())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default=_frame.DEFAULT_ADAPT)
    ap.add_argument("--model", default="default")
    ap.add_argument("--dev", action="store_true", help="the dev sources instead of files")
    ap.add_argument("--per-source", type=int, default=400000)
    ap.add_argument("--cap", type=int, default=64000)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    m = load_model(a.model)
    if a.dev:
        smp = common.sample(a.per_source, a.cap)
        streams = {s: b"".join(b for _, b in smp[s]) for s in common.SOURCES}
        what = f"each dev source's sampled documents one group (`--per-source {a.per_source} --cap {a.cap}`)"
    else:
        streams = {pathlib.Path(f).name: pathlib.Path(f).read_bytes() for f in a.files}
        what = "each file one group"
    print(f"Model `{a.model}`, mode {a.mode}; {what}.  Bits per byte; CPU seconds.\n")
    print("| file | bytes | word path | routed | change | per block | change | blocks routing | run alone | "
          "bytes the run codes | route bits | encode s (word, routed, per block) | decode s (word, routed, per block) "
          "| round trips |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, data in streams.items():
        n = len(data)
        w, _, we, wd, wok, _, nb, _ = code(m, a.mode, data, None)
        r, alone, re_, rd, rok, _, _, st = code(m, a.mode, data, "lines")
        b, _, be, bd, bok, k, _, _ = code(m, a.mode, data, "block")
        print(f"| {name} | {n:,} | {8 * w / n:.4f} | {8 * r / n:.4f} | {(r - w) / w:+.1%} | "
              f"{8 * b / n:.4f} | {(b - w) / w:+.1%} | {k} of {nb} | {8 * alone / n:.4f} | "
              f"{st['route_run_bytes'] / n:.1%} | {st['route_bits'] / 8 / r:.2%} | {we:.1f}, {re_:.1f}, "
              f"{be:.1f} | {wd:.1f}, {rd:.1f}, {bd:.1f} | {'ok' if wok and rok and bok else 'FAILED'} |", flush=True)


if __name__ == "__main__":
    main()
