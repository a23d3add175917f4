"""xz habits of the command line (issue 43 item 2) and its edges (issue 42 item 5), on real processes and files:

* -0 ... -9, --fast, --best, -e/--extreme: levels mapped onto the modes (-0 ... -3 static, -4 ... -6 heads,
  -7 ... -9 and -e dynamic), a mode option wins, the frame of a mode is the same bytes however it was chosen;
* -F/--format auto|nlm, -M/--memlimit with xz's syntax (reaches the decoder as memlimit=);
* a closed standard output is quiet and exits as xz does (128 + SIGPIPE as a shell sees it);
* -T defaults to one thread per CPU and no thread count changes a byte;
* --version names the package, the formats written and read, the default models;
* --rm refuses an input with other hard links unless -f;
* a SIGKILLed writer's temporary output (.NAME.PID.RANDOM.tmp) is removed by the next run that writes NAME,
  once PID is dead, and nothing else is.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_cli import (MODEL, NAMED_TEMPS_CLI, TIMEOUT, listing, noise, one_line_error, run, unnamed_files_of,
                      vocab_text, wait_for, words_text)


# The options and file handling are the same over either binding: the cffi lane runs the tests marked both_lanes
# (conftest.py).
pytestmark = pytest.mark.one_lane


@pytest.fixture
def prose(tmp_path):
    """A text the word model codes, so that the three modes give three different frames."""
    p = tmp_path / "prose.txt"
    p.write_bytes(vocab_text(3000))
    return p


def frame(tmp_path, *args):
    r = run([*MODEL, *args, "-c", "prose.txt"], tmp_path)
    assert r.returncode == 0, (args, r.stderr)
    assert r.stderr == b"", r.stderr
    return r.stdout


# ---------------------------------------------------------------------------------------------------------------
# levels, --fast, --best, -e

def test_levels_choose_modes_and_keep_their_bytes(tmp_path, prose):
    by_mode = {m: frame(tmp_path, f"--{m}") for m in ("static", "heads", "dynamic")}
    assert len(set(by_mode.values())) == 3          # else this test could not tell the modes apart
    assert frame(tmp_path) == by_mode["heads"]      # no option: heads mode, as before
    expect = {**{f"-{n}": "static" for n in range(4)}, **{f"-{n}": "heads" for n in range(4, 7)},
              **{f"-{n}": "dynamic" for n in range(7, 10)},
              "--fast": "static", "--best": "dynamic", "-e": "dynamic", "--extreme": "dynamic",
              "-9e": "dynamic", "-0e": "dynamic", "-e -0": "dynamic", "-0 -9": "dynamic", "-9 -0": "static",
              "--static -9": "static", "-9 --static": "static", "-e --heads": "heads", "--dynamic --fast": "dynamic"}
    for opts, mode in expect.items():
        assert frame(tmp_path, *opts.split()) == by_mode[mode], (opts, mode)


def test_level_before_a_file_is_an_option(tmp_path, prose):
    """``nlmcodec -9 a.txt`` compresses a.txt (it used to look for a file named -9); ``-c -9 a.txt`` too."""
    data = prose.read_bytes()
    r = run([*MODEL, "-9", "prose.txt"], tmp_path)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    assert listing(tmp_path) == ["prose.txt", "prose.txt.nlm"]
    r = run([*MODEL, "-9", "-dc", "prose.txt.nlm"], tmp_path)    # accepted and ignored when decompressing
    assert r.returncode == 0 and r.stdout == data, r.stderr
    r = run([*MODEL, "-c", "-9", "prose.txt"], tmp_path)
    assert r.returncode == 0 and r.stdout == (tmp_path / "prose.txt.nlm").read_bytes(), r.stderr


def test_must_show_xz_options(tmp_path, prose):
    """Issue 43: ``-9 -c f``, ``-e -c f``, ``--best -c f``, ``-M 200MiB -dc f.nlm`` work."""
    data = prose.read_bytes()
    for opt in ("-9", "-e", "--best"):
        r = run([*MODEL, opt, "-c", "prose.txt"], tmp_path)
        assert r.returncode == 0 and r.stderr == b"" and r.stdout, (opt, r.stderr)
        (tmp_path / "prose.txt.nlm").write_bytes(r.stdout)
        r = run([*MODEL, "-M", "200MiB", "-dc", "prose.txt.nlm"], tmp_path)
        assert r.returncode == 0 and r.stderr == b"" and r.stdout == data, (opt, r.stderr)


def test_help_says_what_levels_mean(tmp_path):
    r = run(["--help"], tmp_path)
    out = b" ".join(r.stdout.split())
    assert r.returncode == 0
    for s in (b"-0 ... -3 static", b"-4 ... -6 heads", b"-7 ... -9 dynamic", b"same mode, same bytes",
              b"--fast same as -0", b"--best same as -9", b"-e, --extreme dynamic mode", b"-F FMT, --format FMT",
              b"-M LIMIT, --memlimit LIMIT", b"default 0: as many as CPUs"):
        assert s in out, s


# ---------------------------------------------------------------------------------------------------------------
# -F / --format, -M / --memlimit

def test_format_option(tmp_path, prose):
    plain = frame(tmp_path)
    for args in (["-F", "nlm"], ["-F", "auto"], ["--format=nlm"], ["--format", "NLM"]):
        assert frame(tmp_path, *args) == plain, args
    (tmp_path / "prose.txt.nlm").write_bytes(plain)
    r = run([*MODEL, "-F", "nlm", "-dc", "prose.txt.nlm"], tmp_path)
    assert r.returncode == 0 and r.stdout == prose.read_bytes()
    for fmt in ("xz", "lzma", "raw", "gzip", ""):
        r = run([*MODEL, "-F", fmt, "prose.txt"], tmp_path)
        assert r.returncode == 1 and one_line_error(r.stderr), (fmt, r.stderr)
        assert b"unknown file format type" in r.stderr, r.stderr
    assert listing(tmp_path) == ["prose.txt", "prose.txt.nlm"]


def _decoder_takes_memlimit():
    import inspect

    import nlmcodec

    return "memlimit" in inspect.signature(nlmcodec.NLMDecompressor).parameters


def test_memlimit_syntax(tmp_path, prose):
    (tmp_path / "prose.txt.nlm").write_bytes(frame(tmp_path))
    data = prose.read_bytes()
    for lim in ("0", "max", "200MiB", "200M", "200mb", "1GiB", "1g", "50%", "100%", str(1 << 30), "262144KiB"):
        for flag in ("-M", "--memlimit", "--memlimit-decompress"):
            r = run([*MODEL, flag, lim, "-dc", "prose.txt.nlm"], tmp_path)
            assert r.returncode == 0 and r.stdout == data and r.stderr == b"", (flag, lim, r.stderr)
    for lim in ("x", "12foo", "-1", "1.5GiB", "0%", "101%", "MiB", ""):
        r = run([*MODEL, f"--memlimit={lim}", "-dc", "prose.txt.nlm"], tmp_path)
        assert r.returncode == 1 and one_line_error(r.stderr) and b"-M/--memlimit" in r.stderr, (lim, r.stderr)
    # accepted when compressing (xz's -M also bounds its encoder; ours bounds the decoding of --rm's check)
    assert frame(tmp_path, "-M", "1GiB") == (tmp_path / "prose.txt.nlm").read_bytes()


@pytest.mark.both_lanes
@pytest.mark.skipif(not _decoder_takes_memlimit(), reason="NLMDecompressor has no memlimit= yet")
def test_memlimit_reaches_the_decoder(tmp_path, prose):
    """A limit below what the frame needs refuses it, with one line naming -M, and writes nothing."""
    (tmp_path / "prose.txt.nlm").write_bytes(frame(tmp_path))
    for args in (["-dc"], ["-t"], ["-d", "-o", "out.txt"]):
        r = run([*MODEL, "-M", "1KiB", *args, "prose.txt.nlm"], tmp_path)
        assert r.returncode == 1 and one_line_error(r.stderr), (args, r.stderr)
        assert b"memory limit" in r.stderr and b"-M" in r.stderr and b"memlimit=" not in r.stderr, r.stderr
        assert r.stdout == b""
        assert listing(tmp_path) == ["prose.txt", "prose.txt.nlm"]
    # --rm's check decodes the new frame under the limit too: refused, the input stays
    os.unlink(tmp_path / "prose.txt.nlm")
    r = run([*MODEL, "-M", "1KiB", "--rm", "prose.txt"], tmp_path)
    assert r.returncode == 1 and one_line_error(r.stderr), r.stderr
    assert (tmp_path / "prose.txt").exists()


# ---------------------------------------------------------------------------------------------------------------
# a closed standard output: quiet, and the exit status xz has

def _pipeline_status(cmd, cwd):
    """Run ``cmd | head -c 1`` in bash; returns (status of cmd, its stderr, what head printed)."""
    script = f'{cmd} 2>"$ERR" | head -c 1; echo " ${{PIPESTATUS[0]}}"'
    err = cwd / "stderr.txt"
    r = subprocess.run(["bash", "-c", script], cwd=cwd, env=dict(os.environ, ERR=str(err)),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    first, status = r.stdout.rsplit(b" ", 1)
    text = err.read_bytes()
    err.unlink()
    return int(status), text, first


@pytest.mark.skipif(not shutil.which("bash") or not shutil.which("head"), reason="needs bash and head")
def test_closed_pipe_is_quiet_like_xz(tmp_path):
    """``nlmcodec -c f | head -c 1`` (and -dc, -l): no message; the status is xz's in the same pipeline (141,
    death by SIGPIPE as the shell reports it; Python ignores SIGPIPE, so the CLI exits 128 + 13 itself)."""
    (tmp_path / "n.bin").write_bytes(noise(1 << 20))      # more than a pipe holds: the write must fail
    (tmp_path / "t.txt").write_bytes(words_text(1 << 20))
    assert run([*MODEL, "-k", "t.txt"], tmp_path).returncode == 0
    want = 128 + signal.SIGPIPE
    if shutil.which("xz"):
        want, err, _ = _pipeline_status("xz -c n.bin", tmp_path)
        assert err == b""
    py = f'"{sys.executable}" -m nlmcodec {" ".join(MODEL)}'
    for args, first in (("-c n.bin", None), ("-dc t.txt.nlm", (tmp_path / "t.txt").read_bytes()[:1]),
                        ("-c n.bin t.txt", None), ("-T 2 -dc t.txt.nlm t.txt.nlm", None)):
        status, err, got = _pipeline_status(f"{py} {args}", tmp_path)
        assert err == b"", (args, err)
        assert status == want, (args, status)
        if first is not None:
            assert got == first
    assert sorted(listing(tmp_path)) == ["n.bin", "t.txt", "t.txt.nlm"]


def test_closed_pipe_with_a_real_reader(tmp_path):
    """The same without a shell: the reader takes 10 bytes and closes; no message, 141, nothing left behind."""
    (tmp_path / "big.bin").write_bytes(noise(1 << 20))
    p = subprocess.Popen([sys.executable, "-m", "nlmcodec", *MODEL, "-c", "big.bin"], cwd=tmp_path,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert len(p.stdout.read(10)) == 10
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=TIMEOUT) == 128 + signal.SIGPIPE
    assert err == b""
    assert listing(tmp_path) == ["big.bin"]


# ---------------------------------------------------------------------------------------------------------------
# -T: one thread per CPU by default, the same bytes for any count

def test_threads_default_to_the_cpus(tmp_path, prose):
    n = os.cpu_count() or 1
    r = run([*MODEL, "-v", "prose.txt"], tmp_path)
    assert r.returncode == 0 and f", {n} thread{'s' if n > 1 else ''} -> prose.txt.nlm".encode() in r.stderr, \
        r.stderr
    r = run([*MODEL, "-v", "-t", "prose.txt.nlm"], tmp_path)
    assert r.returncode == 0 and f", {n} thread{'s' if n > 1 else ''}, OK".encode() in r.stderr, r.stderr
    r = run([*MODEL, "-v", "-T", "1", "-t", "prose.txt.nlm"], tmp_path)
    assert r.returncode == 0 and b", 1 thread, OK" in r.stderr, r.stderr


@pytest.mark.both_lanes
def test_thread_count_changes_no_byte(tmp_path, prose):
    """-T's spellings give the same frame in every mode (over several groups of the shipped size the thread count
    changes no byte either: test_fallback.py's test_threads_identical_frames_default_groups, through
    compress(threads=), which -T reaches: test_cli.py's test_threads_reach_the_coder)."""
    for mode in ("--static", "--heads", "--dynamic"):
        frames = {t: frame(tmp_path, mode, *t) for t in ((), ("-T", "0"), ("-T", "1"), ("-T", "2"), ("-T", "3"))}
        assert len(set(frames.values())) == 1, mode


