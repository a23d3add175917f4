"""Coding overhead: bytes written against the model's own −log2 Q over the same symbols.

The core reports, per category, Σ −log2(f/F) of every symbol it coded with the quantised frequencies
(nlm_codec_stats).  The payload may exceed that ideal by at most 0.1% plus the coder's flush; the frame adds
only its header and checksum.  Runs on dev text (held out from training) with the bundled tiny model.
"""
import json
import lzma
import pathlib

import pytest

import nlmcodec
from nlmcodec._core import Codec

from corpus_cache import CORPUS

DEV = CORPUS / "dev" / "dev-00.jsonl.xz"


@pytest.fixture(scope="module")
def dev_text():
    if not DEV.exists():
        pytest.skip("dev corpus not present")
    with lzma.open(DEV, "rt", encoding="utf-8") as f:
        return json.loads(f.readline())["text"].encode()[:120_000]


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_payload_matches_model_information(dev_text, adapt):
    model = nlmcodec.load_model("tiny")
    codec = Codec(model, adapt)
    codec.lab_reset(max_tokens=0)      # the whole text as one block, over the token bound (§3.5), for the count
    payload = codec.encode_block(dev_text)
    stats = codec.stats()
    ideal_bits = sum(v for k, v in stats.items() if k.endswith("_bits"))
    assert stats["tokens"] > 20_000
    assert len(payload) * 8 <= ideal_bits * 1.001 + 8 * 8
    assert len(payload) * 8 >= ideal_bits - 64  # the coder cannot beat the model's own information
    # the frame adds only its headers, index and checks (a CRC32 per block); cutting the text into 64 KiB blocks costs a
    # coder flush and an end token per block
    frame = nlmcodec.compress(dev_text, model=model, adapt=adapt)
    info = nlmcodec.get_frame_info(frame)
    if all(b.kind == "model" for b in info.blocks):
        n = len(info.blocks)
        assert sum(b.compressed_size for b in info.blocks) <= len(payload) + 16 * n
        # per block: its type/size varints (<= 7 bytes) and the block's CRC32 (4 bytes, §7.1)
        assert len(frame) <= sum(b.compressed_size for b in info.blocks) + 10 + 32 + (7 + 4) * n + 30


@pytest.mark.parametrize("adapt", [False, True], ids=["static", "dynamic"])
def test_bit_statistics_off_keeps_bytes_and_counts(dev_text, adapt):
    """set_bit_stats(False) (what compress() and decompress() use) skips the information sums of the token step:
    the same payload, the same counts, those sums 0; a trace still gets its bits."""
    model = nlmcodec.load_model("tiny")
    on, off = Codec(model, adapt), Codec(model, adapt)
    on.reset(), off.reset()
    off.set_bit_stats(False)
    text = dev_text[:30_000]
    payload = on.encode_block(text)
    assert off.encode_block(text) == payload
    son, soff = on.stats(), off.stats()
    # the speller's own sums are kept: unknown words' bodies, and literal gaps' bytes inside gap_bits
    speller = ("cache_bits", "spell_bits", "gap_bits")
    step = [k for k in son if k.endswith(("_bits", "_cost")) and k not in speller]
    assert all(son[k] > 0 for k in ("word_bits", "case_bits", "gap_bits", "match_bits"))
    for k in son:
        assert soff[k] == (0 if k in step else son[k]) or k == "gap_bits", k
    assert soff["gap_bits"] < 0.5 * son["gap_bits"]
    off.trace(True)
    off.reset()
    assert off.encode_block(text) == payload
    assert off.stats()["word_bits"] == pytest.approx(son["word_bits"], rel=1e-12)
