"""The byte model (csrc/bytemodel/cm.c, docs/format.md §9) and its frame blocks (kind 3, §7.2).

* C: tests/c/cm_driver.c built as the scalar -O0 reference and as the optimised build, with gcc and (when
  present) clang: every build codes the same inputs to the same payloads (size and FNV-1a hash), and each
  decodes its own payloads back;
* exact sizes of the byte model alone on generated inputs (what this release writes, pinned);
* frames: byte-model runs over several blocks, several groups and threads, fed in pieces, every mode (static,
  dynamic and heads, the default);
* hostile payloads fail with NLMError and stop early.
"""
import pathlib
import random
import re
import shutil
import subprocess
import sys
import zlib

import pytest

import nlmcodec
from nlmcodec import _encode, _frame
from nlmcodec._core import ByteCoder
from conftest import lane_modes

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402

SOURCES = cbuild.BYTEMODEL


def log_text(n, seed=4):
    r = random.Random(seed)
    paths = [b"/index.html", b"/img/logo.png", b"/api/v1/items", b"/static/app.js", b"/robots.txt"]
    out = bytearray()
    i = 0
    while len(out) < n:
        out += b"10.0.%d.%d - - [01/Dec/2026:13:%02d:%02d +0000] \"GET %s HTTP/1.1\" %d %d\n" % (
            r.randrange(4), r.randrange(256), (i // 60) % 60, i % 60, r.choice(paths), r.choice((200, 304, 404)),
            r.randrange(100, 40000))
        i += 1
    return bytes(out[:n])


ENGLISH = (b"It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
           b"foolishness, it was the epoch of belief, it was the epoch of incredulity.\n") * 40


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cm_in")
    files = {"log.txt": log_text(300_000), "english.txt": ENGLISH,
             "random.bin": random.Random(7).randbytes(20_000), "zeros.bin": bytes(70_000), "one.txt": b"x",
             "binary.bin": bytes(range(256)) * 40}
    for name, data in files.items():
        (d / name).write_bytes(data)
    return [d / n for n in files]


def run_driver(exe, files):
    r = subprocess.run([str(exe), *map(str, files)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {}
    for line in r.stdout.splitlines():
        f = line.split()
        if f[0] == "total":
            continue
        assert f[-1] == "ok", line
        rows[pathlib.Path(f[0]).name] = (int(f[1]), int(f[2]), re.search(r"fnv ([0-9a-f]{16})", line).group(1))
    return rows


@pytest.mark.one_lane          # C builds of tests/c/cm_driver.c: no binding
@pytest.mark.skipif(not cbuild.have_gcc(), reason="gcc not available")
def test_scalar_reference_equals_optimised_builds(tmp_path, inputs):
    builds = {("gcc", fl): cbuild.build("cm_driver.c", SOURCES, tmp_path, fl) for fl in ("ref", "simd", "o3")}
    if shutil.which("clang"):
        builds[("clang", "simd")] = cbuild.build("cm_driver.c", SOURCES, tmp_path, "simd", cc="clang")
    results = {k: run_driver(exe, inputs) for k, exe in builds.items()}
    ref = results[("gcc", "ref")]
    assert len(ref) == 2 * len(inputs)                               # each input by byte models 1 and 2
    for k, rows in results.items():
        assert rows == ref, k


@pytest.mark.parametrize("version, sizes", [(15, (17_157, 80)), (16, (15_848, 82))])
def test_exact_sizes_are_pinned(version, sizes):
    """What each byte model writes for fixed inputs, byte model 1 (formats 13 to 15) and 2 (format 16): a change
    here changes a format."""
    log = log_text(300_000)
    assert (len(ByteCoder(version).encode_block(log, len(log))),
            len(ByteCoder(version).encode_block(ENGLISH, len(ENGLISH)))) == sizes


def test_byte_model_beats_lzma_on_structured_text():
    log = log_text(300_000)
    bc = ByteCoder()
    assert len(bc.encode_block(log, len(log))) < 0.8 * len(_frame.lzma_compress(log, 9))


@pytest.mark.parametrize("adapt", lane_modes())
def test_runs_over_blocks_and_groups(adapt):
    """A log (the probe rules the word model out at once): byte-model blocks of at most 64 KiB, one run per group
    (the first block starts it, sized for a plain group, PLAIN_GROUP_FACTOR x the group size, the others continue
    it); smaller groups cut the run and the thread count does not change the frame."""
    data = log_text(700_000)
    f = nlmcodec.compress(data, adapt=adapt)
    blocks = list(_frame.iter_blocks(f))
    assert {kind for kind, *_ in blocks} == {_frame.BLOCK_BYTE} and len(blocks) > 10
    assert all(size <= _encode.BLOCK_SIZE for _, _, size, _, _ in blocks)
    plain = _encode.PLAIN_GROUP_FACTOR * _encode.GROUP_SIZE                     # a plain group's run: 8 MiB
    assert [payload[0] for *_, payload, _ in blocks] == [_encode.size_class(plain)] + [0] * (len(blocks) - 1)
    assert nlmcodec.decompress(f) == data

    def frame(threads):
        e = _encode.FrameEncoder(None, None, None, adapt, _frame.CHECK_CRC32, threads, group_size=256 * 1024)
        return e.feed(data) + e.finish()

    small = frame(1)
    assert len(nlmcodec.get_frame_info(small).groups) == 2                       # plain groups of 512 KiB
    blocks = list(_frame.iter_blocks(small))
    assert {kind for kind, *_ in blocks} == {_frame.BLOCK_BYTE}
    assert [payload[0] for _, start, _, payload, _ in blocks if start] == [_encode.size_class(512 * 1024)] * 2
    assert {payload[0] for _, start, _, payload, _ in blocks if not start} == {0}
    assert frame(2) == small
    assert nlmcodec.decompress(small) == data
    assert nlmcodec.decompress(small, threads=2) == data
    d = nlmcodec.NLMDecompressor()
    out = b"".join(d.decompress(small[i:i + 777]) for i in range(0, len(small), 777))
    assert out == data and d.eof


def test_run_of_two_blocks_continues_the_model():
    """The second block of a run costs less than the same bytes as a fresh run (the state is carried)."""
    data = log_text(2 * _frame.MAX_BYTE_BLOCK)
    a, b = data[:_frame.MAX_BYTE_BLOCK], data[_frame.MAX_BYTE_BLOCK:]
    bc = ByteCoder()
    bc.encode_block(a, len(data))
    cont = bc.encode_block(b, 0)
    fresh = ByteCoder().encode_block(b, len(b))
    assert cont[0] == 0 and fresh[0] == 18 and len(cont) < len(fresh)
    first = ByteCoder().encode_block(a, len(data))
    assert first[0] == 19                                   # 2^19 = the run's 512 KiB
    dec = ByteCoder()
    assert dec.decode_block(first, len(a)) == a and dec.decode_block(cont, len(b)) == b


def test_a_cap_answers_below_or_not_and_never_changes_a_payload():
    """encode_block(cap=...): the payload itself while it is below cap bytes, else None (the coding may stop
    early, every chunk boundary and the end included), and the run is then ended."""
    data = log_text(3 * 4096 + 77, seed=9)           # over several of the core's checking chunks
    full = ByteCoder().encode_block(data, len(data))
    n = len(full)
    for cap in (1, 2, n // 3, n - 1, n):
        bc = ByteCoder()
        assert bc.encode_block(data, len(data), cap=cap) is None
        with pytest.raises(nlmcodec.NLMError):        # the run was ended: nothing to continue
            bc.encode_block(data[:10], 0)
    for cap in (n + 1, n + 1000, 0):
        bc = ByteCoder()
        assert bc.encode_block(data, len(data), cap=cap) == full
        assert len(bc.encode_block(data[:10], 0)) > 0            # the run goes on after a payload


@pytest.mark.parametrize("text", [ENGLISH[:16384], log_text(20000, seed=5), bytes(range(256)) * 30, b"\x00" * 5000],
                         ids=["english", "log", "bytes", "zeros"])
def test_the_encoders_capped_estimates_answer_as_the_full_ones(text):
    """The encoder's two byte-model estimates (_encode._cold_byte_model_below, _byte_parts_reach) stop the
    model early; their answers are those of the full coding for every bound around its size."""
    payload = ByteCoder().encode_block(text, len(text))
    coded = _encode._coded_size([_encode._byte_part(text, payload)])
    for bound in sorted({1, len(payload) - 1, len(payload), len(payload) + 0.5, len(payload) + 1, 1.2 * len(payload),
                         len(payload) / 1.2, 2 * len(payload)}):
        assert _encode._cold_byte_model_below(text, bound) == (len(payload) < bound), bound
    for need in sorted({1, coded - 9, coded - 5, coded - 4, coded - 3, coded, coded + 1, len(text), len(text) + 8}):
        for margin in (0.95, 1.0):
            assert _encode._byte_parts_reach(text, need, margin) == (need <= margin * coded), (need, margin)


def test_hostile_payloads():
    text = ENGLISH
    p = ByteCoder().encode_block(text, len(text))
    dec = ByteCoder()
    with pytest.raises(nlmcodec.NLMError):
        dec.decode_block(b"\x00" + p[1:], len(text))            # continue without a run
    with pytest.raises(nlmcodec.NLMError):
        dec.decode_block(b"\x09" + p[1:], len(text))            # size class below 10
    with pytest.raises(nlmcodec.NLMError):
        dec.decode_block(b"\x18" + p[1:], len(text))            # size class above 23
    with pytest.raises(nlmcodec.NLMError):
        dec.decode_block(p[:-1], len(text))                     # truncated
    # a tiny payload claiming a large block fails as soon as it reads past its end, not after the block
    with pytest.raises(nlmcodec.NLMError):
        dec.decode_block(b"\x12\x55\x13", _frame.MAX_BYTE_BLOCK)
    assert dec.decode_block(p, len(text)) == text               # the coder is usable after errors


def test_frame_errors_name_the_block():
    text = ENGLISH
    p = ByteCoder().encode_block(text, len(text))
    blk = _frame.block_header(_frame.BLOCK_BYTE, True, len(text), len(p)) + p + (zlib.crc32(text) ^ 1).to_bytes(4, "little")
    f = (_frame.header(False, _frame.CHECK_CRC32, None) + blk
         + _frame.trailer([(len(text), len(blk))], len(text), _frame.CHECK_CRC32, zlib.crc32(text)))
    with pytest.raises(nlmcodec.NLMError, match="corrupt byte-model block 0: block CRC32 mismatch"):
        nlmcodec.decompress(f)


def test_block_that_would_expand_is_stored_and_a_new_run_starts():
    """The format allows no payload larger than its block: a 1-byte block, or a block of noise inside a run, is
    stored, and in an untracked group the byte-model block after it starts a new run (found by
    tests/test_cli.py: a file that grew while it was compressed); a tracked run goes on over it."""
    run = _encode._PlainRun()
    log = log_text(_encode.BLOCK_SIZE)
    assert run.code(log, 1 << 20)[0] == _frame.BLOCK_BYTE
    assert run.code(b"x", 1)[0] == _frame.BLOCK_STORED
    kind, _, payload = run.code(log, 1 << 20)
    assert kind == _frame.BLOCK_BYTE and payload[0] == _encode.size_class(1 << 20)       # a new run
    tracked = _encode._PlainRun(track=20)
    assert [tracked.code(b, 0)[0] for b in (log, b"x", log)] == [_frame.BLOCK_BYTE, _frame.BLOCK_STORED,
                                                                 _frame.BLOCK_BYTE]
    mixed = log_text(_frame.MAX_BYTE_BLOCK) + random.Random(2).randbytes(_frame.MAX_BYTE_BLOCK) + log_text(100_000, 9)
    f = nlmcodec.compress(mixed)
    blocks = list(_frame.iter_blocks(f))
    kinds = [kind for kind, *_ in blocks]
    assert _frame.BLOCK_STORED in kinds and kinds[0] == kinds[-1] == _frame.BLOCK_BYTE
    assert all(len(payload) <= size for _, _, size, payload, _ in blocks)
    after = [i for i in range(1, len(kinds)) if kinds[i] == _frame.BLOCK_BYTE and kinds[i - 1] == _frame.BLOCK_STORED]
    assert after and all(blocks[i][3][0] != 0 for i in after)                 # new runs, not continuations
    assert nlmcodec.decompress(f) == mixed


@pytest.mark.parametrize("version, mib, small_mb", [(15, 86.4, 5), (16, 103.2, 6)])
def test_memory_of_a_run(version, mib, small_mb):
    """What docs/format.md §9.1 and §9.7 state: a run of the largest size class owns 86.4 MiB with byte model 1 (64
    MiB of slots, 8 MiB history, 8 MiB match table and its 2 MiB of check bytes, 4.3 MB of APMs), 103.2 MiB with
    byte model 2 (its 16 MiB run table, more weights, a third APM); a small one under 5 MB (model 2: 6 MB)."""
    big, small = ByteCoder(version), ByteCoder(version)
    big.encode_block(b"x" * 100, 1 << 23)
    small.encode_block(b"x" * 100, 100)
    assert round(big.memory() / 2 ** 20, 1) == mib
    assert small.memory() < small_mb * 1_000_000
