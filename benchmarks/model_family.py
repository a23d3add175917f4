"""The model family on one yardstick (issue 13 item 3): each model type trained with the same budget and
sizes, then coded exactly, static and dynamic.

    python benchmarks/model_family.py [--vocab V --dim D --hidden H --classes C --tokens N] [--out FILE]

For each type (elman, lstm, nplm) it trains a model with nlmcodec's own trainer (``python -m nlmcodec
--train``) on the training corpus, with the same vocabulary, sizes, token budget, batch, BPTT, learning rate
and seed, into runs/family-<sizes>-<tokens>/<type>/ (a run that is there already is resumed or reused: a long
budget can be stopped and started again).  Then, per type: dev nats/token at the chosen checkpoint (the
trainer's float64 evaluation on its fixed dev slice), and the exact coded size of the dev sample of
tools/dev_sample.py and of the 14 English benchmark files in bits per byte, static and dynamic (the word
model's payloads in the encoder's blocks: train.word_model_coded; every file one group), the coding speed in
tokens per CPU second (static and dynamic, over the English files) and the model file's size (each row's figures are kept in runs/.../<row>/row.json and read back while
its model and the files are the same, so rows can be measured by separate runs, e.g. one --types each,
and a last run with every type writes the whole table).  Dynamic rows
use each model's dynamic-evaluation settings as its training run tuned them on dev.  The report goes to
benchmarks/model_family.md (or --out).

Kneser-Ney rows (``python -m nlmcodec.kn``, docs/format.md §2.5): ``kn`` is the interpolated Kneser-Ney trigram
model alone (the Kneser-Ney model type: λ = 0 over a bias-only network that codes case and gap), counted on
exactly the tokens the networks were trained on (the trainer's batch streams for the same budget), with the
same vocabulary and classes; ``<type>+kn`` is that trained network mixed with the same counts, λ (the
network's weight) chosen on the first 100 kB of dev by exact code length.  The Kneser-Ney tables do not
adapt: a ``kn`` row's dynamic column is its static code (its network has lr 0), a mixture's dynamic column
adapts the network only.  "dev nats/token" is the trainer's float64 evaluation (networks only); "dev code
nats/token" is the exact code of the dev sample per token, for every row.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tools"))

from _benchlib import load_bench, write_report  # noqa: E402

TYPES = ("elman", "lstm", "nplm")
KN_MIXES = ("elman", "lstm", "nplm")      # the networks also mixed with the Kneser-Ney counts


def train_cmd(arch, a, ck: Path, corpus: str):
    """The training command of one row (paths relative to the repository when they can be)."""
    rel = lambda p: os.path.relpath(p, REPO)  # noqa: E731
    return ["python", "-m", "nlmcodec", "--train", rel(os.path.join(corpus, "train")), "-o", rel(ck / "final.nlmm"),
            "--arch", arch, *(["--forget-bias", f"{a.forget_bias:g}"] if arch == "lstm" else []),
            "--vocab", str(a.vocab), "--dim", str(a.dim), "--hidden", str(a.hidden),
            "--classes", str(a.classes), "--tokens", str(a.tokens), "--seed", str(a.seed),
            "--dev", rel(os.path.join(corpus, "dev", "dev-00.jsonl.xz")), "--checkpoint-dir", rel(ck),
            "--batch", str(a.batch), "--bptt", str(a.bptt), "--lr", str(a.lr), "--name", f"family-{arch}",
            "--cache-dir", rel(ck.parent / "tokens"), "--quiet", "--resume"]


def kn_cmd(a, out: Path, corpus: str, network: Path | None):
    """The Kneser-Ney command of a row: alone (the model type) or mixed with a trained network."""
    rel = lambda p: os.path.relpath(p, REPO)  # noqa: E731
    cmd = ["python", "-m", "nlmcodec.kn", rel(os.path.join(corpus, "train")), "-o", rel(out),
           "--tokens", str(a.tokens), "--batch", str(a.batch), "--bptt", str(a.bptt),
           "--cache-dir", rel(out.parent.parent / "tokens")]
    if network is None:
        return cmd + ["--vocab", str(a.vocab), "--classes", str(a.classes), "--name", "family-kn"]
    bundled = not isinstance(network, Path)            # a bundled model's name
    return cmd + ["--network", network if bundled else rel(network),
                  "--dev", rel(os.path.join(corpus, "dev", "dev-00.jsonl.xz")),
                  "--name", f"family-{network if bundled else network.parent.name}+kn"]


def coded(model, texts, adapt):
    """(bits per byte, tokens per CPU second, coded bytes, tokens) of texts, each coded as one group in the
    encoder's blocks."""
    from nlmcodec.train import word_model_coded

    nbytes = nin = ntok = 0
    t0 = time.process_time()
    for t in texts:
        n, k = word_model_coded(model, t, adapt)
        nbytes, nin, ntok = nbytes + n, nin + len(t), ntok + k
    dt = time.process_time() - t0
    return 8 * nbytes / nin, ntok / dt, nbytes, ntok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", type=int, default=24576)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--classes", type=int, default=192)
    ap.add_argument("--tokens", type=int, default=52_000_000, help="training tokens of every row")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--bptt", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--forget-bias", type=float, default=2.0, help="the LSTM's (docs/decisions/forget-bias.md)")
    ap.add_argument("--no-kn", dest="kn", action="store_false", help="leave out the Kneser-Ney rows")
    ap.add_argument("--bundled", default="", help="bundled networks trained on --tokens tokens with these sizes "
                    "(e.g. default-1) to add as rows, each with its Kneser-Ney mixture")
    ap.add_argument("--files", default="english", help="benchmark files or sets (default: the 14 English files)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "model_family.md"))
    a = ap.parse_args(argv)
    bench = load_bench()
    corpus = bench.require_corpus_dir()
    runs = REPO / "runs" / f"family-V{a.vocab}-D{a.dim}-H{a.hidden}-C{a.classes}-T{a.tokens}"
    import dev_sample

    dev = dev_sample.texts(runs / "dev_sample")
    files = bench.expand_files([a.files])
    texts = [bench.read_file(f)[1] for f in files]    # (name, bytes); Silesia files are stored xz-compressed
    from nlmcodec._model import Model

    rows, cmds = [], []
    types = [t for t in a.types.split(",") if t]
    plan = []                                   # (row name, directory, command)
    if a.kn:
        plan.append(("kn", runs / "kn", kn_cmd(a, runs / "kn" / "final.nlmm", corpus, None)))
    for arch in types:
        plan.append((arch, runs / arch, train_cmd(arch, a, runs / arch, corpus)))
        if a.kn and arch in KN_MIXES:
            plan.append((f"{arch}+kn", runs / f"{arch}+kn",
                         kn_cmd(a, runs / f"{arch}+kn" / "final.nlmm", corpus, runs / arch / "final.nlmm")))
    for b in [x for x in a.bundled.split(",") if x]:
        plan.append((b, None, None))
        if a.kn:
            plan.append((f"{b}+kn", runs / f"{b}+kn", kn_cmd(a, runs / f"{b}+kn" / "final.nlmm", corpus, b)))
    for name, ck, cmd in plan:
        if ck is None:                          # a bundled network: trained by the command of its manifest
            import nlmcodec

            m = nlmcodec.load_model(name)
            cmds.append(f"({name}: the bundled model, trained by the command in its manifest)")
        else:
            cmds.append(" ".join(["OPENBLAS_NUM_THREADS=1", *cmd]))
            if not (ck / "final.nlmm").exists():
                env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
                t0 = time.time()
                ck.mkdir(parents=True, exist_ok=True)
                subprocess.run([sys.executable, *cmd[1:]], cwd=REPO, env=env, check=False)
                print(f"{name}: built in {time.time() - t0:.0f} s", flush=True)
            if not (ck / "final.nlmm").exists():
                raise SystemExit(f"{name}: its command did not write {ck / 'final.nlmm'}")
            m = Model.load(ck / "final.nlmm")
        # a row measured before (same model, same files) is read back: rows can be measured by separate runs
        key = {"model_id": m.model_id.hex(), "files": files}
        saved = runs / name / "row.json"
        if saved.exists() and json.loads(saved.read_text()).get("key") == key:
            rows.append(json.loads(saved.read_text())["row"])
            print(f"{name}: measured before ({saved.relative_to(REPO)})", flush=True)
            continue
        # the trainer's dev evaluation is of the network alone: not a figure of a Kneser-Ney row
        dev_nats = (m.metadata.get("dev") or {}).get("nats_per_token") if not m.kn else None
        row = {"type": name, "dev_nats": dev_nats, "size": m.nbytes,
               "params": m.params.size, "kn_bytes": len(m.kn), "lam": m.metadata.get("kn_lambda")}
        for mode, adapt in (("static", False), ("dynamic", True)):
            row[f"dev_{mode}"], _, nb, nt = coded(m, dev, adapt)
            row[f"devnats_{mode}"] = 8 * nb * math.log(2) / nt
            row[f"eng_{mode}"], row[f"tps_{mode}"], _, _ = coded(m, texts, adapt)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps({"key": key, "row": row}))
        rows.append(row)
        print(row, flush=True)
    out = ["# The model family on one yardstick", "",
           f"`python benchmarks/model_family.py --vocab {a.vocab} --dim {a.dim} --hidden {a.hidden} --classes "
           f"{a.classes} --tokens {a.tokens}"
           f"{'' if a.types == ','.join(TYPES) else ' --types ' + (a.types or repr(''))}"
           f"{' --bundled ' + a.bundled if a.bundled else ''}"
           f"{'' if a.kn else ' --no-kn'}`: every row trained with the same budget of {a.tokens:,} tokens "
           f"(batch {a.batch}, BPTT {a.bptt}, Adam lr {a.lr:g}, seed {a.seed}), V {a.vocab}, D {a.dim}, "
           f"H {a.hidden}, C {a.classes}; the NPLM reads 3 previous tokens, the LSTM's forget-gate bias is "
           f"{a.forget_bias:g} (docs/decisions/forget-bias.md). Bits per byte are exact codes "
           f"(word-model payloads); the English set is {len(files)} files, {sum(map(len, texts)):,} bytes; "
           "speed in tokens per CPU second on this machine. Kneser-Ney rows: trigrams counted on the same "
           f"{a.tokens:,} training tokens (the model type `kn`: λ = 0 over a bias-only network for case and gap; "
           "`+kn`: the trained network mixed with them, λ = the network's weight chosen on dev; the counts do "
           "not adapt, so `kn`'s dynamic column is its static code).", "",
           "| model | λ | dev nats/token | dev code nats/token static | dynamic | dev bits/byte static | dynamic | "
           "English bits/byte static | dynamic | tokens/s static | dynamic | parameters | Kneser-Ney bytes | "
           "model file |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lam = "" if r["lam"] is None else f"{r['lam']:g}"
        dn = "" if r["dev_nats"] is None else f"{r['dev_nats']:.4f}"
        out.append(f"| {r['type']} | {lam} | {dn} | {r['devnats_static']:.4f} | {r['devnats_dynamic']:.4f} | "
                   f"{r['dev_static']:.4f} | {r['dev_dynamic']:.4f} | "
                   f"{r['eng_static']:.4f} | {r['eng_dynamic']:.4f} | {r['tps_static']:,.0f} | "
                   f"{r['tps_dynamic']:,.0f} | {r['params']:,} | {r['kn_bytes']:,} | {r['size']:,} |")
    out += ["", "Commands (run from the repository; each training resumes from its checkpoints):", ""]
    out += [f"    {c}" for c in cmds]
    write_report(out, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
