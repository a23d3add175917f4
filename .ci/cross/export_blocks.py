"""export_blocks.py: the golden vectors' word-model blocks as one simple binary for the C vector driver.

The frame layer is Python, so this step runs on the build host: it decodes every vector of
codec/vectors (vectorset.py; or those of the models named) with nlmcodec, recording each call the frame
layer makes to the C codec (reset at a group start, decode of a word-model block with its payload and
decoded bytes).  tests/c/vector_driver.c replays them on any machine: decodes each payload and re-encodes
each block, comparing bytes with these, which were written on x86-64.  What a format and mode mean is the
C core's table (csrc/codec/formats.h): the file carries each frame's format version and mode, and the driver
resets with nlm_codec_reset_for(version, mode), so the file needs no option fields and no revisions.

Output (all integers little-endian): DIR/blocks.bin and the model files it names, DIR/<id>.nlmm.
  blocks.bin = "NLMVBLKS" u32 nvectors, then per vector:
    u16 len, name; u16 len, model file name; u8 format version; u8 mode (NLM_MODE_*: 0 static, 1 dynamic,
    2 heads); u32 nops; ops: u8 0 = reset (nlm_codec_reset_for(version, mode))
    | u8 1 = block, u32 size, u32 payload length, payload, size decoded bytes
    | u8 2 = track, u8 s: a tracked group's byte-model run of size class s starts (nlm_bytecoder_start)
    | u8 3 = learn, u32 n, n bytes: the run learns bytes of the group that no word-model block of it codes
      (nlm_bytecoder_feed: its stored, lzma and byte-model blocks)
    | u8 4 = routed block, as 1: a format-17 word-model block with the run as its router (nlm_codec_set_router,
      docs/format.md §3.8; its first payload byte is the route byte).
Ops 2 to 4 are written only for the vectors that have a routed block.
Every vector starts with a reset.  Vectors without a word-model block are left out (their blocks are
stored, lzma or byte-model blocks: the byte model has its own cross-architecture check, lane.py's
cm_driver step).  Vectors with identical word-model blocks are written once, named "A=B".

--light-budget W also writes DIR/blocks_light.bin for the emulated targets, where the scalar core runs
100-200x slower under qemu-user than the native SIMD build (the whole file would take about 25 minutes of
CPU per target, estimated from its per-vector times).  A vector's work is its decoded bytes x its model's
parameters x its mode's cost under emulation (MODE_COST).  The light file leaves out the vectors whose work
exceeds W; whatever the budget, it keeps the default models' (the shipped models, those compress() uses)
heads-mode vectors (heads is the default mode) of the format this build writes whose work is at most
HEADS_BUDGET, and export fails if it keeps none of them.  A frozen older format's vectors (format 13) are kept
up to OLDER_SHARE of the budget, with no such exception: the tiny models' small ones, which take its own rules
(the gap coding of docs/format.md §3.3 and §5.3) in every mode.  With lane.py's budget the light file leaves out
the current format's default-model vectors in dynamic mode and its two largest inputs (news_64k, the fallback
input) in static and heads mode, the older format's larger vectors, and the two largest inputs of the tiny
models other than tiny (CARRY_LEFT_OUT).  Why: under qemu they are the bulk of the
time (news_64k and fallback take about 1-4 min of CPU each, by mode), and no code path is theirs alone: every
model type, mode, cache, the match flag, the speller and the fallback's word-model blocks run in the smaller
vectors of the light file (the tiny models' at every size, the default model's small ones in every mode), and
the test lanes decode and re-encode all of them on x86-64 (tests/test_golden.py).  The left-out vectors are
listed on stdout (and so in the lane's log).
--light-only (what lane.py runs) writes blocks_light.bin alone and decodes only the vectors it keeps, choosing
from each frame's block headers (the bytes of its word-model blocks, whether a tracked group routes them): the
same file and list as with every vector decoded first (tests/test_vector_driver.py), in 4 s of CPU instead of 86.
Usage: export_blocks.py OUTDIR [--models tiny,default-2] [--light-budget W [--light-only]]
"""
import argparse
import functools
import os
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
# the test models (tiny, ...) of the vectors are found through the model search path
os.environ["NLMCODEC_MODEL_PATH"] = os.pathsep.join(
    [str(ROOT / "tests" / "models")] + [d for d in os.environ.get("NLMCODEC_MODEL_PATH", "").split(os.pathsep) if d])
