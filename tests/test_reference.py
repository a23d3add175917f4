"""The numpy reference backward of every model type (float64), all 14 tensors: against central differences
and against complex-step derivatives (Im L(θ + i·h·e_k) / h, no cancellation, so exact to rounding)."""
import numpy as np
import pytest

from nlmcodec import reference as R

pytestmark = pytest.mark.one_lane   # no binding involved: the cffi lane skips it


def _setup(seed=0, V=11, D=16, H=16, C=3, B=2, T=5, arch="elman"):
    rng = np.random.default_rng(seed)
    cs = np.array([0, 2, 6, V])[: C + 1]
    m = R.Model(V, D, H, C, cs, arch=arch)
    p = R.init_params(V, D, H, C, rng, dtype=np.float64, arch=arch)
    p += rng.normal(0, 0.3, p.shape)          # non-zero biases, non-trivial everything
    w = rng.integers(0, V, (B, T))
    case = rng.integers(0, 4, (B, T))
    gap = rng.integers(0, 8, (B, T))
    cc = (case < 3) & (rng.random((B, T)) < 0.7)
    h0 = rng.uniform(-0.5, 0.5, (B, m.state_size))
    return m, p, w, case, gap, cc, h0, rng


def test_shapes_and_split_join():
    V, D, H, C = 10, 16, 32, 3
    n = R.param_count(V, D, H, C)
    flat = np.arange(n, dtype=np.float32)
    ts = R.split_params(flat, V, D, H, C)
    assert [t.shape for t in ts] == [s for _, s in R.shapes(V, D, H, C)]
    assert np.array_equal(R.join_params(ts), flat)
    assert [n for n, _ in R.shapes(V, D, H, C)] == list(R.NAMES)


@pytest.mark.parametrize("arch", sorted(R.ARCHS))
@pytest.mark.parametrize("use_mask", [False, True])
def test_gradient_finite_differences(use_mask, arch):
    m, p, w, case, gap, cc, h0, rng = _setup(arch=arch)
    mask = rng.random(w.shape) < 0.8 if use_mask else None
    loss, g, _ = R.forward_backward(m, p, w, case, gap, cc, h0, mask)
    f = lambda q: R.forward_backward(m, q, w, case, gap, cc, h0, mask, need_grad=False)[0]
    eps = 1e-6
    tensors = R.split_params(np.arange(p.size), m.V, m.D, m.H, m.C, arch)
    for name, t in zip(R.NAMES, tensors):
        idxs = t.reshape(-1)
        pick = rng.choice(idxs, size=min(12, idxs.size), replace=False)
        for i in pick:
            q = p.copy(); q[i] += eps
            lp = f(q)
            q[i] -= 2 * eps
            lm = f(q)
            num = (lp - lm) / (2 * eps)
            assert abs(num - g[i]) <= 1e-6 + 1e-5 * abs(num), (name, i, num, g[i])


@pytest.mark.parametrize("arch", sorted(R.ARCHS))
def test_gradient_complex_step(arch):
    m, p, w, case, gap, cc, h0, rng = _setup(arch=arch, seed=5)
    _, g, _ = R.forward_backward(m, p, w, case, gap, cc, h0)
    tensors = R.split_params(np.arange(p.size), m.V, m.D, m.H, m.C, arch)
    checked = 0
    for name, t in zip(R.NAMES, tensors):
        for i in rng.choice(t.reshape(-1), size=min(8, t.size), replace=False):
            q = p.astype(np.complex128)
            q[i] += 1e-30j
            num = R.forward_backward(m, q, w, case, gap, cc, h0.astype(np.complex128), need_grad=False)[0].imag / 1e-30
            assert abs(num - g[i]) <= 1e-12 + 1e-9 * abs(num), (name, i, num, g[i])
            checked += num != 0
    assert checked > 40


