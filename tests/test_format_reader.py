"""codec/FORMAT.md §1–§6 are complete: tests/format_reader.py, a second reader written from that text
alone (numpy float32 and Python integers, no code shared with csrc/), decodes every word-model block of
the format-2 golden vectors made with the tiny model, static and dynamic, to the vectors' bytes (the
context carried across blocks, an lzma block between them, and across segments)."""
import json
import pathlib

import pytest

import nlmcodec
from format_reader import Reader, word_blocks

VECTORS = pathlib.Path(__file__).resolve().parents[1] / "codec" / "vectors" / "ok"
MANIFEST = json.loads((VECTORS / "MANIFEST.json").read_text())
NAMES = sorted(n for n, v in MANIFEST.items() if v.get("model") == "tiny" and (VECTORS / f"{n}.nlm").exists()
               and (VECTORS / f"{n}.nlm").read_bytes()[4:5] == b"\x02"
               and any(kind == 2 for _, kind, _, _ in word_blocks((VECTORS / f"{n}.nlm").read_bytes())[1]))
# The fallback vectors (three word-model blocks of up to 64 KiB around an lzma block) take ~40 s here.
SLOW = {n for n in NAMES if "fallback" in n}


@pytest.fixture(scope="module")
def tiny():
    m = nlmcodec.load_model("tiny")
    return {adapt: Reader(m.config, m.params, m.ms, list(m.vocab), m.class_start, m.speller_prime, adapt)
            for adapt in (False, True)}


def test_there_are_vectors_of_both_modes():
    assert any("dynamic" in n for n in NAMES) and any("static" in n for n in NAMES), NAMES


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NAMES])
def test_second_reader_decodes_the_golden_vector(name, tiny):
    frame = (VECTORS / f"{name}.nlm").read_bytes()
    raw = (VECTORS / f"{name}.raw").read_bytes()
    adapt, blocks = word_blocks(frame)
    assert adapt == MANIFEST[name]["adapt"]
    reader, off = tiny[adapt], 0
    for start, kind, size, payload in blocks:
        if start:
            reader.reset()
        if kind == 2:
            assert reader.decode_block(payload, size) == raw[off:off + size], f"block at {off}"
        off += size
    assert off == len(raw)
