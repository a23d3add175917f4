"""No absolute path of any machine in the repository, and one corpus lookup.

Every tracked text file is read; the model files (.nlmm, binary: their bytes are hashed into the model
id, so the training command recorded inside them stays as it was) are the only files skipped.  The
corpus is found by nlmcodec._bench.corpus_dir: $NLMCODEC_CORPUS, else ../shared/corpus beside the
repository."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.one_lane   # no binding involved: the cffi lane skips it

ROOT = Path(__file__).resolve().parents[1]
# home and work folders of any machine; /tmp/... scratch names in usage examples are not machine paths
MACHINE_PATH = re.compile(r"(?<![\w.~])(/wor[k]/|/hom[e]/\w|/User[s]/\w|/roo[t]/|/mn[t]/\w|[A-Za-z]:\\\\User[s])")  # [k]: not itself


def _tracked():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return [ROOT / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):      # not a git checkout (an sdist): every file
        return [p for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]


def test_no_machine_paths_in_tracked_files():
    hits = []
    here = str(ROOT.parent)
    for p in _tracked():
        if not p.is_file():
            continue
        b = p.read_bytes()
        if b"\0" in b[:65536]:
            continue                                   # binary (the model files, golden vectors)
        text = b.decode("utf-8", "replace")
        for n, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line) or (len(here) > 1 and here + os.sep in line):
                hits.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not hits, "absolute machine paths:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_must():
    root = "/"                                         # spelled in pieces, so this file passes its own test
    for bad in (f"--train {root}work/shared/corpus/train", f'open("{root}home/alice/x")', "C:" + "\\\\Users\\\\bob"):
        assert MACHINE_PATH.search(bad), bad
    for ok in ("../shared/corpus/train", "-o /tmp/alice29.txt.nlm", "$NLMCODEC_CORPUS/bench"):
        assert not MACHINE_PATH.search(ok), ok


def _corpus_dir_with(env, cwd):
    code = "from nlmcodec._bench import corpus_dir; print(corpus_dir())"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_corpus_lookup(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NLMCODEC_CORPUS"}
    (tmp_path / "c").mkdir()
    assert _corpus_dir_with(dict(env, NLMCODEC_CORPUS=str(tmp_path / "c")), tmp_path) == str(tmp_path / "c")
    assert _corpus_dir_with(dict(env, NLMCODEC_CORPUS=str(tmp_path / "none")), tmp_path) == "None"
    beside = ROOT.parent / "shared" / "corpus"
    if beside.is_dir():                                # the checkout's own neighbour, found without the variable
        assert _corpus_dir_with(env, tmp_path) == str(beside)


def test_missing_corpus_names_the_variable(tmp_path):
    """Without the corpus the test helpers import, and what needs a corpus file skips naming NLMCODEC_CORPUS."""
    env = dict(os.environ, NLMCODEC_CORPUS=str(tmp_path / "none"))
    code = ("import sys; sys.path.insert(0, %r); import corpus_cache, pytest\n"
            "assert not corpus_cache.CORPUS\n"
            "try:\n    corpus_cache.CORPUS / 'bench'\nexcept pytest.skip.Exception as e:\n    print(e)\n" % str(ROOT / "tests"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "NLMCODEC_CORPUS" in r.stdout, r.stderr
