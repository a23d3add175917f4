"""Forged frames naming the bundled default model, and what rejecting each costs.

    python tests/hostile_frames.py [--json]

prints one row per forged frame: its size, the CPU and wall time of decompress() until it fails, the
peak RSS over the model's own footprint (the RSS after the model is loaded and a codec has decoded one
valid frame), and the error message.  tests/test_hostile.py runs it in a subprocess (so the peak RSS is
this process's alone) and checks the bounds.  Each forged block is the cheapest payload for the most
work: the word model's own coding of 16,383 bytes of "." (16,384 tokens with <end>: the most a block may
hold, docs/format.md §3.5), and of 64 KiB of "." (65,536 one-byte tokens, dynamic mode), 17 bytes, which
the decoder stops at the bound.  Byte-model blocks: the byte model's own coding of 256 KiB of zeros (the cheapest payload), and
a random payload (it decodes to pseudo-random bytes, which touch the most table memory), in a run of the
largest size class (2^23 bytes, the largest tables).
"""
from __future__ import annotations

import json
import random
import resource
import sys
import time
from pathlib import Path

import nlmcodec
from nlmcodec import _frame as F
from nlmcodec._core import ByteCoder, Codec

VEC = Path(__file__).resolve().parents[1] / "codec" / "vectors"
BLOCK = 1 << 16


def _dense_payload(model, n: int = BLOCK) -> bytes:
    """The word model's own coding of n bytes of "." (n one-byte tokens and <end>, dynamic mode), without the
    token bound of a block (so the payload can exceed it: what a forger can write)."""
    c = Codec(model, True)
    c.lab_reset(max_tokens=0)
    return c.encode_block(b"." * n)


def _frame(version, model_id, blocks, content_crc=0, truncate=None, kind=F.BLOCK_MODEL) -> bytes:
    """A frame of `blocks` [(size, payload, block crc or None)] of one kind in one group."""
    body = bytearray()
    for i, (size, payload, crc) in enumerate(blocks):
        body += F.block_header(kind, i == 0, size, len(payload)) + payload
        if crc is not None:
            body += crc.to_bytes(4, "little")
    total = sum(s for s, _, _ in blocks)
    f = (F.header(True, F.CHECK_CRC32, model_id, version=version) + bytes(body)
         + F.trailer([(total, len(body))], total, F.CHECK_CRC32, content_crc))
    return f[:truncate] if truncate else f


def _byte_frame(blocks) -> bytes:
    """A frame (no model id) of byte-model blocks [(size, payload)] in one group, bad block CRCs."""
    return _frame(F.FORMAT_VERSION, None, [(size, payload, 0) for size, payload in blocks], kind=F.BLOCK_BYTE)


def forged_byte():
    """Forged byte-model blocks: [(name, frame, decompress keyword arguments)]."""
    n = F.MAX_BYTE_BLOCK
    zeros = ByteCoder().encode_block(bytes(n), 1 << 23)
    noise = b"\x17" + random.Random(3).randbytes(n - 1)      # decodes to pseudo-random bytes: the most slots
    cont = ByteCoder()
    cont.encode_block(bytes(n), 1 << 23)
    more = cont.encode_block(bytes(n), 0)
    return [
        ("one 256 KiB byte-model block (zeros), size class 23, bad block CRC", _byte_frame([(n, zeros)]), {}),
        ("one 256 KiB byte-model block, a random payload of 256 KiB, size class 23",
         _byte_frame([(n, noise)]), {}),
        ("a run of 32 such blocks (8 MiB of zeros), bad block CRCs",
         _byte_frame([(n, zeros)] + [(n, more)] * 31), {}),
        ("a 256 KiB byte-model block with a 3-byte payload", _byte_frame([(n, b"\x17\x55\x13")]), {}),
    ]


def forged(model):
    """[(name, frame, decompress keyword arguments)]."""
    v, mid = F.FORMAT_VERSION, model.model_id
    n = F.MAX_MODEL_TOKENS - 1                    # the densest valid block: n "." and <end>, the bound
    bound = Codec(model, True)
    bound.reset()
    p = bound.encode_block(b"." * n)
    dense = _dense_payload(model)                 # a 64 KiB payload of 65,536 tokens: stopped at the bound
    one = _frame(v, mid, [(n, p, 0)])             # the block CRC is wrong
    k = (10_000 - len(one)) // (len(p) + 9) + 1
    many = _frame(v, mid, [(BLOCK, dense, 0)] * k)
    short = (F.header(True, F.CHECK_CRC32, mid) + F.block_header(F.BLOCK_MODEL, True, BLOCK, 3)
             + b"\0\0\0" + b"\0\0\0\0")
    return [
        (f"one block of {n:,} bytes ({n + 1:,} tokens, the bound), bad block CRC", one, {}),
        (f"{k} blocks at the bound, bad block CRCs", _frame(v, mid, [(n, p, 0)] * k), {}),
        ("one 64 KiB block whose payload codes 65,536 tokens, stopped at the bound", _frame(v, mid, [(BLOCK, dense, 0)]),
         {}),
        ("truncated after a 3-byte payload", short, {}),
        (f"{k} blocks of 64 KiB, bad block CRCs", many, {}),
        ("the same, max_output=1 MiB", many, {"max_output": 1 << 20}),
    ] + forged_byte()


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure():
    model = nlmcodec.load_model("default-2")                   # the model of the warm-up vector below
    frames = forged(model)
    warm = (VEC / "v13" / "ok" / "alice_4k-default-2-dynamic.nlm").read_bytes()
    nlmcodec.decompress(warm)                                   # the model loaded, a dynamic codec made
    footprint = _peak_mb()
    rows = []
    for name, frame, kw in frames:
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            nlmcodec.decompress(frame, **kw)
            err = None
        except nlmcodec.NLMError as e:
            err = str(e)
        rows.append({"frame": name, "bytes": len(frame), "cpu_s": round(time.process_time() - c0, 3),
                     "wall_s": round(time.perf_counter() - w0, 3),
                     "peak_over_footprint_mb": round(max(0.0, _peak_mb() - footprint), 1), "error": err})
    return {"footprint_mb": round(footprint, 1), "rows": rows}


def main(argv):
    res = measure()
    if "--json" in argv:
        print(json.dumps(res))
        return 0
    print(f"default model footprint (peak RSS after loading it and decoding one frame): {res['footprint_mb']} MB\n")
    print("| forged frame | bytes | CPU s | wall s | peak RSS over footprint, MB | error |")
    print("|---|---|---|---|---|---|")
    for r in res["rows"]:
        print(f"| {r['frame']} | {r['bytes']} | {r['cpu_s']} | {r['wall_s']} | {r['peak_over_footprint_mb']} | "
              f"{r['error']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