# ---------------------------------------------------------------------------------------------------------------
# --version

def test_version_names_formats_and_default_model(tmp_path):
    import nlmcodec
    from nlmcodec._frame import READ_VERSIONS
    from nlmcodec._registry import default_model_names, file_id, model_files

    r = run(["--version"], tmp_path)
    assert r.returncode == 0 and r.stderr == b""
    out = r.stdout.decode()
    assert out.startswith(f"nlmcodec {nlmcodec.__version__} ("), out
    assert f"writes frame format {nlmcodec.FORMAT_VERSION};" in out, out
    assert re.search(r"reads formats? " + (str(READ_VERSIONS[0]) if len(READ_VERSIONS) == 1
                                          else f"{min(READ_VERSIONS)}"), out), out
    names = default_model_names()
    if names:
        listed = ", ".join(f"{n} (id {file_id(model_files()[n]).hex()[:16]}...)" for n in names)
        assert f"default model{'s' if len(names) > 1 else ''}: {listed}" in out, out
    assert run(["-V"], tmp_path).stdout == r.stdout


# ---------------------------------------------------------------------------------------------------------------
# --rm and hard links (issue 42 item 5)

@pytest.mark.skipif(not hasattr(os, "link"), reason="needs hard links")
def test_rm_refuses_a_hard_linked_input_without_f(tmp_path, prose):
    data = prose.read_bytes()
    os.link(tmp_path / "prose.txt", tmp_path / "other.txt")
    r = run([*MODEL, "--rm", "prose.txt"], tmp_path)
    assert r.returncode != 0 and one_line_error(r.stderr), r.stderr
    assert b"prose.txt: Input file has 2 hard links, skipping" in r.stderr, r.stderr
    assert listing(tmp_path) == ["other.txt", "prose.txt"]             # nothing written, nothing removed
    assert prose.read_bytes() == data and os.stat(prose).st_nlink == 2
    # without --rm nothing is removed, so the links do not matter (xz: they matter when it would delete)
    r = run([*MODEL, "prose.txt"], tmp_path)
    assert r.returncode == 0, r.stderr
    os.unlink(tmp_path / "prose.txt.nlm")
    # -f: this name goes, the other keeps the data
    r = run([*MODEL, "--rm", "-f", "prose.txt"], tmp_path)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    assert listing(tmp_path) == ["other.txt", "prose.txt.nlm"]
    assert (tmp_path / "other.txt").read_bytes() == data
    # decompression too
    os.link(tmp_path / "prose.txt.nlm", tmp_path / "copy.nlm")
    r = run([*MODEL, "-d", "--rm", "prose.txt.nlm"], tmp_path)
    assert r.returncode != 0 and b"Input file has 2 hard links" in r.stderr and one_line_error(r.stderr)
    assert listing(tmp_path) == ["copy.nlm", "other.txt", "prose.txt.nlm"]
    r = run([*MODEL, "-d", "--rm", "-f", "prose.txt.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert listing(tmp_path) == ["copy.nlm", "other.txt", "prose.txt"] and prose.read_bytes() == data
    # -c never removes: the links do not matter
    r = run([*MODEL, "--rm", "-c", "copy.nlm"], tmp_path)
    assert r.returncode == 0 and r.stdout and os.stat(tmp_path / "copy.nlm").st_nlink == 1


# ---------------------------------------------------------------------------------------------------------------
# temporary outputs left by SIGKILL (issue 42 item 5): none on Linux (an unnamed O_TMPFILE output); a named
# temporary file elsewhere, removed by the next run

UNNAMED = sys.platform.startswith("linux")


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _temps_of(d, name, pid):
    pat = re.compile(re.escape(f".{name}.{pid}.") + r"[a-z0-9_]{8}\.tmp")
    return [n for n in os.listdir(d) if pat.fullmatch(n)]


def _kill_a_writer(tmp_path, mode, cli):
    """Start ``cli`` writing out.X from a pipe that stays open (half its input), wait until it has its output
    open, SIGKILL it.  Returns (output name, args, input, pid)."""
    data = words_text(200_000)
    if mode == "compress":
        out, args, feed = "out.nlm", ["-o", "out.nlm"], data
    else:
        r = run([*MODEL, "-c"], tmp_path, stdin=data)
        assert r.returncode == 0
        out, args, feed = "out.txt", ["-d", "-o", "out.txt"], r.stdout
    p = subprocess.Popen([*cli, *MODEL, *args], cwd=tmp_path, stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    p.stdin.write(feed[:len(feed) // 2])          # a slow pipe: half the input, then nothing more
    p.stdin.flush()
    if cli is NAMED_TEMPS_CLI:
        wait_for(lambda: [n for n in os.listdir(tmp_path) if n.startswith(f".{out}.")] or p.poll() is not None)
    else:
        wait_for(lambda: p.poll() is not None or unnamed_files_of(p.pid, tmp_path))
    time.sleep(0.5)
    assert p.poll() is None
    p.kill()                                      # SIGKILL
    assert p.wait(timeout=TIMEOUT) == -signal.SIGKILL
    p.stdin.close()
    p.stderr.close()
    return out, args, feed, p.pid


@pytest.mark.skipif(not UNNAMED, reason="O_TMPFILE is Linux's")
@pytest.mark.parametrize("mode", ["compress", "decompress"])
def test_a_sigkilled_writer_leaves_nothing(tmp_path, mode):
    """On Linux the output is an unnamed file until it is complete: SIGKILL in the middle leaves no file."""
    before = listing(tmp_path)
    out, args, feed, _ = _kill_a_writer(tmp_path, mode, [sys.executable, "-m", "nlmcodec"])
    assert listing(tmp_path) == before
    r = run([*MODEL, *args], tmp_path, stdin=feed)
    assert r.returncode == 0, r.stderr
    assert listing(tmp_path) == sorted(before + [out])


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("mode", ["compress", "decompress"])
def test_sigkill_leftover_is_removed_by_the_next_run(tmp_path, mode):
    """The named temporary files (no O_TMPFILE): a CLI writing out.X is SIGKILLed and its temporary output
    stays (nothing can run at SIGKILL).  The next run writing out.X removes it, and none of the look-alikes."""
    out, args, feed, pid = _kill_a_writer(tmp_path, mode, NAMED_TEMPS_CLI)
    left = _temps_of(tmp_path, out, pid)
    assert len(left) == 1, listing(tmp_path)      # the premise: SIGKILL leaves the temporary file
    dead = _dead_pid()
    decoys = [f".{out}.{os.getpid()}.abcdefgh.tmp",    # its writer (this test) is alive
              f".{out}.1.abcdefgh.tmp",                # pid 1 is alive (or not ours: EPERM)
              f".other.{dead}.abcdefgh.tmp",           # another name
              f".{out}.{dead}.abcdefg.tmp",            # not the pattern: 7 random characters
              f".{out}.{dead}.abcdefgh.tmp.keep",
              f"{out}.{dead}.abcdefgh.tmp",            # not hidden
              f".{out}.abcdefgh.tmp",                  # no pid (the old mkstemp names)
              f".{out}.0{dead}.abcdefgh.tmp"]          # not how a pid is written
    for n in decoys:
        (tmp_path / n).write_bytes(b"keep me")
    os.mkdir(tmp_path / f".{out}.{dead}.dirdirdi.tmp")  # the pattern, but a directory
    os.symlink("prose-nothing", tmp_path / f".{out}.{dead}.linklink.tmp")   # the pattern, but a symlink

    r = run([*MODEL, *args], tmp_path, stdin=feed)
    assert r.returncode == 0, r.stderr
    assert left[0] not in listing(tmp_path)
    for n in decoys:
        assert (tmp_path / n).read_bytes() == b"keep me", n
    assert os.path.isdir(tmp_path / f".{out}.{dead}.dirdirdi.tmp")
    assert os.path.islink(tmp_path / f".{out}.{dead}.linklink.tmp")
    assert (tmp_path / out).read_bytes() == (r2 := run([*MODEL, *args[:-2], "-c"], tmp_path, stdin=feed)).stdout
    assert r2.returncode == 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_live_writers_temporary_file_is_left_alone(tmp_path):
    """Two runs write the same name: the second neither removes the first's temporary file nor disturbs it."""
    data = words_text(100_000)
    p = subprocess.Popen([*NAMED_TEMPS_CLI, *MODEL, "-o", "out.nlm"], cwd=tmp_path,
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    p.stdin.write(data[:50_000])
    p.stdin.flush()
    wait_for(lambda: _temps_of(tmp_path, "out.nlm", p.pid) or p.poll() is not None)
    assert p.poll() is None
    (tmp_path / "x.txt").write_bytes(b"another input\n")
    r = run([*MODEL, "x.txt", "-o", "out.nlm"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(_temps_of(tmp_path, "out.nlm", p.pid)) == 1
    p.stdin.write(data[50_000:])
    p.stdin.close()
    err = p.stderr.read()
    assert p.wait(timeout=TIMEOUT) == 1 and b"out.nlm: File exists" in err    # never overwritten without -f
    assert listing(tmp_path) == ["out.nlm", "x.txt"]


# ---------------------------------------------------------------------------------------------------------------
# the man page (issue 43): rendered from the parser, installed with the package

def test_the_man_page_is_the_parsers():
    """docs/nlmcodec.1 (installed as share/man/man1/nlmcodec.1; .ci/wheel.sh checks the wheel has it) is what
    the parser renders now, and names every option --help shows.  Regenerate: python -m nlmcodec.cli.manpage
    > docs/nlmcodec.1"""
    from nlmcodec.cli.manpage import render_man
    from nlmcodec.cli.options import _build_parser
    page = render_man()
    shipped = (Path(__file__).resolve().parents[1] / "docs" / "nlmcodec.1").read_text()
    assert shipped == page, "docs/nlmcodec.1 is stale: python -m nlmcodec.cli.manpage > docs/nlmcodec.1"
    for action in _build_parser()._actions:
        if action.help != argparse.SUPPRESS:
            for opt in action.option_strings:
                assert f"\\fB{opt.replace('-', chr(92) + '-')}\\fR" in page, opt
    assert page.startswith(".TH NLMCODEC 1") and "\n.SH SYNOPSIS\n" in page
