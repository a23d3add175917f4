"""Write golden vectors for the nlmcodec frame format (codec/FORMAT.md §7).  APPEND-ONLY.

    python codec/vectors/make_vectors.py [--check]

Vectors of format N are named vN-* (format 12 adds a third mode, heads: *-heads; format 13 codes it at other rates), of format 7 v7-*, of format 6 v6-*, of format 5 v5-*, of format 4 v4-*, of format 3 v3-*, of format 2 v2-*; the unprefixed ones are format 1 (all still decoded;
error vectors whose meaning changed with a later format were retired to retired/, see retired/README.md).

ok/<name>.raw + ok/<name>.nlm: the frame must decode to the raw bytes, byte-exact; MANIFEST.json records the
format version, the model id, the model name, adapt and check of each, and whether re-encoding with that
model must reproduce the frame.  errors/<name>.nlm + errors/<name>.why: decoding must raise NLMError with
a message containing the .why text.

errors/fuzz-*.nlm: inputs found by fuzzing (tests/fuzz/run_fuzz.py), copied as found, with the message of
the NLMError they raise since the fix; this script does not make them and never touches them.

An existing vector is NEVER overwritten and its manifest entry never changed.  If the current encoder
would write different bytes for an existing name, the script reports it (with --check it exits 1): a change
of output bytes needs a new FORMAT_VERSION and new vectors, not edited ones.  Vectors for a bundled model
(tiny, tiny-lstm, tiny-nplm, tiny-kn, and the default: default-N, the newest) are written the first time the model file exists.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from pathlib import Path

import nlmcodec
from nlmcodec import _encode, _frame

HERE = Path(__file__).resolve().parent
OK, ERR = HERE / "ok", HERE / "errors"

ENGLISH = (b"The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of "
           b"times; it was the age of wisdom, it was the age of foolishness.\n")
MIXED = ("Hello WORLD, mIxEd CaSe and McDonald's\r\n\ttabs  and   spaces\n\n\u00dcber na\u00efve caf\u00e9 "
         "\u2014 \u201cquotes\u201d \u65e5\u672c\u8a9e 3.14159 x86_64\f\v\n").encode() + b"\xff\xfe invalid \xc3\x28 bytes\x00 end"
BINARY = bytes(range(256)) * 2 + random.Random(1234).randbytes(1500)


def _alice_full():
    """alice29.txt from the shared corpus ($NLMCODEC_CORPUS or ../shared/corpus), or None."""
    from nlmcodec._bench import corpus_dir
    root = corpus_dir()
    p = Path(root, "bench", "canterbury", "alice29.txt") if root else None
    return p.read_bytes() if p is not None and p.exists() else None


def _alice():
    a = _alice_full()
    return a[:4000] if a is not None else None


def spelled_input():
    """alice29.txt prose (bytes 4000-16000) with bodies the vocabulary lacks put in after every sentence
    (format 5: spelled by the byte model, §5.4): names that recur (cache hits), numbers, symbols, capitals,
    a 40-letter word (a 32-byte body and the rest).  None without the corpus."""
    a = _alice_full()
    if a is None:
        return None
    r = random.Random(5)
    names = [b"Zorvathian", b"Quillmarsh", b"Ekwensi-Obi", b"MacTavishe", b"Hrothgarr"]
    out = bytearray()
    for i, sentence in enumerate(a[4000:16000].split(b". ")):
        out += sentence + b". "
        if i % 3 == 0:
            out += b"(%s, %d-%03d; x%d_y%d) " % (r.choice(names), r.randrange(1800, 2030), r.randrange(1000),
                                                r.randrange(99), r.randrange(99))
        if i % 17 == 0:
            out += b"antidisestablishmentarianismicallyness "
    return bytes(out)


def repeats_input():
    """alice29.txt prose (bytes 16000-22000), then the same text again with every 7th sentence changed, a
    table whose rows repeat with new numbers and a name the vocabulary lacks (format 6: the token match
    flag, §3.4, hits, misses and predicts unknown bodies).  None without the corpus."""
    a = _alice_full()
    if a is None:
        return None
    r = random.Random(6)
    text = a[16000:22000]
    out = bytearray(text)
    for i, sentence in enumerate(text.split(b". ")):
        out += (b"Quorraxin said nothing at all" if i % 7 == 3 else sentence) + b". "
    for i in range(40):
        out += b"| Quorraxin | row %d | %d.%02d | MacTavishe-Olu |\n" % (i, r.randrange(100), r.randrange(100))
    return bytes(out)


def dense_input():
    """The first 64 KiB of Calgary news (cut after a newline): Usenet headers and quotes, over 16,384 tokens
    (format 7: the encoder cuts its word-model block at the token bound, §3.5).  None without the corpus."""
    from nlmcodec._bench import corpus_dir
    root = corpus_dir()
    p = Path(root, "bench", "calgary", "news") if root else None
    if p is None or not p.exists():
        return None
    d = p.read_bytes()[:_frame.MAX_MODEL_BLOCK_V3]
    return d[:d.rindex(b"\n") + 1]


def inputs():
    d = {"empty": b"", "one_byte": b"a", "short_english": ENGLISH, "mixed": MIXED, "binary": BINARY}
    a = _alice()
    if _frame.FORMAT_VERSION >= 5 and a is not None:
        d["spelled"] = spelled_input()
    if _frame.FORMAT_VERSION >= 6 and a is not None:
        d["repeats"] = repeats_input()
    if _frame.FORMAT_VERSION >= 7 and dense_input() is not None:
        d["news_64k"] = dense_input()
    if a is not None:
        d["alice_4k"] = a
    return d


NOMODEL_INPUTS = ("empty", "one_byte", "binary")   # frames without a model id, identical for any model
# the coding modes of the current format (heads mode from format 12: FORMAT.md §6.5)
MODES = (("static", False), ("dynamic", True)) + ((("heads", "heads"),) if _frame.FORMAT_VERSION >= 12 else ())
V = f"v{_frame.FORMAT_VERSION}-"                   # names of the vectors of the current format


def log_input():
    """A 270 KB web-server-like log (generated): more than one 256 KiB byte-model block, so its frame holds a
    run of two byte-model blocks, the second continuing the first (format 4)."""
    r = random.Random(4)
    paths = [b"/index.html", b"/img/logo.png", b"/api/v1/items", b"/static/app.js", b"/robots.txt"]
    out = bytearray()
    i = 0
    while len(out) < 270_000:
        out += b"10.0.%d.%d - - [01/Dec/2026:13:%02d:%02d +0000] \"GET %s HTTP/1.1\" %d %d\n" % (
            r.randrange(4), r.randrange(256), (i // 60) % 60, i % 60, r.choice(paths), r.choice((200, 200, 304, 404)),
            r.randrange(100, 40000))
        i += 1
    return bytes(out)


def fallback_input():
    """Text, then a run of tabs that fills whole 64 KiB blocks (a run over 65,535 bytes, which the word
    model refuses), then text: word-model blocks on both sides of refused blocks (issue 8)."""
    a = _alice_full()
    text = a if a is not None else ENGLISH * 600
    return text[:30000] + b"\t" * 140000 + text[30000:70000]


def nomodel_frame(raw, adapt, check=_frame.CHECK_CRC32):
    e = _encode.FrameEncoder(None, None, None, adapt, check)
    return e.feed(raw) + e.finish()


def handmade_model_frame(model_id: bytes, payload: bytes, size: int, block_crc: int = 0) -> bytes:
    """A valid-looking frame with one word-model block (for the wrong/missing model vectors)."""
    blocks = (_frame.block_header(_frame.BLOCK_MODEL, True, size, len(payload)) + payload
              + block_crc.to_bytes(_frame.BLOCK_CHECK_SIZE, "little"))
    return (_frame.header_v2(False, _frame.CHECK_CRC32, model_id) + blocks
            + _frame.trailer_v2([(size, len(blocks))], size, _frame.CHECK_CRC32, 0))


def ok_vectors():
    """[(name, raw, frame, manifest entry)] of the current format that can be made now."""
    out = []
    ins = inputs()
    for mode, adapt in MODES:
        for name in NOMODEL_INPUTS:
            out.append((f"{V}{name}-nomodel-{mode}", ins[name], nomodel_frame(ins[name], adapt),
                        {"model": None, "adapt": adapt, "check": 1, "reencode": True}))
    out.append((f"{V}short_english-nomodel-nocheck", ENGLISH, nomodel_frame(ENGLISH, True, _frame.CHECK_NONE),
                {"model": None, "adapt": True, "check": 0, "reencode": True}))
    out.append((f"{V}concat-nomodel", ENGLISH + BINARY, nomodel_frame(ENGLISH, False) + nomodel_frame(BINARY, True),
                {"model": None, "adapt": None, "check": 1, "reencode": False, "frames": 2}))
    if _frame.FORMAT_VERSION >= 4:
        log = log_input()
        f = nomodel_frame(log, False)
        assert [b.kind for b in nlmcodec.get_frame_info(f).blocks] == ["byte", "byte"]
        out.append((f"{V}log_270k-nomodel-static", log, f,
                    {"model": None, "adapt": False, "check": 1, "reencode": True}))
    bundled = nlmcodec._bundled_files()
    # tiny-lstm, tiny-nplm: the other model types (FORMAT.md §2.4); tiny-kn: the Kneser-Ney mixture (§2.5)
    for model_name in ("tiny", "tiny-lstm", "tiny-nplm", "tiny-kn", nlmcodec._default_model_name()):
        if model_name not in bundled:
            continue
        m = nlmcodec.load_model(model_name)
        # the default's vectors are named by its bundled name; default-1's say "default", its name when they
        # were written (every default stays bundled as default-N, and vectors find their model by id)
        tag = "default" if model_name in ("default", "default-1") else model_name
        cases = dict(ins, fallback=fallback_input()) if "alice_4k" in ins else ins
        for mode, adapt in MODES:
            for name, raw in cases.items():
                f = nlmcodec.compress(raw, model=m, adapt=adapt)
                out.append((f"{V}{name}-{tag}-{mode}", raw, f,
                            {"model": tag, "adapt": adapt, "check": 1, "reencode": True}))
    return out


def _retrailer(frame: bytes, groups, total, content_crc) -> bytes:
    """frame with its trailer rewritten (valid index CRC and footer) from the given fields."""
    end = frame.rindex(b"\x80", 0, len(frame) - int.from_bytes(frame[-6:-2], "little") + 1)
    return frame[:end] + _frame.trailer_v2(groups, total, _frame.CHECK_CRC32, content_crc)


def error_vectors():
    base = nomodel_frame(ENGLISH, False)           # one lzma block (ENGLISH compresses)
    stored = nomodel_frame(random.Random(99).randbytes(2000), False)   # one stored block
    info = nlmcodec.get_frame_info(stored)
    assert info.blocks[0].kind == "stored"
    hlen = _frame.HEADER_SIZE_V2
    first = hlen + len(_frame.block_header(0, True, 2000, 2000))     # first payload byte
    crc = zlib.crc32(ENGLISH)
    g = [tuple(x) for x in nlmcodec.get_frame_info(base).groups]
    v = {}
    v["truncated"] = (base[:-3], "truncated frame")
    v["truncated_header"] = (base[:9], "truncated frame")
    v["empty_input"] = (b"", "truncated frame")
    v["bad_magic"] = (b"\xb2" + base[1:], "bad magic")
    nxt = _frame.FORMAT_VERSION + 1
    v["unknown_version"] = (base[:4] + bytes([nxt]) + base[5:], f"unsupported format version {nxt}")
    v["unknown_flags"] = (base[:5] + bytes([base[5] | 0x80]) + base[6:], "unknown flags")
    if _frame.FORMAT_VERSION >= 12:
        # heads mode's flag (0x10) means something only with the adapt flag: a static frame carrying it, its
        # header checksum right, is refused
        h = bytearray(base[:6])
        h[5] |= _frame.FLAG_HEADS
        v["heads_flag_without_adapt"] = (bytes(h) + zlib.crc32(h).to_bytes(4, "little") + base[10:],
                                         "unknown flags")
    v["flipped_bit_header"] = (stored[:5] + bytes([stored[5] ^ 0x01]) + stored[6:], "header checksum mismatch")
    mid = first + 100
    v["flipped_bit_payload"] = (stored[:mid] + bytes([stored[mid] ^ 0x10]) + stored[mid + 1:], "CRC32 mismatch")
    v["trailing_garbage"] = (base + b"garbage!", "trailing garbage")
    v["crc_mismatch"] = (_retrailer(base, g, len(ENGLISH), crc ^ 0xFF), "CRC32 mismatch")
    v["index_checksum"] = (base[:-8] + bytes([base[-8] ^ 0x01]) + base[-7:], "index checksum mismatch")
    v["index_mismatch"] = (_retrailer(base, [(g[0][0], g[0][1] + 1)], len(ENGLISH), crc),
                           "index does not match the blocks")
    v["bad_footer"] = (base[:-1] + b"X", "bad footer")
    v["no_group_start"] = (base[:hlen] + bytes([base[hlen] & ~_frame.TYPE_GROUP_START]) + base[hlen + 1:],
                           "does not start a group")
    v["wrong_model_id"] = (handmade_model_frame(bytes([0xEE]) * 32, b"\x00" * 8, 10), "not bundled")
    # a valid header whose stored block claims more bytes than the frame holds
    v["block_past_end"] = (stored[:first + 50], "truncated frame")
    # format 3: word-model blocks are at most 64 KiB, and carry the CRC32 of their output
    v["model_block_too_large"] = (handmade_model_frame(bytes([0xEE]) * 32, b"\x00" * 8, _frame.MAX_MODEL_BLOCK_V3 + 1),
                                  f"model block 0 larger than {_frame.MAX_MODEL_BLOCK_V3} bytes")
    if "tiny" in nlmcodec._bundled_files():
        good = nlmcodec.compress(ENGLISH, model="tiny", adapt=False)
        info = nlmcodec.get_frame_info(good)
        assert [b.kind for b in info.blocks] == ["model"], info
        k = _frame.HEADER_SIZE_V2 + _frame.MODEL_ID_SIZE + len(_frame.block_header(2, True, info.blocks[0].size,
                                                                                    info.blocks[0].compressed_size))
        k += info.blocks[0].compressed_size                  # the block CRC32
        v["block_crc_mismatch"] = (good[:k] + bytes([good[k] ^ 0x01]) + good[k + 1:], "block CRC32 mismatch")
        if _frame.FORMAT_VERSION >= 7:
            # format 7: a word-model block holds at most 16,384 tokens; this one is the tiny model's own coding
            # of 20,000 one-byte tokens (without the bound), its block CRC right: the decoder stops at the bound
            from nlmcodec._core import Codec
            tiny = nlmcodec.load_model("tiny")
            c = Codec(tiny, False)
            c.reset(max_tokens=0)
            dots = b"." * 20000
            v["model_block_over_token_bound"] = (
                handmade_model_frame(tiny.model_id, c.encode_block(dots), len(dots), zlib.crc32(dots)),
                "corrupt payload")
    if _frame.FORMAT_VERSION >= 4:
        v.update(byte_error_vectors())
    out = {V + k: x for k, x in v.items()}
    # format 2, as this release reads it: word-model blocks of at most 64 KiB (what its encoder wrote)
    big = _frame.MAX_MODEL_BLOCK_V2 + 1
    blk = _frame.block_header(_frame.BLOCK_MODEL, True, big, 8) + b"\x00" * 8
    out["v2-model_block_over_64k"] = (
        _frame.header_v2(True, _frame.CHECK_CRC32, bytes([0xEE]) * 32, version=2) + blk
        + _frame.trailer_v2([(big, len(blk))], big, _frame.CHECK_CRC32, 0),
        f"model block 0 larger than {_frame.MAX_MODEL_BLOCK_V2} bytes")
    return out


def _byte_frame(blocks) -> bytes:
    """A frame (no model id) of the given byte-model blocks [(group start, size, payload, crc)]."""
    groups = []
    for start, size, payload, crc in blocks:
        if start:
            groups.append([])
        groups[-1].append((_frame.BLOCK_BYTE, size, payload + crc.to_bytes(_frame.BLOCK_CHECK_SIZE, "little")))
    bodies = [_encode.serialize(g) for g in groups]
    index = [(sum(size for _, size, _ in g), len(b)) for g, b in zip(groups, bodies)]
    return (_frame.header_v2(False, _frame.CHECK_CRC32, None) + b"".join(bodies)
            + _frame.trailer_v2(index, sum(s for s, _ in index), _frame.CHECK_CRC32, 0))


def byte_error_vectors():
    """Format 4: damaged or forged byte-model blocks (codec/FORMAT.md §9.1)."""
    from nlmcodec._core import ByteCoder

    text = ENGLISH * 20
    bc = ByteCoder()
    p1 = bc.encode_block(text, len(text))
    crc = zlib.crc32(text)
    v = {}
    v["byte_block_crc_mismatch"] = (_byte_frame([(True, len(text), p1, crc ^ 1)]), "block CRC32 mismatch")
    v["byte_payload_flipped"] = (_byte_frame([(True, len(text), p1[:20] + bytes([p1[20] ^ 0x40]) + p1[21:], crc)]),
                                 "corrupt byte-model block 0")
    v["byte_continue_without_run"] = (_byte_frame([(True, len(text), b"\x00" + p1[1:], crc)]),
                                      "corrupt byte-model block 0")
    v["byte_bad_run_byte"] = (_byte_frame([(True, len(text), b"\x18" + p1[1:], crc)]), "corrupt byte-model block 0")
    # a run started for 2^10 bytes, then a block that takes it past 1,024 bytes
    small = text[:1000]
    bc2 = ByteCoder()
    q1 = bc2.encode_block(small, len(small))
    q2 = bc.encode_block(text[:100], 0)        # any payload: the run overflows before it matters
    v["byte_run_overflow"] = (_byte_frame([(True, len(small), q1, zlib.crc32(small)),
                                           (False, 100, q2, zlib.crc32(text[:100]))]), "corrupt byte-model block 1")
    # a group start ends the run: the next group cannot continue it
    bc3 = ByteCoder()
    r1 = bc3.encode_block(small, 2000)
    r2 = bc3.encode_block(small, 0)
    v["byte_continue_across_groups"] = (_byte_frame([(True, len(small), r1, zlib.crc32(small)),
                                                     (True, len(small), r2, zlib.crc32(small))]),
                                        "corrupt byte-model block 1")
    big = _frame.MAX_BYTE_BLOCK + 1
    v["byte_block_too_large"] = (_byte_frame([(True, big, b"\x17" + b"\x00" * 8, 0)]),
                                 f"byte block 0 larger than {_frame.MAX_BYTE_BLOCK} bytes")
    # kind 3 in a format-3 frame is an unknown block type
    f4 = _byte_frame([(True, len(text), p1, crc)])
    h3 = _frame.header_v2(False, _frame.CHECK_CRC32, None, version=3)
    v["byte_block_in_v3"] = (h3 + f4[_frame.HEADER_SIZE_V2:], "unknown type 0x07")
    return v


def _write_new(path: Path, data: bytes, report, check_only):
    if path.exists():
        if path.read_bytes() != data:
            report.append(f"DIFFERS (kept old): {path.relative_to(HERE)}")
        return False
    if check_only:
        report.append(f"missing: {path.relative_to(HERE)}")
        return False
    path.write_bytes(data)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a vector differs or is missing")
    args = ap.parse_args(argv)
    OK.mkdir(parents=True, exist_ok=True)
    ERR.mkdir(parents=True, exist_ok=True)
    man_path = OK / "MANIFEST.json"
    manifest = json.loads(man_path.read_text()) if man_path.exists() else {}
    report, written = [], []
    for name, raw, frame, entry in ok_vectors():
        assert nlmcodec.decompress(frame, **({"model": entry["model"]} if entry["model"] else {})) == raw, name
        infos = [nlmcodec.get_frame_info(frame)]
        mid = infos[0].model_id
        entry = {"format_version": _frame.FORMAT_VERSION, "model_id": mid.hex() if mid else None, **entry}
        a = _write_new(OK / f"{name}.raw", raw, report, args.check)
        b = _write_new(OK / f"{name}.nlm", frame, report, args.check)
        if name not in manifest and not args.check:
            manifest[name] = entry
        if a or b:
            written.append(name)
    for name, (frame, why) in error_vectors().items():
        try:
            nlmcodec.decompress(frame)
        except nlmcodec.NLMError as e:
            assert why in str(e), (name, str(e))
        else:
            raise AssertionError(f"error vector {name} decodes")
        a = _write_new(ERR / f"{name}.nlm", frame, report, args.check)
        b = _write_new(ERR / f"{name}.why", why.encode() + b"\n", report, args.check)
        if a or b:
            written.append("errors/" + name)
    if not args.check:
        man_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1, sort_keys=True) + "\n")
    for line in report:
        print(line)
    print(f"wrote {len(written)} new vectors: {', '.join(written) or '-'}")
    return 1 if (args.check and report) else 0


if __name__ == "__main__":
    sys.exit(main())
