"""Choosing a bundled model per frame by a probe: how often the probe picks the model that codes the whole
file smaller, and what the choice costs against the best of the two, per dev source.

    python benchmarks/model_choice.py --models default-2,default-3 --probes 1x16384@16384,4x4096,8x4096 \
        [--max-source-bytes N] [--parts dev,english,structured,speed] -o benchmarks/model_choice.md

Every dev document is compressed on its own in the default mode with each model (the file a user would
have).  A probe KxP[@W] is K pieces of P bytes spread over the first W bytes (default: the encoder's
window, one group), _encode.choice_head, coded from the trained state by each model (_encode.probe_cost) in
--probe-mode (static, or heads: the frame's mode, as the encoder does); 1x16384@16384 is the first 16 KiB.  The probe is chosen on dev only; the benchmark
files are reported with the encoder's own choice (_encode.choose_model), never tuned on.
"""
from __future__ import annotations

import argparse
import lzma
import os
import sys

import nlmcodec
from nlmcodec import _bench as B
from nlmcodec import _encode as E

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import byte_targets  # noqa: E402  (the 16 structured files)
import make_ratios  # noqa: E402  (the 14 English files)
from model_compare import ADAPT, cpu_seconds, dev_documents  # noqa: E402


def sizes(data, models):
    return [len(nlmcodec.compress(data, model=m, adapt=ADAPT)) for m in models]


PROBE_ADAPT = False


def parse_probe(spec):
    """"KxP[@W]" -> (K, P, W or None)"""
    k, rest = spec.split("x")
    p, _, w = rest.partition("@")
    return int(k), int(p), int(w) if w else None


def costs(data, models, probes):
    """{probe spec: [probe cost per model]}"""
    out = {}
    for spec in probes:
        head = E.choice_head(data, *parse_probe(spec))
        out[spec] = [E.probe_cost(m, head, PROBE_ADAPT) for m in models]
    return out


def pick(cost):
    """Index of the model the encoder would choose from these probe costs (the first of the cheapest)."""
    known = [(c, i) for i, c in enumerate(cost) if c is not None]
    return min(known)[1] if known else 0


def dev_rows(models, probes, max_source_bytes):
    rows = []
    for source, docs in sorted(dev_documents(max_source_bytes).items()):
        row = {"source": source, "docs": len(docs), "bytes": sum(map(len, docs)),
               "fixed": [0] * len(models), "best": 0, "chosen": {p: 0 for p in probes},
               "wrong": {p: 0 for p in probes}}
        for d in docs:
            s = sizes(d, models)
            c = costs(d, models, probes)
            row["fixed"] = [a + b for a, b in zip(row["fixed"], s)]
            row["best"] += min(s)
            for p in probes:
                k = pick(c[p])
                row["chosen"][p] += s[k]
                row["wrong"][p] += s[k] > min(s)
        rows.append(row)
        print(source, row, file=sys.stderr, flush=True)
    return rows


def file_rows(models, paths):
    rows = []
    for spec in paths:
        name, data = B.read_file(spec)
        s = sizes(data, models)
        k = [m.model_id for m in models].index(E.choose_model(models, data, ADAPT).model_id)
        frame = nlmcodec.compress(data)
        assert nlmcodec.decompress(frame) == data
        rows.append({"file": os.path.basename(name), "bytes": len(data), "fixed": s, "chosen": k,
                     "compress": len(frame)})
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def speed_rows(models, names, runs):
    """book1, CPU seconds (median of runs): xz -9e, each model given, and compress() choosing."""
    _, data = B.read_file("book1")
    rows = [("xz -9e", len(data) / cpu_seconds(lambda d: lzma.compress(d, preset=9 | lzma.PRESET_EXTREME), data, runs)
             / 1000, None)]
    for label, m in list(zip(names, models)) + [("compress() (chooses)", None)]:
        frame = nlmcodec.compress(data, model=m, adapt=ADAPT)
        c = cpu_seconds(lambda d: nlmcodec.compress(d, model=m, adapt=ADAPT), data, runs)
        d = cpu_seconds(lambda f: nlmcodec.decompress(f), frame, runs)
        rows.append((label, len(data) / c / 1000, len(data) / d / 1000))
        print(rows[-1], file=sys.stderr, flush=True)
    t = cpu_seconds(lambda d: E.choose_model(models, d, ADAPT), data, runs)
    rows.append((f"the choice alone (choose_model: {t:.3f} s)", len(data) / t / 1000, None))
    return rows


def pct(a, b):
    return f"{100.0 * (b - a) / a:+.2f}%"


