"""Numpy reference of the model arithmetic of docs/format.md §2 (forward, loss, backward).

Batched over B independent streams of T tokens, dtype-generic (float32 for training, float64 for
gradient checks).  This is *not* the bit-exact codec arithmetic (that lives in csrc/kernels with the
16-lane canonical dot products and polynomial exp/tanh); it computes the same functions with numpy/BLAS
and is the definition the C engine's forward/backward are tested against to within float tolerance.

Token stream conventions (one entry per token, arrays of shape (B, T)):

* ``w``     body id (0 ``<unk>``, 1 ``<end>``, ...), the word stage target and the input body;
* ``case``  case symbol 0..3 (0 for non-words and ``<end>``), input of the transition;
* ``gap``   gap symbol 0..7, target of the gap head and input of the transition;
* ``case_coded``  bool: the case is coded for this token (a WORD without an ASCII capital, i.e. case
  0..2 of kind 1); its loss is −ln of the case distribution restricted to symbols 0..2.

Token ``t`` is predicted from the state ``h_t`` (``h_0`` = the initial state passed in), then the
state advances with token ``t`` through the model type's body (``arch``, docs/format.md §2):

* ``elman``: ``h_{t+1} = tanh(Wx·x_t + Wh·h_t + bh)``; the state is h (H);
* ``lstm``: ``a = Wx·x_t + Wh·h_t + b`` (4H, gates i, f, g, o), ``i, f, o = σ(a_i, a_f, a_o)``,
  ``g = tanh(a_g)``, ``c_{t+1} = f·c_t + i·g``, ``h_{t+1} = o·tanh(c_{t+1})``, σ(z) = 0.5·tanh(0.5·z) + 0.5;
  the state is [h, c] (2H);
* ``nplm`` with a context of K tokens: ``h_{t+1} = tanh(Wx·x_t + Wh·u_t + bh)``, u_t = [x_{t−1}, …,
  x_{t−K+1}] (newest first); the state is [h, u] (H + (K−1)·D).

Every function here also runs in complex arithmetic (for complex-step derivative checks).

Loss of a token = −ln P(class) − ln P(word | class) − [case_coded] ln P3(case) − ln P(gap), summed over
all tokens (``mask`` may exclude tokens, e.g. padding; the transition still runs).

Backward is truncated BPTT within the T steps: the gradient of the returned final state is not an
input (it is treated as zero), which is what training with carried state and dynamic evaluation use.
"""

from __future__ import annotations

import numpy as np

NAMES = ("E", "Ecase", "Egap", "Wx", "Wh", "bh", "Wc", "bc", "Wo", "bo", "Uc", "Bc", "Ug", "Bg")
NCASE = 4
NGAP = 8
# model types: rows of Wx/Wh/b per hidden unit (gates) and floats of state per hidden unit
ARCHS = {"elman": {"gates": 1, "state": 1}, "lstm": {"gates": 4, "state": 2}, "nplm": {"gates": 1, "state": 1}}
NPLM_CONTEXT = 3                 # the NPLM's default context (n − 1 of an n-gram: a 4-gram)


def _arch(arch: str) -> dict:
    if arch not in ARCHS:
        raise ValueError(f"unknown model type {arch!r} (known: {', '.join(ARCHS)})")
    return ARCHS[arch]


def state_size(H: int, arch: str = "elman", D: int = 0, context: int = NPLM_CONTEXT) -> int:
    """Floats of the state a stream carries: Elman h (H), LSTM [h, c] (2H), NPLM [h, u] (H + (K−1)·D)."""
    return _arch(arch)["state"] * H + ((context - 1) * D if arch == "nplm" else 0)


def shapes(V: int, D: int, H: int, C: int, arch: str = "elman", context: int = NPLM_CONTEXT):
    """[(name, shape)] of the 14 tensors in docs/format.md §2 order (the body's tensors are named Wx, Wh, bh for
    every type; the NPLM's Wh reads the K−1 older inputs)."""
    G = _arch(arch)["gates"]
    wh = (H, (context - 1) * D) if arch == "nplm" else (G * H, H)
    return [
        ("E", (V, D)),
        ("Ecase", (NCASE, D)),
        ("Egap", (NGAP, D)),
        ("Wx", (G * H, D)),
        ("Wh", wh),
        ("bh", (G * H,)),
        ("Wc", (C, H)),
        ("bc", (C,)),
        ("Wo", (V, H)),
        ("bo", (V,)),
        ("Uc", (NCASE, H)),
        ("Bc", (V, NCASE)),
        ("Ug", (NGAP, H)),
        ("Bg", (V, NGAP)),
    ]