def test_lstm_state_and_forget_bias():
    """The LSTM carries [h, c]; a forget-gate bias of 3 keeps more of the cell than a bias of 1."""
    keep = {}
    for fb in (1.0, 3.0):
        rng = np.random.default_rng(7)
        m = R.Model(11, 16, 16, 3, np.array([0, 2, 6, 11]), arch="lstm")
        p = R.init_params(11, 16, 16, 3, rng, dtype=np.float64, arch="lstm", forget_bias=fb)
        h0 = np.concatenate([np.zeros((1, 16)), np.ones((1, 16))], axis=1)
        _, _, s1 = R.forward_backward(m, p, [[2] * 8], [[0] * 8], [[1] * 8], [[False] * 8], h0, need_grad=False)
        assert s1.shape == (1, 32)
        keep[fb] = s1[0, 16:].mean()
    assert keep[3.0] > keep[1.0] > 0


def test_elman_init_unchanged_by_model_types():
    """init_params(arch="elman") draws what it drew before model types existed (the default model's seed)."""
    rng = np.random.default_rng(3)
    p = R.init_params(11, 16, 16, 3, rng, dtype=np.float64)
    rng = np.random.default_rng(3)
    rng.uniform(-0.1, 0.1, (11, 16)), rng.uniform(-0.1, 0.1, (4, 16)), rng.uniform(-0.1, 0.1, (8, 16))
    a = np.sqrt(3.0 / 16)
    Wx = rng.uniform(-a, a, (16, 16))
    Wh = 0.9 * np.linalg.qr(rng.standard_normal((16, 16)))[0]
    t = R.split_params(p, 11, 16, 16, 3)
    assert np.array_equal(t[3], Wx) and np.array_equal(t[4], Wh)


def test_loss_is_sum_of_neg_log_probs():
    """Loss of one token equals the −ln of the four explicit probabilities (dense computation)."""
    m, p, w, case, gap, cc, h0, rng = _setup(B=1, T=1)
    E, Ecase, Egap, Wx, Wh, bh, Wc, bc, Wo, bo, Uc, Bc, Ug, Bg = m.split(p)
    h = h0[0]
    wid, k, gg = int(w[0, 0]), int(case[0, 0]), int(gap[0, 0])
    c = int(m.cls[wid])
    sm = lambda z: np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    pc = sm(Wc @ h + bc)[c]
    a, b = m.class_start[c], m.class_start[c + 1]
    pw = sm(Wo[a:b] @ h + bo[a:b])[wid - a]
    pk = sm((Uc @ h + Bc[wid])[:3])[min(k, 2)] if cc[0, 0] else 1.0
    pg = sm(Ug @ h + Bg[wid])[gg]
    expect = -np.log(pc) - np.log(pw) - np.log(pk) - np.log(pg)
    loss, _, h1 = R.forward_backward(m, p, w, case, gap, cc, h0)
    assert np.isclose(loss, expect, rtol=1e-12)
    x = E[wid] + Ecase[k] + Egap[gg]
    assert np.allclose(h1[0], np.tanh(Wx @ x + Wh @ h + bh))


def test_float32_matches_float64():
    m, p, w, case, gap, cc, h0, _ = _setup()
    l64, g64, h64 = R.forward_backward(m, p, w, case, gap, cc, h0)
    l32, g32, h32 = R.forward_backward(m, p.astype(np.float32), w, case, gap, cc, h0.astype(np.float32))
    assert g32.dtype == np.float32
    assert np.isclose(l32, l64, rtol=1e-5)
    assert np.allclose(g32, g64, atol=1e-4, rtol=1e-3)


def test_grad_out_buffer_reused():
    m, p, w, case, gap, cc, h0, _ = _setup()
    _, g1, _ = R.forward_backward(m, p, w, case, gap, cc, h0)
    buf = np.full_like(p, 7.0)                       # garbage must be overwritten / cleared
    _, g2, _ = R.forward_backward(m, p, w, case, gap, cc, h0, grad_out=buf)
    assert g2 is buf and np.array_equal(g1, g2)
    _, g3, _ = R.forward_backward(m, p, w[:, ::-1], case, gap, cc, h0, grad_out=buf)
    _, g4, _ = R.forward_backward(m, p, w[:, ::-1], case, gap, cc, h0)
    assert np.array_equal(g3, g4)
