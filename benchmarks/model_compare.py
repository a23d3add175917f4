"""Two models side by side, as a new default model must be judged: per dev source, nats per token (the
training code's own evaluation, python/nlmcodec/train.py dev_eval) and the exact code lengths of the dev
documents in the default mode (each document compressed on its own, as a user's file would be); the 14
English and 16 structured benchmark files in the default mode; book1's speed beside xz -9e.

    python benchmarks/model_compare.py --old default-2 --new runs/x/final.nlmm --parts dev,english,structured,speed \
        [--max-source-bytes N] -o benchmarks/model_compare.md

--max-source-bytes N caps each dev source at its first documents up to N bytes (the table says so).  The
corpus is $NLMCODEC_CORPUS or ../shared/corpus; models are names on the model search path or .nlmm paths.
Nothing here is tuned: it only measures.
"""
from __future__ import annotations

import argparse
import collections
import json
import lzma
import os
import statistics
import sys
import tempfile
import time

import nlmcodec
from nlmcodec import _bench as B
from nlmcodec import train as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import byte_targets  # noqa: E402  (the 16 structured files)
import make_ratios  # noqa: E402  (the 14 English files)

MODE = "heads"              # the default mode
ADAPT = {"static": False, "heads": "heads", "dynamic": True}[MODE]


