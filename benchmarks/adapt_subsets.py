"""Cheaper adaptation on dev (issue 11 item 3): the ratio and the speed of adapting subsets of the model.

    python benchmarks/adapt_subsets.py [--per-source 300000] [--runs 3] [--out benchmarks/adapt_subsets.md]
    python benchmarks/adapt_subsets.py --english [--rows 1,7] [--out benchmarks/adapt_subsets_english.md]

Dynamic mode (codec/FORMAT.md §6.3-§6.4) updates every part of the model after every
segment: the heads (Wc, bc, Wo, bo and the case and gap heads), the embeddings (E, Ecase, Egap) and the body
(Wx, Wh, bh), by truncated BPTT over the segment.  Format 12's heads mode (§6.5) adapts the heads only, and its transition,
which then never changes, uses the integer products of static mode (§2.6); the last row is the same schedule
with the float transition, to show what each half of that change gives.  The schedules measured here (nlm.h nlm_codec_set_schedule) do that only
every k-th segment ("deep") and in the others update the heads alone (no gradient into the hidden state),
or the heads and the embeddings by a one-step gradient (each token's head gradient through the body's last
transition, not chained).  k = 0: never deep.  Static coding is the floor of both columns.

The text is speller_dev.py's dev set (per source of dev/*.jsonl.xz its first --per-source bytes), each
coded as one group of the encoder's word-model blocks from the trained state (_benchlib.code_group), with
the current format's options.  Bytes are the word model's payloads (exact); the time is the CPU time of
encoding (decoding runs the same steps), median of --runs, the schedules interleaved run by run.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import nlmcodec  # noqa: E402
from _benchlib import code_group, write_report  # noqa: E402
from nlmcodec import _core  # noqa: E402
from speller_dev import dev_set  # noqa: E402

# (label, adapt, (deep_every, shallow_emb, skip_permille), forward); rows 1 and 7 are formats (FORMAT.md §6):
# everything every segment is dynamic mode, heads only over the integer transition format 12's heads mode
F, I = _core.FORWARD_FLOAT, _core.FORWARD_INT8
SCHEDULES = [
    ("static", False, None, I),
    ("everything, every segment (dynamic mode)", True, (1, 0, 0), I),
    ("deep every 2nd segment, else heads", True, (2, 0, 0), I),
    ("deep every 2nd segment, else heads + embeddings", True, (2, 1, 0), I),
    ("deep every 4th segment, else heads", True, (4, 0, 0), I),
    ("deep every 4th segment, else heads + embeddings", True, (4, 1, 0), I),
    ("heads + embeddings only (one-step)", True, (0, 1, 0), I),
    ("heads only, integer transition (heads mode)", True, (0, 0, 0), I),
    ("everything; skip segments with mean p >= 0.25", True, (1, 0, 250), I),
    ("everything; skip segments with mean p >= 0.125", True, (1, 0, 125), I),
    ("everything; skip segments with mean p >= 0.063", True, (1, 0, 63), I),
    ("heads only, float transition", True, (0, 0, 0), F),
]


def english(model, rows, out):
    """--english: the 14 English benchmark files, each one group of the encoder's word-model blocks, with the
    schedules numbered `rows` (indices into SCHEDULES; the first is the baseline): bytes and the change per
    file (the issue's "at most +0.5% per file"), one run each (CPU seconds as a rough speed)."""
    import lzma

    from nlmcodec._bench import ENGLISH, resolve_file

    chosen = [SCHEDULES[i] for i in rows]
    lines = [f"Model `{model.name}`, the 14 English benchmark files (reported on, never tuned on), each one group.  "
             f"Command: `python benchmarks/adapt_subsets.py --english --rows {','.join(map(str, rows))}`.  "
             "Word-model payload bytes; in brackets the change against the first row.", "",
             "| file | bytes | " + " | ".join(label for label, _, _, _ in chosen) + " |",
             "|---|---|" + "---|" * len(chosen)]
    tot, secs = [0] * len(chosen), [0.0] * len(chosen)
    n_all = 0
    for name in ENGLISH:
        path = resolve_file(name)
        data = open(path, "rb").read()
        if path.endswith(".xz"):
            data = lzma.decompress(data)
        n_all += len(data)
        cells, first = [], None
        for k, (label, adapt, sched, fwd) in enumerate(chosen):
            sizes, _, t = code_group(model, data, adapt, **({"schedule": sched, "forward": fwd} if adapt else {}))
            b = sum(sizes)
            tot[k] += b
            secs[k] += t
            first = b if first is None else first
            cells.append(f"{b:,}" if k == 0 else f"{b:,} ({100 * (b - first) / first:+.2f}%)")
        lines.append(f"| {name} | {len(data):,} | " + " | ".join(cells) + " |")
    lines.append(f"| all | {n_all:,} | " + " | ".join(
        f"{b:,} ({8 * b / n_all:.4f} bits/byte" + ("" if k == 0 else f", {100 * (b - tot[0]) / tot[0]:+.2f}%") + ")"
        for k, b in enumerate(tot)) + " |")
    lines.append(f"| KB/s (CPU, one run) | | " + " | ".join(f"{n_all / 1000 / t:.1f}" for t in secs) + " |")
    write_report(lines, out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--per-source", type=int, default=300_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--model", default="default")
    p.add_argument("--english", action="store_true", help="the 14 English benchmark files instead of dev")
    p.add_argument("--rows", default="1,7", help="--english: the schedules (indices into SCHEDULES)")
    p.add_argument("--out")
    a = p.parse_args(argv)
    model = nlmcodec.load_model(a.model)
    model.native()
    if a.english:
        return english(model, [int(x) for x in a.rows.split(",")], a.out)
    texts = dev_set(a.per_source)
    n = sum(len(t) for t in texts.values())
    size, skip = {}, {}
    secs = {label: [] for label, _, _, _ in SCHEDULES}
    for run in range(a.runs):
        for label, adapt, sched, fwd in SCHEDULES:
            total_b = total_t = segs = skipped = 0
            per = {}
            for name, text in texts.items():
                args = {"schedule": sched, "forward": fwd} if adapt else {}
                sizes, st, t = code_group(model, text, adapt, **args)
                segs, skipped = segs + st["segments"], skipped + st["segments_skipped"]
                per[name] = sum(sizes)
                total_b += per[name]
                total_t += t
            if run == 0:
                size[label], skip[label] = per, (skipped / segs if segs else None)
            elif per != size[label]:
                raise SystemExit(f"{label}: sizes differ between runs (not deterministic)")
            secs[label].append(total_t)
    base = sum(size[SCHEDULES[1][0]].values())
    static = sum(size["static"].values())
    names = list(texts)
    rows = [f"Model `{a.model}`, dev/ first {a.per_source:,} bytes per source ({', '.join(names)}; {n:,} bytes), "
            f"one group each.  Command: `python benchmarks/adapt_subsets.py --per-source {a.per_source} "
            f"--runs {a.runs}`.  KB/s: encoding, CPU time, median of {a.runs}.", "",
            "| schedule | " + " | ".join(names) +  " | all bytes | bits/byte | vs dynamic | share of the "
            "dynamic gain kept | segments skipped | KB/s | speed vs dynamic |",
            "|---|" + "---|" * len(names) + "---|---|---|---|---|---|---|"]
    t0 = statistics.median(secs[SCHEDULES[1][0]])
    for label, _, _, _ in SCHEDULES:
        b = sum(size[label].values())
        t = statistics.median(secs[label])
        kept = (static - b) / (static - base) if static != base else 0.0
        rows.append(f"| {label} | " + " | ".join(f"{size[label][k]:,}" for k in names) +
                    f" | {b:,} | {8 * b / n:.4f} | {100 * (b - base) / base:+.2f}% | {100 * kept:.0f}% | "
                    f"{'-' if skip[label] is None else f'{100 * skip[label]:.1f}%'} | {n / 1000 / t:.1f} | {t0 / t:.2f}x |")
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
