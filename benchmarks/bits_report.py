"""Where the bits go: per benchmark file and mode, the share of the word model's output spent on words,
unknown words (cache hits vs spelled), case, gaps and the token match flags, the unknown-token rate, and
which block kinds the frame chose (word model, byte model, lzma, stored).  The file is coded as one group
of the encoder's word-model blocks five times, from the same build: without the token experts (format 5),
with the token match flag (format 7, docs/format.md §3.4), with the match flag and the token cache
(format 8, §3.6), with those and the body mixer (format 9, §5.1.1), and with the flag's probability from two
APMs (format 10, §3.4).  The match expert's columns: the tokens it predicted, how many of them it got right, the
bits the network would have spent on the tokens it got right, and the payload bytes it saved (format 5
minus format 7, exclusions and the gap context included).  The cache's columns: the tokens whose identity
each of its experts (unigram, order 2, order 3) gave a count, of all tokens; what the network's own class
and word distributions would have cost the tokens the class stage coded, against what the mixed stages
spent; and the payload bytes it saved (format 7 minus format 8).  The body mixer's columns: the cache symbols
(hits and escapes) its experts named, of all the cache coded; the cache symbols' bits, format 8 → 9; and the
payload bytes it saved (format 8 minus format 9).  The flag's two APMs: the match flags' bits, format 9 → 10,
and the payload bytes they saved (format 9 minus format 10).  The shares are format 10's.

Usage: python benchmarks/bits_report.py [--model default] [--files english|all|NAME...] [--out FILE.md]
The figures are exact (bits from the quantised frequencies the coder used, via nlm_codec_stats).
"""
import argparse
import pathlib
import sys

import nlmcodec
from nlmcodec import _bench
from nlmcodec._frame import codec_options
from _benchlib import code_group

CATS = [("word_bits", "words"), ("unk_bits", "<unk> symbol"), ("cache_bits", "cache"),
        ("spell_bits", "spelled"), ("case_bits", "case"), ("gap_bits", "gaps"), ("match_bits", "match flags")]


UNK = ("unk_bits", "cache_bits", "spell_bits")


def code(data, model, adapt, version):
    sizes, st, _ = code_group(model, data, adapt, **codec_options(version))
    return sum(sizes), st


def analyse(data, model, adapt):
    off_len, off = code(data, model, adapt, 5)      # no token expert
    m_len, _ = code(data, model, adapt, 7)          # the match flag
    c_len, st8 = code(data, model, adapt, 8)        # the match flag and the token cache
    b_len, st9 = code(data, model, adapt, 9)        # and the body mixer
    plen, st = code(data, model, adapt, 10)         # and the flag's two APMs
    st["off_len"], st["m_len"], st["c_len"], st["c_cache_bits"] = off_len, m_len, c_len, st8["cache_bits"]
    st["b_len"], st["b_match_bits"] = b_len, st9["match_bits"]
    st["off_unk"] = sum(off[k] for k in UNK) / (sum(off[k] for k, _ in CATS) or 1.0)
    frame = nlmcodec.compress(data, model=model, adapt=adapt)
    kinds = {}
    for b in nlmcodec.get_frame_info(frame).blocks:
        kinds[b.kind] = kinds.get(b.kind, 0) + b.size
    return st, plen, len(frame), kinds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default")
    ap.add_argument("--files", nargs="+", default=["english"])
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    model = nlmcodec.load_model(a.model)
    rows = ["| file | mode | bytes | word-model bpb (format 5) | word-model bpb | frame bpb | blocks | unk rate | "
            "cache hits / spelled | unknown-word share (format 5) | unknown-word share | "
            "match: predicted / right | match: network bits of the right ones | match: bytes saved | "
            "cache: unigram / order 2 / order 3 had it (of tokens) | cache: network bits / class+word bits | "
            "cache: bytes saved | body mixer: named / cache symbols | body mixer: cache bits format 8 → 9 | "
            "body mixer: bytes saved | flag APMs: flag bits format 9 → 10 | flag APMs: bytes saved | "
            + " | ".join(n for _, n in CATS) + " |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(CATS)]
    for name in _bench.expand_files(a.files):
        label, data = _bench.read_file(name)
        if not data:
            continue
        for adapt in (False, True):
            st, plen, flen, kinds = analyse(data, model, adapt)
            tot = sum(st[k] for k, _ in CATS) or 1.0
            blocks = ", ".join(f"{k} {100 * v / len(data):.0f}%" for k, v in sorted(kinds.items()))
            row = (f"| {label} | {'dynamic' if adapt else 'static'} | {len(data)} | "
                   f"{8 * st['off_len'] / len(data):.4f} | {8 * plen / len(data):.4f} | "
                   f"{8 * flen / len(data):.3f} | {blocks} | {100 * st['unk_tokens'] / max(st['tokens'], 1):.1f}% | "
                   f"{st['cache_hits']:.0f} / {st['spelled']:.0f} | {100 * st['off_unk']:.2f}% | "
                   f"{100 * sum(st[k] for k in UNK) / tot:.2f}% | "
                   f"{st['match_preds']:.0f} / {st['match_hits']:.0f} | {st['match_net_cost']:.0f} | "
                   f"{st['off_len'] - st['m_len']} ({100 * (st['m_len'] / st['off_len'] - 1):+.2f}%) | "
                   f"{st['tc_u1']:.0f} / {st['tc_o2']:.0f} / {st['tc_o3']:.0f} ({st['tc_tokens']:.0f}) | "
                   f"{st['tc_net_cost']:.0f} / {st['word_bits'] + st['unk_bits']:.0f} | "
                   f"{st['m_len'] - st['c_len']} ({100 * (st['c_len'] / st['m_len'] - 1):+.2f}%) | "
                   f"{st['bm_candidates']:.0f} / {st['cache_hits'] + st['spelled']:.0f} | "
                   f"{st['c_cache_bits']:.0f} → {st['cache_bits']:.0f} | "
                   f"{st['c_len'] - st['b_len']} ({100 * (st['b_len'] / st['c_len'] - 1):+.2f}%) | "
                   f"{st['b_match_bits']:.0f} → {st['match_bits']:.0f} | "
                   f"{st['b_len'] - plen} ({100 * (plen / st['b_len'] - 1):+.2f}%) | "
                   + " | ".join(f"{100 * st[k] / tot:.1f}%" for k, _ in CATS) + " |")
            rows.append(row)
            print(row, flush=True)
    text = (f"Model `{a.model}` (id {nlmcodec.load_model(a.model).model_id.hex()[:16]}), "
            f"command: `python benchmarks/bits_report.py {' '.join(argv or sys.argv[1:])}`\n\n" + "\n".join(rows) + "\n")
    if a.out:
        pathlib.Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
