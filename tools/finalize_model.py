"""Bundle a trained checkpoint as a package model, tune its dynamic evaluation on dev, record dev figures.

    python tools/finalize_model.py runs/default --name default --command "<the training command>"

1. train.bundle_model: copies the chosen checkpoint (best dev loss) to python/nlmcodec/models/<name>.nlmm
   (the package's models: the default, default-N, only) or to --models-dir (a test model: tests/models, found
   by the tests through NLMCODEC_MODEL_PATH) with its manifest and dev curve;
2. grid search of the dynamic-evaluation settings (seg_len, lr, decay) on the dev sample of
   tools/dev_sample.py (held out from training; never a benchmark file), by the word model's coded size;
3. writes the tuned model (a new model id) and adds to the manifest: the grid, and the dev figures
   static and dynamic (nats per token and bits per byte of the coded stream, exact from the coder).
"""
import argparse
import json
import math
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from nlmcodec import train  # noqa: E402
from nlmcodec._model import Model  # noqa: E402

import dev_sample  # noqa: E402


def coded(model, adapt, texts):
    """Word-model bytes of each text coded as one group, in the encoder's blocks (train.word_model_coded)."""
    bits = tokens = nbytes = 0
    for t in texts:
        n, k = train.word_model_coded(model, t, adapt)
        bits += 8 * n
        tokens += k
        nbytes += len(t)
    return {"bytes_out": bits // 8, "nats_per_token": bits * math.log(2) / tokens, "bits_per_byte": bits / nbytes,
            "tokens": int(tokens), "bytes_in": nbytes}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint_dir")
    ap.add_argument("--name", default="default")
    ap.add_argument("--command", default=None)
    ap.add_argument("--models-dir", type=pathlib.Path, default=REPO / "python" / "nlmcodec" / "models",
                    help="where the model goes (default: the package's models; test models: tests/models)")
    ap.add_argument("--seg-lens", default="10,20")
    ap.add_argument("--lrs", default="5e-4,1e-3,2e-3")
    ap.add_argument("--decays", default="0,1e-4,1e-3")
    a = ap.parse_args(argv)
    models = a.models_dir
    man = train.bundle_model(a.checkpoint_dir, models, name=a.name, command=a.command)
    path = models / f"{a.name}.nlmm"
    model = Model.load(path)
    sample_dir = REPO / "runs" / "dev_sample"
    dev_sample.main(sample_dir)
    texts = [(sample_dir / "dev_book.txt").read_bytes(), (sample_dir / "dev_tech.txt").read_bytes()]
    grid = []
    t0 = time.time()
    for L in [int(x) for x in a.seg_lens.split(",")]:
        for lr in [float(x) for x in a.lrs.split(",")]:
            for dc in [float(x) for x in a.decays.split(",")]:
                m = model.with_config(seg_len=L, lr=lr, decay=dc)
                n = coded(m, True, texts)["bytes_out"]
                grid.append({"seg_len": L, "lr": lr, "decay": dc, "dev_bytes": n})
                print(f"seg_len {L} lr {lr:g} decay {dc:g}: {n} bytes", flush=True)
    best = min(grid, key=lambda g: g["dev_bytes"])
    tuned = model.with_config(seg_len=best["seg_len"], lr=best["lr"], decay=best["decay"])
    tuned.save(path)
    tuned = Model.load(path)
    man.update({
        "model_id_sha256": tuned.model_id.hex(), "size_bytes": path.stat().st_size, "config": tuned.config,
        "dynamic_tuning": {"command": f"python tools/finalize_model.py {' '.join(argv or sys.argv[1:])}",
                           "dev_sample": "tools/dev_sample.py (300 kB of the longest dev book, 150 kB of dev PEPs/docs)",
                           "grid": grid, "chosen": best, "seconds": round(time.time() - t0)},
        "dev_figures": {"static": coded(tuned, False, texts), "dynamic": coded(tuned, True, texts)},
        "notes": "dynamic-evaluation settings tuned on dev by tools/finalize_model.py",
    })
    (models / f"{a.name}.json").write_text(json.dumps(man, indent=1) + "\n")
    print(json.dumps(man["dev_figures"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
