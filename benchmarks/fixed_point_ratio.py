"""Ratio cost of integer fixed-point forward matvecs (issue 11's evaluation, before format 11 adopted the int8
form for static streams: codec/FORMAT.md §2.6, csrc/kernels/kern_q8.c; its exact sizes are in
benchmarks/ratios.csv).

    python tools/dev_sample.py runs/dev_sample && python benchmarks/fixed_point_ratio.py runs/dev_sample/dev_*.txt

Dev cross-entropy (nats per token, the model's part of the code: class + word + case + gap; unknown-word
spellings are not affected) of the default model with its float32 weights, and with the forward-matvec
weights (Wx, Wh, Wc, Wo, Uc, Ug) rounded to int16 / int8 with one symmetric scale per row and the hidden
state rounded to the activation grid (int16: 1/32767, int8/uint8 for VNNI: 1/127), through the numpy
reference forward (python/nlmcodec/reference.py).  The embedding sum x keeps float (a per-vector scale
would add an error of the same order as the weights').  Speed: benchmarks/kernels/fixed_point.c.
"""
import sys
import types

import numpy as np

import nlmcodec
from nlmcodec import reference as R
from nlmcodec import train

MATS = ("Wx", "Wh", "Wc", "Wo", "Uc", "Ug")
NAMES = ("E", "Ecase", "Egap", "Wx", "Wh", "bh", "Wc", "bc", "Wo", "bo", "Uc", "Bc", "Ug", "Bg")


def quantise(model, qmax):
    c = model.config
    parts = R.split_params(np.asarray(model.params, np.float32).copy(), c["V"], c["D"], c["H"], c["C"])
    out = []
    for name, t in zip(NAMES, parts):
        if name in MATS:
            s = np.abs(t).max(axis=1, keepdims=True) / qmax
            s[s == 0] = 1.0
            t = (np.clip(np.rint(t / s), -qmax, qmax) * s).astype(np.float32)
        out.append(t)
    return R.join_params(out, np.float32)


def evaluate(model, params, paths, act_qmax, n_tokens):
    real_tanh = np.tanh

    def tanh_q(a, out=None):
        r = real_tanh(a, out=out)
        r[...] = np.rint(r * act_qmax) / act_qmax
        return r

    m = types.SimpleNamespace(params=params, vocab=model.vocab, config=model.config, class_start=model.class_start)
    if act_qmax:
        np.tanh = tanh_q
    try:
        return train.dev_eval(m, paths, n_tokens)["nats_per_token"]
    finally:
        np.tanh = real_tanh


def main(paths):
    model = nlmcodec.load_model("default")
    n_tokens = 100_000
    base = evaluate(model, np.asarray(model.params, np.float32), paths, 0, n_tokens)
    print(f"dev: {', '.join(paths)}; {n_tokens} tokens (16 evenly spaced chunks)")
    print("| forward matvecs | nats/token | change |")
    print("|---|---|---|")
    print(f"| float32 (today) | {base:.5f} | - |")
    for label, wq, aq in (("int16 weights, int16 h", 32767, 32767), ("int8 weights, uint8 h (VNNI)", 127, 127),
                          ("int8 weights, float h", 127, 0)):
        v = evaluate(model, quantise(model, wq), paths, aq, n_tokens)
        print(f"| {label} | {v:.5f} | {100.0 * (v - base) / base:+.3f}% |")


if __name__ == "__main__":
    main(sys.argv[1:])