def render(args, models, dev, files, speed):
    names = args.models.split(",")
    out = [f"# Choosing the model per frame: {' or '.join(f'`{n}`' for n in names)}", "",
           f"`python benchmarks/model_choice.py {' '.join(args.argv)}`; mode: heads (the default); load average "
           f"at the start {LOAD:.1f}.", ""]
    if dev:
        ps = args.probes.split(",")
        out += ["## Dev, per source", "",
                "Each document compressed on its own with each model; *best*: the smaller of the two per document "
                "(an oracle); *probe KxP@W*: the model a probe of K pieces of P bytes over the first W bytes "
                "(default: one group) picks, and in brackets the documents where that was not the smaller one.", "",
                "| source | docs | bytes | " + " | ".join(names) + " | best | " +
                " | ".join(f"probe {p}" for p in ps) + " |",
                "|---|---:|---:|" + "---:|" * (len(names) + 1 + len(ps))]
        tot = {"docs": 0, "bytes": 0, "fixed": [0] * len(names), "best": 0, "chosen": {p: 0 for p in ps},
               "wrong": {p: 0 for p in ps}}
        for r in dev + [None]:
            if r is None:
                r, label = tot, "**all**"
            else:
                label = r["source"]
                for k in ("docs", "bytes", "best"):
                    tot[k] += r[k]
                tot["fixed"] = [a + b for a, b in zip(tot["fixed"], r["fixed"])]
                for p in ps:
                    tot["chosen"][p] += r["chosen"][p]
                    tot["wrong"][p] += r["wrong"][p]
            out.append(f"| {label} | {r['docs']} | {r['bytes']:,} | " +
                       " | ".join(f"{v:,}" for v in r["fixed"]) + f" | {r['best']:,} | " +
                       " | ".join(f"{r['chosen'][p]:,} ({r['wrong'][p]})" for p in ps) + " |")
        out += ["", "Against the first model, per source: " + "; ".join(
            f"{r['source']} {pct(r['fixed'][0], r['chosen'][ps[-1]])}" for r in dev) + f" (probe {ps[-1]}).", ""]
    if files:
        out += ["## Benchmark files (reported, never tuned on)", "",
                f"*chosen*: the encoder's choice (_encode.choose_model: {E.CHOICE_PIECES} pieces of "
                f"{E.CHOICE_PIECE_SIZE:,} bytes over the first {E.CHOICE_WINDOW >> 20} MiB); *compress()*: the frame "
                f"the default compress() writes (it makes this choice).", "",
                "| file | bytes | " + " | ".join(names) + " | chosen | compress() | vs first |",
                "|---|---:|" + "---:|" * len(names) + "---|---:|---:|"]
        for r in files:
            out.append(f"| {r['file']} | {r['bytes']:,} | " + " | ".join(f"{v:,}" for v in r["fixed"]) +
                       f" | {names[r['chosen']]} | {r['compress']:,} | {pct(r['fixed'][0], r['compress'])} |")
        out.append("")
    if speed:
        out += ["## Speed: book1, one thread, CPU time", "",
                f"Median of {args.runs} runs, KB/s of input, xz -9e in the same process.", "",
                "| codec | compress KB/s | decompress KB/s |", "|---|---:|---:|"]
        for label, c, d in speed:
            out.append(f"| {label} | {c:,.0f} | {'' if d is None else f'{d:,.0f}'} |")
        out.append("")
    return "\n".join(out)


LOAD = os.getloadavg()[0]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="default-2,default-3")
    p.add_argument("--probes", default="1x16384@16384,4x4096,8x4096")
    p.add_argument("--parts", default="dev,english,structured,speed")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--max-source-bytes", type=int, default=0)
    p.add_argument("--probe-mode", choices=("static", "heads"), default="static")
    p.add_argument("-o", "--output", default=None)
    args = p.parse_args(argv)
    global PROBE_ADAPT
    PROBE_ADAPT = {"static": False, "heads": "heads"}[args.probe_mode]
    args.argv = argv
    models = [nlmcodec.load_model(m) for m in args.models.split(",")]
    parts = args.parts.split(",")
    dev = dev_rows(models, args.probes.split(","), args.max_source_bytes) \
        if "dev" in parts else []
    paths = (B.expand_files(make_ratios.DEFAULT_FILES) if "english" in parts else []) + \
        (B.expand_files(byte_targets.FILES) if "structured" in parts else [])
    files = file_rows(models, paths) if paths else []
    speed = speed_rows(models, args.models.split(","), args.runs) if "speed" in parts else []
    text = render(args, models, dev, files, speed)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
