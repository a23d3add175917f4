"""The ``nlmcodec`` command line, run as ``python -m nlmcodec`` in temporary directories (bundled tiny model).

Every test runs the real CLI in a subprocess on real files: signals are real signals, the full disk is a
real 64 KiB tmpfs (mounted when the tests run as root on Linux), the closed pipe is a real pipe.
"""

import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# the bundled tiny model; NLMCODEC_TEST_MODEL=/path/to/model.nlmm overrides it (tests that rely on finding a
# bundled model by its id are skipped then)
TEST_MODEL = os.environ.get("NLMCODEC_TEST_MODEL", "tiny")
# The command line's file handling (signals, pipes, terminals, disks, options, messages) is the same over either
# binding: the cffi lane runs the tests marked both_lanes, which take its calls into the codec (conftest.py).
pytestmark = pytest.mark.one_lane
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
    return sorted(os.listdir(d))       # hidden files (the .tmp outputs) included


# the CLI with the named temporary files it uses where O_TMPFILE is missing (not Linux)
NAMED_TEMPS_CLI = [sys.executable, "-c", "import runpy, nlmcodec.cli.files as f; f.UNNAMED_TEMPS = False; "
                   "runpy.run_module('nlmcodec', run_name='__main__', alter_sys=True)"]


def start(args, cwd, cli=(sys.executable, "-m", "nlmcodec"), **kw):
    """Start the CLI without waiting (stdin empty, stdout and stderr piped unless given)."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([*cli, *args], cwd=cwd, stdin=subprocess.DEVNULL, **kw)


def temp_files(d):
    return [n for n in os.listdir(d) if n.endswith(".tmp")]


def unnamed_files_of(pid, d):
    """The unnamed files process ``pid`` has open in directory ``d`` (Linux: O_TMPFILE shows as '#N (deleted)')."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(os.path.realpath(d) + "/#") and target.endswith(" (deleted)"):
            found.append(target)
    return found


def output_open(p, d):
    """Process ``p`` has its temporary output in directory ``d`` open (named, or unnamed on Linux)."""
    return bool(temp_files(d) or (sys.platform.startswith("linux") and unnamed_files_of(p.pid, d)))


def wait_for(pred, timeout=TIMEOUT):
    t0 = time.monotonic()
    while not pred():
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.02)


@functools.lru_cache(maxsize=None)
def words_text(nbytes):
    """nbytes of English-like text (lines of words of TEXT in random order, fixed seed)."""
    rng = random.Random(7)
    words = TEXT.split()
    lines, n = [], 0
    while n < nbytes:
        line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
        lines.append(line)
        n += len(line)
    return "".join(lines).encode()[:nbytes]


def noise(nbytes):
    """Incompressible bytes (stored blocks: as large compressed as uncompressed)."""
    return random.Random(1).randbytes(nbytes)


def one_line_error(r_stderr):
    return r_stderr.startswith(b"nlmcodec: ") and r_stderr.count(b"\n") == 1 and b"Traceback" not in r_stderr


@pytest.fixture
def src(tmp_path):
    p = tmp_path / "doc.txt"
    p.write_bytes(TEXT.encode())
    os.chmod(p, 0o640)
    os.utime(p, ns=(1_500_000_000_000_000_000, 1_600_000_000_123_456_789))
    return p


@functools.lru_cache(maxsize=None)
def vocab_text(nbytes):
    """nbytes of sentences of the test model's own (alphabetic) words in random order (fixed seed): the word
    model's home ground, where the byte model has nothing to learn (TEXT itself is so repetitive that the byte
    model wins and the frame has no word-model block)."""
    import nlmcodec

    words = [w.decode() for w in nlmcodec.load_model(TEST_MODEL).vocab[2:] if isinstance(w, bytes) and w.isalpha()]
    rng = random.Random(7)
    out, n = [], 0
    while n < nbytes:
        line = " ".join(rng.choice(words[:300]) for _ in range(12)).capitalize() + ".\n"
        out.append(line)
        n += len(line)
    return "".join(out).encode()[:nbytes]