sys.path.insert(0, str(ROOT / "codec" / "vectors"))
import vectorset as VS  # noqa: E402

import nlmcodec  # noqa: E402
from nlmcodec import _core, _frame, _registry  # noqa: E402

MODE_NAMES = {_core.native.MODE_STATIC: "static", _core.native.MODE_DYNAMIC: "dynamic",
              _core.native.MODE_HEADS: "heads"}
# a mode's cost per byte under emulation, static = 1: alice_4k with the default model under qemu-aarch64 took
# 1.2 s of CPU static, 4.4 s heads and 11.7 s dynamic
MODE_COST = {_core.native.MODE_STATIC: 1, _core.native.MODE_HEADS: 4, _core.native.MODE_DYNAMIC: 10}
# the default model's heads-mode vectors up to this much work are in the light file whatever its budget: the
# 155 B to 13 KB inputs (short_english, alice_4k, spelled, repeats: the speller, the match flag and the
# caches on the default model: 34 s of CPU under qemu-aarch64, 105 s under qemu-s390x), not the 64 KB ones
# (2-4 min each under qemu-aarch64)
HEADS_BUDGET = 6e11
# a frozen older format (a version below the one this build writes) gets this share of the budget and no
# HEADS_BUDGET exception: its rules differ from the written format's only where docs/format.md says so (format 13:
# the gap coding of §3.3 and §5.3), which its small vectors take; the test lanes decode all of it
OLDER_SHARE = 0.01
# the context carried over blocks (the fallback-* and news_64k-* vectors: 65-144 KB, 10-50 s each under
# qemu-s390x) is replayed with the tiny model and, within the budgets, the default ones; the other model types'
# own arithmetic (the lstm and nplm transitions, the Kneser-Ney mixture) is in their smaller vectors, and the
# carry does not depend on the model type: their fallback-* and news_64k-* are left out of the light file
CARRY_LEFT_OUT = ("tiny-lstm", "tiny-nplm", "tiny-kn")


class RunRecorder(_core.ByteCoder):
    """A ByteCoder that logs a tracked group's run to Recorder.log: its start, and the bytes it decodes or is fed
    (equivalent for its state: decoding a byte-model block learns its bytes as feeding them does, docs/format.md
    §7.2); an untracked run is not logged (no word-model block has it as router)."""

    def reset(self):
        self.tracked = False
        return super().reset()

    def start_run(self, s):
        self.tracked = True
        Recorder.log.append(("track", int(s)))
        return super().start_run(s)

    def feed(self, data):
        if getattr(self, "tracked", False):
            Recorder.log.append(("learn", bytes(data)))
        return super().feed(data)

    def decode_block(self, payload, size):
        data = super().decode_block(payload, size)
        if getattr(self, "tracked", False):
            Recorder.log.append(("learn", bytes(data)))
        return data


class Recorder(_core.Codec):
    """A Codec that logs the frame layer's calls; `log` is shared by every instance of one decode."""
    log = None

    def __init__(self, model, adapt):
        super().__init__(model, adapt)
        Recorder.log.append(("new", model, self.mode))

    def reset(self, version=_core.native.FORMAT_VERSION):
        Recorder.log.append(("reset", int(version), self.mode))
        return super().reset(version)

    def set_router(self, bcoder, lines=True):
        self.routed = bcoder is not None
        return super().set_router(bcoder, lines)

    def decode_block(self, payload, size):
        data = super().decode_block(payload, size)
        Recorder.log.append(("routed" if getattr(self, "routed", False) else "block", bytes(payload), data))
        return data