def param_count(V: int, D: int, H: int, C: int, arch: str = "elman", context: int = NPLM_CONTEXT) -> int:
    return int(sum(int(np.prod(s)) for _, s in shapes(V, D, H, C, arch, context)))


def split_params(flat: np.ndarray, V: int, D: int, H: int, C: int, arch: str = "elman",
                 context: int = NPLM_CONTEXT) -> list:
    """Views (no copy) of the 14 tensors inside the flat block, in §2 order."""
    flat = np.asarray(flat)
    n = param_count(V, D, H, C, arch, context)
    if flat.ndim != 1 or flat.shape[0] != n:
        raise ValueError(f"parameter block has {flat.shape} entries, expected ({n},)")
    out, o = [], 0
    for _, s in shapes(V, D, H, C, arch, context):
        k = int(np.prod(s))
        out.append(flat[o:o + k].reshape(s))
        o += k
    return out


def join_params(tensors, dtype=None) -> np.ndarray:
    """Flat block from the 14 tensors (a list in §2 order or a dict by name)."""
    if isinstance(tensors, dict):
        tensors = [tensors[n] for n in NAMES]
    if len(tensors) != len(NAMES):
        raise ValueError("need 14 tensors")
    dt = dtype or np.result_type(*[np.asarray(t).dtype for t in tensors])
    return np.concatenate([np.asarray(t, dtype=dt).reshape(-1) for t in tensors])


def init_params(V: int, D: int, H: int, C: int, rng: np.random.Generator, dtype=np.float32, arch: str = "elman",
                forget_bias: float = 1.0, context: int = NPLM_CONTEXT) -> np.ndarray:
    """A sensible random initialisation (uniform, fan-in scaled; biases zero but the LSTM's forget gate's,
    forget_bias).  The Elman draws are the same as before model types existed (same seed, same weights)."""
    G = _arch(arch)["gates"]
    ts = []
    for name, s in shapes(V, D, H, C, arch, context):
        if name in ("bh", "bc", "bo", "Bc", "Bg"):
            t = np.zeros(s)
            if name == "bh" and arch == "lstm":
                t[H:2 * H] = forget_bias
        elif name in ("E", "Ecase", "Egap"):
            t = rng.uniform(-0.1, 0.1, s)
        elif name == "Wh" and arch != "nplm":
            # near-orthogonal recurrent matrix (one per gate) scaled below 1
            t = np.concatenate([0.9 * np.linalg.qr(rng.standard_normal((H, H)))[0] for _ in range(G)])
        else:
            fan_in = s[1]
            a = np.sqrt(3.0 / fan_in)
            t = rng.uniform(-a, a, s)
        ts.append(t)
    return join_params(ts, dtype=dtype)


def class_of(class_start: np.ndarray, V: int) -> np.ndarray:
    """Class index of every id 0..V-1."""
    cs = np.asarray(class_start, dtype=np.int64)
    return (np.searchsorted(cs, np.arange(V), side="right") - 1).astype(np.int32)


def _log_softmax(z):
    m = z.real.max(axis=-1, keepdims=True)      # the real part: the same for real z, and complex-step safe
    e = np.exp(z - m)
    s = e.sum(axis=-1, keepdims=True)
    return z - m - np.log(s), e / s


class Model:
    """Bundle of sizes + class map for the reference computations."""

    def __init__(self, V, D, H, C, class_start, arch: str = "elman", context: int = NPLM_CONTEXT):
        self.V, self.D, self.H, self.C = int(V), int(D), int(H), int(C)
        _arch(arch)
        self.arch, self.context = arch, int(context)
        self.state_size = state_size(self.H, arch, self.D, self.context)
        self.class_start = np.asarray(class_start, dtype=np.int64)
        if self.class_start.shape != (self.C + 1,) or self.class_start[0] != 0 or self.class_start[-1] != self.V:
            raise ValueError("bad class_start")
        if np.any(np.diff(self.class_start) <= 0):
            raise ValueError("empty class")
        self.cls = class_of(self.class_start, self.V)

    def split(self, flat):
        return split_params(flat, self.V, self.D, self.H, self.C, self.arch, self.context)

    @property
    def n_params(self):
        return param_count(self.V, self.D, self.H, self.C, self.arch, self.context)


