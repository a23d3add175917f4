"""The LSTM's forget-gate bias, chosen on dev (issue 13 item 2): train the LSTM with each bias at one budget
and compare dev nats/token (the trainer's float64 evaluation at the chosen checkpoint) and the exact dynamic
code of the dev sample.

    python benchmarks/forget_bias.py [--biases 0,1,2,3] [--vocab 4096 --dim 32 --hidden 64 --classes 64
        --tokens 2000000] [--out benchmarks/forget_bias.md]

Runs go to runs/forget-bias-<sizes>-<tokens>/b<bias>/ (reused or resumed when there).  Only dev text is read
for the choice (the dev sample of tools/dev_sample.py and dev-00); nothing of bench/ or ood/.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tools"))

from _benchlib import load_bench, write_report  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--biases", default="0,1,2,3")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=2_000_000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--bptt", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "forget_bias.md"))
    a = ap.parse_args(argv)
    corpus = load_bench().require_corpus_dir()
    rel = lambda p: os.path.relpath(p, REPO)  # noqa: E731
    runs = REPO / "runs" / f"forget-bias-V{a.vocab}-D{a.dim}-H{a.hidden}-C{a.classes}-T{a.tokens}"
    import dev_sample

    dev = dev_sample.texts(runs / "dev_sample")
    from nlmcodec._model import Model
    from nlmcodec.train import word_model_coded

    rows, cmds = [], []
    for b in [float(x) for x in a.biases.split(",")]:
        ck = runs / f"b{b:g}"
        cmd = ["python", "-m", "nlmcodec", "--train", rel(os.path.join(corpus, "train")), "-o", rel(ck / "final.nlmm"),
               "--arch", "lstm", "--forget-bias", f"{b:g}", "--vocab", str(a.vocab), "--dim", str(a.dim),
               "--hidden", str(a.hidden), "--classes", str(a.classes), "--tokens", str(a.tokens),
               "--seed", str(a.seed), "--dev", rel(os.path.join(corpus, "dev", "dev-00.jsonl.xz")),
               "--checkpoint-dir", rel(ck), "--batch", str(a.batch), "--bptt", str(a.bptt), "--lr", str(a.lr),
               "--name", f"lstm-fb{b:g}", "--cache-dir", rel(runs / "tokens"), "--quiet", "--resume"]
        cmds.append(" ".join(["OPENBLAS_NUM_THREADS=1", *cmd]))
        if not (ck / "final.nlmm").exists():
            t0 = time.time()
            subprocess.run([sys.executable, *cmd[1:]], cwd=REPO, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
                           check=False)
            print(f"bias {b:g}: trained in {time.time() - t0:.0f} s", flush=True)
        m = Model.load(ck / "final.nlmm")
        d = m.metadata.get("dev") or {}
        n = sum(word_model_coded(m, t, True)[0] for t in dev)
        rows.append((b, d.get("nats_per_token"), d.get("step"), 8 * n / sum(map(len, dev))))
        print(rows[-1], flush=True)
    best = min(rows, key=lambda r: r[1])
    out = ["# The LSTM's forget-gate bias on dev", "",
           f"`python benchmarks/forget_bias.py --biases {a.biases} --vocab {a.vocab} --dim {a.dim} --hidden "
           f"{a.hidden} --classes {a.classes} --tokens {a.tokens}`: the LSTM trained with each forget-gate bias "
           f"(the initial value of the f gate's rows of bh) on the same {a.tokens:,} tokens (batch {a.batch}, "
           f"BPTT {a.bptt}, Adam lr {a.lr:g}, seed {a.seed}). Dev nats/token: the trainer's float64 evaluation at "
           "the chosen checkpoint; dev sample: the exact dynamic code of tools/dev_sample.py's text.", "",
           "| forget bias | dev nats/token | chosen step | dev sample bits/byte, dynamic |", "|---:|---:|---:|---:|"]
    for b, nats, step, bpb in rows:
        out.append(f"| {b:g} | {nats:.4f} | {int(step or 0)} | {bpb:.4f} |")
    out += ["", f"Lowest dev nats/token: bias {best[0]:g}.", "", "Commands:", ""] + [f"    {c}" for c in cmds]
    write_report(out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
