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
    codec.reset(max_tokens=0)      # the whole text as one block: over format 7's 16,384 tokens, for the count
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
        # per block: its type/size varints (<= 7 bytes) and, from format 3 on, the block's CRC32 (4 bytes)
        assert len(frame) <= sum(b.compressed_size for b in info.blocks) + 10 + 32 + (7 + 4) * n + 30
