"""export_blocks.py: the golden vectors' word-model blocks as one simple binary for the C vector driver.

The frame layer is Python, so this step runs on the build host: it decodes every vector of
codec/vectors/ok (or the names given) with nlmcodec, recording each call the frame layer makes to the
C codec (reset at a group start, decode of a word-model block with its payload and decoded bytes).
tests/c/vector_driver.c replays them on any machine: decodes each payload and re-encodes each block,
comparing bytes with these, which were written on x86-64.

Output (all integers little-endian): DIR/blocks.bin and the model files it names, DIR/<id>.nlmm.
  blocks.bin = "NLMVBLK8" u32 nvectors, then per vector:
    u16 len, name; u16 len, model file name; u8 adapt; u32 nops; ops: u8 0 = reset, u8 speller (the
    NLM_SPELLER_* of the frame's format), u8 match (the level: 1 the token match flag, from format 6; 2 its two APMs,
    from format 10), u8 end_advance
    (1: a block's <end> advances the network, formats 1-6), u32 max_tokens (16,384 from format 7, else 0),
    u8 cache (the level: 1 the token cache, from format 8; 2 and the body mixer, from format 9), u8 forward
    (1: a static codec's integer forward, from format 11), u8 deep_every (a dynamic codec's schedule: 1
    everything every segment, dynamic mode; 0 the heads only, heads mode from format 12), u8 rate_a, u8 rate_b
    (a dynamic codec's rates, nlm_codec_set_rates: 1, 1 but in heads mode from format 13)
    | u8 1 = block, u32 size, u32 payload length, payload, size decoded bytes.
Every vector starts with a reset.  Vectors without a word-model block are left out (their blocks are
stored or lzma: Python, not the C core).  Vectors with identical word-model blocks (the format-2 copies of
format-1 vectors) are written once, named "A=B".

--light-budget W also writes DIR/blocks_light.bin without the vectors whose work (decoded bytes x model
parameters) exceeds W, for the emulated targets: under qemu the scalar core runs 20-40x slower, and the
144 KB default-model vectors alone would take longer than the lane's whole budget.  The light file's
left-out vectors are listed on stdout; the native run replays all of them.  The light file also leaves out
the vectors of formats 5, 6, 9, 10 and 12 (LIGHT_SKIP): their word-model blocks take no code path that other
formats' vectors in the file do not take: 5 and 6 none that formats 2-4 (no match flag, an <end> that advances
the network) and 7 (the byte-model speller, the match flag) do not; 9 none that 8 (the flag's one APM) and 11
(the body mixer) do not; 10 none that 8 (a static codec's float forward) and 11 (the flag's two APMs, dynamic
mode) do not; 12 none that 11 (static and dynamic mode) and 13 (heads mode, at other rates) do not.  The
emulated lanes are the slowest part of CI.
Usage: export_blocks.py OUTDIR [--models tiny,default] [--light-budget W]
"""
import argparse
import json
import pathlib
import struct
import sys

import nlmcodec
from nlmcodec import _core, _frame

ROOT = pathlib.Path(__file__).resolve().parents[2]
VECTORS = ROOT / "codec" / "vectors" / "ok"
LIGHT_SKIP = ("v5-", "v6-", "v9-", "v10-", "v12-")   # formats whose vectors blocks_light.bin leaves out (above)


class Recorder(_core.Codec):
    """A Codec that logs the frame layer's calls; `log` is shared by every instance of one decode."""
    log = None

    def __init__(self, model, adapt):
        super().__init__(model, adapt)
        Recorder.log.append(("new", model, bool(adapt)))

    def reset(self, speller=None, match=2, max_tokens=None, end_advance=False, cache=2, forward=1,
              schedule=(1, 0, 0), rates=(1, 1)):
        speller = _core.SPELLER_CM if speller is None else speller
        max_tokens = _frame.MAX_MODEL_TOKENS if max_tokens is None else max_tokens
        assert schedule in ((0, 0, 0), (1, 0, 0)), schedule     # the formats' two (codec_options)
        Recorder.log.append(("reset", speller, int(match), int(bool(end_advance)), max_tokens,
                             int(cache), int(forward), int(schedule[0]), int(rates[0]), int(rates[1])))
        return super().reset(speller, match, max_tokens, end_advance, cache, forward=forward, schedule=schedule,
                             rates=rates)

    def decode_block(self, payload, size):
        data = super().decode_block(payload, size)
        Recorder.log.append(("block", bytes(payload), data))
        return data


