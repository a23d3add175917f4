"""The --train recipe by training-text size: a model trained with every default against the bundled model,
on held-out text of the same kind (docs/decisions/train-recipe.md).

    OPENBLAS_NUM_THREADS=1 python benchmarks/train_recipe.py --work /tmp/train-recipe \\
        [--cases de-0.8,tech-0.5,tech-5,tech-50,en-5] [--old-defaults] [--extra "--epochs 4 ..."] [--reuse] \\
        [-o TABLE.md]

Each case writes its training and held-out text under --work (once), then runs, one after the other,

    python -m nlmcodec --train TRAIN -o WORK/CASE.nlmm --quiet [EXTRA]

(with no EXTRA: every default, i.e. train.py's recipe for the size of TRAIN) and compares
``len(nlmcodec.compress(held, model=trained))`` with ``len(nlmcodec.compress(held))`` (the bundled default
model), both in the default mode.  CPU is the training process's user+system time.  --old-defaults trains with
the defaults before the recipe (--vocab 16384 --dim 128 --hidden 256 --classes 128 --epochs 1 --lr 3e-3
--warmup 200) instead.

The cases (the held-out text is never in the training text):

* ``de-0.8``: shared/corpus/ood/german-gutenberg.txt cut at the first line end after byte 800,000: the 800 KB
  before it to train on, the 200 KB after it held out (issue 43's must-show: >= 10 % smaller than the bundled
  model).
* ``tech-0.5``, ``tech-5``, ``tech-50``: technical English, which the bundled model was not trained on (it saw
  train-00..08, not train-tech-*): the documents of train/train-tech-*.jsonl.xz in a fixed shuffled order
  (random.Random(0)), whole documents up to 0.5, 5 or 50 MB; held out: the documents of dev/dev-tech-00.jsonl.xz
  in a fixed shuffled order, joined by blank lines, cut at the last line end within 300 KB.
* ``en-5``: English Gutenberg books and Python docs, the bundled model's own kind of text: the documents of
  train/train-00.jsonl.xz (shuffled, up to 5 MB); held out: the first 300 KB of dev/dev-00.jsonl.xz (shuffled,
  as above).
  The bundled model was trained on 120 M tokens of this: the row shows when training does not pay.

bench/ is never read.
"""
from __future__ import annotations

import argparse
import glob
import json
import lzma
import os
import random
import resource
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import nlmcodec  # noqa: E402
from nlmcodec._bench import require_corpus_dir  # noqa: E402
from nlmcodec.train import training_text_bytes  # noqa: E402

OLD_DEFAULTS = ["--vocab", "16384", "--dim", "128", "--hidden", "256", "--classes", "128", "--epochs", "1",
                "--lr", "3e-3", "--warmup", "200"]
CASES = ("de-0.8", "tech-0.5", "tech-5", "tech-50", "en-5")
HELD_BYTES = 300_000


def _docs(paths):
    out = []
    for p in paths:
        with lzma.open(p, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    out.append(json.loads(line)["text"])
    random.Random(0).shuffle(out)
    return out


def _take(docs, nbytes):
    """Whole documents from the front of docs up to nbytes of UTF-8 text: (list of texts, bytes)."""
    out, n = [], 0
    for d in docs:
        k = len(d.encode("utf-8"))
        if n + k > nbytes and out:
            break
        out.append(d)
        n += k
    return out, n


def _held(docs, nbytes):
    """The documents joined by blank lines, cut at the last line end within nbytes (books are longer)."""
    b = "\n\n".join(_take(docs, 2 * nbytes)[0]).encode("utf-8")[:nbytes]
    return b[:b.rindex(b"\n") + 1]


def _write_jsonl(path, texts):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"source": "train_recipe", "id": str(i), "title": "", "text": t}) + "\n")
    os.replace(tmp, path)


