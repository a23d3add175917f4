"""Training throughput (tokens/s) of ``nlmcodec.train``: the real training loop, one core.

Each case runs ``nlmcodec.train.main(argv)`` itself -- tokenise, vocabulary, class map, word dropout,
``reference.forward_backward`` + clipping + Adam exactly as train.py runs them -- on a small real token stream:
the first documents of ``train/train-08.jsonl.xz`` of the shared corpus (never bench/ or ood/), copied to a
temporary ``.jsonl`` until they hold at least 40,000 distinct keys, so that V = 24,576 is not reduced
(79 documents, about 2.2 M tokens).  Random init (``--seed 1``), no dev set, no checkpoint directory, ``--ms-segments 1``.

Timing: ``reference.forward_backward`` is wrapped (module attribute; train.py calls ``R.forward_backward``)
to stamp wall and process-CPU time at the start of every training call (the ones with ``grad_out``).  The
interval between two consecutive stamps is one whole training step (forward/backward, clip, Adam, loop
bookkeeping).  The first WARMUP steps are dropped; tokens/s = B*T*n / (sum of the next n intervals), also the
median-interval figure and the CPU-time figure.  The pytest-benchmark table's time is the whole ``main()`` call
(tokenisation, vocabulary, steps, export) -- the throughput is in ``extra_info`` and printed after the run.

Configs:
* ``default``: the default model as runs/default/README.txt trains it: V=24576 D=128 H=256 C=192, batch 128,
  bptt 32, Adam lr 2e-3.
* ``cli-defaults``: train.py's own CLI defaults, for comparison: V=16384 D=128 H=256 C=128, batch 64, bptt 32.

Run (one BLAS thread; about 40 s):
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m pytest benchmarks/test_bench_train.py
Environment: NLM_TRAIN_BENCH_WARMUP (default 3), NLM_TRAIN_BENCH_STEPS (timed steps, default 40).
"""
import json
import os
import statistics
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")   # effective only if numpy is not imported yet; the command sets it too

import numpy as np
import pytest

from nlmcodec import reference as R
from nlmcodec import train as T
from nlmcodec._bench import corpus_dir
from nlmcodec._corpus import END_KEY, _doc_keys, iter_documents

TRAIN_FILE = os.path.join(corpus_dir() or "../shared/corpus", "train", "train-08.jsonl.xz")
MIN_KEYS = 40_000
WARMUP = int(os.environ.get("NLM_TRAIN_BENCH_WARMUP", 3))
STEPS = int(os.environ.get("NLM_TRAIN_BENCH_STEPS", 40))

CONFIGS = {
    "default": dict(V=24576, D=128, H=256, C=192, B=128, T=32, lr=2e-3),
    "cli-defaults": dict(V=16384, D=128, H=256, C=128, B=64, T=32, lr=3e-3),
}
RESULTS = {}