def record(frame):
    """((model, version, mode, ops) or None when the frame has no word-model block, decoded bytes)."""
    Recorder.log = []
    _registry.codec_pool.clear()          # fresh codecs, so each is a Recorder
    saved, _core.Codec = _core.Codec, Recorder
    saved_bc, _core.ByteCoder = _core.ByteCoder, RunRecorder
    try:
        out = nlmcodec.decompress(frame, threads=1)
    finally:
        _core.Codec, _core.ByteCoder = saved, saved_bc
        _registry.codec_pool.clear()
    news = [e for e in Recorder.log if e[0] == "new"]
    ops = [e for e in Recorder.log if e[0] != "new"]
    if not any(e[0] == "routed" for e in ops):          # the run matters only to routed blocks
        ops = [e for e in ops if e[0] not in ("track", "learn")]
    if not any(e[0] in ("block", "routed") for e in ops):
        return None, out
    assert len({(n[1].model_id, n[2]) for n in news}) == 1, "one model and mode per vector"
    version = nlmcodec.get_frame_info(frame).format_version
    mode = news[0][2]
    assert all(e[1:] == (version, mode) for e in ops if e[0] == "reset"), "resets for the frame's format and mode"
    if ops[0][0] != "reset":
        ops.insert(0, ("reset", version, mode))
    return (news[0][1], version, mode, ops), out


def light_flags(v, model, version, mode, size, routed, default_ids):
    """(work, default model in heads mode, older format, carry) of vector v: what the light file's choice rests on
    (size: the bytes of its word-model blocks; routed: it has a routed block)."""
    older = version < nlmcodec.FORMAT_VERSION
    default_heads = model.model_id in default_ids and mode == _core.native.MODE_HEADS and not older
    carry = v.model in CARRY_LEFT_OUT and v.name.startswith(("fallback-", "news_64k-"))
    # a routed vector's run decodes every byte with byte model 2 as well (about 20 min of qemu-s390x for all
    # of format 17's): the light file keeps the routed-* input's of the tiny and default models, which take
    # every path of §3.8 (the route does not depend on the model type)
    carry = carry or (routed and not (v.name.startswith("routed-") and v.model not in CARRY_LEFT_OUT))
    return size * model.params.size * MODE_COST[mode], default_heads, older, carry


def light_keeps(work, default_heads, older, carry, budget) -> bool:
    return not carry and (work <= budget * (OLDER_SHARE if older else 1) or (default_heads and work <= HEADS_BUDGET))


def why_left_out(work, carry) -> str:
    return "carry over blocks or routed: the routed-* vectors take the route" if carry else f"work {work:.2g}"


def estimate(v, default_ids):
    """(size, *light_flags) of vector v from its frame's block headers, nothing decoded; None when it has no
    word-model block.  A block is routed when its group is tracked (§7.2) in a format that routes (§3.8)."""
    frame = v.frame()
    info = nlmcodec.get_frame_info(frame)
    size, routed, tracked = 0, False, False
    for kind, start, n, _, _ in _frame.iter_blocks(frame):
        tracked = start > 1 if start else tracked
        if kind == _frame.BLOCK_MODEL:
            size += n
            routed = routed or (tracked and _frame.routes(info.format_version))
    if not size:
        return None
    model = _model_by_name(_registry.name_by_id(bytes.fromhex(v.model_id)) or v.model)
    return (size, *light_flags(v, model, info.format_version, _core.mode_of(v.adapt), size, routed, default_ids))


@functools.lru_cache(maxsize=None)
def _model_by_name(name):
    return nlmcodec.load_model(name)


