"""What decoding a frame needs in memory: the one estimate behind memlimit (like xz's and zstd's).

A decode holds the model (its file, mapped or read, shared by every stream), and per thread a word-model codec
(its activations, caches and speller; in dynamic and heads mode also the weights it adapts), at most one
byte model (its tables grow with the run's size class, up to BYTE_MODEL_MAX) and its output in flight (a block
or READ_CHUNK of an lzma block; with several threads, GROUP_BUFFER per group: _decode.py).  None of it depends
on the sizes a frame declares.  The estimates are upper bounds, checked against the real codecs by
tests/test_memory.py.

memlimit: the most a decode may need.  A frame that needs more with one thread is refused (NLMError naming the
limit) before any codec is made; with several threads the decoder uses as many as fit (xz does the same).
DEFAULT_MEMLIMIT holds every bundled model in every mode on one thread with room to spare, and the encoder
refuses to write a frame it would refuse (a user's model can be that large).
"""
from __future__ import annotations

from ._decode import GROUP_BUFFER, READ_CHUNK
from ._errors import NLMError

MIB = 1 << 20
DEFAULT_MEMLIMIT = 1 << 30        # 1 GiB
CODEC_BASE = 22 * MIB             # a codec without adapted weights (20.4 MiB measured for every bundled model)
ADAPT_BYTES_PER_PARAM = 5         # a dynamic codec's copies of what it adapts, per float of the model (4.3 measured)
BYTE_MODEL_MAX = 104 * MIB        # the byte model of the largest run, size class 23 (103.2 MiB measured for byte
                                  # model 2, 86.4 MiB for model 1: the bound holds for every format)


def memlimit_arg(memlimit):
    """memlimit: None (DEFAULT_MEMLIMIT), 0 (no limit) or bytes > 0."""
    if memlimit is None:
        return DEFAULT_MEMLIMIT
    if isinstance(memlimit, bool) or not isinstance(memlimit, int):
        raise TypeError(f"memlimit must be an int or None, not {type(memlimit).__name__}")
    if memlimit < 0:
        raise ValueError("memlimit must be >= 0 (0: no limit)")
    return memlimit


def codec_bytes(model, adapt) -> int:
    """Upper bound of one word-model codec of `model` in mode `adapt`."""
    if not adapt:
        return CODEC_BASE
    from ._core import param_count
    from ._model import arch_code

    c = model.config
    return CODEC_BASE + ADAPT_BYTES_PER_PARAM * param_count(c["V"], c["D"], c["H"], c["C"], arch_code(c))


def decode_need(model, adapt, threads: int) -> int:
    """Upper bound of what decoding a frame of `model` (None: a frame without one) in mode `adapt` needs on
    `threads` threads."""
    fixed = model.file_size() if model is not None else 0
    per = (codec_bytes(model, adapt) if model is not None else 0) + BYTE_MODEL_MAX + \
        (GROUP_BUFFER + READ_CHUNK if threads > 1 else READ_CHUNK)
    return fixed + threads * per


def threads_within(model, adapt, threads: int, memlimit: int) -> int:
    """The threads a decode may use under memlimit (0: no limit): `threads`, or fewer that fit; NLMError when
    one thread does not fit."""
    if not memlimit:
        return threads
    one = decode_need(model, adapt, 1)
    if one > memlimit:
        raise NLMError(f"memory limit: decoding this frame needs up to {-(-one // MIB)} MiB, more than the limit "
                       f"of {memlimit // MIB} MiB (memlimit={memlimit}; raise it with memlimit= or nlmcodec -M)")
    while threads > 1 and decode_need(model, adapt, threads) > memlimit:
        threads -= 1
    return threads
