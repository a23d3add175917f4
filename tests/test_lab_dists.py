"""The codec's per-token class and gap distributions (csrc/nlm_lab.h nlm_lab_trace_dists, measurement only): on both
bindings they are the distributions the trace's bits were coded with, and recording them changes no coded byte.
In format 14 the gap mixer (docs/format.md §3.7) codes the gap from the recorded distribution and
its own contexts, so there only the class part is the coded distribution (checked in both)."""
import numpy as np
import pytest

import nlmcodec
from nlmcodec._core import TRACE_DTYPE, TRACE_PARTS

TEXT = (b"The cat sat on the mat. It was a sunny day, and the children played in the garden.\n"
        b"   Dr. Zyxwvut arrived at 10:30 with 42 boxes!\n\n\tThe cat sat on the mat again,  twice.\r\n") * 4


@pytest.mark.parametrize("backend", ["cython", "cffi"])
@pytest.mark.parametrize("mode", ["MODE_STATIC", "MODE_HEADS"])
@pytest.mark.parametrize("version", [13, 14])
def test_dists_are_the_coded_ones(backend, mode, version):
    if backend == "cython":
        from nlmcodec import _nlm_cy as native
    else:
        from nlmcodec import _nlm_cffi_glue as native
    tiny = nlmcodec.load_model("tiny")
    m = tiny._build_native(native)
    plain, lab = native.Codec(m, int(mode != "MODE_STATIC")), native.Codec(m, int(mode != "MODE_STATIC"))
    assert plain.ok() and lab.ok()
    for c in (plain, lab):
        assert c.reset_for(version, getattr(native, mode)) == 0
    lab.trace(1)
    assert lab.lab_trace_dists(1) == 0
    C = tiny.config["C"]
    cls_of = np.searchsorted(np.asarray(tiny.class_start), np.arange(tiny.config["V"]), side="right") - 1
    gap_k, cls_k = TRACE_PARTS.index("gap"), TRACE_PARTS.index("class")
    for piece in (TEXT, TEXT[::-1], b"x"):
        assert lab.encode_block(piece) == plain.encode_block(piece)        # read-only
        recs = np.frombuffer(lab.trace_records(), dtype=TRACE_DTYPE)
        raw, width = lab.lab_trace_dists_records()
        assert width == C + 8
        d = np.frombuffer(raw, dtype="=f4").reshape(-1, width)
        assert len(d) == len(recs)
        assert np.allclose(d[:, :C].sum(axis=1), 1, atol=1e-4) and np.allclose(d[:, C:].sum(axis=1), 1, atol=1e-4)
        # the gap part of every token but a literal run is -log2 of the recorded gap probability
        g = recs["gap"].astype(int)
        sel = (g != 7) & (version == 13)
        got = -np.log2(d[np.arange(len(d)), C + g].astype(np.float64))
        assert np.allclose(got[sel], recs["bits"][sel, gap_k], atol=1e-4)
        # the class part, where the match flag neither hit nor excluded (no match part): the recorded class's
        sel = (recs["bits"][:, TRACE_PARTS.index("match")] == 0) & (recs["word"] >= 1)
        assert sel.any()
        cls = cls_of[recs["word"][sel]]
        got = -np.log2(d[np.nonzero(sel)[0], cls].astype(np.float64))
        assert np.allclose(got, recs["bits"][sel, cls_k], atol=1e-4)
    assert lab.lab_trace_dists(0) == 0
    lab.encode_block(TEXT)
    assert lab.lab_trace_dists_records()[0] == b""
