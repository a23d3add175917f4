"""Dev bytes and match-flag bits of one build (issue 10's flag experiment, benchmarks/flag_dev/README.md).

    python tools/dev_sample.py runs/dev_sample
    PYTHONPATH=<site of the build> python benchmarks/flag_dev/measure.py runs/dev_sample [--site <that site>]

Codes the dev sample (dev_book.txt, dev_tech.txt: each one group from the trained state, the encoder's word-
model blocks) with the real codec in both modes and prints, per mode, the payload bytes, the flag's bits
(nlm_codec_stats: match_bits) and its predictions and hits.  --site checks that nlmcodec is imported from there.
"""
from __future__ import annotations

import argparse
import json
import os

import nlmcodec
from nlmcodec import _core
from nlmcodec._encode import _model_pieces


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("dev_dir")
    ap.add_argument("--site", default=None)
    a = ap.parse_args(argv)
    if a.site and not os.path.abspath(nlmcodec.__file__).startswith(os.path.abspath(a.site)):
        raise SystemExit(f"nlmcodec comes from {nlmcodec.__file__}, not {a.site}")
    model = nlmcodec.load_model("default")
    texts = [open(os.path.join(a.dev_dir, n), "rb").read() for n in ("dev_book.txt", "dev_tech.txt")]
    res = {}
    for mode in ("static", "dynamic"):
        r = dict(bytes=0, flag_bits=0.0, preds=0, hits=0)
        for text in texts:
            c = _core.Codec(model, mode == "dynamic")
            c.reset()
            r["bytes"] += sum(len(c.encode_block(text[p:p + k])) for p, k in _model_pieces(text))
            st = c.stats()
            r["flag_bits"] += st["match_bits"]
            r["preds"] += int(st["match_preds"])
            r["hits"] += int(st["match_hits"])
        r["flag_bits"] = round(r["flag_bits"])
        res[mode] = r
    print(json.dumps(res))


if __name__ == "__main__":
    main()
