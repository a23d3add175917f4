"""Does the Kneser-Ney expert pay beside the default model?  Count the trigrams of the whole training corpus
with the default's vocabulary, mix them in with λ chosen on dev, and code dev text exactly, static and
dynamic, with and without them.

    python benchmarks/kn_default.py [--model default] [--min3 2] [--out benchmarks/kn_default.md]

The mixture is built by ``python -m nlmcodec.kn`` into runs/kn-<model>-min<k>/ (reused when there); λ is
chosen on the first 100 kB of dev-00, the figures are on the dev sample of tools/dev_sample.py (both held
out from training; nothing of bench/ or ood/ is read).
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
    ap.add_argument("--model", default="default")
    ap.add_argument("--min3", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=0, help="training tokens counted (default: the model's own)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "kn_default.md"))
    a = ap.parse_args(argv)
    import nlmcodec
    from nlmcodec._model import Model
    from nlmcodec.train import word_model_coded

    corpus = load_bench().require_corpus_dir()
    base = nlmcodec.load_model(a.model)
    name = nlmcodec._default_model_name() if a.model == "default" else a.model
    tokens = a.tokens or int(base.metadata.get("tokens_trained", 0)) or 10 ** 9
    runs = REPO / "runs" / f"kn-{name}-min{a.min3}"
    out_model = runs / "mixed.nlmm"
    rel = lambda p: os.path.relpath(p, REPO)  # noqa: E731
    cmd = ["python", "-m", "nlmcodec.kn", rel(os.path.join(corpus, "train")), "-o", rel(out_model),
           "--network", name, "--tokens", str(tokens), "--batch", str(base.metadata.get("batch", 128)),
           "--bptt", str(base.metadata.get("bptt", 32)), "--min3", str(a.min3),
           "--dev", rel(os.path.join(corpus, "dev", "dev-00.jsonl.xz")), "--lambdas", "0.5,0.6,0.7,0.8,0.9,1",
           "--cache-dir", rel(runs)]
    if not out_model.exists():
        runs.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, *cmd[1:]], cwd=REPO, check=True)
    mixed = Model.load(out_model)
    import dev_sample

    dev = dev_sample.texts(runs / "dev_sample")
    nin = sum(map(len, dev))
    rows = []
    for label, m in ((name, base), (f"{name} + Kneser-Ney (λ {mixed.metadata['kn_lambda']:g})", mixed)):
        for adapt in (False, True):
            t0 = time.process_time()
            n = k = 0
            for t in dev:
                b, kk = word_model_coded(m, t, adapt)
                n, k = n + b, k + kk
            rows.append((label, "dynamic" if adapt else "static", n, 8 * n / nin, k / (time.process_time() - t0),
                         m.nbytes))
            print(rows[-1], flush=True)
    out = ["# The Kneser-Ney expert beside the default model", "",
           f"`python benchmarks/kn_default.py --model {a.model} --min3 {a.min3}`: trigrams of "
           f"{mixed.metadata['kn']['tokens_counted']:,} training tokens (those seen fewer than {a.min3} times left "
           f"out), λ chosen on dev-00's first 100 kB ({', '.join(f'{x:g}: {y:,}' for x, y in mixed.metadata['kn_lambda_grid'])} "
           f"bytes); figures on the dev sample ({nin:,} bytes), exact word-model codes, one core.", "",
           "| model | mode | bytes | bits/byte | tokens/s | model file |", "|---|---|---:|---:|---:|---:|"]
    for label, mode, n, bpb, tps, size in rows:
        out.append(f"| {label} | {mode} | {n:,} | {bpb:.4f} | {tps:,.0f} | {size:,} |")
    out += ["", "Command of the mixture:", "", "    " + " ".join(cmd)]
    write_report(out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