pytestmark = pytest.mark.benchmark(group="train-step")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first documents of train-08 as a .jsonl, until >= MIN_KEYS distinct non-verbatim keys."""
    if not os.path.isfile(TRAIN_FILE):
        pytest.skip(f"{TRAIN_FILE} not found")
    path = tmp_path_factory.mktemp("train_bench") / "train-prefix.jsonl"
    keys, n_tok, n_docs, n_bytes = set(), 0, 0, 0
    with open(path, "w", encoding="utf-8") as f:
        for doc in iter_documents([TRAIN_FILE]):
            k, c, _, _ = _doc_keys(doc, None)
            keys.update(x for x, cc in zip(k, c.tolist()) if cc != 3 and x != END_KEY)
            f.write(json.dumps({"text": doc.decode("utf-8")}) + "\n")
            n_tok += len(k); n_docs += 1; n_bytes += len(doc)
            if len(keys) >= MIN_KEYS:
                break
    return dict(path=str(path), tokens=n_tok, docs=n_docs, bytes=n_bytes, keys=len(keys))


class _StepClock:
    """Replaces reference.forward_backward; stamps (wall, CPU) at the start of every training call."""

    def __init__(self, fn):
        self.fn, self.wall, self.cpu = fn, [], []

    def __call__(self, *a, **kw):
        if kw.get("grad_out") is not None:                 # train(): the step call; evaluate/compute_ms: not
            self.wall.append(time.perf_counter())
            self.cpu.append(time.process_time())
        return self.fn(*a, **kw)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_train_throughput(benchmark, corpus, tmp_path, monkeypatch, name):
    cfg = CONFIGS[name]
    bt = cfg["B"] * cfg["T"]
    n_steps = WARMUP + STEPS + 1                            # STEPS intervals after the warm-up
    argv = [corpus["path"], "-o", str(tmp_path / f"{name}.nlmm"),
            "--vocab", str(cfg["V"]), "--dim", str(cfg["D"]), "--hidden", str(cfg["H"]),
            "--classes", str(cfg["C"]), "--batch", str(cfg["B"]), "--bptt", str(cfg["T"]),
            "--lr", str(cfg["lr"]), "--tokens", str(100 * n_steps * bt), "--seed", "1",
            "--max-steps-for-test", str(n_steps), "--ms-segments", "1", "--quiet", "--name", f"bench-{name}"]
    clock = _StepClock(R.forward_backward)
    monkeypatch.setattr(R, "forward_backward", clock)

    def run():
        clock.wall.clear(); clock.cpu.clear()
        assert T.main(argv) == 0

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    assert len(clock.wall) == n_steps, "train() did not run the expected number of steps"
    dw = np.diff(clock.wall)[WARMUP:]
    dc = np.diff(clock.cpu)[WARMUP:]
    info = dict(config=name, **cfg, tokens_per_step=bt, warmup_steps=WARMUP, timed_steps=len(dw),
                step_wall_s=dw.tolist(), step_cpu_s=dc.tolist(),
                tokens_per_s=bt * len(dw) / float(dw.sum()),
                tokens_per_s_median=bt / float(statistics.median(dw)),
                tokens_per_s_cpu=bt * len(dc) / float(dc.sum()),
                params=R.param_count(cfg["V"], cfg["D"], cfg["H"], cfg["C"]),
                corpus_tokens=corpus["tokens"], corpus_docs=corpus["docs"], corpus_keys=corpus["keys"],
                load_avg=os.getloadavg(), blas_threads_env=os.environ.get("OPENBLAS_NUM_THREADS"))
    benchmark.extra_info.update(info)
    RESULTS[name] = info
    print(f"\n{name}: {info['tokens_per_s']:,.0f} tokens/s wall ({info['tokens_per_s_median']:,.0f} median step, "
          f"{info['tokens_per_s_cpu']:,.0f} CPU), load {info['load_avg'][0]:.2f}")


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    yield
    if RESULTS:
        request.config.pluginmanager.register(_Summary(), "nlm-train-summary")


class _Summary:
    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.section("training throughput: tokens/s (train.main, after the warm-up steps; same run)")
        tr.write_line(f"{'config':<13} {'V':>6} {'D':>4} {'H':>4} {'C':>4} {'B':>4} {'T':>3} {'params':>11} "
                      f"{'steps':>5} {'ms/step':>8} {'tok/s wall':>11} {'tok/s med':>10} {'tok/s CPU':>10}")
        for r in RESULTS.values():
            tr.write_line(f"{r['config']:<13} {r['V']:>6} {r['D']:>4} {r['H']:>4} {r['C']:>4} {r['B']:>4} "
                          f"{r['T']:>3} {r['params']:>11,} {r['timed_steps']:>5} "
                          f"{1e3 * r['tokens_per_step'] / r['tokens_per_s']:>8.1f} {r['tokens_per_s']:>11,.0f} "
                          f"{r['tokens_per_s_median']:>10,.0f} {r['tokens_per_s_cpu']:>10,.0f}")
        r0 = next(iter(RESULTS.values()))
        tr.write_line(f"corpus: first {r0['corpus_docs']} documents of train-08, {r0['corpus_tokens']:,} tokens, "
                      f"{r0['corpus_keys']:,} keys; OPENBLAS_NUM_THREADS={r0['blas_threads_env']}; "
                      f"load average now {os.getloadavg()[0]:.2f}")
