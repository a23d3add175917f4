"""Lexer speed (csrc/lexer/lex.c through the binding): it must never be the bottleneck of the codec.

python -m pytest benchmarks/test_bench_lexer.py   -> MB/s and tokens/s of nlm_lex on benchmark files, next
to the codec's own static speed on the same file for scale (the lexer should be well over 10x faster).
"""
import lzma
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import corpus_cache as cc  # noqa: E402

from nlmcodec._core import lex_tokens  # noqa: E402

FILES = ["book1", "dickens", "world192.txt", "xml"]


@pytest.mark.parametrize("name", FILES)
def test_lexer_speed(benchmark, name):
    try:
        data = cc.read(cc.find(name))
    except FileNotFoundError:
        pytest.skip(f"{name} not in the corpus")
    toks = benchmark.pedantic(lex_tokens, args=(data,), rounds=5, iterations=1, warmup_rounds=1)
    t = benchmark.stats.stats.median
    benchmark.extra_info.update(bytes=len(data), tokens=len(toks), mb_per_s=len(data) / t / 1e6,
                                tokens_per_s=len(toks) / t)
    print(f"\n{name}: {len(data)} bytes, {len(toks)} tokens, {len(data) / t / 1e6:.1f} MB/s, "
          f"{len(toks) / t / 1e6:.2f} M tokens/s")
    assert toks[-1]["kind"] == 0