def dev_documents(max_source_bytes):
    """{source: [text bytes, ...]} of every dev document (capped per source when asked)."""
    docs = collections.defaultdict(list)
    size = collections.Counter()
    dev = os.path.join(B.require_corpus_dir(), "dev")
    for name in sorted(os.listdir(dev)):
        if not name.endswith(".jsonl.xz"):
            continue
        with lzma.open(os.path.join(dev, name), "rt", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                text = d["text"].encode("utf-8")
                if max_source_bytes and size[d["source"]] >= max_source_bytes:
                    continue
                docs[d["source"]].append(text)
                size[d["source"]] += len(text)
    return docs


def dev_table(old, new, max_source_bytes):
    rows = []
    docs = dev_documents(max_source_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        for source in sorted(docs):
            path = os.path.join(tmp, f"{source}.txt")
            with open(path, "wb") as f:
                f.write(b"\n".join(docs[source]))
            n_in = sum(len(d) for d in docs[source])
            row = {"source": source, "documents": len(docs[source]), "bytes": n_in}
            for tag, model in (("old", old), ("new", new)):
                ev = T.dev_eval(model, [path], n_tokens=200_000)
                row[f"{tag}_nats"], row[f"{tag}_unk"] = ev["nats_per_token"], ev["unk_rate"]
                row[f"{tag}_bytes"] = sum(len(nlmcodec.compress(d, model=model, adapt=ADAPT)) for d in docs[source])
            rows.append(row)
            print(f"{source}: {row}", file=sys.stderr, flush=True)
    return rows


def files_table(old, new, paths):
    rows = []
    for spec in paths:
        name, data = B.read_file(spec)
        row = {"file": os.path.basename(name), "bytes": len(data)}
        for tag, model in (("old", old), ("new", new)):
            frame = nlmcodec.compress(data, model=model, adapt=ADAPT)
            assert nlmcodec.decompress(frame, model=model) == data
            row[f"{tag}_bytes"] = len(frame)
        rows.append(row)
        print(f"{row}", file=sys.stderr, flush=True)
    return rows


def cpu_seconds(fn, arg, runs):
    times = []
    for _ in range(runs):
        t0 = time.process_time()
        fn(arg)
        times.append(time.process_time() - t0)
    return statistics.median(times)


def speed_table(old, new, runs):
    _, data = B.read_file("book1")
    xz = cpu_seconds(lambda d: lzma.compress(d, preset=9 | lzma.PRESET_EXTREME), data, runs)
    rows = [{"codec": "xz -9e", "compress_kbs": len(data) / xz / 1000, "decompress_kbs": None}]
    for tag, model in (("old", old), ("new", new)):
        frame = nlmcodec.compress(data, model=model, adapt=ADAPT)
        c = cpu_seconds(lambda d: nlmcodec.compress(d, model=model, adapt=ADAPT, threads=1), data, runs)
        d = cpu_seconds(lambda f: nlmcodec.decompress(f, model=model, threads=1), frame, runs)
        rows.append({"codec": f"{tag} ({MODE})", "compress_kbs": len(data) / c / 1000,
                     "decompress_kbs": len(data) / d / 1000})
    return rows


def pct(a, b):
    return f"{100.0 * (b - a) / a:+.2f}%"


def render(args, old_name, new_name, dev, english, structured, speed):
    out = [f"# {new_name} against {old_name}", "",
           f"`python benchmarks/model_compare.py {' '.join(sys.argv[1:])}`; mode: {MODE} (the default); "
           f"load average at the start {os.getloadavg()[0]:.1f}.", ""]
    if dev:
        cap = f" (each source capped at {args.max_source_bytes:,} bytes of documents)" if args.max_source_bytes else ""
        out += [f"## Dev, per source{cap}", "",
                "nats/token: train.py's dev evaluation (200,000 tokens in 16 slices; OOV words are `<unk>`, "
                "so the two vocabularies' figures differ in what they leave to the speller); bytes: each "
                "document compressed on its own, summed.", "",
                "| source | docs | bytes | nats/tok old | nats/tok new | unk old | unk new | coded old | coded new | change |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in dev:
            out.append(f"| {r['source']} | {r['documents']} | {r['bytes']:,} | {r['old_nats']:.3f} | "
                       f"{r['new_nats']:.3f} | {r['old_unk']:.4f} | {r['new_unk']:.4f} | {r['old_bytes']:,} | "
                       f"{r['new_bytes']:,} | {pct(r['old_bytes'], r['new_bytes'])} |")
        out.append("")
    for title, rows in (("The 14 English files", english), ("The 16 structured files", structured)):
        if not rows:
            continue
        out += [f"## {title}", "", "| file | bytes | old | new | bpb old | bpb new | change |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            out.append(f"| {r['file']} | {r['bytes']:,} | {r['old_bytes']:,} | {r['new_bytes']:,} | "
                       f"{8 * r['old_bytes'] / r['bytes']:.3f} | {8 * r['new_bytes'] / r['bytes']:.3f} | "
                       f"{pct(r['old_bytes'], r['new_bytes'])} |")
        tot = {k: sum(r[k] for r in rows) for k in ("bytes", "old_bytes", "new_bytes")}
        out += [f"| **all** | {tot['bytes']:,} | {tot['old_bytes']:,} | {tot['new_bytes']:,} | "
                f"{8 * tot['old_bytes'] / tot['bytes']:.3f} | {8 * tot['new_bytes'] / tot['bytes']:.3f} | "
                f"{pct(tot['old_bytes'], tot['new_bytes'])} |", ""]
    if speed:
        out += [f"## Speed, book1, one thread, CPU time, median of {args.runs}", "",
                "| codec | compress KB/s | decompress KB/s |", "|---|---:|---:|"]
        for r in speed:
            d = f"{r['decompress_kbs']:.0f}" if r["decompress_kbs"] else ""
            out.append(f"| {r['codec']} | {r['compress_kbs']:.0f} | {d} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", default="default-2")
    p.add_argument("--new", required=True)
    p.add_argument("--parts", default="dev,english,structured,speed")
    p.add_argument("--max-source-bytes", type=int, default=0)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("-o", "--output", default=None)
    args = p.parse_args(argv)
    parts = set(args.parts.split(","))
    old, new = nlmcodec.load_model(args.old), nlmcodec.load_model(args.new)
    done = {"dev": [], "english": [], "structured": [], "speed": []}
    makers = {"dev": lambda: dev_table(old, new, args.max_source_bytes),
              "english": lambda: files_table(old, new, B.expand_files(make_ratios.DEFAULT_FILES)),
              "structured": lambda: files_table(old, new, B.expand_files(byte_targets.FILES)),
              "speed": lambda: speed_table(old, new, args.runs)}
    for part in ("dev", "english", "structured", "speed"):
        if part in parts:
            done[part] = makers[part]()
            text = render(args, args.old, args.new, done["dev"], done["english"], done["structured"], done["speed"])
            if args.output:              # after each part: a failure later keeps what was measured
                with open(args.output, "w") as f:
                    f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