def forward_backward(model: Model, params: np.ndarray, w, case, gap, case_coded, h0=None, mask=None,
                     need_grad: bool = True, return_parts: bool = False, grad_out: np.ndarray | None = None):
    """Forward over (B, T) tokens from h0, loss, and (optionally) the truncated-BPTT gradient.

    Returns (loss, grad_flat or None, h_T) or, with return_parts, (loss, grad, h_T, parts) where parts
    is a dict of summed losses {'class','word','case','gap'} and counts {'tokens','unk'}.
    The loss is a sum (not a mean) over unmasked tokens, in params.dtype.
    grad_out: optional preallocated flat gradient buffer (params' size and dtype), filled and returned
    (avoids allocating the block on every call).
    """
    V, D, H, C = model.V, model.D, model.H, model.C
    dt = params.dtype
    E, Ecase, Egap, Wx, Wh, bh, Wc, bc, Wo, bo, Uc, Bc, Ug, Bg = model.split(params)
    w = np.asarray(w)
    if w.ndim == 1:
        w = w[None]
        case, gap, case_coded = (np.asarray(a)[None] for a in (case, gap, case_coded))
        if mask is not None:
            mask = np.asarray(mask)[None]
    B, T = w.shape
    # time-major flattening: n = t*B + b
    wf = np.ascontiguousarray(w.T).reshape(-1).astype(np.int64)
    kf = np.ascontiguousarray(np.asarray(case).T).reshape(-1).astype(np.int64)
    gf = np.ascontiguousarray(np.asarray(gap).T).reshape(-1).astype(np.int64)
    ccf = np.ascontiguousarray(np.asarray(case_coded).T).reshape(-1).astype(bool)
    mf = None if mask is None else np.ascontiguousarray(np.asarray(mask).T).reshape(-1).astype(bool)
    N = B * T

    if h0 is None:
        h0 = np.zeros((B, model.state_size), dtype=dt)
    X = E[wf] + Ecase[kf]
    X += Egap[gf]                                  # (N, D), order E + Ecase + Egap
    body = _BODIES[model.arch]
    hs, rin, cache, final = body[0](X, Wx, Wh, bh, np.asarray(h0, dtype=dt), T, B, H)
    P = hs[:T].reshape(N, H)                       # predictor state of every token

    wt = mf.astype(dt) if mf is not None else None   # token weights (mask)
    parts = {}
    cls = model.cls[wf]
    # ---- class head
    Zc = P @ Wc.T
    Zc += bc
    lp, sm = _log_softmax(Zc)
    lc = -lp[np.arange(N), cls]
    if wt is not None:
        lc = lc * wt
    parts["class"] = lc.sum()
    if need_grad:
        dZc = sm
        dZc[np.arange(N), cls] -= 1
        if wt is not None:
            dZc *= wt[:, None]
        dP = dZc @ Wc
        dWc = dZc.T @ P
        dbc = dZc.sum(0)
    # ---- word-in-class head, grouped by class
    order = np.argsort(cls, kind="stable")
    scls = cls[order]
    bounds = np.searchsorted(scls, np.arange(C + 1))
    present = np.nonzero(bounds[1:] > bounds[:-1])[0]
    lw_total = dt.type(0)
    if need_grad:
        if grad_out is None:
            grad_out = np.empty_like(params)
        if grad_out.shape != params.shape or grad_out.dtype != dt:
            raise ValueError("grad_out must match params in shape and dtype")
        (gE, gEcase, gEgap, gWx, gWh, gbh, gWc, gbc, dWo, dbo, gUc, dBc, gUg, dBg) = model.split(grad_out)
        for t_ in (gE, gEcase, gEgap, dWo, dbo, dBc, dBg):
            t_.fill(0)
    cs = model.class_start
    for c in present:
        idx = order[bounds[c]:bounds[c + 1]]
        a_, b_ = cs[c], cs[c + 1]
        Pc = P[idx]
        Z = Pc @ Wo[a_:b_].T
        Z += bo[a_:b_]
        lpw, smw = _log_softmax(Z)
        loc = wf[idx] - a_
        lw = -lpw[np.arange(len(idx)), loc]
        if wt is not None:
            lw = lw * wt[idx]
        lw_total = lw_total + lw.sum()
        if need_grad:
            dZ = smw
            dZ[np.arange(len(idx)), loc] -= 1
            if wt is not None:
                dZ *= wt[idx][:, None]
            dP[idx] += dZ @ Wo[a_:b_]
            dWo[a_:b_] += dZ.T @ Pc
            dbo[a_:b_] += dZ.sum(0)
    parts["word"] = lw_total
    # ---- case head (symbols 0..2, coded tokens only)
    ccw = ccf if mf is None else (ccf & mf)
    Zk = P @ Uc.T
    Zk += Bc[wf]
    lpk, smk = _log_softmax(Zk[:, :3])
    kk = np.minimum(kf, 2)
    lk = -lpk[np.arange(N), kk]
    parts["case"] = (lk * ccw).sum()
    # ---- gap head
    Zg = P @ Ug.T
    Zg += Bg[wf]
    lpg, smg = _log_softmax(Zg)
    lg = -lpg[np.arange(N), gf]
    if wt is not None:
        lg = lg * wt
    parts["gap"] = lg.sum()
    loss = parts["class"] + parts["word"] + parts["case"] + parts["gap"]
    parts["tokens"] = int(N if mf is None else mf.sum())
    parts["unk"] = int(((wf == 0) if mf is None else ((wf == 0) & mf)).sum())

    if not need_grad:
        return (loss, None, final, parts) if return_parts else (loss, None, final)

    dZk = np.zeros((N, NCASE), dtype=dt)
    dZk[:, :3] = smk
    dZk[np.arange(N), kk] -= 1
    dZk *= ccw[:, None].astype(dt)
    dP += dZk @ Uc
    np.matmul(dZk.T, P, out=gUc)
    np.add.at(dBc, wf, dZk)

    dZg = smg
    dZg[np.arange(N), gf] -= 1
    if wt is not None:
        dZg *= wt[:, None]
    dP += dZg @ Ug
    np.matmul(dZg.T, P, out=gUg)
    np.add.at(dBg, wf, dZg)

    # ---- BPTT through the body (the final state's gradient is zero: truncated); dA = dL/d(pre-activation)
    dA, dXu = body[1](dP.reshape(T, B, H), hs, cache, Wh, T, B, H)
    dAf = dA.reshape(N, -1)
    np.matmul(dAf.T, rin.reshape(N, -1), out=gWh)
    np.matmul(dAf.T, X, out=gWx)
    gbh[...] = dAf.sum(0)
    dX = dAf @ Wx
    if dXu is not None:
        dX += dXu.reshape(N, D)
    np.add.at(gE, wf, dX)
    np.add.at(gEcase, kf, dX)
    np.add.at(gEgap, gf, dX)
    gWc[...] = dWc
    gbc[...] = dbc
    grad = grad_out
    if return_parts:
        return loss, grad, final, parts
    return loss, grad, final


