"""Python fuzz targets of nlmcodec: what may be fed untrusted bytes must raise NLMError (or a
subclass) and nothing else, never crash, hang or allocate without bound.

    python tests/fuzz/fuzz_py.py TARGET [--seeds-only] [libFuzzer flags, e.g. -runs=N -max_total_time=S] CORPUS_DIR

Targets (seed corpora come from codec/vectors, through codec/vectors/vectorset.py; tests/fuzz/run_fuzz.py writes them):

* ``decompress``       nlmcodec.decompress(data): no model given; frames without a model id, and frames
                       naming the bundled tiny model (found by id), decode
* ``decompress_tiny``  nlmcodec.decompress(data, model="tiny") (the explicit-model path)
* ``decompressor``     NLMDecompressor fed data in pieces (sizes and max_length drawn from the data's CRC),
                       whose result must equal the one-shot decompress: same bytes, or both fail
* ``load_model``       Model.from_bytes(data); one in 16 of the models that load (chosen by the data's CRC:
                       creating a codec primes its speller, ~10 ms) also compresses and decompresses a line

The engine is atheris (libFuzzer for Python; pip install atheris).  Frames naming the default model are
left out of the seeds (each would cost a second of decoding).  A finding is an exception that is not an
NLMError (AssertionError for a decompressor/one-shot mismatch); libFuzzer writes it to crash-* files.
"""
from __future__ import annotations

import random
import sys
import zlib

import atheris

with atheris.instrument_imports():
    import nlmcodec
    from nlmcodec._model import Model

MAX_OUTPUT = 1 << 22          # hostile frames may declare anything: no target produces more than 4 MiB
TINY = nlmcodec.load_model("tiny")
LINE = b"The quick brown fox jumps over the lazy dog.\n"


def t_decompress(data: bytes) -> None:
    try:
        nlmcodec.decompress(data, max_output=MAX_OUTPUT)
    except nlmcodec.NLMError:
        pass


def t_decompress_tiny(data: bytes) -> None:
    try:
        nlmcodec.decompress(data, model=TINY, max_output=MAX_OUTPUT)
    except nlmcodec.NLMError:
        pass


def _pieces(data: bytes):
    rng = random.Random(zlib.crc32(data))
    out, pos = [], 0
    while pos < len(data):
        k = rng.choice((1, 2, 3, 7, 16, 100, 1000, 1 << 16))
        out.append(data[pos:pos + k])
        pos += k
    return out, rng.choice((-1, 1, 5, 1000, 1 << 16))


def t_decompressor(data: bytes) -> None:
    try:
        want = nlmcodec.decompress(data, model=TINY, max_output=MAX_OUTPUT)
    except nlmcodec.NLMError:
        want = None
    pieces, max_length = _pieces(data)
    d = nlmcodec.NLMDecompressor(model=TINY, max_output=MAX_OUTPUT)
    got, rest = [], False
    try:
        for p in pieces:
            if d.eof:
                rest = True             # bytes after the frame (another frame, or garbage)
                break
            got.append(d.decompress(p, max_length))
            while not d.eof and not d.needs_input:
                got.append(d.decompress(b"", max_length))
    except nlmcodec.NLMError:
        if want is not None:
            raise AssertionError("NLMDecompressor rejected a frame that decompress() accepts") from None
        return
    if d.eof and not d.unused_data and not rest:     # exactly one frame: the one-shot result must be the same
        assert want is not None, "NLMDecompressor accepted a frame that decompress() rejects"
        assert b"".join(got) == want, "NLMDecompressor and decompress() disagree"


def t_load_model(data: bytes) -> None:
    try:
        m = Model.from_bytes(data)
    except nlmcodec.NLMError:
        return
    if zlib.crc32(data) & 15:
        return
    for adapt in (False, True):
        try:
            blob = nlmcodec.compress(LINE, model=m, adapt=adapt)
        except nlmcodec.NLMError:
            continue                  # a model the core refuses (NLM_ERR_CONFIG...) is an NLMError: fine
        assert nlmcodec.decompress(blob, model=m) == LINE, "a loaded model does not round-trip"


TARGETS = {"decompress": t_decompress, "decompress_tiny": t_decompress_tiny, "decompressor": t_decompressor,
           "load_model": t_load_model}


def main(argv):
    if len(argv) < 2 or argv[1] not in TARGETS:
        sys.exit(f"usage: {argv[0]} {{{','.join(TARGETS)}}} [libFuzzer flags] CORPUS_DIR...")
    target = TARGETS[argv[1]]
    atheris.Setup([argv[0]] + argv[2:], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
