"""The ``nlmcodec`` command line, run as ``python -m nlmcodec`` in temporary directories (bundled tiny model)."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

# the bundled tiny model; NLMCODEC_TEST_MODEL=/path/to/model.nlmm overrides it (tests that rely on finding a
# bundled model by its id are skipped then)
TEST_MODEL = os.environ.get("NLMCODEC_TEST_MODEL", "tiny")
MODEL = ["-m", TEST_MODEL]
TIMEOUT = 300

TEXT = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of\n"
    "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light,\n"
    "it was the season of Darkness, it was the spring of hope, it was the winter of despair.\n"
    "Zyxwvut qwertyuiop: 42 apples, 3.14 pies; CRLF next\r\nand a tab\there.\n"
) * 6


def run(args, cwd, stdin=b"", **kw):
    """Run the CLI; stdin defaults to empty bytes so it is never the terminal of the test runner."""
    return subprocess.run([sys.executable, "-m", "nlmcodec", *args], cwd=cwd, input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, **kw)


def listing(d):
    return sorted(os.listdir(d))


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "doc.txt"
    p.write_bytes(TEXT.encode())
    os.chmod(p, 0o640)
    os.utime(p, ns=(1_500_000_000_000_000_000, 1_600_000_000_123_456_789))
    return p


@pytest.fixture
def packed(tmp_path, src):
    r = run([*MODEL, "doc.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    return tmp_path / "doc.txt.nlm"


def corrupt_copy(packed, dest):
    data = bytearray(packed.read_bytes())
    n = len(data)
    for i in range(n // 2, n - 4, max(1, n // 16)):  # flip bytes in the body, not only the header
        data[i] ^= 0x5A
    dest.write_bytes(bytes(data))
    return dest


# -------------------------------------------------------------------------------------------------------------
# round trips

def test_compress_keeps_input_and_decompress_restores(tmp_path, src):
    r = run([*MODEL, "doc.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    out = tmp_path / "doc.txt.nlm"
    assert src.exists() and out.exists()
    assert out.read_bytes() != src.read_bytes()
    st_in, st_out = src.stat(), out.stat()
    assert st_out.st_mtime_ns == st_in.st_mtime_ns       # mtime copied
    assert (st_out.st_mode & 0o777) == 0o640             # mode copied
    src.rename(tmp_path / "orig.txt")
    r = run([*MODEL, "-d", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "doc.txt").read_bytes() == TEXT.encode()
    assert (tmp_path / "doc.txt").stat().st_mtime_ns == st_out.st_mtime_ns
    assert (tmp_path / "doc.txt.nlm").exists()           # -d keeps its input too
    assert listing(tmp_path) == ["doc.txt", "doc.txt.nlm", "orig.txt"]  # no temporary files left


@pytest.mark.skipif(TEST_MODEL != "tiny", reason="needs the bundled tiny model")
def test_default_model_is_found_by_id(tmp_path, packed):
    """-m at compression time only: decompression finds the bundled model from the frame's model id."""
    r = run(["-dc", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == TEXT.encode()


def test_stdout(tmp_path, src):
    r = run([*MODEL, "-c", "doc.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert listing(tmp_path) == ["doc.txt"]
    (tmp_path / "x.nlm").write_bytes(r.stdout)
    r2 = run([*MODEL, "-dc", "x.nlm"], tmp_path)
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout == TEXT.encode()
    assert listing(tmp_path) == ["doc.txt", "x.nlm"]


def test_output_option(tmp_path, src):
    r = run([*MODEL, "doc.txt", "-o", "packed.bin"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "packed.bin").exists() and not (tmp_path / "doc.txt.nlm").exists()
    # -d with -o accepts a name without the suffix
    r = run([*MODEL, "-d", "packed.bin", "-o", "back.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "back.txt").read_bytes() == TEXT.encode()
    # -o - is standard output
    r = run([*MODEL, "-d", "packed.bin", "-o", "-"], tmp_path)
    assert r.returncode == 0 and r.stdout == TEXT.encode()


def test_stdin_to_stdout(tmp_path):
    r = run(MODEL, tmp_path, stdin=TEXT.encode())
    assert r.returncode == 0, r.stderr
    assert listing(tmp_path) == []
    r2 = run([*MODEL, "-d", "-"], tmp_path, stdin=r.stdout)
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout == TEXT.encode()


@pytest.mark.parametrize("data", [b"", b"x", bytes(range(256)) * 3, b"\xff\xfe\x00 invalid utf-8 \xc3\x28\n"],
                         ids=["empty", "one-byte", "binary", "invalid-utf8"])
def test_round_trip_odd_inputs(tmp_path, data):
    (tmp_path / "f").write_bytes(data)
    r = run([*MODEL, "f"], tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "f").unlink()
    r = run([*MODEL, "-d", "f.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "f").read_bytes() == data


def test_static_mode_round_trip_and_listed(tmp_path, src):
    r = run([*MODEL, "--static", "-c", "doc.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "s.nlm").write_bytes(r.stdout)
    r = run(["-l", "--json", "s.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["mode"] == "static"
    r = run([*MODEL, "-dc", "s.nlm"], tmp_path)
    assert r.returncode == 0 and r.stdout == TEXT.encode()


def test_concatenated_frames(tmp_path, src):
    a = run([*MODEL, "-c", "doc.txt"], tmp_path).stdout
    (tmp_path / "b.txt").write_bytes(b"second part\n")
    b = run([*MODEL, "-c", "b.txt"], tmp_path).stdout
    r = run([*MODEL, "-d"], tmp_path, stdin=a + b)
    assert r.returncode == 0, r.stderr
    assert r.stdout == TEXT.encode() + b"second part\n"
    (tmp_path / "ab.nlm").write_bytes(a + b)
    row = json.loads(run(["-l", "--json", "ab.nlm"], tmp_path).stdout)[0]
    assert row["frames"] == 2
    assert row["uncompressed"] == len(TEXT.encode()) + len(b"second part\n")
    (tmp_path / "abx.nlm").write_bytes(a + b + b"junk")
    assert run(["-l", "abx.nlm"], tmp_path).returncode == 1


def test_multiple_files_and_stdout_concatenation(tmp_path, src):
    (tmp_path / "b.txt").write_bytes(b"bee\n")
    r = run([*MODEL, "doc.txt", "b.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run([*MODEL, "-dc", "doc.txt.nlm", "b.txt.nlm"], tmp_path)
    assert r.returncode == 0 and r.stdout == TEXT.encode() + b"bee\n"


# -------------------------------------------------------------------------------------------------------------
# test and list

VECTORS = Path(__file__).resolve().parent.parent / "codec" / "vectors"


@pytest.mark.skipif(not (VECTORS / "ok").is_dir(), reason="no golden vectors")
def test_golden_vectors(tmp_path):
    """Model-free golden frames: -t accepts the good ones and -d restores them, every bad one exits 1."""
    ok = sorted((VECTORS / "ok").glob("*.nlm"))
    bad = sorted((VECTORS / "errors").glob("*.nlm"))
    assert ok and bad
    for f in ok:
        raw = f.with_suffix(".raw")
        r = run(["-dc", str(f)], tmp_path)
        assert r.returncode == 0, (f.name, r.stderr)
        if raw.exists():
            assert r.stdout == raw.read_bytes(), f.name
    r = run(["-t", *map(str, ok)], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run(["-l", "--json", *map(str, ok)], tmp_path)
    assert r.returncode == 0, r.stderr
    for row in json.loads(r.stdout):
        raw = Path(row["name"]).with_suffix(".raw")
        if raw.exists():
            assert row["uncompressed"] == raw.stat().st_size, row["name"]
    for f in bad:
        r = run(["-t", str(f)], tmp_path)
        assert r.returncode == 1, f.name
        assert r.stderr.startswith(b"nlmcodec: "), f.name
        r = run(["-d", "-o", "out", str(f)], tmp_path)
        assert r.returncode == 1 and not (tmp_path / "out").exists(), f.name
    assert listing(tmp_path) == []

def test_test_mode_good(tmp_path, packed):
    r = run([*MODEL, "-t", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert listing(tmp_path) == ["doc.txt", "doc.txt.nlm"]


def test_test_mode_corrupt_and_truncated(tmp_path, packed):
    corrupt_copy(packed, tmp_path / "bad.nlm")
    r = run([*MODEL, "-t", "bad.nlm"], tmp_path)
    assert r.returncode == 1
    assert b"bad.nlm" in r.stderr
    data = packed.read_bytes()
    (tmp_path / "short.nlm").write_bytes(data[:len(data) // 2])
    r = run([*MODEL, "-t", "short.nlm"], tmp_path)
    assert r.returncode == 1
    (tmp_path / "empty.nlm").write_bytes(b"")
    assert run([*MODEL, "-t", "empty.nlm"], tmp_path).returncode == 1
    (tmp_path / "trail.nlm").write_bytes(data + b"garbage after the frame")
    assert run([*MODEL, "-t", "trail.nlm"], tmp_path).returncode == 1
    # a good file among bad ones is still tested; the error wins
    r = run([*MODEL, "-t", "bad.nlm", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 1


def test_list(tmp_path, packed):
    r = run(["-l", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 2                       # header + one line per file
    assert "Ratio" in lines[0] and "Check" in lines[0]
    assert lines[1].split()[0] == "1"           # frames
    assert lines[1].endswith("doc.txt.nlm")
    r = run(["-l", "--json", "doc.txt.nlm"], tmp_path)
    row = json.loads(r.stdout)[0]
    assert row["frames"] == 1
    assert row["compressed"] == packed.stat().st_size
    assert row["uncompressed"] == len(TEXT.encode())
    assert row["mode"] == "dynamic"
    assert row["check"].lower() == "crc32"
    assert abs(row["bits_per_byte"] - 8 * row["compressed"] / row["uncompressed"]) < 1e-9
    rv = run(["-lv", "doc.txt.nlm"], tmp_path)
    assert rv.returncode == 0 and len(rv.stdout.decode().splitlines()) > 2
    assert row["model_id"] in rv.stdout.decode()


def test_list_not_a_frame(tmp_path, src):
    r = run(["-l", "doc.txt"], tmp_path)
    assert r.returncode == 1


def test_verbose_summary(tmp_path, src):
    r = run([*MODEL, "-v", "doc.txt"], tmp_path)
    assert r.returncode == 0
    line = r.stderr.decode()
    assert "doc.txt" in line and "->" in line and "bits/byte" in line
    assert run([*MODEL, "-q", "doc.txt", "-f"], tmp_path).stderr == b""


# -------------------------------------------------------------------------------------------------------------
# never lose data

def test_existing_output_not_overwritten(tmp_path, src):
    out = tmp_path / "doc.txt.nlm"
    out.write_bytes(b"precious")
    os.utime(out, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = out.stat()
    r = run([*MODEL, "doc.txt"], tmp_path)
    assert r.returncode == 1
    assert b"exists" in r.stderr
    assert out.read_bytes() == b"precious"
    assert out.stat().st_mtime_ns == before.st_mtime_ns
    assert listing(tmp_path) == ["doc.txt", "doc.txt.nlm"]
    # same for -d and -o
    r = run([*MODEL, "doc.txt", "-o", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 1 and out.read_bytes() == b"precious"
    # -f replaces it
    r = run([*MODEL, "-f", "doc.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() != b"precious"
    assert listing(tmp_path) == ["doc.txt", "doc.txt.nlm"]


def test_existing_output_on_decompress(tmp_path, packed, src):
    before = src.read_bytes(), src.stat().st_mtime_ns
    src.write_bytes(b"changed by the user")
    before = src.read_bytes(), src.stat().st_mtime_ns
    r = run([*MODEL, "-d", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 1
    assert (src.read_bytes(), src.stat().st_mtime_ns) == before


def test_corrupt_input_leaves_nothing_behind(tmp_path, packed):
    bad = corrupt_copy(packed, tmp_path / "bad.txt.nlm")
    data, mtime = bad.read_bytes(), bad.stat().st_mtime_ns
    before = listing(tmp_path)
    r = run([*MODEL, "-d", "bad.txt.nlm"], tmp_path)
    assert r.returncode == 1
    assert listing(tmp_path) == before          # no bad.txt, no temporary file
    assert bad.read_bytes() == data and bad.stat().st_mtime_ns == mtime
    r = run([*MODEL, "-d", "--rm", "bad.txt.nlm"], tmp_path)
    assert r.returncode == 1 and listing(tmp_path) == before


def test_corrupt_input_does_not_truncate_existing_output_with_force(tmp_path, packed):
    bad = corrupt_copy(packed, tmp_path / "bad.txt.nlm")
    (tmp_path / "bad.txt").write_bytes(b"keep me")
    r = run([*MODEL, "-d", "-f", bad.name], tmp_path)
    assert r.returncode == 1
    assert (tmp_path / "bad.txt").read_bytes() == b"keep me"


def test_rm_only_after_success(tmp_path, src):
    r = run([*MODEL, "--rm", "doc.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert listing(tmp_path) == ["doc.txt.nlm"]
    r = run([*MODEL, "-d", "--rm", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert listing(tmp_path) == ["doc.txt"]
    assert (tmp_path / "doc.txt").read_bytes() == TEXT.encode()
    # an existing output: error, the input stays
    (tmp_path / "doc.txt.nlm").write_bytes(b"x")
    r = run([*MODEL, "--rm", "doc.txt"], tmp_path)
    assert r.returncode == 1
    assert listing(tmp_path) == ["doc.txt", "doc.txt.nlm"]
    # --rm with -c never removes
    r = run([*MODEL, "--rm", "-c", "doc.txt"], tmp_path)
    assert r.returncode == 0 and (tmp_path / "doc.txt").exists()


# -------------------------------------------------------------------------------------------------------------
# usage errors and warnings

def test_bad_option_exits_1(tmp_path):
    r = run(["--no-such-option"], tmp_path)
    assert r.returncode == 1
    assert b"usage" in r.stderr.lower()
    assert run(["-C", "sha999"], tmp_path).returncode == 1


def test_main_returns_int():
    from nlmcodec.__main__ import main
    assert main(["--no-such-option"]) == 1
    assert main(["-V"]) == 0


def test_help_and_version(tmp_path):
    r = run(["--help"], tmp_path)
    assert r.returncode == 0 and b"--decompress" in r.stdout
    r = run(["-V"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith(b"nlmcodec ")


def test_wrong_suffix_warns(tmp_path, src):
    r = run([*MODEL, "-d", "doc.txt"], tmp_path)
    assert r.returncode == 2
    assert b"suffix" in r.stderr
    assert listing(tmp_path) == ["doc.txt"]
    run([*MODEL, "doc.txt"], tmp_path)
    r = run([*MODEL, "doc.txt.nlm"], tmp_path)       # compressing an already-suffixed name
    assert r.returncode == 2
    assert listing(tmp_path) == ["doc.txt", "doc.txt.nlm"]
    r = run([*MODEL, "-q", "-d", "doc.txt"], tmp_path)
    assert r.returncode == 2 and r.stderr == b""


def test_custom_suffix(tmp_path, src):
    r = run([*MODEL, "-S", ".zz", "doc.txt"], tmp_path)
    assert r.returncode == 0 and (tmp_path / "doc.txt.zz").exists()
    src.unlink()
    r = run([*MODEL, "-d", "-S", ".zz", "doc.txt.zz"], tmp_path)
    assert r.returncode == 0 and (tmp_path / "doc.txt").read_bytes() == TEXT.encode()


def test_missing_file(tmp_path, src):
    r = run([*MODEL, "nope.txt"], tmp_path)
    assert r.returncode == 1
    assert b"nope.txt" in r.stderr
    # the other files are still processed, the error decides the status
    r = run([*MODEL, "nope.txt", "doc.txt"], tmp_path)
    assert r.returncode == 1
    assert (tmp_path / "doc.txt.nlm").exists()


def test_directory_is_skipped(tmp_path):
    (tmp_path / "sub").mkdir()
    r = run([*MODEL, "sub"], tmp_path)
    assert r.returncode == 2
    assert listing(tmp_path) == ["sub"]


def test_error_beats_warning(tmp_path, src):
    r = run([*MODEL, "-d", "doc.txt", "nope.nlm"], tmp_path)
    assert r.returncode == 1


def test_unknown_model(tmp_path, src):
    r = run(["-m", str(tmp_path / "no-such-model.nlmm"), "doc.txt"], tmp_path)
    assert r.returncode == 1
    assert listing(tmp_path) == ["doc.txt"]


def test_output_with_several_inputs_is_an_error(tmp_path, src):
    (tmp_path / "b.txt").write_bytes(b"b")
    r = run([*MODEL, "doc.txt", "b.txt", "-o", "x"], tmp_path)
    assert r.returncode == 1
    assert listing(tmp_path) == ["b.txt", "doc.txt"]


def test_train_bad_options_exit_1(tmp_path):
    pytest.importorskip("nlmcodec.train")
    r = run(["--train"], tmp_path)                  # no files, no -o: the trainer's argparse refuses
    assert r.returncode == 1


# -------------------------------------------------------------------------------------------------------------
# terminals

def _run_with_tty(args, cwd, tty_stdout=False, tty_stdin=False, stdin_data=b""):
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, "-m", "nlmcodec", *args], cwd=cwd,
                           stdin=slave if tty_stdin else subprocess.DEVNULL,
                           stdout=slave if tty_stdout else subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
    finally:
        os.close(slave)
        os.close(master)
    return p


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_refuses_to_write_compressed_data_to_a_terminal(tmp_path, src):
    for args in (["-c", "doc.txt"], ["-c", "-f", "doc.txt"]):
        r = _run_with_tty([*MODEL, *args], tmp_path, tty_stdout=True)
        assert r.returncode == 1
        assert b"terminal" in r.stderr
    assert listing(tmp_path) == ["doc.txt"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_refuses_to_read_compressed_data_from_a_terminal(tmp_path):
    for args in (["-d"], ["-t"], ["-l"]):
        r = _run_with_tty(args, tmp_path, tty_stdin=True)
        assert r.returncode == 1, args
        assert b"terminal" in r.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_decompressed_text_may_go_to_a_terminal(tmp_path, packed):
    r = _run_with_tty([*MODEL, "-dc", "doc.txt.nlm"], tmp_path, tty_stdout=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_larger_file_round_trip(tmp_path):
    rng = random.Random(7)
    words = TEXT.split()
    data = " ".join(rng.choice(words) for _ in range(60000)).encode()
    (tmp_path / "big.txt").write_bytes(data)
    r = run([*MODEL, "--no-progress", "-v", "big.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "big.txt").unlink()
    r = run([*MODEL, "-d", "big.txt.nlm"], tmp_path)
    assert r.returncode == 0 and (tmp_path / "big.txt").read_bytes() == data


def test_bench_mode_is_wired(tmp_path, src):
    pytest.importorskip("nlmcodec._bench")
    r = run(["-b", "doc.txt", "--against", "zlib-9", "--runs", "1", "--static", *MODEL, "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.decode().splitlines() if line.strip()]
    assert {row["codec"] for row in rows} >= {"zlib-9", "nlmcodec-static"}
    assert run(["-b"], tmp_path).returncode == 1
    assert run(["--against", "zlib-9", "doc.txt"], tmp_path).returncode == 1


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_progress_bar_only_on_a_terminal(tmp_path):
    pytest.importorskip("tqdm")
    import fcntl
    import pty
    import struct
    import termios

    data = (TEXT * 40).encode()
    assert len(data) >= 1 << 16
    (tmp_path / "p.txt").write_bytes(data)

    def stderr_on_tty(args):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        p = subprocess.Popen([sys.executable, "-m", "nlmcodec", *args], cwd=tmp_path, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        buf = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
        os.close(master)
        assert p.wait(timeout=TIMEOUT) == 0
        return buf

    assert b"p.txt" in stderr_on_tty([*MODEL, "-f", "p.txt"])           # a bar, named after the file
    assert stderr_on_tty([*MODEL, "-f", "-q", "p.txt"]) == b""
    assert stderr_on_tty([*MODEL, "-f", "--no-progress", "p.txt"]) == b""
    r = run([*MODEL, "-f", "p.txt"], tmp_path)                          # stderr is a pipe: silent
    assert r.returncode == 0 and r.stderr == b""
    assert b"%" in run([*MODEL, "-f", "--progress", "p.txt"], tmp_path).stderr