# ---- bodies: forward (X (N, D) time-major, weights, h0 (B, S)) -> (hs (T+1, B, H): hs[t] predicts token t,
# rin (T, B, ·): what Wh multiplies in each transition, cache, final state (B, S)); backward (dP (T, B, H):
# the heads' gradient on hs[t]) -> (dA (T, B, G·H), dA[t] = dL/d(pre-activation of the transition with
# token t), zero for the last token's (truncated); a gradient on the inputs X beyond dA·Wx, or None)

def _elman_forward(X, Wx, Wh, bh, h0, T, B, H):
    hs = np.empty((T + 1, B, H), dtype=X.dtype)
    hs[0] = h0
    XW = (X @ Wx.T).reshape(T, B, H)
    WhT = Wh.T
    for t in range(T):
        a = XW[t] + hs[t] @ WhT
        a += bh
        np.tanh(a, out=hs[t + 1])
    return hs, hs[:T], None, hs[T].copy()


def _elman_backward(dP, hs, cache, Wh, T, B, H):
    """g = dL/dh_t for t = T..1 (g = 0 at T), dA[t-1] = g (1 - h_t^2), then g = dP[t-1] + dA[t-1] Wh."""
    dA = np.empty((T, B, H), dtype=dP.dtype)
    g = np.zeros((B, H), dtype=dP.dtype)
    for t in range(T, 0, -1):
        da = g * (1 - hs[t] * hs[t])
        dA[t - 1] = da
        g = dP[t - 1] + da @ Wh
    return dA, None


def _sigmoid(z):
    return 0.5 * np.tanh(0.5 * z) + 0.5