def prepare(case, work):
    """(training file, held-out bytes) of a case, written under work once."""
    corpus = require_corpus_dir()
    os.makedirs(work, exist_ok=True)
    if case == "de-0.8":
        tr, ho = os.path.join(work, "de-train.txt"), os.path.join(work, "de-held.txt")
        if not os.path.exists(ho):
            b = open(os.path.join(corpus, "ood", "german-gutenberg.txt"), "rb").read()
            cut = b.index(b"\n", 800_000) + 1       # at a line end
            open(tr, "wb").write(b[:cut])
            open(ho, "wb").write(b[cut:])
        return tr, open(ho, "rb").read()
    kind, mb = case.split("-")
    if kind == "tech":
        src = sorted(glob.glob(os.path.join(corpus, "train", "train-tech-*.jsonl.xz")))
        dev = [os.path.join(corpus, "dev", "dev-tech-00.jsonl.xz")]
    else:
        src = [os.path.join(corpus, "train", "train-00.jsonl.xz")]
        dev = [os.path.join(corpus, "dev", "dev-00.jsonl.xz")]
    tr, ho = os.path.join(work, f"{case}.jsonl"), os.path.join(work, f"{kind}-held.txt")
    if not os.path.exists(tr):
        texts, _ = _take(_docs(src), int(float(mb) * 1_000_000))
        _write_jsonl(tr, texts)
    if not os.path.exists(ho):
        open(ho, "wb").write(_held(_docs(dev), HELD_BYTES))
    return tr, open(ho, "rb").read()


def train_cpu(cmd):
    """Run cmd; (return code, CPU seconds of the child, wall seconds)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    rc = subprocess.run(cmd).returncode
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return rc, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), time.time() - t


def run_case(case, work, extra, reuse=False):
    train_file, held = prepare(case, work)
    tag = "".join(c if c.isalnum() else "_" for c in " ".join(extra))[:60]
    out = os.path.join(work, f"{case}{'-' + tag if tag else ''}.nlmm")
    cmd = [sys.executable, "-m", "nlmcodec", "--train", train_file, "-o", out, "-f", "--quiet", *extra]
    print("$", " ".join(shlex.quote(c) for c in cmd), flush=True)
    side = out + ".run.json"               # the training command and its CPU time, beside the model
    run = json.load(open(side)) if reuse and os.path.exists(side) and os.path.exists(out) else None
    if run is None or run["cmd"][1:] != cmd[1:]:
        rc, cpu, wall = train_cpu(cmd)
        if rc:
            raise SystemExit(f"training failed ({rc}): {' '.join(cmd)}")
        json.dump({"cmd": cmd, "cpu": cpu, "wall": wall}, open(side, "w"))
    else:
        cpu, wall = run["cpu"], run["wall"]
        print("  (the model trained before by this command; --reuse)", flush=True)
    m = nlmcodec.load_model(out)
    c = m.config
    bundled = len(nlmcodec.compress(held))
    trained = len(nlmcodec.compress(held, model=out))
    row = {"case": case, "text_mb": round(training_text_bytes([train_file]) / 1e6, 3),
           "held_bytes": len(held), "extra": " ".join(extra),
           "V": c["V"], "D": c["D"], "H": c["H"], "C": c["C"],
           "recipe": m.metadata.get("recipe"), "tokens_trained": m.metadata.get("tokens_trained"),
           "bundled": bundled, "trained": trained, "gain_pct": round(100 * (1 - trained / bundled), 2),
           "train_cpu_s": round(cpu, 1), "train_wall_s": round(wall, 1)}
    print(json.dumps(row), flush=True)
    with open(os.path.join(work, "results.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")
    return row


def table(rows):
    lines = ["| case | training text | recipe | V / D / H / C | tokens trained | held-out bytes | bundled model "
             "| trained model | smaller by | training CPU |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['text_mb']:.2f} MB | {r['recipe'] or r['extra']} "
                     f"| {r['V']} / {r['D']} / {r['H']} / {r['C']} | {r['tokens_trained']:,} | {r['held_bytes']:,} "
                     f"| {r['bundled']:,} | {r['trained']:,} | {r['gain_pct']:+.1f}% | {r['train_cpu_s']:.0f} s |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True, help="directory for the texts and the models")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--old-defaults", action="store_true", help="train with the defaults before the recipe")
    ap.add_argument("--extra", default="", help="training options added to every run (a sweep)")
    ap.add_argument("--reuse", action="store_true",
                    help="evaluate a model that the same command trained before in --work (its CPU time is read "
                         "from MODEL.run.json) instead of training it again")
    ap.add_argument("-o", "--output", help="also write the markdown table here")
    a = ap.parse_args(argv)
    extra = (OLD_DEFAULTS if a.old_defaults else []) + shlex.split(a.extra)
    rows = []
    for case in a.cases.split(","):
        rows.append(run_case(case, a.work, extra, a.reuse))
    text = "\n".join(table(rows)) + "\n"
    print(text)
    if a.output:
        open(a.output, "w").write(text)


if __name__ == "__main__":
    main()
