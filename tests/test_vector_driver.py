"""The cross-architecture lane's pieces on this host (.ci/cross: export_blocks.py, tests/c/vector_driver.c):
the golden vectors of the tiny model, exported with their format version and mode and replayed by the C
driver natively (nlm_codec_reset_for at each reset), decode and re-encode byte-identically; a changed
payload byte, mode or version is reported as a mismatch; the emulated targets' light file keeps the
default model in the default mode.  (.ci/cross.sh runs the same driver on
aarch64 and s390x under qemu-user, with every model.)"""
import pathlib
import re
import subprocess
import sys

import pytest

from nlmcodec import _frame

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402

sys.path.insert(0, str(cbuild.ROOT / ".ci" / "cross"))
import lane  # noqa: E402

pytestmark = [pytest.mark.skipif(not cbuild.have_gcc(), reason="gcc not available"),
              pytest.mark.one_lane,   # no binding involved: the cffi lane skips it
              pytest.mark.xdist_group("vector_driver")]   # one worker builds the module's C programs, once


EXPORT = [sys.executable, str(cbuild.ROOT / ".ci" / "cross" / "export_blocks.py")]


def left_out(stdout):
    """The vector names export_blocks.py says the light file leaves out."""
    m = re.search(r"left out \(work over [^)]*\): (.*)$", stdout, re.M)
    assert m, stdout
    return {n for x in m.group(1).split(", ") for n in x.split(" (")[0].split("=")}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The tiny model's vectors, every one decoded (blocks.bin), and the light file chosen from them."""
    d = tmp_path_factory.mktemp("vec")
    r = subprocess.run(EXPORT + [str(d / "vec"), "--models", "tiny", "--light-budget", str(lane.LIGHT_BUDGET)],
                       check=True, capture_output=True, text=True)
    (d / "vec" / "stdout.txt").write_text(r.stdout)
    exe = cbuild.build("vector_driver.c", cbuild.CORE, d, "simd", strict=False, name="vector_driver")
    return exe, d / "vec"