def record(frame):
    """(model, adapt, ops) of one vector's decode, or None when it has no word-model block."""
    Recorder.log = []
    nlmcodec._codec_pool.clear()          # fresh codecs, so each is a Recorder
    saved, _core.Codec = _core.Codec, Recorder
    try:
        out = nlmcodec.decompress(frame, threads=1)
    finally:
        _core.Codec = saved
        nlmcodec._codec_pool.clear()
    news = [e for e in Recorder.log if e[0] == "new"]
    ops = [e for e in Recorder.log if e[0] != "new"]
    if not any(e[0] == "block" for e in ops):
        return None, out
    models = {(n[1].model_id, n[2]) for n in news}
    assert len(models) == 1, "one model and mode per vector"
    if ops[0][0] != "reset":
        info = nlmcodec.get_frame_info(frame)
        o = _frame.codec_options(info.format_version, info.adapt)
        ops.insert(0, ("reset", o["speller"], int(o["match"]), int(o["end_advance"]), o["max_tokens"],
                       int(o["cache"]), int(o["forward"]), int(o["schedule"][0]), int(o["rates"][0]),
                       int(o["rates"][1])))
    return (news[0][1], news[0][2], ops), out


def pack_str(s: bytes) -> bytes:
    return struct.pack("<H", len(s)) + s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("--models", default="", help="comma-separated model names of the manifest to keep (default all)")
    ap.add_argument("--light-budget", type=float, default=0, help="also write blocks_light.bin (see above)")
    args = ap.parse_args(argv)
    keep = set(filter(None, args.models.split(",")))
    manifest = json.loads((VECTORS / "MANIFEST.json").read_text())
    args.outdir.mkdir(parents=True, exist_ok=True)
    unique, nblocks, nbytes = {}, 0, 0     # blocks (model, mode, ops) -> [vector names, work]
    for name in sorted(manifest):
        meta = manifest[name]
        if meta.get("model") is None or (keep and meta["model"] not in keep):
            continue
        frame = (VECTORS / f"{name}.nlm").read_bytes()
        rec, out = record(frame)
        assert out == (VECTORS / f"{name}.raw").read_bytes(), name
        if rec is None:
            continue
        model, adapt, ops = rec
        mfile = model.model_id.hex()[:16] + ".nlmm"
        if not (args.outdir / mfile).exists():
            (args.outdir / mfile).write_bytes(model.to_bytes())
        body = [pack_str(mfile.encode()), struct.pack("<BI", int(adapt), len(ops))]
        for op in ops:
            if op[0] == "reset":
                body.append(struct.pack("<BBBBIBBBBB", 0, *op[1:]))
            else:
                _, payload, data = op
                body += [struct.pack("<BII", 1, len(data), len(payload)), payload, data]
                nblocks += 1
                nbytes += len(data)
        size = sum(len(op[2]) for op in ops if op[0] == "block")
        unique.setdefault(b"".join(body), [[], size * model.params.size])[0].append(name)
    # a format-2 vector whose word-model blocks equal a format-1 vector's is replayed once, under both names
    recs, light, left_out = [], [], []
    for body, (names, work) in unique.items():
        recs.append(pack_str("=".join(names).encode()) + body)
        if work <= args.light_budget and not all(n.startswith(LIGHT_SKIP) for n in names):
            light.append(recs[-1])
        else:
            left_out.append(f"{'='.join(names)} (work {work:.2g})" if work > args.light_budget else
                            f"{'='.join(names)} (format {names[0][1:names[0].index('-')]})")
    for fname, rs in (("blocks.bin", recs), ("blocks_light.bin", light if args.light_budget else None)):
        if rs is not None:
            (args.outdir / fname).write_bytes(b"NLMVBLK8" + struct.pack("<I", len(rs)) + b"".join(rs))
    nvec = sum(len(n) for n, _ in unique.values())
    print(f"exported {nvec} vectors ({len(recs)} distinct block sets), {nblocks} word-model blocks, {nbytes} decoded "
          f"bytes to {args.outdir}")
    if args.light_budget:
        print(f"blocks_light.bin: {len(light)} block sets; left out (work over {args.light_budget:g}, or formats 5, 6, 9, 10, 12): "
              f"{', '.join(left_out) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
