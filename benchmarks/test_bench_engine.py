"""Per-token speed of the C engine (static and dynamic step) next to a numpy float32 step, on one core.

Model V = 16,384, D = 128, H = 256, C = 128 classes of 128 ids, random weights (reference.init_params,
float32), seg_len = 20.  The text is drawn from a vocabulary of 16,382 distinct lowercase pseudo-words
(ids 2..16383, frequency-ranked, so class 0 holds the most frequent words as a trained vocabulary would)
with a Zipf(1.1) distribution, single spaces, a newline every ~12 words, some Capitalised / UPPER words:
every token is in the vocabulary (checked: no ``<unk>``).

* C: ``Codec(model, adapt).encode_block(text)`` (lex, class/word softmax, quantise, range-code, case/gap,
  advance; in dynamic mode backward + update every 20 tokens), ``benchmark.pedantic(rounds=3,
  iterations=1, warmup_rounds=1)``, the codec reset before every round (untimed).
* numpy: the same per-token step in float32 with B = 1 (hidden update, class logits, word logits of the
  token's class, case/gap heads, a softmax each, ideal code length instead of the range coder); the
  dynamic variant adds ``reference.forward_backward`` over each 20-token segment and an RMS-scaled SGD
  step on the touched parameters (dense tensors and the touched rows of E, Wo, bo, Bc, Bg).  Fewer tokens.

tokens/s in ``extra_info`` is tokens (lexer tokens, END included) over the median wall time of the timed
rounds; ``tokens_per_s_cpu`` uses the median process CPU time of the same rounds (CPU > wall would mean
more than one thread).  The summary table (C static, C dynamic, numpy static, numpy dynamic, C/numpy) is
printed after the run and written to benchmarks/results/engine.json.

Run (one BLAS thread, so numpy is measured on one core too):
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m pytest benchmarks/test_bench_engine.py
"""
import json
import os
import statistics
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")   # effective only if numpy is not imported yet; the command sets it too

import numpy as np
import pytest

from nlmcodec import reference as ref
from nlmcodec._core import MAX_MODEL_TOKENS, Codec, lex_tokens
from nlmcodec._model import Model

V, D, H, C, SEG = 16384, 128, 256, 128, 20
LR, DECAY, EPS = 1e-3, 2e-3, 1e-5
# C runs: the whole text as one block, so at most MAX_MODEL_TOKENS tokens (END included; format 7, §3.5)
N_TOKENS_C = min(int(os.environ.get("NLM_ENGINE_TOKENS", MAX_MODEL_TOKENS)), MAX_MODEL_TOKENS)
N_TOKENS_NP = {"static": 8000, "dynamic": 3000}                      # numpy runs: a prefix
TARGET = {"static": 40000, "dynamic": 10000}                         # tokens/s (C engine)
ROUNDS, WARMUP = 3, 1
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = {}

pytestmark = pytest.mark.benchmark(group="engine-step")


# ---------------------------------------------------------------- model and text

def _pseudo_words(n, rng):
    """n distinct lowercase words, 2..10 letters; shorter words get the frequent ranks."""
    letters = np.frombuffer(b"etaoinshrdlcumwfgypbvkjxqz", dtype=np.uint8)
    p = np.linspace(2.0, 0.3, 26)
    p /= p.sum()
    seen, words = set(), []
    while len(words) < n:
        k = int(min(10, max(2, rng.poisson(5))))
        wd = bytes(rng.choice(letters, k, p=p))
        if wd not in seen:
            seen.add(wd)
            words.append(wd)
    words.sort(key=len)
    return words


