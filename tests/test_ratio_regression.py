"""Compressed sizes must not change silently.

``benchmarks/ratios_tiny.csv`` (the bundled ``tiny`` model, a few small files; quick) and
``benchmarks/ratios.csv`` (the bundled ``default`` model, the English benchmark files; slow) hold
the exact size and SHA-256 of every compressed file.  Any change in nlmcodec's output bytes must
regenerate them in the same commit:

    python benchmarks/make_ratios.py --model tiny
    python benchmarks/make_ratios.py --model default
"""
import importlib.util
import os
import shutil

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "benchmarks")
TINY_CSV = os.path.join(BENCH, "ratios_tiny.csv")
DEFAULT_CSV = os.path.join(BENCH, "ratios.csv")


def _load_make_ratios():
    spec = importlib.util.spec_from_file_location("nlmcodec_make_ratios", os.path.join(BENCH, "make_ratios.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MR = _load_make_ratios()


def _rows(path):
    return MR.read_csv(path) if os.path.isfile(path) else []


def _ids(rows):
    return [f"{r['file']}-{r['mode']}" for r in rows]


_MEASURERS = {}


def _measurer(model):
    if model not in _MEASURERS:
        _MEASURERS[model] = MR.Measurer(model)
    return _MEASURERS[model]


def _check_row(expected):
    regen = f"python benchmarks/make_ratios.py --model {expected['model']}"
    m = _measurer(expected["model"])
    if expected["model"] == "default":  # share the session's whole-corpus frames (tests/corpus_cache.py)
        import corpus_cache as cc

        path = cc.find(expected["file"])
        comp = cc.frame(path, MR.MODES[expected["mode"]])
        got = dict(m.row(expected["file"], expected["mode"], frame=comp))
    else:
        got = m.row(expected["file"], expected["mode"])
    diffs = MR.compare([expected], [got])
    assert not diffs, "; ".join(diffs) + f" -- if the change is intended, run `{regen}` and commit the CSV"


TINY_ROWS = _rows(TINY_CSV)
DEFAULT_ROWS = _rows(DEFAULT_CSV)


@pytest.mark.skipif(not TINY_ROWS, reason="benchmarks/ratios_tiny.csv not generated yet")
@pytest.mark.parametrize("expected", TINY_ROWS, ids=_ids(TINY_ROWS))
def test_tiny_model_sizes(expected):
    _check_row(expected)


@pytest.mark.slow
@pytest.mark.skipif(not DEFAULT_ROWS, reason="benchmarks/ratios.csv not generated yet: "
                    "run python benchmarks/make_ratios.py --model default when the default model lands")
@pytest.mark.parametrize("expected", [pytest.param(r, marks=pytest.mark.xdist_group(r["file"]))
                                      for r in DEFAULT_ROWS], ids=_ids(DEFAULT_ROWS))
def test_default_model_sizes(expected):
    _check_row(expected)


# ---- the comparison itself: a deliberately changed size must be reported ------------------------

_SAMPLE = [
    {"file": "paper5", "mode": "static", "model": "tiny", "model_id": "ab12", "bytes_in": 11954,
     "sha256_in": "00" * 32, "bytes_out": 4000, "bpb": "2.6770", "sha256_out": "11" * 32},
    {"file": "paper5", "mode": "dynamic", "model": "tiny", "model_id": "ab12", "bytes_in": 11954,
     "sha256_in": "00" * 32, "bytes_out": 3900, "bpb": "2.6100", "sha256_out": "22" * 32},
]


def test_compare_reports_a_changed_size(tmp_path):
    src = tmp_path / "ratios.csv"
    MR.write_csv(str(src), _SAMPLE)
    actual = MR.read_csv(str(src))
    assert MR.compare(MR.read_csv(str(src)), actual) == []

    edited = tmp_path / "edited.csv"
    text = src.read_text().replace(",4000,", ",4001,")
    assert text != src.read_text()
    edited.write_text(text)
    diffs = MR.compare(MR.read_csv(str(edited)), actual)
    assert len(diffs) == 1
    assert "paper5 (static)" in diffs[0] and "expected 4001, got 4000" in diffs[0]

    changed_bytes = [dict(r) for r in actual]
    changed_bytes[1]["sha256_out"] = "33" * 32  # same size, different bytes
    diffs = MR.compare(MR.read_csv(str(src)), changed_bytes)
    assert len(diffs) == 1 and "paper5 (dynamic)" in diffs[0] and "compressed bytes changed" in diffs[0]

    new_model = [dict(r, model_id="cd34") for r in actual]
    diffs = MR.compare(MR.read_csv(str(src)), new_model)
    assert len(diffs) == 2 and all("model changed" in d for d in diffs)

    assert MR.compare(MR.read_csv(str(src)), actual[:1]) == ["paper5 (dynamic): not measured"]


@pytest.mark.skipif(not TINY_ROWS, reason="benchmarks/ratios_tiny.csv not generated yet")
def test_check_fails_on_an_edited_copy_of_the_committed_csv(tmp_path):
    """End to end: recompressing against a copy with one size changed reports exactly that row."""
    copy = tmp_path / "ratios_tiny.csv"
    shutil.copy(TINY_CSV, copy)
    rows = MR.read_csv(str(copy))
    target = min(rows, key=lambda r: r["bytes_in"] if r["bytes_in"] > 1 else 1 << 62)
    target["bytes_out"] += 1
    MR.write_csv(str(copy), rows)
    diffs = MR.check(str(copy), _measurer(rows[0]["model"]))
    assert len(diffs) == 1, diffs
    assert f"{target['file']} ({target['mode']})" in diffs[0]
    assert f"expected {target['bytes_out']}, got {target['bytes_out'] - 1}" in diffs[0]
