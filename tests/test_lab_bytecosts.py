"""The byte model's per-bit probabilities (csrc/nlm_lab.h nlm_lab_byte_costs, measurement only): on both bindings,
their information is the payload of the byte-model block that starts a run of the same bytes (docs/format.md
§9.1: one run byte, then the range coder's bytes), within the coder's rounding and flush."""
import random

import numpy as np
import pytest

from nlmcodec._core import ByteCoder


def _sample(n, seed=7):
    r = random.Random(seed)
    words = [b"the", b"model", b"byte", b".TH", b"mixer", b"\n", b"of", b"a", b"1998", b"-", b"context"]
    out = bytearray()
    while len(out) < n:
        out += r.choice(words) + (b"\n" if r.random() < 0.1 else b" ")
    return bytes(out[:n])


@pytest.mark.parametrize("backend", ["cython", "cffi"])
@pytest.mark.parametrize("n", [1, 3000, 20000])
def test_bit_costs_sum_to_payload(backend, n):
    if backend == "cython":
        from nlmcodec import _nlm_cy as native
    else:
        from nlmcodec import _nlm_cffi_glue as native
    data = _sample(n)
    raw = native.lab_byte_costs(data)
    assert not isinstance(raw, int)
    p = np.frombuffer(raw, dtype="=u2")
    assert p.shape == (8 * n,) and p.min() >= 1 and p.max() <= 4095
    bits = float(-np.log2(p / 4096.0).sum())
    payload = ByteCoder().encode_block(data, run_size=n)
    coded = 8 * (len(payload) - 1)          # the run byte is no coded bit
    assert abs(coded - bits) <= 8 * 8 + 0.001 * bits, (coded, bits)


def test_read_only():
    """The hook changes no coded byte: a block coded before and after it is the same."""
    from nlmcodec import _nlm_cy as native

    data = _sample(5000, seed=3)
    before = ByteCoder().encode_block(data, run_size=len(data))
    native.lab_byte_costs(data)
    assert ByteCoder().encode_block(data, run_size=len(data)) == before
    assert native.lab_byte_costs(b"") == b""