def test_vectors_replay_identically(exported):
    exe, vec = exported
    r = subprocess.run([str(exe), str(vec / "blocks.bin")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"^(\d+) block sets \(vectors\), (\d+) word-model blocks, (\d+) bytes: decoded and re-encoded",
                  r.stdout, re.M)
    assert m and int(m.group(1)) >= 12 and int(m.group(2)) >= int(m.group(1)), r.stdout
    assert "selftest ok" in r.stdout and "MISMATCH" not in r.stdout
    for mode in ("static", "dynamic", "heads"):
        assert re.search(rf"^ok v13/\S+-{mode} \(format 13, {mode}\)", r.stdout, re.M), (mode, r.stdout)


def read_blocks(path):
    """The records of a blocks file (export_blocks.py's docstring): [(name, model file, version, mode, ops,
    offset of the version byte, offsets of the record's first byte and of the byte after it)], ops [("reset",) | ("block" or "routed", size, payload offset, payload length)
    | ("track", s) | ("learn", n)]."""
    blob = path.read_bytes()
    assert blob[:8] == b"NLMVBLKS"
    n, o, out = int.from_bytes(blob[8:12], "little"), 12, []
    for _ in range(n):
        start, strs = o, []
        for _ in range(2):
            k = int.from_bytes(blob[o:o + 2], "little")
            strs.append(blob[o + 2:o + 2 + k].decode())
            o += 2 + k
        at, version, mode, nops = o, blob[o], blob[o + 1], int.from_bytes(blob[o + 2:o + 6], "little")
        o += 6
        ops = []
        for _ in range(nops):
            if blob[o] == 0:
                ops.append(("reset",))
                o += 1
                continue
            if blob[o] == 2:
                ops.append(("track", blob[o + 1]))
                o += 2
                continue
            if blob[o] == 3:
                n = int.from_bytes(blob[o + 1:o + 5], "little")
                ops.append(("learn", n))
                o += 5 + n
                continue
            assert blob[o] in (1, 4)
            size, plen = int.from_bytes(blob[o + 1:o + 5], "little"), int.from_bytes(blob[o + 5:o + 9], "little")
            ops.append(("block" if blob[o] == 1 else "routed", size, o + 9, plen))
            o += 9 + plen + size
        out.append((strs[0], strs[1], version, mode, ops, at, start, o))
    assert o == len(blob)
    return out


def test_blocks_file_carries_format_and_mode(exported):
    """Each vector names its frame's format version and mode, starts with a reset (or a tracked group's run, then
    a reset), and every mode is there; format 17's routed blocks come with their run (started, fed the group's
    other bytes) in every mode."""
    _, vec = exported
    recs = read_blocks(vec / "blocks.bin")
    assert {r[2] for r in recs} == set(_frame.READ_VERSIONS) == {13, 14, 15, 16, 17}
    assert {(r[2], r[3]) for r in recs} == {(v, m) for v in (13, 14, 15, 16, 17) for m in (0, 1, 2)}
    for name, _, version, *_ in recs:
        assert all(n.startswith(f"v{version}/") for n in name.split("=")), (name, version)
    for r in recs:
        kinds = [op[0] for op in r[4]]
        blocks = [k for k in kinds if k in ("block", "routed")]
        assert kinds[0] in ("reset", "track") and "reset" in kinds[:kinds.index(blocks[0])], (r[0], kinds[:4])
        assert any(op[0] in ("block", "routed") for op in r[4])
        routed = any(op[0] == "routed" for op in r[4])
        assert routed == any(op[0] == "track" for op in r[4]) and (not routed or r[2] == 17), r[0]
    assert {r[3] for r in recs if any(op[0] == "routed" for op in r[4])} == {0, 1, 2}
    for name, _, _, mode, *_ in recs:
        assert name.endswith(("-static", "-dynamic", "-heads")[mode]), (name, mode)


def write_blocks(path, records):
    """A blocks file of these records (their bytes, as read_blocks' offsets cut them from another)."""
    path.write_bytes(b"NLMVBLKS" + len(records).to_bytes(4, "little") + b"".join(records))


def _patched(vec, tmp_path, edit):
    """A blocks file of the one record that edit(blob, records) changes and returns (the driver replays it alone:
    its first vector is the changed one)."""
    blob = bytearray((vec / "blocks.bin").read_bytes())
    rec = edit(blob, read_blocks(vec / "blocks.bin"))
    bad = tmp_path / "blocks.bin"
    write_blocks(bad, [bytes(blob[rec[6]:rec[7]])])
    for f in vec.glob("*.nlmm"):
        (tmp_path / f.name).symlink_to(f)
    return bad


def test_a_changed_payload_byte_is_a_mismatch(exported, tmp_path):
    exe, vec = exported

    def edit(blob, recs):
        op = next(op for op in recs[0][4] if op[0] == "block")
        blob[op[2] + 2] ^= 0x10
        return recs[0]
    r = subprocess.run([str(exe), str(_patched(vec, tmp_path, edit))], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and r.stdout.splitlines()[1].startswith("MISMATCH"), r.stdout + r.stderr


def test_the_mode_of_the_record_configures_the_codec(exported, tmp_path):
    """A heads-mode vector replayed as dynamic mode (the same adaptive codec, the other row of the format
    table) mismatches: the reset takes its options from (version, mode)."""
    exe, vec = exported

    def edit(blob, recs):
        rec = next(r for r in recs if r[3] == 2)
        blob[rec[5] + 1] = 1
        return rec
    r = subprocess.run([str(exe), str(_patched(vec, tmp_path, edit))], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and re.search(r"^MISMATCH .*-heads \(format 13, dynamic\)", r.stdout, re.M), \
        r.stdout + r.stderr


def test_a_format_this_build_does_not_read_fails_the_reset(exported, tmp_path):
    exe, vec = exported

    def edit(blob, recs):
        blob[recs[0][5]] = 12
        return recs[0]
    r = subprocess.run([str(exe), str(_patched(vec, tmp_path, edit))], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and r.stdout.splitlines()[1].startswith("MISMATCH"), r.stdout + r.stderr
    assert "nlm_codec_reset_for(12," in r.stderr


def test_light_file_keeps_the_default_model_in_heads_mode(tmp_path):
    """blocks_light.bin (the emulated targets' file, written as the lane does: --light-only) holds the default
    model's small heads-mode vectors (heads is the default mode) and names what it leaves out: between them,
    every vector of the model with a word-model block."""
    import nlmcodec
    from nlmcodec import _registry

    sys.path.insert(0, str(cbuild.ROOT / "codec" / "vectors"))
    import vectorset as VS

    default = "default-3"                  # the default model of the current format's vectors (format 17)
    assert default in _registry.default_model_names() and nlmcodec.FORMAT_VERSION == 17
    r = subprocess.run(EXPORT + [str(tmp_path), "--models", default, "--light-budget", str(lane.LIGHT_BUDGET),
                                 "--light-only"], check=True, capture_output=True, text=True)
    assert not (tmp_path / "blocks.bin").exists()
    mfile = nlmcodec.load_model(default).model_id.hex()[:16] + ".nlmm"
    light = {n for rec in read_blocks(tmp_path / "blocks_light.bin") if rec[1] == mfile and rec[3] == 2
             for n in rec[0].split("=")}
    v = nlmcodec.FORMAT_VERSION
    assert {f"v{v}/short_english-{default}-heads", f"v{v}/alice_4k-{default}-heads",
            f"v{v}/routed-{default}-heads"} <= light, r.stdout          # (its blocks route lines, §3.8)
    everything = {x.key for x in VS.ok_vectors() if x.model == default
                  and any(b[0] == _frame.BLOCK_MODEL for b in _frame.iter_blocks(x.frame()))}
    kept = {n for rec in read_blocks(tmp_path / "blocks_light.bin") for n in rec[0].split("=")}
    assert kept and not kept & left_out(r.stdout) and kept | left_out(r.stdout) == everything, r.stdout


def test_light_only_export_chooses_as_the_full_export(exported, tmp_path):
    """--light-only chooses the light file from the frames' block headers, decoding only what it keeps: the same
    file and the same vectors left out as when every vector is decoded first (the tiny model's, whose vectors
    take every rule of the choice: the work budget, the older format's share, the carry over blocks, the
    routed ones)."""
    _, vec = exported
    r = subprocess.run(EXPORT + [str(tmp_path), "--models", "tiny", "--light-budget", str(lane.LIGHT_BUDGET),
                                 "--light-only"], check=True, capture_output=True, text=True)
    assert (tmp_path / "blocks_light.bin").read_bytes() == (vec / "blocks_light.bin").read_bytes()
    full = (vec / "stdout.txt").read_text()
    assert left_out(r.stdout) == left_out(full) and "carry over blocks" in full and "work " in full, r.stdout


@pytest.fixture(scope="module")
def exported_kn(tmp_path_factory):
    d = tmp_path_factory.mktemp("veckn")
    subprocess.run([sys.executable, str(cbuild.ROOT / ".ci" / "cross" / "export_blocks.py"), str(d / "vec"),
                    "--models", "tiny-kn"], check=True, capture_output=True)
    exes = cbuild.build_all("vector_driver.c", cbuild.CORE, d, ("ref", "simd"), strict=False)
    # the format this build writes (the mixture is the same in every format: formats.h has no column for it; the
    # test lane replays every format's vectors on the SIMD build, test_golden.py decodes them all)
    blob, recs = (d / "vec" / "blocks.bin").read_bytes(), read_blocks(d / "vec" / "blocks.bin")
    current = [blob[r[6]:r[7]] for r in recs if r[2] == _frame.FORMAT_VERSION]
    write_blocks(d / "vec" / "blocks_current.bin", current)
    return exes, d / "vec"


@pytest.mark.parametrize("flavour", ["ref", "simd"], ids=["scalar-O0", "simd-O2"])
def test_kneser_ney_vectors_replay_on_scalar_and_simd_builds(exported_kn, flavour):
    """The Kneser-Ney mixture (docs/format.md §2.5: kern_log, the expert's sums, the mixing) written by the
    optimised Python extension decodes and re-encodes byte for byte with the -O0 scalar build and the SIMD
    build of the C driver, in every mode, the current format's vectors."""
    exes, vec = exported_kn
    r = subprocess.run([str(exes[flavour]), str(vec / "blocks_current.bin")], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"^(\d+) block sets \(vectors\), (\d+) word-model blocks", r.stdout, re.M)
    assert m and int(m.group(1)) >= 8 and int(m.group(2)) >= 8, r.stdout
    assert "MISMATCH" not in r.stdout
