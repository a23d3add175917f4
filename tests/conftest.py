"""Shared fixtures for the Python API tests.

Backends: the binding is chosen by NLMCODEC_BACKEND when nlmcodec is imported, so one pytest process
tests one binding (nlmcodec.backend, shown in the report header).  The other binding is exercised from
the same run by `run_backend` (a subprocess with NLMCODEC_BACKEND set), which the cross-binding tests in
test_golden.py use to check that both bindings write and read identical bytes.  `.ci/run` therefore needs
only one pytest invocation; `NLMCODEC_BACKEND=cffi pytest` runs the whole suite on cffi.

Models: the wheel ships only the default model; the test models (tiny, tiny-kn, tiny-lstm, tiny-nplm) live
in tests/models, which this file puts on the model search path (NLMCODEC_MODEL_PATH, so that the
subprocesses of the tests find them too: the golden vectors name them by id).  `tiny_model` is "tiny" when
it is found, else a small synthetic model (random weights, fixed seed) written to a temporary file.
`default_model` is the bundled "default" model or skips.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TEST_MODELS = Path(__file__).resolve().parent / "models"
os.environ["NLMCODEC_MODEL_PATH"] = os.pathsep.join(
    [str(TEST_MODELS)] + [d for d in os.environ.get("NLMCODEC_MODEL_PATH", "").split(os.pathsep)
                          if d and d != str(TEST_MODELS)])

import nlmcodec  # noqa: E402
from nlmcodec import _registry  # noqa: E402

BACKENDS = ("cython", "cffi")
WORDS = ("the of and to a in is it that was he for on as with his be at by i this had not are but from or have "
         "an they which one you were her all she there would their we him been has when who will more no if out "
         "so said what up its about into than them can only other new some could time these two may then do first "
         "any my now such like our over man me even most made after also did many before must through back years "
         "where much your way well down should because each just those people").split()


def lane_modes(modes=(False, True, "heads"), ids=("static", "dynamic", "heads")):
    """pytest params of the coding modes for a test of the frame layer or the threads: the cffi lane takes the
    default mode (heads) alone, its binding calls being those of the other two (one_lane on static and dynamic:
    the Cython lane takes all three)."""
    return [pytest.param(m, id=i, marks=[] if m == "heads" else [pytest.mark.one_lane]) for m, i in zip(modes, ids)]


# The longest work units of the slow lane, longest first (CPU seconds of `pytest -m slow --durations`): under
# --dist loadgroup a file's tests are one unit, and xdist hands units out in collection order, so these go
# first and the short tests fill in after them instead of one worker finishing dickens alone at the end.  The
# modules that build C programs in a module fixture are one unit each too (their xdist_group), or each worker
# would build them (test_dual_build's five builds took 49 s of set-up in each worker).
HEAVY_FIRST = ("dickens", "bible.txt", "test_threads_identical_frames_default_groups",
               f"test_second_reader_decodes_the_golden_vector[v{nlmcodec.FORMAT_VERSION}/news_64k-",
               f"test_second_reader_decodes_the_golden_vector[v{nlmcodec.FORMAT_VERSION}/fallback-",
               "test_output_as_it_is_made_default_model", "dual_build", "vector_driver", "kernels", "lm_c", "coder",
               "reymont", "xml", "world192.txt",
               "book1", "plrabn12.txt", "book2", "kennedy.xls", "lcet10.txt", "news")


# The developer's quick lane is `-m 'not slow'` (the README gives its measured time).  "heavy" marks the
# tests that took 25 s or more each under load 5 (about 10 s on a quiet core; `pytest -m 'not slow'
# --durations=40`): they are marked slow as well, so the quick lane leaves them out, and the cffi lane of CI
# runs `-m 'not slow or heavy'`, so neither binding loses them.
HEAVY = ("test_errors.py::test_random_bytes_expansion_bound", "test_errors.py::test_single_bit_flips",
         "test_dual_build.py::", "test_cli.py::test_golden_vectors_decode", "test_golden.py::test_bindings_identical",
         "test_bytemodel.py::test_scalar_reference_equals_optimised_builds",
         "test_selftest.py::test_c_codec_refuses_when_the_selftest_fails",
         "test_selftest.py::test_fpenv_guard_against_a_hostile_host_environment",
         "test_selftest.py::test_selftest_catches_a_contracting_build", "test_speller.py::test_speller",
         "test_kernels.py::test_golden_vectors_under_every_simd_cap",
         "test_hostile.py::test_damaged_frames_give_their_codecs_back", "test_cli_xz.py::test_closed_pipe_is_quiet_like_xz",
         "test_format_reader.py::test_second_reader_decodes_the_golden_vector[v13/repeats-default-2-",
         "test_format_reader.py::test_second_reader_decodes_the_golden_vector[v13/spelled-default-2-",
         "test_fallback.py::test_thread_count_does_not_change_the_frame", "test_fallback.py::test_adversarial_mixtures",
         "test_cli.py::test_progress_line_only_on_a_terminal", "test_explain.py::test_explain_memory_bounded",
         "test_vector_driver.py::", "test_api.py::test_block_split_independent_of_chunking")


def pytest_configure(config):
    """The session's shared folder of corpus frames (corpus_cache.frame): made by the controlling process (or the
    only one), inherited by xdist's workers, removed at the session's end."""
    import corpus_cache

    if not hasattr(config, "workerinput") and corpus_cache.SHARED_FRAMES_ENV not in os.environ:
        import tempfile

        config._nlm_frames = tempfile.mkdtemp(prefix="nlmcodec-frames-")
        os.environ[corpus_cache.SHARED_FRAMES_ENV] = config._nlm_frames


def pytest_unconfigure(config):
    import shutil

    import corpus_cache

    folder = getattr(config, "_nlm_frames", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(corpus_cache.SHARED_FRAMES_ENV, None)


def _heavy_rank(item):
    mark = item.get_closest_marker("xdist_group")
    name = mark.args[0] if mark is not None and mark.args else None
    for i, h in enumerate(HEAVY_FIRST):
        if name == h or (name is None and h in item.nodeid):
            return i
    return len(HEAVY_FIRST)


def pytest_collection_modifyitems(config, items):
    """Longest work units first (HEAVY_FIRST); a stable sort, the same in every worker.  Under
    NLMCODEC_BACKEND=cffi (the README's second lane) the tests marked one_lane (and not both_lanes) are skipped:
    they use no binding (C harnesses, the numpy reference, text checks), run both bindings themselves, or reach
    the binding only through calls that the cffi lane's other tests take (the command line's file handling, the
    explain page's layout: their binding calls are compress, decompress and the trace, which the API, golden,
    round-trip and trace tests make in both lanes), so the first lane has run them already."""
    items.sort(key=_heavy_rank)
    for it in items:
        if any(it.nodeid.rpartition("tests/")[2].startswith(h) for h in HEAVY):
            it.add_marker(pytest.mark.heavy)
            it.add_marker(pytest.mark.slow)
    if nlmcodec.backend == "cffi":
        skip = pytest.mark.skip(reason="one_lane: no binding involved, both run by the test itself, or its calls "
                                       "taken by this lane's other tests; run by the Cython lane")
        for it in items:
            if it.get_closest_marker("one_lane") and not it.get_closest_marker("both_lanes"):
                it.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Without the shared corpus, a test that looks a corpus file up (nlmcodec._bench: "... corpus ...") is
    skipped with the one reason that names NLMCODEC_CORPUS, instead of failing: a clean clone runs the rest."""
    outcome = yield
    import corpus_cache

    exc = outcome.excinfo[1] if outcome.excinfo else None
    if not corpus_cache.CORPUS and isinstance(exc, FileNotFoundError) and "corpus" in str(exc):
        outcome.force_exception(pytest.skip.Exception(corpus_cache.SKIP_REASON))