@pytest.fixture
def prose(tmp_path):
    """A text the word model codes (see vocab_text)."""
    p = tmp_path / "prose.txt"
    p.write_bytes(vocab_text(3000))
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

@pytest.mark.both_lanes
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


@pytest.mark.both_lanes
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


def test_static_mode_round_trip_and_listed(tmp_path, prose):
    r = run([*MODEL, "--static", "-c", "prose.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "s.nlm").write_bytes(r.stdout)
    r = run(["-l", "--json", "s.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["mode"] == "static"
    r = run([*MODEL, "-dc", "s.nlm"], tmp_path)
    assert r.returncode == 0 and r.stdout == prose.read_bytes()


@pytest.mark.parametrize("flag, mode", [("--static", "static"), ("--heads", "heads"), ("--dynamic", "dynamic"),
                                        ("--full", "dynamic"), (None, "heads")])
@pytest.mark.both_lanes
def test_each_mode_round_trips_and_is_listed(tmp_path, prose, flag, mode):
    """--static, --heads (heads mode, docs/format.md §6.5, the default) and --dynamic are recorded in the frame,
    listed by -l, and decoded without options; the last mode option given wins."""
    r = run([*MODEL, *([flag] if flag else []), "-c", "prose.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "m.nlm").write_bytes(r.stdout)
    r = run(["-l", "--json", "m.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["mode"] == mode
    r = run([*MODEL, "-dc", "m.nlm"], tmp_path)
    assert r.returncode == 0 and r.stdout == prose.read_bytes()
    (tmp_path / "last.nlm").write_bytes(run([*MODEL, "--heads", "--static", "-c", "prose.txt"], tmp_path).stdout)
    r = run(["-l", "--json", "last.nlm"], tmp_path)
    assert json.loads(r.stdout)[0]["mode"] == "static"


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
sys.path.insert(0, str(VECTORS))
import vectorset as VS  # noqa: E402


@pytest.mark.both_lanes
def test_golden_vectors_decode(tmp_path):
    """Golden frames of the format this build writes: -d restores the good ones (one process for all of them),
    -dc writes to stdout, -t accepts them and -l lists their sizes.  (Every format's are decoded by
    tests/test_golden.py; the CLI's path does not depend on the format, nor on the frame's content: the
    fallback-*, news_64k-* and tracked-* frames, whose decoding takes most of the time, are left out here.)"""
    from nlmcodec import FORMAT_VERSION

    ok = [v for v in VS.ok_vectors(FORMAT_VERSION) if not v.name.startswith(("fallback-", "news_64k-", "tracked-"))]
    assert len(ok) > 100
    # one process per kind of call, not per vector (hundreds of interpreter starts): -d -k of copies
    out = tmp_path / "ok"
    out.mkdir()
    names = [f"{v.key.replace('/', '-')}.nlm" for v in ok]          # v13/x and v14/x: one folder, distinct names
    for v, n in zip(ok, names):
        shutil.copyfile(v.path, out / n)
    r = run(["-d", "-k", *names], out)
    assert r.returncode == 0, r.stderr
    for v, n in zip(ok, names):
        assert (out / n[:-4]).read_bytes() == v.raw(), v.key
    shutil.rmtree(out)
    r = run(["-dc", str(ok[0].path)], tmp_path)                       # to stdout
    assert r.returncode == 0 and r.stdout == ok[0].raw(), r.stderr
    r = run(["-t", *(str(v.path) for v in ok)], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run(["-l", "--json", *(str(v.path) for v in ok)], tmp_path)
    assert r.returncode == 0, r.stderr
    sizes = {str(v.path): v.raw_path.stat().st_size for v in ok}
    for row in json.loads(r.stdout):
        assert row["uncompressed"] == sizes[row["name"]], row["name"]
    assert listing(tmp_path) == []


@pytest.mark.both_lanes
def test_golden_error_vectors_fail_one_by_one(tmp_path):
    """Every bad vector fails on its own (the CLI goes on to the next file, like xz, and exits 1), one line each,
    and leaves no output behind."""
    bad = [v.path for v in VS.error_vectors()]
    assert bad
    r = run(["-t", *map(str, bad)], tmp_path)
    assert r.returncode == 1
    lines = r.stderr.decode("utf-8", "replace").splitlines()
    assert all(line.startswith("nlmcodec: ") for line in lines), lines[:3]
    for f in bad:
        assert sum(str(f) in line for line in lines) == 1, f.name
    out = tmp_path / "bad"
    out.mkdir()
    names = [f"{f.parent.parent.name}-{f.name}" for f in bad]           # v13-x.nlm, v14-x.nlm, retired-x.nlm
    for f, n in zip(bad, names):
        shutil.copyfile(f, out / n)
    r = run(["-d", "-k", *names], out)
    assert r.returncode == 1
    assert sorted(os.listdir(out)) == sorted(names)    # no output left behind, inputs kept
    r = run(["-d", "-o", "out", str(bad[0])], tmp_path)
    assert r.returncode == 1 and not (tmp_path / "out").exists()
    shutil.rmtree(out)
    assert listing(tmp_path) == []


def test_test_mode_good(tmp_path, packed):
    r = run([*MODEL, "-t", "doc.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert listing(tmp_path) == ["doc.txt", "doc.txt.nlm"]


@pytest.mark.both_lanes
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


def test_list(tmp_path, prose):
    assert run([*MODEL, "prose.txt"], tmp_path).returncode == 0
    r = run(["-l", "prose.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 2                       # header + one line per file
    assert "Ratio" in lines[0] and "Check" in lines[0]
    assert lines[1].split()[0] == "1"           # frames
    assert lines[1].endswith("prose.txt.nlm")
    r = run(["-l", "--json", "prose.txt.nlm"], tmp_path)
    row = json.loads(r.stdout)[0]
    assert row["frames"] == 1
    assert row["compressed"] == (tmp_path / "prose.txt.nlm").stat().st_size
    assert row["uncompressed"] == prose.stat().st_size
    assert row["mode"] == "heads"                # the default mode
    assert row["check"].lower() == "crc32"
    assert abs(row["bits_per_byte"] - 8 * row["compressed"] / row["uncompressed"]) < 1e-9
    rv = run(["-lv", "prose.txt.nlm"], tmp_path)
    assert rv.returncode == 0 and len(rv.stdout.decode().splitlines()) > 2
    assert row["model_id"] in rv.stdout.decode()


@pytest.mark.skipif(TEST_MODEL != "tiny", reason="needs the bundled tiny model")
def test_list_names_bundled_models(tmp_path, prose):
    """-l shows a bundled model's name in the Model column (and beside the full id with -lv and --json)."""
    assert run([*MODEL, "prose.txt"], tmp_path).returncode == 0
    line = run(["-l", "prose.txt.nlm"], tmp_path).stdout.decode().splitlines()[1]
    assert line.split()[-3:-1] == ["heads", "tiny"], line          # Mode, Model (then Filename)
    row = json.loads(run(["-l", "--json", "prose.txt.nlm"], tmp_path).stdout)[0]
    assert row["model_name"] == "tiny" and row["model"] == "tiny" and len(row["model_id"]) == 64
    assert f"{row['model_id']} (tiny)" in run(["-lv", "prose.txt.nlm"], tmp_path).stdout.decode()


def test_list_frames_without_word_model_blocks(tmp_path):
    """A frame of stored/lzma blocks only has no mode and needs no model: '-' in both columns."""
    (tmp_path / "n.bin").write_bytes(noise(5000))
    (tmp_path / "z.bin").write_bytes(bytes(range(256)) * 8)
    for name in ("n.bin", "z.bin"):
        assert run([*MODEL, name], tmp_path).returncode == 0
        row = json.loads(run(["-l", "--json", name + ".nlm"], tmp_path).stdout)[0]
        assert row["block_kinds"] and "model" not in row["block_kinds"], row
        assert row["mode"] == "-" and row["model"] == "-", row
        line = run(["-l", name + ".nlm"], tmp_path).stdout.decode().splitlines()[1]
        assert " CRC32  -        -            " in line, line
        assert "dynamic" not in line and "static" not in line


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


# -------------------------------------------------------------------------------------------------------------
# progress line (item 1)

def _stderr_on_a_pty(args, cwd):
    """Run the CLI with stderr on a pseudo-terminal; returns (exit status, [(seconds since start, bytes)])."""
    import pty
    master, slave = pty.openpty()
    t0 = time.monotonic()
    p = start(args, cwd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:   # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append((time.monotonic() - t0, chunk))
    os.close(master)
    return p.wait(timeout=TIMEOUT), chunks


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_progress_line_only_on_a_terminal(tmp_path):
    big = words_text((1 << 20) + 1000)          # just over the 1 MiB threshold
    (tmp_path / "p.txt").write_bytes(big)
    (tmp_path / "small.txt").write_bytes(big[:500_000])
    rc, chunks = _stderr_on_a_pty([*MODEL, "-f", "p.txt"], tmp_path)
    assert rc == 0
    buf = b"".join(c for _, c in chunks)
    assert b"p.txt:" in buf and b" %" in buf and b"MiB" in buf          # drawn, named after the file
    assert buf.endswith(b"\r") and buf.split(b"\r")[-2].strip() == b""  # and erased at the end
    for quiet in (["-q"], ["--no-progress"]):
        assert _stderr_on_a_pty([*MODEL, "-f", *quiet, "p.txt"], tmp_path) == (0, [])
    assert _stderr_on_a_pty([*MODEL, "-f", "small.txt"], tmp_path) == (0, [])   # under 1 MiB: no line
    r = run([*MODEL, "-f", "p.txt"], tmp_path)                          # stderr is a pipe: silent
    assert r.returncode == 0 and r.stderr == b""
    r = run([*MODEL, "-f", "--progress", "small.txt"], tmp_path)        # --progress forces it
    assert r.returncode == 0 and b"small.txt:" in r.stderr and b" %" in r.stderr
    r = run([*MODEL, "-df", "--progress", "small.txt.nlm"], tmp_path)   # decompression too
    assert r.returncode == 0 and b"small.txt.nlm:" in r.stderr
    assert (tmp_path / "small.txt").read_bytes() == big[:500_000]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_progress_line_redrawn_at_least_once_a_second(tmp_path):
    """A run of several seconds: the line is redrawn at least every second and the percentage never falls."""
    import re
    (tmp_path / "p.txt").write_bytes(words_text(3 << 20))
    rc, chunks = _stderr_on_a_pty([*MODEL, "p.txt"], tmp_path)
    assert rc == 0
    draws = [(t, c) for t, c in chunks if b"%" in c]
    assert len(draws) >= 4, chunks
    gaps = [b[0] - a[0] for a, b in zip(draws, draws[1:])]
    assert max(gaps) < 1.0, gaps
    pcts = [float(m) for _, c in draws for m in re.findall(rb"(\d+\.\d) %", c)]
    assert pcts == sorted(pcts) and pcts[-1] > 50, pcts


# -------------------------------------------------------------------------------------------------------------
# signals (item 2): a real signal to a real process in the middle of coding

SIGNAL_EXITS = [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)]


def _signal_while_coding(args, cwd, signame, after=1.0, cli=(sys.executable, "-m", "nlmcodec")):
    """Start the CLI, wait for its temporary output, let it code for ``after`` seconds, send the signal.
    Returns (exit status, stderr, seconds from the signal to the exit)."""
    p = start(args, cwd, cli)
    wait_for(lambda: output_open(p, cwd) or p.poll() is not None)
    time.sleep(after)
    assert p.poll() is None, "finished before the signal: make the input larger"
    t0 = time.monotonic()
    p.send_signal(getattr(signal, signame))
    _, err = p.communicate(timeout=TIMEOUT)
    return p.returncode, err, time.monotonic() - t0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signame,status", SIGNAL_EXITS)
@pytest.mark.parametrize("temps", ["unnamed", "named"])
def test_signal_while_compressing_leaves_nothing(tmp_path, signame, status, temps):
    """Default model, dynamic mode, 3 MiB of text (about a minute of coding): the signal ends it at once.  With
    named temporary files (no O_TMPFILE) the signal handler removes them."""
    (tmp_path / "big.txt").write_bytes(words_text(3 << 20))
    cli = NAMED_TEMPS_CLI if temps == "named" else (sys.executable, "-m", "nlmcodec")
    rc, err, latency = _signal_while_coding(["big.txt"], tmp_path, signame, cli=cli)
    assert rc == status, err
    assert latency < 1.5, latency
    assert listing(tmp_path) == ["big.txt"]          # no big.txt.nlm, no .big.txt.nlm.*.tmp
    assert one_line_error(err), err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_while_decompressing_leaves_nothing(tmp_path):
    data = words_text(2 << 20)
    (tmp_path / "big.txt").write_bytes(data)
    assert run([*MODEL, "--rm", "big.txt"], tmp_path).returncode == 0
    rc, err, latency = _signal_while_coding([*MODEL, "-d", "big.txt.nlm"], tmp_path, "SIGINT", after=0.3)
    assert rc == 130 and latency < 1.5, (rc, latency, err)
    assert listing(tmp_path) == ["big.txt.nlm"]
    assert err == b"nlmcodec: interrupted\n"


# -------------------------------------------------------------------------------------------------------------
# write errors (item 3): a full disk, /dev/full and a closed pipe are errors, never exit 0

@pytest.fixture
def small_fs(tmp_path):
    """A real 64 KiB tmpfs at tmp_path/small (Linux, as root)."""
    d = tmp_path / "small"
    d.mkdir()
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs Linux, root and mount(8)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a 64 KiB tmpfs: {r.stderr.decode().strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_full_disk_is_an_error(tmp_path, small_fs):
    """The output does not fit: the first write is short (64 KiB of 300 KB), the next fails with ENOSPC."""
    (tmp_path / "n.bin").write_bytes(noise(300_000))
    text = words_text(1 << 20)
    (tmp_path / "t.txt").write_bytes(text)
    assert run([*MODEL, "t.txt"], tmp_path).returncode == 0
    for args, name in ((["n.bin", "-o", "small/n.bin.nlm"], b"small/n.bin.nlm"),
                       (["-d", "t.txt.nlm", "-o", "small/t.txt"], b"small/t.txt")):
        r = run([*MODEL, *args], tmp_path)
        assert r.returncode == 1, r.stderr
        assert one_line_error(r.stderr) and name + b": No space left on device" in r.stderr, r.stderr
        assert listing(small_fs) == []                  # the temporary file is gone too
    with open(small_fs / "out.nlm", "wb") as f:         # -c to a file on the full disk
        r = subprocess.run([sys.executable, "-m", "nlmcodec", *MODEL, "-c", "n.bin"], cwd=tmp_path,
                           stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.PIPE, timeout=TIMEOUT)
    assert r.returncode == 1 and r.stderr == b"nlmcodec: (stdout): No space left on device\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_is_an_error(tmp_path, src, packed):
    for args in (["-c", "doc.txt"], ["-dc", "doc.txt.nlm"]):
        with open("/dev/full", "wb") as full:
            r = subprocess.run([sys.executable, "-m", "nlmcodec", *MODEL, *args], cwd=tmp_path,
                               stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE, timeout=TIMEOUT)
        assert r.returncode == 1, args
        assert r.stderr == b"nlmcodec: (stdout): No space left on device\n", r.stderr


def test_closed_pipe_is_not_success(tmp_path):
    """``nlmcodec -c big | head -c 10``: the reader goes away after 10 bytes of a 1 MiB output.  Quiet, as xz
    is, and never 0: 128 + SIGPIPE, the status xz's death by SIGPIPE has in a shell (tests/test_cli_xz.py)."""
    (tmp_path / "big.bin").write_bytes(noise(1 << 20))
    p = start([*MODEL, "-c", "big.bin"], tmp_path)
    assert len(p.stdout.read(10)) == 10
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=TIMEOUT) == 128 + signal.SIGPIPE
    assert err == b""


@pytest.mark.skipif(not shutil.which("bash") or not shutil.which("head"), reason="needs bash and head")
def test_closed_pipe_in_a_shell_pipeline(tmp_path):
    data = words_text(1 << 20)
    (tmp_path / "t.txt").write_bytes(data)
    assert run([*MODEL, "t.txt"], tmp_path).returncode == 0
    cmd = f'"{sys.executable}" -m nlmcodec -dc t.txt.nlm | head -c 10; echo " ${{PIPESTATUS[0]}}"'
    r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=TIMEOUT)
    assert r.stdout == data[:10] + b" 141\n"
    assert r.stderr == b""


# -------------------------------------------------------------------------------------------------------------
# --rm only for an unchanged input (item 4)

@pytest.mark.parametrize("change", ["append", "replace"])
def test_rm_keeps_an_input_that_changes_while_compressed(tmp_path, change):
    """The input grows (or is replaced by another file of the same size and times) while the CLI compresses it:
    the output is written, the input is kept, and a warning (exit 2) says why."""
    data = words_text(3 << 19)
    big = tmp_path / "big.txt"
    big.write_bytes(data)
    p = start([*MODEL, "--rm", "big.txt"], tmp_path)
    wait_for(lambda: output_open(p, tmp_path) or p.poll() is not None)
    assert p.poll() is None
    if change == "append":
        with open(big, "ab") as f:
            f.write(b"appended while compressing\n")
        expect = data + b"appended while compressing\n"
    else:
        st = big.stat()
        (tmp_path / "new").write_bytes(data)
        os.utime(tmp_path / "new", ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp_path / "new", big)               # same size and mtime, another inode
        expect = data
    _, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 2, err
    assert b"big.txt: changed while it was being read" in err and b"not removed" in err and one_line_error(err)
    assert big.read_bytes() == expect
    assert listing(tmp_path) == ["big.txt", "big.txt.nlm"]


# -------------------------------------------------------------------------------------------------------------
# --train from the command line (items 5 and 6)

TRAIN_OPTS = ["--vocab", "64", "--dim", "16", "--hidden", "16", "--classes", "4", "--tokens", "2000", "--batch", "4",
              "--bptt", "8", "--ms-segments", "5", "--quiet"]


def _notes(path, nwords=3000, seed=1):
    w = "the cat sat on a mat and dog log ran far away from home into woods while birds sang".split()
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(" ".join(rng.choice(w) for _ in range(nwords)) + "\n")
    return path


def test_train_reads_files_under_any_directory(tmp_path):
    """A user's own bench/ or ood/ directory is just a directory (~/bench/notes.txt can be trained on)."""
    pytest.importorskip("nlmcodec.train")
    _notes(tmp_path / "bench" / "notes.txt")
    _notes(tmp_path / "ood" / "held.txt", 800, seed=2)
    r = run(["--train", "bench/notes.txt", "--dev", "ood/held.txt", "-o", "m.nlmm", *TRAIN_OPTS], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run(["-m", "m.nlmm", "bench/notes.txt", "-o", "n.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run(["-m", "m.nlmm", "-dc", "n.nlm"], tmp_path)
    assert r.returncode == 0 and r.stdout == (tmp_path / "bench" / "notes.txt").read_bytes()


def test_train_refuses_an_existing_output_without_f(tmp_path):
    pytest.importorskip("nlmcodec.train")
    _notes(tmp_path / "notes.txt")
    (tmp_path / "m.nlmm").write_bytes(b"precious")
    r = run(["--train", "notes.txt", "-o", "m.nlmm", *TRAIN_OPTS], tmp_path)
    assert r.returncode == 1
    assert r.stderr == b"nlmcodec: m.nlmm: File exists (use -f to replace it)\n"
    assert (tmp_path / "m.nlmm").read_bytes() == b"precious"
    r = run(["--train", "notes.txt", "-o", "m.nlmm", "-f", *TRAIN_OPTS], tmp_path)
    assert r.returncode == 0, r.stderr
    assert run(["-m", "m.nlmm", "-t"], tmp_path, stdin=run(["-m", "m.nlmm", "-c", "notes.txt"],
                                                           tmp_path).stdout).returncode == 0


def test_train_errors_are_one_line(tmp_path):
    pytest.importorskip("nlmcodec.train")
    _notes(tmp_path / "notes.txt")
    (tmp_path / "bad.jsonl").write_text('{"text": "fine"}\nnot json\n')
    (tmp_path / "sub").mkdir()
    cases = [
        (["notes.txt", "nosuch.txt", "-o", "m.nlmm"], b"nlmcodec: nosuch.txt: No such file or directory\n"),
        (["notes.txt", "--dev", "nodev.txt", "-o", "m.nlmm"], b"nlmcodec: nodev.txt: No such file or directory\n"),
        (["notes.txt", "-o", "sub"], b"nlmcodec: sub: Is a directory\n"),
        (["notes.txt", "-o", "m.nlmm", "--dim", "20"], b"--dim must be a positive multiple of 16"),
        (["notes.txt"], b"-o/--output"),
        (["notes.txt", "-o", "m.nlmm", "--vocab", "many"], b"--vocab"),
        (["bad.jsonl", "-o", "m.nlmm", *TRAIN_OPTS], b'bad.jsonl: line 2: not a JSON object with a "text" string'),
    ]
    for args, expect in cases:
        r = run(["--train", *args], tmp_path)
        assert r.returncode == 1, (args, r.stderr)
        assert one_line_error(r.stderr) and expect in r.stderr, (args, r.stderr)
    assert listing(tmp_path) == ["bad.jsonl", "notes.txt", "sub"]


def test_messages_name_cli_options(tmp_path):
    """A frame made with a model of one's own: decompressing it without that model says -m MODEL, not model=."""
    pytest.importorskip("nlmcodec.train")
    _notes(tmp_path / "notes.txt")
    # trained on 20,000 tokens, the own model codes the notes below the byte model (1,682 against about 1,713
    # bytes), so the frame names it; with TRAIN_OPTS' 2,000 the byte model is smaller and no model is named
    opts = ["20000" if a == "2000" else a for a in TRAIN_OPTS]
    assert run(["--train", "notes.txt", "-o", "own.nlmm", *opts], tmp_path).returncode == 0
    assert run(["-m", "own.nlmm", "--dynamic", "notes.txt"], tmp_path).returncode == 0
    row = json.loads(run(["-l", "--json", "notes.txt.nlm"], tmp_path).stdout)[0]
    assert row["mode"] == "dynamic" and row["model_name"] is None and row["model"] == row["model_id"][:12]
    r = run(["-d", "-c", "notes.txt.nlm"], tmp_path)
    assert r.returncode == 1 and one_line_error(r.stderr)
    assert b"-m MODEL" in r.stderr and b"model=" not in r.stderr, r.stderr
    r = run(["-m", "nosuch.nlmm", "notes.txt", "-c"], tmp_path)
    assert r.returncode == 1 and b"(-m)" in r.stderr and b"model=" not in r.stderr, r.stderr


# -------------------------------------------------------------------------------------------------------------
# -T / --threads (item 7)

def test_threads_option(tmp_path, prose):
    data = prose.read_bytes()
    for n in ("0", "1", "2"):
        r = run([*MODEL, "-T", n, "-c", "prose.txt"], tmp_path)
        assert r.returncode == 0, r.stderr
        r2 = run([*MODEL, "--threads", n, "-dc"], tmp_path, stdin=r.stdout)
        assert r2.returncode == 0 and r2.stdout == data
    for bad in ("-T-1", "--threads=-1", "-Tx"):
        r = run([*MODEL, bad, "prose.txt"], tmp_path)
        assert r.returncode == 1 and b"thread count" in r.stderr
    r = run([*MODEL, "-T", "-1", "prose.txt"], tmp_path)     # -1 is an option now (xz's levels are -0 ... -9)
    assert r.returncode == 1 and b"-T/--threads" in r.stderr
    assert listing(tmp_path) == ["prose.txt"]


@pytest.mark.both_lanes
def test_threads_reach_the_coder(tmp_path, prose):
    r = run([*MODEL, "-v", "-T", "2", "prose.txt"], tmp_path)
    assert r.returncode == 0 and b", 2 threads -> prose.txt.nlm" in r.stderr, r.stderr
    r = run([*MODEL, "-v", "-T", "2", "-t", "prose.txt.nlm"], tmp_path)
    assert r.returncode == 0 and b", 2 threads, OK" in r.stderr, r.stderr
