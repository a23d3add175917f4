"""Kernel bit-identity and accuracy (csrc/kernels): the dispatching -O2 build (its best path: AVX-512 here,
and every lower path forced: AVX2, SSE2, scalar) must give the bits of the -O0 -DNLM_NO_SIMD scalar build;
kern_exp within 2 ulp of exp, kern_tanh close to tanh; the quantiser and glue kernels equal their
definitions."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "c"))
import cbuild  # noqa: E402

pytestmark = [pytest.mark.skipif(not cbuild.have_gcc(), reason="gcc not available"),
              pytest.mark.xdist_group("kernels")]   # one worker builds the module's C programs, once


@pytest.fixture(scope="module")
def exes(tmp_path_factory):
    d = tmp_path_factory.mktemp("kern")
    return cbuild.build_all("kern_harness.c", cbuild.KERNELS, d, ("simd", "ref", "scalar_o2"))


def run(exe, op, payload: bytes, tmp: pathlib.Path, cap=None) -> bytes:
    fin, fout = tmp / f"{op}.in", tmp / f"{op}.{exe.name}.{cap}.out"
    fin.write_bytes(payload)
    cmd = [str(exe), op, str(fin), str(fout)] + ([str(cap)] if cap is not None else [])
    subprocess.run(cmd, check=True, capture_output=True)
    return fout.read_bytes()


CAPS = (None, 3, 2, 1, 0)   # the best path, then each level forced (3 AVX-512, 2 AVX2, 1 SSE2, 0 scalar)


def all_paths_equal(exes, op, payload, tmp):
    """The scalar reference's output, after checking that every path of the SIMD build and the scalar -O2
    build give the same bytes."""
    ref = run(exes["ref"], op, payload, tmp)
    assert run(exes["scalar_o2"], op, payload, tmp) == ref
    for cap in CAPS:
        assert run(exes["simd"], op, payload, tmp, cap=cap) == ref, f"simd cap {cap} differs"
    return ref


def test_best_path_is_used(exes, tmp_path):
    """On a CPU with AVX-512F the dispatcher picks level 3 (so the tests above exercise it); caps lower it."""
    x = np.arange(16, dtype=np.float32)
    fin = tmp_path / "m.in"
    fin.write_bytes(np.array([16], np.int32).tobytes() + x.tobytes())
    def level(cap, env=None):
        cmd = [str(exes["simd"]), "math", str(fin), str(tmp_path / "m.out")] + ([str(cap)] if cap is not None else [])
        p = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        return int(p.stderr.split("simd_level=")[1])
    flags = pathlib.Path("/proc/cpuinfo").read_text() if pathlib.Path("/proc/cpuinfo").exists() else ""
    best = 3 if " avx512f" in flags else 2 if " avx2" in flags else 1
    assert level(None) == best
    for cap in range(best + 1):
        assert level(cap) == cap
    import os
    assert level(None, env={**os.environ, "NLMCODEC_SIMD_CAP": "1"}) == 1


def special_floats(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    pick = rng.integers(0, 10, n)
    x[pick == 0] = 0.0
    x[pick == 1] = -0.0
    x[pick == 2] *= np.float32(1e17)          # huge, products stay finite
    x[pick == 3] *= np.float32(1e-20)         # tiny: products underflow / subnormal
    x[pick == 4] = (rng.standard_normal((pick == 4).sum()) * 1e-39).astype(np.float32)  # subnormal inputs
    return x


@pytest.mark.parametrize("rows,cols", [(3, 16), (4, 32), (7, 48), (64, 64), (129, 256), (5, 128)])
def test_linear_kernels_bit_identical(exes, tmp_path, rows, cols):
    rng = np.random.default_rng(rows * 1000 + cols)
    W = special_floats(rng, rows * cols)
    x = special_floats(rng, cols)
    # d: the Wᵀd / outer-product vector; d[0], d[1], d[2] double as axpy/step, decay and q (rows >= 3)
    d = rng.uniform(0.001, 1.0, rows).astype(np.float32)
    d[3::2] *= -1
    y0 = special_floats(rng, cols)
    payload = np.array([rows, cols], np.int32).tobytes() + W.tobytes() + x.tobytes() + d.tobytes() \
        + y0.tobytes()
    ref = all_paths_equal(exes, "lin", payload, tmp_path)
    # the scalar reference itself: matvec == dot per row, and both equal the canonical order in numpy
    out = np.frombuffer(ref, np.float32)
    mv, dots = out[:rows], out[rows:2 * rows]
    assert mv.tobytes() == dots.tobytes()
    # the update kernels reading θ0 as binary16 give the bits of the float32 kernels on the converted θ0
    assert len(out) == 2 * rows + 5 * cols + 3 * rows * cols + 4 * cols
    h_sgd, f_sgd, h_dsgd, f_dsgd = out[-4 * cols:].reshape(4, cols)
    assert h_sgd.tobytes() == f_sgd.tobytes() and h_dsgd.tobytes() == f_dsgd.tobytes()
    assert h_sgd.tobytes() != y0.tobytes()
    canon = np.empty(rows, np.float32)
    with np.errstate(all="ignore"):
        for r in range(rows):
            acc = np.zeros(16, np.float32)
            for i in range(0, cols, 16):
                acc = acc + W[r * cols + i:r * cols + i + 16] * x[i:i + 16]
            for s in (8, 4, 2, 1):
                acc[:s] = acc[:s] + acc[s:2 * s]
            canon[r] = acc[0]
    assert canon.tobytes() == mv.tobytes()
    # the fused / batched forms equal their unfused definitions
    K, R = cols, rows
    o = 2 * R + K + R * K + 3 * K
    th = out[o - K:o].copy()   # decay_toward result, then the step
    f32 = np.float32
    g0 = W[:K]
    step, decay = d[0], d[1]
    lim = f32(0.25)  # the harness clips each step at ±0.25
    sg = np.maximum(np.minimum((step * g0).astype(f32), lim), -lim)
    assert (np.abs(step * g0) > lim).any()  # the clip is exercised
    want = (th - sg) + decay * (x - th)
    assert want.astype(f32).tobytes() == out[o:o + K].tobytes()
    G = W.reshape(R, K).copy()
    dd, xx = (d, W[:R], d), (x, y0, W[:K])
    for z, start in enumerate(out[o + K:o + K + 2 * R * K].reshape(2, R, K)):
        acc = G.copy() if z == 0 else np.zeros_like(G)
        with np.errstate(all="ignore"):
            for di, xi in zip(dd, xx):
                acc = acc + np.outer(di, xi).astype(f32)
        assert acc.tobytes() == start.tobytes()


def math_inputs():
    rng = np.random.default_rng(7)
    parts = [
        np.array([0.0, -0.0, 1.0, -1.0, 88.0, -87.0, 88.5, -87.5, 100.0, -100.0, 1e30, -1e30, 9.0, -9.0,
                  9.5, 20.0, 1e-30, -1e-30, 1e-40, -1e-40, 0.5, -0.5, 0.34657359, 44.0], np.float32),
        rng.uniform(-87, 88, 200_000).astype(np.float32),
        rng.uniform(-10, 10, 50_000).astype(np.float32),
        (rng.standard_normal(20_000) * 1e-3).astype(np.float32),
        np.linspace(-87, 88, 30_001, dtype=np.float32),
    ]
    return np.concatenate(parts)


def test_math_nan_inf_bit_identical(exes, tmp_path):
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 3.0, np.nan, 1.0, -2.0, np.inf], np.float32)
    payload = np.array([len(x)], np.int32).tobytes() + x.tobytes()
    ref = all_paths_equal(exes, "math", payload, tmp_path)
    out = np.frombuffer(ref, np.float32).reshape(4, len(x))
    assert np.all(np.isfinite(out))   # NaN -> exp(88), tanh(±9): the quantiser never sees a NaN


def test_math_bit_identical_and_accurate(exes, tmp_path):
    x = math_inputs()
    n = len(x)
    payload = np.array([n], np.int32).tobytes() + x.tobytes()
    ref = all_paths_equal(exes, "math", payload, tmp_path)
    out = np.frombuffer(ref, np.float32).reshape(4, n)
    assert out[0].tobytes() == out[1].tobytes()   # vector == scalar form
    assert out[2].tobytes() == out[3].tobytes()
    e = out[0].astype(np.float64)
    xc = np.clip(x.astype(np.float64), -87.0, 88.0)
    exact = np.exp(xc)
    ulp = np.spacing(exact.astype(np.float32)).astype(np.float64)
    err = np.abs(e - exact) / ulp
    assert err.max() <= 2.0, f"exp max error {err.max():.3f} ulp at x={x[err.argmax()]}"
    assert np.all(np.isfinite(e)) and np.all(e >= np.float32(1e-38))
    t = out[2].astype(np.float64)
    exact_t = np.tanh(x.astype(np.float64))
    assert np.max(np.abs(t - exact_t)) < 2e-7
    assert np.all(np.abs(t) <= 1.0)
    assert np.signbit(out[2][1]) and not np.signbit(out[2][0])   # tanh(-0) = -0, tanh(+0) = +0


def kern_log_reference(x):
    """kern_log as kern.h and docs/format.md §2.5 define it, one float32 operation at a time (numpy)."""
    f = np.float32
    x = np.asarray(x, np.float32)
    out = np.full(x.shape, f(-104.0), np.float32)
    ok = x >= f(1.17549435e-38)
    xs = np.minimum(x[ok], f(3.40282347e+38))
    b = xs.view(np.uint32)
    e = (b >> 23).astype(np.int32) - 127
    m = ((b & np.uint32(0x007FFFFF)) | np.uint32(0x3F800000)).view(np.float32)
    big = m > f(1.41421354)
    m = np.where(big, m * f(0.5), m).astype(np.float32)
    e = np.where(big, e + 1, e)
    s = ((m - f(1)) / (m + f(1))).astype(np.float32)
    s2 = s * s
    p = np.full(s.shape, f(0.222222222), np.float32)
    for c in (0.285714287, 0.400000006, 0.666666687, 2.0):
        p = p * s2
        p = p + f(c)
    p = p * s
    fe = e.astype(np.float32)
    out[ok] = (p + fe * f(-2.12194440e-4)) + fe * f(0.693359375)
    return out


def test_log_bit_identical_accurate_and_as_specified(exes, tmp_path):
    """kern_log (the Kneser-Ney mixture's log, docs/format.md §2.5): the same bits in every build, the bits of
    the specification's step-by-step float32 formula, within 3e-7 of ln x; NaN, zero, negatives and
    subnormals give -104, +inf is read as the largest float."""
    rng = np.random.default_rng(5)
    x = np.concatenate([np.exp(rng.uniform(-87, 88, 60_000)).astype(np.float32),
                        rng.uniform(0.5, 2.0, 20_000).astype(np.float32),
                        np.array([1.0, 2.0, 0.5, 1.41421354, 1.41421366, 1e-38, 1.17549435e-38, 3.4e38, 3.40282347e38,
                                  np.inf, 0.0, -0.0, -1.0, np.nan, 1e-45], np.float32)])
    payload = np.array([len(x)], np.int32).tobytes() + x.tobytes()
    ref = all_paths_equal(exes, "log", payload, tmp_path)
    out = np.frombuffer(ref, np.float32)
    assert out.tobytes() == kern_log_reference(x).tobytes()
    fin = np.isfinite(x) & (x >= np.float32(1.17549435e-38))
    exact = np.log(x[fin].astype(np.float64))
    err = np.abs(out[fin] - exact) / np.maximum(1.0, np.abs(exact))
    assert err.max() < 3e-7, f"max error {err.max():.3g} at x={x[fin][err.argmax()]}"
    assert out[np.flatnonzero(x == 1.0)[0]] == 0.0
    assert np.all(out[(x <= 0) | np.isnan(x) | (x < np.float32(1.17549435e-38))] == np.float32(-104.0))
    fmax = np.float32(np.finfo(np.float32).max)
    assert out[np.flatnonzero(np.isinf(x))[0]] == out[np.flatnonzero(x == fmax)[0]]


def glue_inputs(kind, n, seed):
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal(n) * 4).astype(np.float32)   # logits
    if kind == "special":
        pick = rng.integers(0, 12, n)
        z[pick == 0] = 0.0
        z[pick == 1] = -0.0
        z[pick == 2] = np.nan
        z[pick == 3] = -np.inf
        z[pick == 4] = -200.0                              # exp clamps at -87
    elif kind == "nonfinite":
        z[n // 3] = np.inf                                 # the max is not finite: the scalar fallback
        z[0] = np.nan
    elif kind == "zeros":
        z[:] = 0.0
        z[::3] = -0.0                                      # a zero maximum of either sign
    return z


@pytest.mark.parametrize("kind", ["plain", "special", "nonfinite", "zeros"])
@pytest.mark.parametrize("n", [4, 8, 19, 192, 1000, 70_000])
def test_quantiser_and_glue_kernels_bit_identical(exes, tmp_path, kind, n):
    z = glue_inputs(kind, n, n * 7 + len(kind))
    payload = np.array([n], np.int32).tobytes() + z.tobytes()
    out = all_paths_equal(exes, "glue", payload, tmp_path)
    f32 = np.float32
    m = np.frombuffer(out[:4], f32)[0]
    S = int(np.frombuffer(out[4:12], np.uint64)[0])
    e = np.frombuffer(out[12:12 + 4 * n], f32)
    o = 12 + 4 * n
    freqs = np.frombuffer(out[o:o + 4 * (n + 1)], np.uint32)
    o += 4 * (n + 1)
    sx, se, add, add3, upd = np.frombuffer(out[o:o + 20 * n], f32).reshape(5, n)
    dh, gb, pp = np.split(np.frombuffer(out[o + 20 * n:], f32), [80, 80 + 2 * n])
    assert dh[:40].tobytes() == dh[40:].tobytes()       # fused head == its three steps
    assert gb[:n].tobytes() == gb[n:].tobytes() and pp[:n].tobytes() == pp[n:].tobytes()
    # the definitions, in numpy
    finite = z[~np.isnan(z)]
    if np.isfinite(m):
        assert m == finite.max()
    u = np.where(e >= 1, 2.0 ** 40, np.floor(e.astype(np.float64) * 2.0 ** 40)).astype(np.uint64)
    assert S == int(u.sum(dtype=np.uint64))
    assert freqs[0] == freqs[1:].sum() and freqs[1:].min() >= 1 and freqs[0] <= 1 << 30
    # quant_freqs (docs/format.md §4) in Python integers, from the kernel's e_i
    if S >= 1 << 39:
        M = ((1 << 30) - n << 64) // S
        want_f = [1 + ((int(v) * M) >> 64) for v in u]
        assert freqs[1:].tolist() == want_f
    else:
        assert freqs[1:].tolist() == [1] * n
    with np.errstate(all="ignore"):
        assert add.tobytes() == (z + z[::-1]).tobytes()
        assert add3.tobytes() == ((z + z[::-1]) + z).tobytes()
        if np.isfinite(z).all() and kind != "nonfinite":
            assert sx.tobytes() == se.tobytes()   # from logits == from the quantiser's exps
            Ssum = f32(0)
            for v in e:
                Ssum = f32(Ssum + v)
            want = (e / Ssum).astype(f32)
            want[n // 2] = f32(want[n // 2] - f32(1))
            assert want.tobytes() == se.tobytes()
        th, th0 = z[::-1].copy(), z
        for k, i in enumerate(range(0, n, 2)):   # row i, gradient g[k] = z[k]
            q = min(max(z[i], f32(-1)), f32(1))
            t = th[i]
            if q >= 0:
                t = f32(th0[i] + f32(f32(t - th0[i]) * q))
            s_ = f32(f32(0.5) * z[k])
            s_ = s_ if s_ < f32(0.25) else f32(0.25)
            s_ = s_ if s_ > f32(-0.25) else f32(-0.25)
            th[i] = f32(f32(t - s_) + f32(f32(0.01) * f32(th0[i] - t)))
        assert th.tobytes() == upd.tobytes()


def mix_cases(rng, n):
    """Cases of the byte model's integer mixer kernels inside their contract (kern.h): extremes first."""
    N = 16
    cases = []
    for i in range(n):
        shift = int(rng.integers(1, 40)) if i % 4 else 18
        lim = int(rng.integers(1, 1 << 30)) if i % 3 else 1 << 24
        a = rng.integers(-lim, lim + 1, N)
        b = rng.integers(-lim, lim + 1, N)
        if i < 8:                                 # weights on the bounds, inputs at their largest
            a[:] = lim if i & 1 else -lim
            b[:] = -a
        xmax = 1 << 11 if i % 5 else 1 << 15
        x = rng.integers(-xmax + 1, xmax, N)
        emax = min((1 << (shift + 30)) // xmax, (1 << 31) - 1)
        ea, eb = (int(v) for v in rng.integers(-emax, emax + 1, 2))
        if i < 8:
            x[:] = (xmax - 1) * (1 if i & 2 else -1)
            ea, eb = emax * (1 if i & 4 else -1), -emax
        cases.append((a, b, x, ea, eb, shift, lim))
    return cases


def q8_definition(W, x):
    """kern_quant_row / kern_quant_act / kern_matvec_q8 as kern.h defines them, in numpy float32 (every step one
    IEEE operation; np.rint rounds half to even like the (t + 1.5·2^23) − 1.5·2^23 idiom)."""
    f32 = np.float32
    R, K = W.shape
    q = np.zeros((R, K), np.int8)
    rsum = np.zeros(R, np.int32)
    mul = np.zeros(R, f32)
    with np.errstate(all="ignore"):
        for r in range(R):
            a = np.abs(W[r])
            amax = f32(np.max(a[~np.isnan(a)], initial=0))
            if not (amax > 0 and amax <= np.finfo(f32).max):
                continue
            sc = f32(amax / f32(127))
            t = np.rint((W[r] / sc).astype(f32))
            t[np.isnan(t)] = 0
            q[r] = np.clip(t, -127, 127).astype(np.int8)
            rsum[r] = int(q[r].astype(np.int64).sum())
            mul[r] = f32(sc / f32(127))
        t = np.rint((x * f32(127)).astype(f32))
    t[np.isnan(t)] = 0
    h16 = np.clip(t, -127, 127).astype(np.int16)
    s = q.astype(np.int64) @ h16.astype(np.int64)
    y = (s.astype(np.int32).astype(f32) * mul).astype(f32)
    with np.errstate(all="ignore"):
        x5 = (x * f32(5)).astype(f32)
        a = np.abs(x5)
        xs = f32(np.max(a[~np.isnan(a)], initial=0))
        t = np.rint((x5 * f32(f32(127) / xs)).astype(f32)) if xs > 0 else np.zeros_like(x5)
    t[np.isnan(t)] = 0
    g16 = np.clip(t, -127, 127).astype(np.int16)
    u8 = lambda v: (v.astype(np.int32) + 128).astype(np.uint8)  # noqa: E731
    return q, rsum, mul, h16, u8(h16), y, g16, u8(g16), np.array([xs], f32)


@pytest.mark.parametrize("rows,cols", [(1, 16), (3, 48), (5, 80), (7, 256), (64, 256), (3, 4096),
                                       (23, 256), (37, 128), (16, 128)])  # 16-row blocks of VNNI, then 4, then 1
def test_integer_forward_kernels_exact_on_every_path(exes, tmp_path, rows, cols):
    """The integer forward of static mode (docs/format.md §2.6; kern_q8.c): the rows and activations on their
    grids and the exact int32 products are the same bytes on every path (scalar, AVX2 vpmaddwd, AVX-512 VNNI
    vpdpbusd with its masked tail) and equal the definition in kern.h: round half to even, clamps, a zero or
    non-finite row all zeros; the input's own grid (kern_quant_vec, on 5·x: values beyond ±1, its NaN ignored by
    the maximum)."""
    rng = np.random.default_rng(rows * 7919 + cols)
    W = (rng.standard_normal((rows, cols)) * 0.1).astype(np.float32)
    W[0] *= 0.1
    W[0, :5] = [0.3, -0.3, 0.15, np.nan, 0.0]      # a tie (0.15 / (0.3/127) = 63.5) and a NaN
    if rows > 1:
        W[1] = 0.0                                                               # a zero row
    if rows > 2:
        W[2, 1] = np.inf                                                         # a non-finite row
    x = np.tanh(rng.standard_normal(cols) * 2).astype(np.float32)
    x[: 8] = [1.0, -1.0, 0.5 / 127, -1.5 / 127, -0.0, np.nan, 1.0001, -3.0]    # ties, the clamps, NaN
    payload = np.array([rows, cols], np.int32).tobytes() + W.tobytes() + x.tobytes()
    out = all_paths_equal(exes, "q8", payload, tmp_path)
    q, rsum, mul, h16, hu8, y, g16, gu8, xs = q8_definition(W, x)
    want = b"".join(a.tobytes() for a in (q, rsum, mul, h16, hu8, y, g16, gu8, xs))
    assert len(out) == len(want)
    assert out == want
    assert q[0, 2] == 64 and h16[2] == 0 and h16[3] == -2      # 63.5 -> 64, 0.5 -> 0, -1.5 -> -2 (half to even)
    assert (np.abs(y) > 0).sum() >= rows - 2
    assert xs[0] == 15.0 and g16[6] == 42 and g16[7] == -127   # max |5x| = 15 (x = -3); 5.0005 * 127/15 -> 42


def test_weigh_kernels_exact_on_every_path(exes, tmp_path):
    """kern_weigh_acc / kern_sum_u32 (the token cache's mixing, csrc/codec/tokcache.c): every path gives C's
    unsigned arithmetic, 1 + (x·R mod 2^64 >> 32) mod 2^32 and sums mod 2^32, for rates below and above 2^32 and
    counts up to 2^32 - 1, at lengths that leave every tail (n = 0..53)."""
    rng = np.random.default_rng(11)
    Rs = np.array([0, 1, (1 << 32) - 1, 1 << 32, 0x1234_5678_9ABC, (1 << 64) - 1,
                   int(rng.integers(0, 1 << 62)), 0x8000_0000], np.uint64)
    for n in (0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 53):
        x = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        x[: min(n, 3)] = [0xFFFF_FFFF, 0, 1][: min(n, 3)]
        y0 = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
        payload = np.array([n, len(Rs)], np.int32).tobytes() + Rs.tobytes() + x.tobytes() + y0.tobytes()
        out = all_paths_equal(exes, "weigh", payload, tmp_path)
        want = []
        with np.errstate(over="ignore"):
            for R in Rs:
                w = ((x.astype(np.uint64) * R) >> np.uint64(32)).astype(np.uint32)  # the product wraps mod 2^64
                want += [(np.uint32(1) + w).astype(np.uint32), (y0 + w).astype(np.uint32)]
            want.append(np.array([x[:k].sum(dtype=np.uint64) & 0xFFFF_FFFF for k in range(n + 1)], np.uint32))
        assert out == b"".join(a.tobytes() for a in want)


def test_mixer_kernels_exact_on_every_path(exes, tmp_path):
    """kern_mix2_dot / kern_mix2_train (the byte model's mixers): every path gives the integer definition."""
    cases = mix_cases(np.random.default_rng(9), 400)
    payload = np.array([len(cases)], np.int32).tobytes() + b"".join(
        np.concatenate([a, b, x, [ea, eb, sh, lim]]).astype(np.int32).tobytes() for a, b, x, ea, eb, sh, lim in cases)
    out = all_paths_equal(exes, "mix", payload, tmp_path)
    rec = 16 + 4 * 32
    assert len(out) == rec * len(cases)
    for i, (a, b, x, ea, eb, sh, lim) in enumerate(cases):
        d = np.frombuffer(out[i * rec:i * rec + 16], np.int64)
        w = np.frombuffer(out[i * rec + 16:(i + 1) * rec], np.int32)
        xs = [int(v) for v in x]
        assert int(d[0]) == sum(int(p) * q for p, q in zip(a, xs))
        assert int(d[1]) == sum(int(p) * q for p, q in zip(b, xs))
        clamp = lambda v: max(-lim, min(lim, v))   # noqa: E731
        want = [clamp(int(p) + ((q * ea) >> sh)) for p, q in zip(a, xs)] + \
               [clamp(int(p) + ((q * eb) >> sh)) for p, q in zip(b, xs)]   # Python's >> is floor division
        assert w.tolist() == want, i


GOLDEN_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import nlmcodec
import vectorset as VS
done = 0
for v in VS.ok_vectors(nlmcodec.FORMAT_VERSION):
    raw, frame = v.raw(), v.frame()
    if len(raw) > 32768:
        continue
    assert nlmcodec.decompress(frame) == raw, v.key
    if v.reencode and v.model_id:
        m = nlmcodec.load_model(v.model)
        assert nlmcodec.compress(raw, model=m, adapt=v.adapt, check=v.check) == frame, v.key
        done += 1
print(done)
"""


@pytest.mark.one_lane       # the C core's dispatch: both bindings compile the same sources with the same flags
@pytest.mark.parametrize("cap", [0, 1, 2, 3])   # (build_flags.py); the paths' results: the kernel tests above
def test_golden_vectors_under_every_simd_cap(cap):
    """The current format's ok golden vectors of up to 32 KiB decode, and the model-coded ones re-encode
    byte for byte, with the codec's SIMD level forced by NLMCODEC_SIMD_CAP (0 scalar .. 3 AVX-512; a level
    above the CPU's best is its best).  Longer vectors run the same shapes for longer; all of them decode at the
    default level in test_golden."""
    import os
    vec = pathlib.Path(__file__).resolve().parents[1] / "codec" / "vectors"
    env = {**os.environ, "NLMCODEC_SIMD_CAP": str(cap)}
    p = subprocess.run([sys.executable, "-c", GOLDEN_CHILD, str(vec)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert int(p.stdout.strip()) >= 3   # model-coded vectors were re-encoded, static, dynamic and heads
