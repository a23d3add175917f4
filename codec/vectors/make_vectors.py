"""Write and check the golden vectors of the current frame format (docs/format.md §7; layout: vectorset.py).

    python codec/vectors/make_vectors.py [--check]

A format's vectors are written once, when the format is new (no v<N>/ folder yet), and never again: from 1.0
every released format is frozen (docs/format.md, format policy), so a change of output bytes is a new format
with new vectors beside the frozen ones.  --check writes nothing: it re-makes every vector of the current
format and exits 1 if one differs from the stored frame, is missing, or is not in the manifest.

Vectors are made with every model on the search path that a vector names: the tiny test models (tests/models,
put on NLMCODEC_MODEL_PATH here: tiny, tiny-lstm and tiny-nplm, the three model types; tiny-kn, the
Kneser-Ney mixture) and the bundled default.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from pathlib import Path

import os

HERE = Path(__file__).resolve().parent
TEST_MODELS = HERE.parents[1] / "tests" / "models"
os.environ["NLMCODEC_MODEL_PATH"] = os.pathsep.join(
    [str(TEST_MODELS)] + [d for d in os.environ.get("NLMCODEC_MODEL_PATH", "").split(os.pathsep) if d])
sys.path.insert(0, str(HERE))

import nlmcodec  # noqa: E402  (after the model path is set)
from nlmcodec import _encode, _frame  # noqa: E402
import vectorset as VS  # noqa: E402

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
    d = p.read_bytes()[:_frame.MAX_MODEL_BLOCK]
    return d[:d.rindex(b"\n") + 1]


def inputs():
    d = {"empty": b"", "one_byte": b"a", "short_english": ENGLISH, "mixed": MIXED, "binary": BINARY}
    a = _alice()
    if a is not None:
        d["spelled"] = spelled_input()
        d["repeats"] = repeats_input()
    if dense_input() is not None:
        d["news_64k"] = dense_input()
    if a is not None:
        d["alice_4k"] = a
    return d


NEWEST_DEFAULT = "default-3"
NOMODEL_INPUTS = ("empty", "one_byte", "binary")   # frames without a model id, identical for any model
MODES = (("static", False), ("dynamic", True), ("heads", "heads"))   # the coding modes (docs/format.md §6)


def log_input():
    """A 270 KB web-server-like log (generated): more than one 256 KiB byte-model block, so its frame holds a
    run of two byte-model blocks, the second continuing the first."""
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


def tracked_input():
    """Calgary news' first 120,000 bytes, a log, alice29.txt prose, the log again (270,000 bytes): the byte model
    runs alongside the word model from the first block, and in static mode the default model's group is a
    tracked group (format 15, docs/format.md §7.2) of word-model and byte-model blocks; the tiny model's is a
    tracked group of byte-model blocks.  None without the corpus."""
    from nlmcodec._bench import corpus_dir
    a, root = _alice_full(), corpus_dir()
    p = Path(root, "bench", "calgary", "news") if root else None
    if a is None or p is None or not p.exists():
        return None
    log = log_input()
    return p.read_bytes()[:120_000] + log[:70_000] + a[20000:60000] + log[100_000:140_000]


def routed_input():
    """Calgary paper1's first 8,000 bytes (troff requests among prose) and news' first 4,000 (mail headers,
    quoted lines): a group the encoder tracks for the line route (format 17, docs/format.md §3.8), whose
    word-model blocks leave lines to the run.  None without the corpus."""
    from nlmcodec._bench import corpus_dir
    root = corpus_dir()
    if not root:
        return None
    paper, news = Path(root, "bench", "calgary", "paper1"), Path(root, "bench", "calgary", "news")
    if not paper.exists() or not news.exists():
        return None
    return paper.read_bytes()[:8000] + news.read_bytes()[:4000]


def fallback_input():
    """Text, then a run of tabs that fills whole 64 KiB blocks (a run over 65,535 bytes, which the word
    model refuses), then text: word-model blocks on both sides of refused blocks."""
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
    return (_frame.header(False, _frame.CHECK_CRC32, model_id) + blocks
            + _frame.trailer([(size, len(blocks))], size, _frame.CHECK_CRC32, 0))


def ok_vectors():
    """[(name, raw, frame, manifest entry)] of the current format that can be made now."""
    out = []
    ins = inputs()
    for mode, adapt in MODES:
        for name in NOMODEL_INPUTS:
            out.append((f"{name}-nomodel-{mode}", ins[name], nomodel_frame(ins[name], adapt),
                        {"model": None, "adapt": adapt, "check": 1, "reencode": True}))
    out.append((f"short_english-nomodel-nocheck", ENGLISH, nomodel_frame(ENGLISH, True, _frame.CHECK_NONE),
                {"model": None, "adapt": True, "check": 0, "reencode": True}))
    out.append((f"concat-nomodel", ENGLISH + BINARY, nomodel_frame(ENGLISH, False) + nomodel_frame(BINARY, True),
                {"model": None, "adapt": None, "check": 1, "reencode": False, "frames": 2}))
    log = log_input()
    f = nomodel_frame(log, False)
    runs = [(kind, payload[0]) for kind, _, _, payload, _ in _frame.iter_blocks(f)]
    assert runs == [(_frame.BLOCK_BYTE, _encode.size_class(_encode.PLAIN_GROUP_FACTOR * _encode.GROUP_SIZE))] + \
        [(_frame.BLOCK_BYTE, 0)] * (len(runs) - 1), runs                  # one run over the group's blocks
    out.append((f"log_270k-nomodel-static", log, f,
                {"model": None, "adapt": False, "check": 1, "reencode": True}))
    # tiny-lstm, tiny-nplm: the other model types (docs/format.md §2.4); tiny-kn: the Kneser-Ney mixture (§2.5);
    # the newest default model (format 13's vectors: default-2; format 14's: default-3)
    for model_name in ("tiny", "tiny-lstm", "tiny-nplm", "tiny-kn", NEWEST_DEFAULT):
        m = nlmcodec.load_model(model_name)
        tag = model_name
        cases = dict(ins, fallback=fallback_input()) if "alice_4k" in ins else ins
        if model_name in ("tiny", NEWEST_DEFAULT) and tracked_input() is not None:
            cases["tracked"] = tracked_input()
        if routed_input() is not None:
            cases["routed"] = routed_input()
        for mode, adapt in MODES:
            for name, raw in cases.items():
                f = nlmcodec.compress(raw, model=m, adapt=adapt)
                out.append((f"{name}-{tag}-{mode}", raw, f,
                            {"model": tag, "adapt": adapt, "check": 1, "reencode": True}))
    return out


def _retrailer(frame: bytes, groups, total, content_crc) -> bytes:
    """frame with its trailer rewritten (valid index CRC and footer) from the given fields."""
    end = frame.rindex(b"\x80", 0, len(frame) - int.from_bytes(frame[-6:-2], "little") + 1)
    return frame[:end] + _frame.trailer(groups, total, _frame.CHECK_CRC32, content_crc)


def error_vectors():
    base = nomodel_frame(ENGLISH, False)           # one lzma block (ENGLISH compresses)
    stored = nomodel_frame(random.Random(99).randbytes(2000), False)   # one stored block
    info = nlmcodec.get_frame_info(stored)
    assert info.blocks[0].kind == "stored"
    hlen = _frame.HEADER_SIZE
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
    # word-model blocks are at most 64 KiB, and carry the CRC32 of their output
    v["model_block_too_large"] = (handmade_model_frame(bytes([0xEE]) * 32, b"\x00" * 8, _frame.MAX_MODEL_BLOCK + 1),
                                  f"model block 0 larger than {_frame.MAX_MODEL_BLOCK} bytes")
    good = nlmcodec.compress(ENGLISH, model="tiny", adapt=False)
    info = nlmcodec.get_frame_info(good)
    assert [b.kind for b in info.blocks] == ["model"], info
    k = _frame.HEADER_SIZE + _frame.MODEL_ID_SIZE + len(_frame.block_header(2, True, info.blocks[0].size,
                                                                                info.blocks[0].compressed_size))
    k += info.blocks[0].compressed_size                  # the block CRC32
    v["block_crc_mismatch"] = (good[:k] + bytes([good[k] ^ 0x01]) + good[k + 1:], "block CRC32 mismatch")
    # a word-model block holds at most 16,384 tokens; this one is the tiny model's own coding
    # of 20,000 one-byte tokens (without the bound), its block CRC right: the decoder stops at the bound
    from nlmcodec._core import Codec
    tiny = nlmcodec.load_model("tiny")
    c = Codec(tiny, False)
    c.lab_reset(max_tokens=0)
    dots = b"." * 20000
    v["model_block_over_token_bound"] = (
        handmade_model_frame(tiny.model_id, c.encode_block(dots), len(dots), zlib.crc32(dots)),
        "corrupt payload")
    v.update(byte_error_vectors())
    v.update(tracked_error_vectors())
    v.update(routed_error_vectors())
    return v


def _byte_frame(blocks) -> bytes:
    """A frame (no model id) of the given byte-model blocks [(group start, size, payload, crc)]."""
    groups = []
    for start, size, payload, crc in blocks:
        if start:
            groups.append([])
        groups[-1].append((_frame.BLOCK_BYTE, size, payload + crc.to_bytes(_frame.BLOCK_CHECK_SIZE, "little")))
    bodies = [_encode.serialize(g) for g in groups]
    index = [(sum(size for _, size, _ in g), len(b)) for g, b in zip(groups, bodies)]
    return (_frame.header(False, _frame.CHECK_CRC32, None) + b"".join(bodies)
            + _frame.trailer(index, sum(s for s, _ in index), _frame.CHECK_CRC32, 0))


def byte_error_vectors():
    """Damaged or forged byte-model blocks (docs/format.md §9.1)."""
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
    return v


def _tracked_frame(blocks, version=None, raw=b"") -> bytes:
    """A frame (no model id) of one group [(kind, type bits 3-7, size, payload, crc or None)]: the first block
    starts the group; raw: its decoded bytes (for the content check)."""
    body = b""
    for i, (kind, track, size, payload, crc) in enumerate(blocks):
        t = kind | (_frame.TYPE_GROUP_START if i == 0 else 0) | track << _frame.TYPE_TRACK_SHIFT
        body += bytes([t]) + _frame.varint(size) + _frame.varint(len(payload)) + payload
        body += crc.to_bytes(_frame.BLOCK_CHECK_SIZE, "little") if crc is not None else b""
    total = sum(size for _, _, size, _, _ in blocks)
    h = bytearray(_frame.header(False, _frame.CHECK_CRC32, None))
    if version is not None:
        h[4] = version
        h[-4:] = zlib.crc32(h[:-4]).to_bytes(4, "little")
    return bytes(h) + body + _frame.trailer([(total, len(body))], total, _frame.CHECK_CRC32, zlib.crc32(raw))


def tracked_error_vectors():
    """Forged tracked groups (format 15, docs/format.md §7.2): a stored block that starts a tracked group with
    a run of 2^10 bytes, then a byte-model block that continues the run (valid), and its damaged variants."""
    from nlmcodec._core import ByteCoder

    text = ENGLISH * 6                                    # 900 bytes
    a, b = text[:300], text[300:600]
    bc = ByteCoder()
    bc.start_run(10)
    bc.feed(a)
    pb = bc.encode_block(b, 0)
    stored = (_frame.BLOCK_STORED, 10, len(a), a, None)
    byte = (_frame.BLOCK_BYTE, 0, len(b), pb, zlib.crc32(b))
    ok = _tracked_frame([stored, byte], raw=a + b)
    assert nlmcodec.decompress(ok) == a + b
    v = {}
    v["tracked_byte_block_starts_run"] = (
        _tracked_frame([stored, (_frame.BLOCK_BYTE, 0, len(b), b"\x0a" + pb[1:], zlib.crc32(b))]),
        "starts a run inside a tracked group")
    v["tracked_run_overflow"] = (_tracked_frame([stored, (_frame.BLOCK_STORED, 0, 800, text[:800], None)]),
                                 "past the byte-model run's size")
    v["track_bits_without_group_start"] = (_tracked_frame([stored, (_frame.BLOCK_BYTE, 10, len(b), pb, zlib.crc32(b))]),
                                           "block 1 has unknown type")
    v["track_class_out_of_range"] = (_tracked_frame([(_frame.BLOCK_STORED, 9, len(a), a, None)]),
                                     "block 0 has unknown type")
    v["track_bits_in_format_14"] = (_tracked_frame([stored, byte], version=14, raw=a + b), "block 0 has unknown type")
    return v


def routed_error_vectors():
    """Forged routed blocks (format 17, docs/format.md §3.8): the tiny model's word-model block of a tracked group
    whose run starts with it (static mode, 1,500 bytes of troff and mail lines), valid with its run of 2^11 bytes;
    with a route byte other than 0 and 1; and with a run of 2^10 bytes, which its lines take past its size."""
    from nlmcodec._core import ByteCoder, Codec

    tiny = nlmcodec.load_model("tiny")
    text = (b".TH LS 1\n.SH NAME\nls \\- list directory contents\nFrom: someone@example.org\n"
            b"> quoted text of the message before\nThe program lists the files of a directory.\n") * 8
    text = text[:1500]
    c = Codec(tiny, False)
    c.reset()
    run = ByteCoder()
    run.start_run(11)
    c.set_router(run, True)
    payload = c.encode_block(text)
    assert payload[0] == 1 and c.stats()["route_run_lines"] > 0

    def frame(track, body):
        blocks = (_frame.block_header(_frame.BLOCK_MODEL, True, len(text), len(body), track) + body
                  + zlib.crc32(text).to_bytes(_frame.BLOCK_CHECK_SIZE, "little"))
        return (_frame.header(False, _frame.CHECK_CRC32, tiny.model_id) + blocks
                + _frame.trailer([(len(text), len(blocks))], len(text), _frame.CHECK_CRC32, zlib.crc32(text)))

    assert nlmcodec.decompress(frame(11, payload)) == text
    return {"route_byte_out_of_range": (frame(11, b"\x02" + payload[1:]), "corrupt word-model block 0"),
            "routed_run_overflow": (frame(10, payload), "corrupt word-model block 0")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a vector differs or is missing")
    args = ap.parse_args(argv)
    version = _frame.FORMAT_VERSION
    folder = HERE / f"v{version}"
    manifest = VS.manifest() if VS.MANIFEST_PATH.exists() else {"inputs": {}, "ok": {}, "errors": {}}
    new = not folder.exists()
    if new and args.check:
        print(f"missing: no vectors of format {version} (v{version}/)")
        return 1
    made_ok, made_err = {}, {}
    for name, raw, frame, entry in ok_vectors():
        assert nlmcodec.decompress(frame) == raw, name
        mid = nlmcodec.get_frame_info(frame).model_id
        iid = VS.input_id(raw)
        made_ok[f"v{version}/{name}"] = (raw, frame, {"format_version": version, "model_id": mid.hex() if mid else None,
                                                     **entry, "input": iid, "sha256": VS.sha256(frame)})
    for name, (frame, why) in error_vectors().items():
        try:
            nlmcodec.decompress(frame)
        except nlmcodec.NLMError as e:
            assert why in str(e), (name, str(e))
        else:
            raise AssertionError(f"error vector {name} decodes")
        made_err[f"v{version}/{name}"] = (frame, {"format_version": version, "why": why, "sha256": VS.sha256(frame)})
    if new:
        (folder / "ok").mkdir(parents=True)
        (folder / "errors").mkdir(parents=True)
        (HERE / "inputs").mkdir(exist_ok=True)
        for key, (raw, frame, entry) in made_ok.items():
            ip = HERE / "inputs" / f"{entry['input']}.raw"
            if not ip.exists():
                ip.write_bytes(raw)
                manifest["inputs"][entry["input"]] = {"name": key.split("/")[1].split("-")[0], "size": len(raw),
                                                      "sha256": VS.sha256(raw)}
            VS.OkVector(key, entry).path.write_bytes(frame)
            manifest["ok"][key] = entry
        for key, (frame, entry) in made_err.items():
            VS.ErrorVector(key, entry).path.write_bytes(frame)
            manifest["errors"][key] = entry
        VS.MANIFEST_PATH.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(made_ok)} ok and {len(made_err)} error vectors of format {version}")
        return 0
    report = []
    for key, (raw, frame, entry) in made_ok.items():
        old = manifest["ok"].get(key)
        if old is None:
            report.append(f"not in the manifest: {key}")
        elif not _frame.same_frame(frame, VS.OkVector(key, old).frame()):
            report.append(f"DIFFERS: {key}")
    for key, (frame, entry) in made_err.items():
        old = manifest["errors"].get(key)
        if old is None:
            report.append(f"not in the manifest: {key}")
        elif frame != VS.ErrorVector(key, old).frame():
            report.append(f"DIFFERS: {key}")
    for line in report:
        print(line)
    print(f"format {version}: {len(made_ok)} ok and {len(made_err)} error vectors re-made, {len(report)} problems")
    if report and not args.check:
        print("a frozen format's vectors never change: a change of output bytes is a new format (docs/format.md)")
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())