def _build(seed=0):
    rng = np.random.default_rng(seed)
    vocab = [b"", b""] + _pseudo_words(V - 2, rng)
    cs = np.arange(0, V + 1, V // C, dtype=np.int32)
    # stored as float16, like the shipped models (the static engine then reads Wo as binary16)
    params = ref.init_params(V, D, H, C, rng, dtype=np.float32).astype(np.float16).astype(np.float32)
    model = Model({"V": V, "D": D, "H": H, "C": C, "seg_len": SEG, "lr": LR, "decay": DECAY, "eps": EPS},
                  params, np.full(14, 0.05, np.float32), vocab, cs, b"", name="bench-engine",
                  param_dtype="float16")
    # Zipf(1.1) over ranks 0..V-3 -> ids 2..V-1 (inverse CDF)
    n = N_TOKENS_C - 1                                   # + the END token
    cdf = np.cumsum(1.0 / np.arange(1, V - 1, dtype=np.float64) ** 1.1)
    w = 2 + np.searchsorted(cdf, rng.random(n) * cdf[-1]).astype(np.int64)
    case = np.zeros(n, np.int64)
    gap = np.ones(n, np.int64)                           # " "
    gap[0] = 0
    nl = rng.random(n) < 1 / 12
    gap[nl] = 3                                          # "\n"
    gap[nl & (rng.random(n) < 0.2)] = 4                  # "\n\n"
    r = rng.random(n)
    case[(r < 0.06) | nl] = 1                            # Capitalised (and after every line break)
    case[r > 0.99] = 2                                   # UPPER
    parts = []
    for wi, k, g in zip(w, case, gap):
        body = vocab[wi]
        if k == 1:
            body = body[:1].upper() + body[1:]
        elif k == 2:
            body = body.upper()
        parts.append((b"", b" ", b"  ", b"\n", b"\n\n")[g] + body)
    text = b"".join(parts) + b"\n"
    toks = lex_tokens(text)
    assert len(toks) == n + 1
    assert np.array_equal(toks["case"][:-1], case) and np.array_equal(toks["gap"][:-1], gap)
    assert np.all(toks["kind"][:-1] == 1)
    return model, text, {"w": w, "case": case, "gap": gap, "case_coded": np.ones(n, bool)}


@pytest.fixture(scope="module")
def engine():
    return _build()


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    yield
    if RESULTS:
        request.config.pluginmanager.register(_Summary(), "nlm-engine-summary")


# ---------------------------------------------------------------- timing helpers

class _Timed:
    """Wraps a target; records (wall, process CPU) of every call."""

    def __init__(self, fn):
        self.fn, self.wall, self.cpu = fn, [], []

    def __call__(self, *a):
        c0, w0 = time.process_time(), time.perf_counter()
        out = self.fn(*a)
        w1, c1 = time.perf_counter(), time.process_time()
        self.wall.append(w1 - w0)
        self.cpu.append(c1 - c0)
        return out


def _cpu(fn):
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def _record(benchmark, key, impl, mode, tokens, timed, **extra):
    wall, cpu = timed.wall[-ROUNDS:], timed.cpu[-ROUNDS:]   # the timed rounds (after the warm-up)
    mw, mc = statistics.median(wall), statistics.median(cpu)
    info = dict(impl=impl, mode=mode, tokens=tokens, rounds=len(wall), wall_s=wall, cpu_s=cpu,
                median_wall_s=mw, median_cpu_s=mc, tokens_per_s=tokens / mw, tokens_per_s_cpu=tokens / mc,
                V=V, D=D, H=H, C=C, seg_len=SEG, **extra)
    benchmark.extra_info.update(info)
    RESULTS[key] = info
    return info


# ---------------------------------------------------------------- C engine

@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_engine_c(benchmark, engine, mode):
    model, text, _ = engine
    codec = Codec(model, adapt=(mode == "dynamic"))
    ntok = len(lex_tokens(text))

    def setup():
        codec.reset()
        return (text,), {}

    timed = _Timed(codec.encode_block)
    payload = benchmark.pedantic(timed, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP)
    st = codec.stats()
    assert st["unk_tokens"] == 0
    codec.reset()
    assert codec.encode_block(text) == payload              # deterministic after reset
    # round trip on a prefix (decoding the whole text would double the run time)
    pre = text[:text.index(b" ", 20000)]
    codec.reset()
    enc = codec.encode_block(pre)
    codec.reset()
    assert codec.decode_block(enc, len(pre)) == pre
    lex_s = statistics.median(_cpu(lambda: lex_tokens(text)) for _ in range(3))   # part of encode_block
    info = _record(benchmark, f"C {mode}", "C", mode, ntok, timed, in_bytes=len(text), out_bytes=len(payload),
                   bits_per_token=8 * len(payload) / ntok, target_tokens_per_s=TARGET[mode], lex_cpu_s=lex_s)
    info["meets_target"] = info["tokens_per_s"] >= TARGET[mode]
    benchmark.extra_info["meets_target"] = info["meets_target"]


# ---------------------------------------------------------------- numpy float32 step

def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


class NumpyStep:
    """The per-token step in numpy float32, B = 1.  Dynamic: reference backward + SGD every SEG tokens."""

    def __init__(self, model, adapt):
        self.p0 = model.params.astype(np.float32)
        self.params = self.p0.copy()
        self.m = ref.Model(V, D, H, C, model.class_start)
        self.T = self.m.split(self.params)                  # views into self.params
        self.cs = self.m.class_start
        self.cls = self.m.cls
        self.adapt = adapt
        self.grad = np.empty_like(self.params)
        self.G = self.m.split(self.grad)
        self.step = (np.float32(LR) / (model.ms + np.float32(EPS))).astype(np.float32)
        self.clip = np.float32(16 * LR)

    def reset(self):
        self.params[...] = self.p0

    def run(self, w, case, gap, cc):
        E, Ecase, Egap, Wx, Wh, bh, Wc, bc, Wo, bo, Uc, Bc, Ug, Bg = self.T
        cls, cs = self.cls, self.cs
        h = np.zeros(H, np.float32)
        h_seg = h
        bits = 0.0
        n = len(w)
        for t in range(n):
            wt, k, g = int(w[t]), int(case[t]), int(gap[t])
            c = int(cls[wt])
            a, b = cs[c], cs[c + 1]
            pc = _softmax(Wc @ h + bc)
            pw = _softmax(Wo[a:b] @ h + bo[a:b])
            pk = _softmax((Uc @ h + Bc[wt])[:3])
            pg = _softmax(Ug @ h + Bg[wt])
            bits -= np.log2(pc[c] * pw[wt - a] * pk[min(k, 2)] * pg[g])
            x = E[wt] + Ecase[k]
            x += Egap[g]
            h = np.tanh(Wx @ x + Wh @ h + bh)
            if self.adapt and ((t + 1) % SEG == 0 or t == n - 1):
                s = slice(t + 1 - ((t % SEG) + 1), t + 1)
                self._update(h_seg, w[s], case[s], gap[s], cc[s])
                h_seg = h
        return bits

    def _update(self, h0, w, case, gap, cc):
        ref.forward_backward(self.m, self.params, w, case, gap, cc, h0=h0[None], grad_out=self.grad)
        rows = np.unique(w)
        crow = np.concatenate([np.arange(self.cs[c], self.cs[c + 1]) for c in np.unique(self.cls[rows])])
        for i, (p, g) in enumerate(zip(self.T, self.G)):
            name = ref.NAMES[i]
            if name in ("E", "Bc", "Bg"):
                p[rows] -= np.clip(self.step[i] * g[rows], -self.clip, self.clip)
            elif name in ("Wo", "bo"):
                p[crow] -= np.clip(self.step[i] * g[crow], -self.clip, self.clip)
            else:
                p -= np.clip(self.step[i] * g, -self.clip, self.clip)


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_engine_numpy(benchmark, engine, mode):
    model, _, toks = engine
    n = N_TOKENS_NP[mode]
    args = tuple(toks[k][:n] for k in ("w", "case", "gap", "case_coded"))
    step = NumpyStep(model, adapt=(mode == "dynamic"))

    def setup():
        step.reset()
        return args, {}

    timed = _Timed(step.run)
    bits = benchmark.pedantic(timed, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP)
    assert np.isfinite(bits) and bits > 0
    extra = {}
    if mode == "dynamic":
        # share of the reference backward spent zeroing its dense gradient buffers (E, Wo, bo, Bc, Bg:
        # V x 397 floats) on every segment, which a sparse implementation would not pay
        G = step.G
        fill = lambda: [G[i].fill(0) for i in (0, 1, 2, 8, 9, 11, 13)]
        extra["grad_zero_cpu_s_per_segment"] = statistics.median(_cpu(fill) for _ in range(5))
        extra["grad_zero_share"] = extra["grad_zero_cpu_s_per_segment"] * -(-n // SEG) / statistics.median(
            timed.cpu[-ROUNDS:])
    _record(benchmark, f"numpy {mode}", "numpy", mode, n, timed, bits_per_token=float(bits) / n, **extra)


# ---------------------------------------------------------------- summary table + JSON

class _Summary:
    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        rows = []
        for mode in ("static", "dynamic"):
            c, npy = RESULTS.get(f"C {mode}"), RESULTS.get(f"numpy {mode}")
            for r in (c, npy):
                if r:
                    rows.append(dict(name=f"{r['impl']} {mode}", impl=r["impl"], mode=mode, tokens=r["tokens"],
                                     tokens_per_s=r["tokens_per_s"], tokens_per_s_cpu=r["tokens_per_s_cpu"],
                                     median_wall_s=r["median_wall_s"], median_cpu_s=r["median_cpu_s"],
                                     target_tokens_per_s=r.get("target_tokens_per_s"),
                                     meets_target=r.get("meets_target")))
        ratio = {}
        for mode in ("static", "dynamic"):
            c, npy = RESULTS.get(f"C {mode}"), RESULTS.get(f"numpy {mode}")
            if c and npy:
                ratio[mode] = {"wall": c["tokens_per_s"] / npy["tokens_per_s"],
                               "cpu": c["tokens_per_s_cpu"] / npy["tokens_per_s_cpu"]}
        tr.section("engine step: tokens/s (median of timed rounds; same run)")
        tr.write_line(f"{'':<15} {'tokens':>7} {'tok/s wall':>11} {'tok/s CPU':>11} {'target':>7} "
                      f"{'C/numpy wall':>13} {'C/numpy CPU':>12}")
        for r in rows:
            rt = ratio.get(r["mode"]) if r["impl"] == "C" else None
            tgt = f"{r['target_tokens_per_s']:>7,}" if r["target_tokens_per_s"] else f"{'':>7}"
            ok = "" if r["meets_target"] is None else (" ok" if r["meets_target"] else " MISS")
            tr.write_line(f"{r['name']:<15} {r['tokens']:>7,} {r['tokens_per_s']:>11,.0f} "
                          f"{r['tokens_per_s_cpu']:>11,.0f} {tgt}"
                          + (f" {rt['wall']:>12.1f}x {rt['cpu']:>11.1f}x" if rt else f" {'':>13} {'':>12}") + ok)
        nd = RESULTS.get("numpy dynamic", {})
        if "grad_zero_share" in nd:
            tr.write_line(f"numpy dynamic: {100 * nd['grad_zero_share']:.0f}% of its CPU time is the reference "
                          f"backward zeroing its dense V-row gradient buffers "
                          f"({1e3 * nd['grad_zero_cpu_s_per_segment']:.2f} ms per segment)")
        out = {"config": {"V": V, "D": D, "H": H, "C": C, "seg_len": SEG, "words_per_class": V // C,
                          "zipf_s": 1.1, "numpy": np.__version__,
                          "blas_threads_env": os.environ.get("OPENBLAS_NUM_THREADS")},
               "load_avg": os.getloadavg(), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "rows": rows, "c_over_numpy": ratio, "details": RESULTS}
        os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
        path = os.path.join(HERE, "results", "engine.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
        tr.write_line(f"written {os.path.relpath(path)}  (load average {out['load_avg'][0]:.2f})")
