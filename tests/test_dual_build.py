"""Determinism contract (codec/FORMAT.md §2): the scalar -O0 core and the optimised SIMD core code
identical bytes.  Builds the whole C core twice with gcc around tests/c/codec_driver.c (a random model,
two blocks, static and dynamic) and compares the payloads over more than 10,000 tokens."""
import glob
import os
import pathlib
import random
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = sorted(glob.glob(str(ROOT / "csrc" / "**" / "*.c"), recursive=True))
COMMON = ["-ffp-contract=off", "-fno-fast-math", "-std=gnu11", "-I", str(ROOT / "csrc")]
BUILDS = {"scalar-O0": ["-O0", "-DNLM_NO_SIMD"], "simd-O2": ["-O2"], "simd-O3": ["-O3", "-funroll-loops"]}

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def sample_text(n_words, seed):
    rng = random.Random(seed)
    words = ["the", "and", "of", "a", "to", "in", "The", "AND", "Quixotic", "zebra", "qab", "qcd",
             "McZebra", "42", "1999", "naïve", "café", "x" * 40]
    seps = [" ", " ", " ", ", ", ". ", "\n", "\n\n", "  ", "\t", " \n  ", "; ", "'", "-"]
    out = []
    for _ in range(n_words):
        out.append(rng.choice(words) if rng.random() < 0.8 else "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 9))))
        out.append(rng.choice(seps))
    return "".join(out).encode()


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    d = tmp_path_factory.mktemp("dual")
    exes = {}
    for name, flags in BUILDS.items():
        exe = d / name
        subprocess.run(["gcc", *flags, *COMMON, "-o", str(exe), str(ROOT / "tests" / "c" / "codec_driver.c"),
                        *SOURCES, "-lm"], check=True)
        exes[name] = exe
    return exes


@pytest.mark.parametrize("adapt", [0, 1], ids=["static", "dynamic"])
def test_identical_bytes_across_builds(drivers, adapt):
    text = sample_text(9000, seed=adapt)
    outs = {}
    for name, exe in drivers.items():
        p = subprocess.run([str(exe), str(adapt), "7"], input=text, capture_output=True, check=True)
        tokens = int(p.stderr.split()[1])
        assert tokens >= 10000
        outs[name] = p.stdout
    ref = outs["scalar-O0"]
    assert len(ref) > 1000
    for name, out in outs.items():
        assert out == ref, f"{name} differs from scalar-O0"
