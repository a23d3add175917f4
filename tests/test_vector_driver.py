"""The cross-architecture lane's pieces on this host (.ci/cross: export_blocks.py, tests/c/vector_driver.c):
the golden vectors of the tiny model, exported and replayed by the C driver natively, decode and re-encode
byte-identically; a changed payload byte is reported as a mismatch.  (.ci/cross.sh runs the same driver on
aarch64 and s390x under qemu-user, with every model.)"""
import pathlib
import re
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402

pytestmark = [pytest.mark.skipif(not cbuild.have_gcc(), reason="gcc not available"),
              pytest.mark.one_lane]   # no binding involved: the cffi lane skips it


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("vec")
    subprocess.run([sys.executable, str(cbuild.ROOT / ".ci" / "cross" / "export_blocks.py"), str(d / "vec"),
                    "--models", "tiny"], check=True, capture_output=True)
    exe = cbuild.build("vector_driver.c", cbuild.CORE, d, "simd", strict=False, name="vector_driver")
    return exe, d / "vec"


def test_vectors_replay_identically(exported):
    exe, vec = exported
    r = subprocess.run([str(exe), str(vec / "blocks.bin")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"^(\d+) block sets \(vectors\), (\d+) word-model blocks, (\d+) bytes: decoded and re-encoded",
                  r.stdout, re.M)
    assert m and int(m.group(1)) >= 8 and int(m.group(2)) >= int(m.group(1)), r.stdout
    assert "selftest ok" in r.stdout and "MISMATCH" not in r.stdout


def test_a_changed_payload_byte_is_a_mismatch(exported, tmp_path):
    exe, vec = exported
    blob = bytearray((vec / "blocks.bin").read_bytes())
    # the first vector's first block: header, then u16+name, u16+model, u8 adapt, u32 nops, resets (u8 0,
    # u8 speller, u8 match, u8 end_advance, u32 max_tokens, u8 cache, u8 forward, u8 deep_every, u8 rate_a, u8 rate_b:
    # 13 bytes), then u8 1, u32 size, u32 payload length, payload
    assert blob[:8] == b"NLMVBLK8"
    o = 12
    for _ in range(2):
        o += 2 + int.from_bytes(blob[o:o + 2], "little")
    o += 1 + 4
    while blob[o] == 0:
        o += 13
    assert blob[o] == 1
    o += 1 + 8
    blob[o + 2] ^= 0x10
    bad = tmp_path / "blocks.bin"
    bad.write_bytes(bytes(blob))
    for f in vec.glob("*.nlmm"):
        (tmp_path / f.name).symlink_to(f)
    r = subprocess.run([str(exe), str(bad)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and r.stdout.splitlines()[1].startswith("MISMATCH"), r.stdout + r.stderr


@pytest.fixture(scope="module")
def exported_kn(tmp_path_factory):
    d = tmp_path_factory.mktemp("veckn")
    subprocess.run([sys.executable, str(cbuild.ROOT / ".ci" / "cross" / "export_blocks.py"), str(d / "vec"),
                    "--models", "tiny-kn"], check=True, capture_output=True)
    exes = cbuild.build_all("vector_driver.c", cbuild.CORE, d, ("ref", "simd"), strict=False)
    return exes, d / "vec"


@pytest.mark.parametrize("flavour", ["ref", "simd"], ids=["scalar-O0", "simd-O2"])
def test_kneser_ney_vectors_replay_on_scalar_and_simd_builds(exported_kn, flavour):
    """The Kneser-Ney mixture (FORMAT.md §2.5: kern_log, the expert's sums, the mixing) written by the
    optimised Python extension decodes and re-encodes byte for byte with the -O0 scalar build and the SIMD
    build of the C driver, static and dynamic."""
    exes, vec = exported_kn
    r = subprocess.run([str(exes[flavour]), str(vec / "blocks.bin")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"^(\d+) block sets \(vectors\), (\d+) word-model blocks", r.stdout, re.M)
    assert m and int(m.group(1)) >= 8 and int(m.group(2)) >= 8, r.stdout
    assert "MISMATCH" not in r.stdout
