"""benchmarks/own_rows_dev.py's measurement device (issue 10, item 3): the variant model gives each repeated
unknown word its own vocabulary id in <unk>'s class with <unk>'s rows, the codec then codes those words as
their own ids (not as <unk>), the variant's frames round-trip, and the per-token trace lines up with the lexer's
tokens block by block.  The tiny model, so it runs in the quick lane."""
import importlib.util
import pathlib

import numpy as np

import nlmcodec
from nlmcodec import _core
from nlmcodec.reference import shapes, split_params

HERE = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "own_rows_dev.py"
spec = importlib.util.spec_from_file_location("own_rows_dev", HERE)
own_rows = importlib.util.module_from_spec(spec)
spec.loader.exec_module(own_rows)

TEXT = b" ".join(b"the zorvath and the quillmarsh went to the hrothgarr river, said zorvath" for _ in range(40))


def test_added_words_get_unk_rows_and_are_coded_as_words(tiny_model):
    added = own_rows.unknown_repeats(tiny_model, TEXT)
    k = len(added)
    assert {b"hrothgarr", b"quillmarsh", b"zorvath"} <= set(added) and b"the" not in added
    variant, pos = own_rows.with_rows(tiny_model, added)
    V, cfg = tiny_model.config["V"], variant.config
    assert cfg["V"] == V + k and list(variant.vocab[pos:pos + k]) == added
    T = dict(zip([n for n, _ in shapes(cfg["V"], cfg["D"], cfg["H"], cfg["C"])],
                 split_params(variant.params, cfg["V"], cfg["D"], cfg["H"], cfg["C"])))
    for n in own_rows.ROWS:
        assert np.array_equal(T[n][pos:pos + k], np.repeat(T[n][:1], k, axis=0)), n
    c = _core.Codec(variant, True)
    c.reset()
    c.trace(True)
    payload = c.encode_block(TEXT)
    words = set(c.trace_records()["word"].tolist())
    assert set(range(pos, pos + k)) <= words and 0 not in words       # no <unk> left: each has its own id
    d = _core.Codec(variant, True)
    d.reset()
    assert d.decode_block(payload, len(TEXT)) == TEXT


def test_the_trace_lines_up_with_the_tokens(tiny_model):
    size, bits, bodies = own_rows.traced_group(tiny_model, TEXT)
    assert len(bits) == len(bodies) == len(_core.lex_tokens(TEXT))
    assert abs(bits.sum() / 8 - size) < 0.01 * size + 8       # the trace's bits are the payload's
    assert bodies.count(b"zorvath") == 80