def pytest_collection_finish(session):
    """Under pytest-xdist with --dist loadgroup, every test marked xdist_group must carry its group in its
    node id (what the scheduler groups by): the slow tests of one corpus file share the worker that holds its
    frames (tests/corpus_cache.py).  When the grouping silently does not take (pytest 9 with xdist 3.8),
    each file would be compressed once per test module: fail instead."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [it.nodeid for it in session.items if it.get_closest_marker("xdist_group") and "@" not in it.nodeid]
    if lost:
        raise pytest.UsageError(f"--dist loadgroup did not group {len(lost)} tests (first: {lost[0]}): "
                                "this pytest-xdist cannot group under this pytest; install pytest<9")


def pytest_report_header(config):
    found = sorted(_registry.model_files())
    return [f"nlmcodec backend: {nlmcodec.backend}; models: {', '.join(found) or 'none'} "
            f"(search path: {os.pathsep.join(map(str, _registry.model_dirs()))})"]


def synthetic_model(seed=0):
    from nlmcodec._model import Model, param_count

    rng = np.random.default_rng(seed)
    vocab = [b"", b""] + sorted({w.encode() for w in WORDS})
    V, D, H, C = len(vocab), 16, 16, 8
    cs = np.linspace(0, V, C + 1).astype(np.int32)
    params = rng.normal(0, 0.1, param_count(V, D, H, C)).astype(np.float32)
    return Model({"V": V, "D": D, "H": H, "C": C, "seg_len": 20, "lr": 0.01, "decay": 1e-4, "eps": 1e-5},
                 params, np.full(14, 0.01, np.float32), vocab, cs, b"the\nand\nhello\n", name="synthetic")


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    if "tiny" in _registry.model_files():
        return "tiny"
    p = tmp_path_factory.mktemp("models") / "synthetic.nlmm"
    synthetic_model().save(p)
    return str(p)


@pytest.fixture(scope="session")
def tiny_model(tiny_model_path):
    return nlmcodec.load_model(tiny_model_path)


@pytest.fixture(scope="session")
def default_model():
    if "default" not in _registry.model_files():
        pytest.skip("default.nlmm is not bundled yet")
    return nlmcodec.load_model("default")


@pytest.fixture(scope="session")
def run_backend():
    """run_backend(name, code, payload) -> JSON result of `code` run under NLMCODEC_BACKEND=name.

    `code` is Python that reads the JSON `payload` from the variable IN and assigns its result to OUT."""
    def run(name, code, payload=None):
        assert name in BACKENDS
        prog = ("import json, sys, nlmcodec\nIN = json.loads(sys.stdin.read())\n" + code +
                "\nassert nlmcodec.backend == %r\nsys.stdout.write(json.dumps(OUT))\n" % name)
        env = dict(os.environ, NLMCODEC_BACKEND=name)
        r = subprocess.run([sys.executable, "-c", prog], input=json.dumps(payload), capture_output=True,
                           text=True, env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    return run


def word_salad(n, seed=1):
    r = np.random.default_rng(seed)
    idx = r.integers(0, len(WORDS), n)
    return " ".join(WORDS[i] for i in idx).encode()


def lzma_block_input(seed=5):
    """61,440 bytes (one block) that lzma -9e codes smaller than the byte model: 4 KiB of noise repeated 15 times
    with a byte changed every 20 to 80 (lzma's repeat matches go on past a changed byte)."""
    import random

    r = random.Random(seed)
    base, out = r.randbytes(4096), bytearray()
    for _ in range(15):
        copy = bytearray(base)
        for j in range(0, len(copy), r.choice([20, 40, 80])):
            copy[j] = r.randrange(256)
        out += copy
    return bytes(out)