def pack_str(s: bytes) -> bytes:
    return struct.pack("<H", len(s)) + s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=pathlib.Path)
    ap.add_argument("--models", default="", help="comma-separated model names of the manifest to keep (default all)")
    ap.add_argument("--light-budget", type=float, default=0, help="also write blocks_light.bin (see above)")
    ap.add_argument("--light-only", action="store_true",
                    help="write blocks_light.bin alone, decoding only the vectors it keeps (the others are chosen "
                         "from their frames' block headers)")
    args = ap.parse_args(argv)
    if args.light_only and not args.light_budget:
        ap.error("--light-only needs --light-budget")
    keep = set(filter(None, args.models.split(",")))
    default_ids = {m.model_id for m in _registry.default_models()}     # compress() chooses among them
    args.outdir.mkdir(parents=True, exist_ok=True)
    unique, nblocks, nbytes = {}, 0, 0     # block set (model, version, mode, ops) -> [vector names, work, heads?]
    unread = []                            # --light-only: the vectors left out before decoding
    for v in VS.ok_vectors():
        if v.model is None or (keep and v.model not in keep):
            continue
        if args.light_only:
            est = estimate(v, default_ids)
            if est is None:                # no word-model block
                continue
            if not light_keeps(*est[1:], args.light_budget):
                unread.append(f"{v.key} ({why_left_out(est[1], est[4])})")
                continue
        rec, out = record(v.frame())
        assert out == v.raw(), v.key
        if rec is None:
            continue
        model, version, mode, ops = rec
        mfile = model.model_id.hex()[:16] + ".nlmm"
        if not (args.outdir / mfile).exists():
            (args.outdir / mfile).write_bytes(model.to_bytes())
        body = [pack_str(mfile.encode()), struct.pack("<BBI", version, mode, len(ops))]
        for op in ops:
            if op[0] == "reset":
                body.append(b"\0")
            elif op[0] == "track":
                body.append(struct.pack("<BB", 2, op[1]))
            elif op[0] == "learn":
                body += [struct.pack("<BI", 3, len(op[1])), op[1]]
            else:
                _, payload, data = op
                body += [struct.pack("<BII", 1 if op[0] == "block" else 4, len(data), len(payload)), payload, data]
                nblocks += 1
                nbytes += len(data)
        size = sum(len(op[2]) for op in ops if op[0] in ("block", "routed"))
        flags = light_flags(v, model, version, mode, size, any(op[0] == "routed" for op in ops), default_ids)
        if args.light_only:
            assert flags == est[1:], (v.key, flags, est)     # the frame's headers said the same
        unique.setdefault(b"".join(body), [[], *flags])[0].append(v.key)
    recs, light, left_out, light_default_heads = [], [], [], []
    for body, (names, work, default_heads, older, carry) in unique.items():
        recs.append(pack_str("=".join(names).encode()) + body)
        if light_keeps(work, default_heads, older, carry, args.light_budget):
            light.append(recs[-1])
            if default_heads:
                light_default_heads.append("=".join(names))
        else:
            left_out.append(f"{'='.join(names)} ({why_left_out(work, carry)})")
    left_out = sorted(left_out + unread)
    for fname, rs in (("blocks.bin", None if args.light_only else recs),
                      ("blocks_light.bin", light if args.light_budget else None)):
        if rs is not None:
            (args.outdir / fname).write_bytes(b"NLMVBLKS" + struct.pack("<I", len(rs)) + b"".join(rs))
    nvec = sum(len(n) for n, *_ in unique.values())
    print(f"exported {nvec} vectors ({len(recs)} distinct block sets), {nblocks} word-model blocks, {nbytes} decoded "
          f"bytes to {args.outdir}")
    if args.light_budget:
        print(f"blocks_light.bin: {len(light)} block sets; the default model in heads mode: "
              f"{', '.join(light_default_heads) or 'none'}; left out (work over {args.light_budget:g}, in the default model's heads mode over "
              f"{HEADS_BUDGET:g}, in an older format over {args.light_budget * OLDER_SHARE:g}; the carry over "
              f"blocks of {', '.join(CARRY_LEFT_OUT)}): "
              f"{', '.join(left_out) or 'none'}")
        if not light_default_heads and any(d for _, _, d, _, _ in unique.values()):
            print("blocks_light.bin holds no vector of the default model in heads mode (the default mode): "
                  "raise HEADS_BUDGET", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