def _lstm_forward(X, Wx, Wh, b, h0, T, B, H):
    dt = X.dtype
    hs = np.empty((T + 1, B, H), dtype=dt)
    cs = np.empty((T + 1, B, H), dtype=dt)
    gates = np.empty((T, B, 4 * H), dtype=dt)     # i, f, g, o after their nonlinearity
    hs[0], cs[0] = h0[:, :H], h0[:, H:]
    XW = (X @ Wx.T).reshape(T, B, 4 * H)
    WhT = Wh.T
    for t in range(T):
        a = XW[t] + hs[t] @ WhT
        a += b
        i, f, g, o = _sigmoid(a[:, :H]), _sigmoid(a[:, H:2 * H]), np.tanh(a[:, 2 * H:3 * H]), _sigmoid(a[:, 3 * H:])
        gates[t] = np.concatenate([i, f, g, o], axis=1)
        cs[t + 1] = f * cs[t] + i * g
        hs[t + 1] = o * np.tanh(cs[t + 1])
    return hs, hs[:T], (cs, gates), np.concatenate([hs[T], cs[T]], axis=1)


def _lstm_backward(dP, hs, cache, Wh, T, B, H):
    cs, gates = cache
    dt = dP.dtype
    dA = np.empty((T, B, 4 * H), dtype=dt)
    gh = np.zeros((B, H), dtype=dt)            # dL/dh_t
    gc = np.zeros((B, H), dtype=dt)            # dL/dc_t
    for t in range(T, 0, -1):
        i, f, g, o = (gates[t - 1][:, k * H:(k + 1) * H] for k in range(4))
        tau = np.tanh(cs[t])
        do = gh * tau
        dct = gc + gh * o * (1 - tau * tau)
        da = np.concatenate([dct * g * i * (1 - i), dct * cs[t - 1] * f * (1 - f), dct * i * (1 - g * g),
                             do * o * (1 - o)], axis=1)
        dA[t - 1] = da
        gc = dct * f
        gh = dP[t - 1] + da @ Wh
    return dA, None


def _nplm_forward(X, Wx, Wh, bh, h0, T, B, H):
    D = X.shape[1]
    nu = Wh.shape[1]
    hs = np.empty((T + 1, B, H), dtype=X.dtype)
    us = np.empty((T + 1, B, nu), dtype=X.dtype)   # us[t]: the older inputs of the transition with token t
    hs[0], us[0] = h0[:, :H], h0[:, H:]
    Xt = X.reshape(T, B, D)
    XW = (X @ Wx.T).reshape(T, B, H)
    for t in range(T):
        a = XW[t] + us[t] @ Wh.T
        a += bh
        hs[t + 1] = np.tanh(a)
        us[t + 1] = np.concatenate([Xt[t], us[t][:, :nu - D]], axis=1)
    return hs, us[:T], D, np.concatenate([hs[T], us[T]], axis=1)


def _nplm_backward(dP, hs, D, Wh, T, B, H):
    """dh_t = dP[t] (0 at T): h_{t-1} does not enter h_t; gu = dL/du_t carries the older inputs' gradient."""
    dt = dP.dtype
    nu = Wh.shape[1]
    dA = np.empty((T, B, H), dtype=dt)
    dXu = np.empty((T, B, D), dtype=dt)
    gu = np.zeros((B, nu), dtype=dt)
    for t in range(T, 0, -1):
        dh = dP[t] if t < T else np.zeros((B, H), dtype=dt)
        da = dh * (1 - hs[t] * hs[t])
        dA[t - 1] = da
        dXu[t - 1] = gu[:, :D]                     # x_{t-1} is also u_t's first slot
        g = da @ Wh
        g[:, :nu - D] += gu[:, D:]
        gu = g
    return dA, dXu


_BODIES = {"elman": (_elman_forward, _elman_backward), "lstm": (_lstm_forward, _lstm_backward),
           "nplm": (_nplm_forward, _nplm_backward)}


def loss_fn(model, params, w, case, gap, case_coded, h0=None, mask=None):
    """Loss only (sum), no gradient."""
    return forward_backward(model, params, w, case, gap, case_coded, h0, mask, need_grad=False)[0]


def token_probs(model: Model, params: np.ndarray, h: np.ndarray):
    """Distributions from one state h (H,): (class probs (C,), word-in-class logits function,
    case logits without the body bias, gap logits without the body bias).  For inspection/tests."""
    E, Ecase, Egap, Wx, Wh, bh, Wc, bc, Wo, bo, Uc, Bc, Ug, Bg = model.split(params)
    zc = Wc @ h + bc
    return zc, (Wo @ h + bo), Uc @ h, Ug @ h
