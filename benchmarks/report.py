#!/usr/bin/env python3
"""Benchmark report: nlmcodec (static and dynamic) against xz, bz2, zlib, zstd, brotli and PPMd.

    python benchmarks/report.py                         # 13 English Canterbury/Calgary files + dickens
    python benchmarks/report.py --quick                 # alice29.txt, paper1, paper5; one run
    python benchmarks/report.py --files all --runs 5 --out-dir /tmp/bench
    python benchmarks/report.py --files book1 paper1 --codecs nlm,xz-9e,xz-6 --model tiny

Writes ``report.md`` (Markdown tables), ``report.csv`` (one row per file and codec),
``report.json`` (rows + machine) and ``report.png`` (bits per byte against compress KB/s,
log x; needs matplotlib, the ``bench`` extra) into ``--out-dir`` (default benchmarks/results/).

How it measures (lzbench / Squash style):
* in memory, one thread, every result round-trip verified; the codecs of one run are measured
  one after the other on the same machine, so compare them within a run (the ``vs xz-9e``
  columns), not across runs;
* each (file, codec) pair runs in two fresh subprocesses, one for compression (N timed runs)
  and one for decompression (N timed runs, then the round trip is checked); speeds are
  input bytes / median wall time, in KB/s (1 KB = 1000 bytes); median CPU time is in the CSV;
* peak memory = the peak resident set size of that subprocess (Linux ``VmHWM``, else
  ``ru_maxrss``): the Python interpreter, the input and output buffers, the imports and the
  model load included (``base_rss_mb`` = the same process before the codec was imported or
  built, about 20 MB of interpreter and data);
* model size = the ``.nlmm`` file the decoder needs; ``compressed + model`` is the
  Large Text Compression Benchmark's total (baselines: model size 0).
Baseline sizes are checked against ``shared/guide/anchor_sizes.json`` when it is found.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _benchlib import load_bench  # noqa: E402

B = load_bench()

CSV_FIELDS = [
    "file", "codec", "options", "version", "bytes_in", "bytes_out", "ratio", "bpb",
    "size_vs_xz9e", "c_kbps", "d_kbps", "c_speed_vs_xz9e", "c_cpu_kbps", "d_cpu_kbps",
    "c_s", "d_s", "runs", "c_peak_rss_mb", "d_peak_rss_mb", "base_rss_mb",
    "model_bytes", "total_bytes", "model_id", "anchor_bytes",
]


# ----------------------------------------------------------------------------------------------
# Worker (runs in a fresh subprocess)
# ----------------------------------------------------------------------------------------------

def worker(phase: str, codec_name: str, file_spec: str, runs: int, warmup: int, model: str,
           tmp: str) -> int:
    name, data = B.read_file(file_spec)
    base = B.peak_rss_mb()
    codec = B.make_codec(codec_name, model)
    if phase == "c":
        out, walls, cpus = B.time_runs(codec.compress, data, runs, warmup)
        with open(tmp, "wb") as f:
            f.write(out)
        res = {"n_out": len(out)}
    else:
        with open(tmp, "rb") as f:
            comp = f.read()
        try:
            back, walls, cpus = B.time_runs(codec.decompress, comp, runs, warmup)
        except Exception as exc:
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}", "version": codec.version}))
            return 1
        if back != data:
            print(json.dumps({"error": f"round trip failed: {len(data)} bytes in, {len(back)} back",
                              "version": codec.version}))
            return 1
        res = {"n_out": len(comp)}
    res.update(file=name, n_in=len(data), walls=walls, cpus=cpus, peak_rss_mb=B.peak_rss_mb(),
               base_rss_mb=base, options=codec.options, version=codec.version,
               model_bytes=codec.model_size, model_id=codec.model_id)
    print(json.dumps(res))
    return 0


def run_worker(phase, codec_name, file_spec, args, tmp):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", phase, codec_name, file_spec,
           "--runs", str(args.runs), "--warmup", str(args.warmup), "--model", args.model, "--tmp", tmp]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout or None)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"worker {phase} exited {p.returncode}: {tail}")
    res = json.loads(lines[-1])
    if "error" in res or p.returncode:
        raise WorkerError(res.get("error", f"worker exited {p.returncode}"), res.get("version"))
    return res


class WorkerError(RuntimeError):
    def __init__(self, msg, version=None):
        super().__init__(msg)
        self.version = version


def measure_subprocess(codec_name: str, file_spec: str, args):
    fd, tmp = tempfile.mkstemp(prefix="nlmbench-", suffix=".bin")
    os.close(fd)
    try:
        c = run_worker("c", codec_name, file_spec, args, tmp)
        try:
            d = run_worker("d", codec_name, file_spec, args, tmp)
        except WorkerError as exc:
            if exc.version and exc.version != c["version"]:
                raise RuntimeError(f"{exc} -- not a codec fault: the build changed between the compress and "
                                   f"decompress workers ({c['version']} -> {exc.version}); rerun") from None
            raise
        if d["version"] != c["version"]:
            raise RuntimeError(f"the build changed between the compress and decompress workers "
                               f"({c['version']} -> {d['version']}); rerun")
    finally:
        os.unlink(tmp)
    codec = B.Codec(codec_name, c["options"], c["version"], None, None, c["model_bytes"], c["model_id"])
    r = B.summarize(codec, c["n_in"], c["n_out"], c["walls"], c["cpus"], d["walls"], d["cpus"])
    r.update(file=c["file"], c_peak_rss_mb=c["peak_rss_mb"], d_peak_rss_mb=d["peak_rss_mb"],
             base_rss_mb=min(c["base_rss_mb"], d["base_rss_mb"]))
    return r


def measure_inprocess(codec, file_spec: str, args):
    name, data = B.read_file(file_spec)
    r = B.measure(codec, data, args.runs, args.warmup)
    r.update(file=name, c_peak_rss_mb=float("nan"), d_peak_rss_mb=float("nan"), base_rss_mb=float("nan"))
    return r


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------

def load_anchors():
    for p in (os.path.join(REPO, "..", "shared", "guide", "anchor_sizes.json"),
              os.path.join(B.corpus_dir() or "", "..", "guide", "anchor_sizes.json")):
        if os.path.isfile(p):
            with open(p) as f:
                return json.load(f)
    return {}


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except Exception:
        return "?"


def fnum(x, fmt):
    try:
        if x != x:  # nan
            return ""
        return format(x, fmt)
    except (TypeError, ValueError):
        return str(x)


def add_relative(rows):
    """size and compress speed against xz-9e on the same file in the same run."""
    xz = {r["file"]: r for r in rows if r["codec"] == "xz-9e"}
    for r in rows:
        ref = xz.get(r["file"])
        r["size_vs_xz9e"] = r["bytes_out"] / ref["bytes_out"] if ref else float("nan")
        r["c_speed_vs_xz9e"] = r["c_kbps"] / ref["c_kbps"] if ref else float("nan")
        r["c_cpu_kbps"] = B.kbps(r["bytes_in"], r["c_cpu_s"])
        r["d_cpu_kbps"] = B.kbps(r["bytes_in"], r["d_cpu_s"])


def summary_rows(rows, codec_order):
    """One row per codec over the files every codec finished (sizes summed, speeds = total/total)."""
    files_by_codec = {}
    for r in rows:
        files_by_codec.setdefault(r["codec"], set()).add(r["file"])
    common = set.intersection(*files_by_codec.values()) if files_by_codec else set()
    out = []
    for c in codec_order:
        rs = [r for r in rows if r["codec"] == c and r["file"] in common]
        if not rs:
            continue
        n_in = sum(r["bytes_in"] for r in rs)
        n_out = sum(r["bytes_out"] for r in rs)
        cs = sum(r["c_s"] for r in rs)
        ds = sum(r["d_s"] for r in rs)
        peak = max((r.get("c_peak_rss_mb", float("nan")) for r in rs), default=float("nan"))
        dpeak = max((r.get("d_peak_rss_mb", float("nan")) for r in rs), default=float("nan"))
        out.append({
            "codec": c, "files": len(rs), "bytes_in": n_in, "bytes_out": n_out, "bpb": 8 * n_out / n_in,
            "c_kbps": B.kbps(n_in, cs), "d_kbps": B.kbps(n_in, ds),
            "c_cpu_kbps": B.kbps(n_in, sum(r["c_cpu_s"] for r in rs)),
            "d_cpu_kbps": B.kbps(n_in, sum(r["d_cpu_s"] for r in rs)),
            "c_peak_rss_mb": peak, "d_peak_rss_mb": dpeak,
            "model_bytes": rs[0]["model_bytes"], "total_bytes": n_out + rs[0]["model_bytes"],
        })
    xz = next((s for s in out if s["codec"] == "xz-9e"), None)
    for s in out:
        s["size_vs_xz9e"] = s["bytes_out"] / xz["bytes_out"] if xz else float("nan")
        s["total_vs_xz9e"] = s["total_bytes"] / xz["bytes_out"] if xz else float("nan")
    return out, sorted(common)


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (fnum(v, ".6g") if isinstance(v, float) else v) for k, v in r.items()})


def write_markdown(path, rows, summary, common, header, skipped):
    L = []
    L.append("# nlmcodec benchmark report\n")
    for line in header:
        L.append(f"* {line}")
    for name, why in skipped.items():
        L.append(f"* not measured: {name} ({why})")
    L.append("")
    if summary:
        L.append(f"## Summary over {len(common)} file(s): {', '.join(common)}\n")
        L.append("| codec | bytes in | bytes out | bits/byte | vs xz-9e | compress KB/s | decompress KB/s "
                 "| C / D KB/s (CPU time) | peak MB (c/d) | model bytes | compressed + model | (c+m) vs xz-9e |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in summary:
            L.append(f"| {s['codec']} | {s['bytes_in']:,} | {s['bytes_out']:,} | {s['bpb']:.3f} "
                     f"| {fnum(s['size_vs_xz9e'], '.3f')} | {s['c_kbps']:,.1f} | {s['d_kbps']:,.1f} "
                     f"| {s['c_cpu_kbps']:,.1f} / {s['d_cpu_kbps']:,.1f} "
                     f"| {fnum(s['c_peak_rss_mb'], '.0f')}/{fnum(s['d_peak_rss_mb'], '.0f')} "
                     f"| {s['model_bytes']:,} | {s['total_bytes']:,} | {fnum(s['total_vs_xz9e'], '.3f')} |")
        L.append("")
    L.append("## Per file\n")
    L.append("| file | codec | bytes in | bytes out | bits/byte | vs xz-9e | compress KB/s | decompress KB/s "
             "| peak MB (c/d) | model bytes | compressed + model |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        L.append(f"| {r['file']} | {r['codec']} | {r['bytes_in']:,} | {r['bytes_out']:,} | {r['bpb']:.3f} "
                 f"| {fnum(r['size_vs_xz9e'], '.3f')} | {r['c_kbps']:,.1f} | {r['d_kbps']:,.1f} "
                 f"| {fnum(r['c_peak_rss_mb'], '.0f')}/{fnum(r['d_peak_rss_mb'], '.0f')} "
                 f"| {r['model_bytes']:,} | {r['total_bytes']:,} |")
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


MARKERS = {"nlmcodec-static": ("*", "tab:red"), "nlmcodec-dynamic": ("P", "tab:purple"),
           "xz-9e": ("o", "tab:blue"), "xz-6": ("o", "tab:cyan"), "bz2-9": ("s", "tab:green"),
           "zlib-9": ("^", "tab:gray"), "zstd-19": ("D", "tab:orange"), "brotli-11": ("v", "tab:brown"),
           "ppmd-o16": ("X", "tab:olive")}


def _place_labels(ax, points, fontsize=9):
    """Annotate points, moving each label to the first of a few offsets where its box does not
    overlap a label already placed (points close together, e.g. xz-9e and zstd-19, stay readable)."""
    ch, lh = fontsize * 0.62 * ax.figure.dpi / 72, fontsize * 1.25 * ax.figure.dpi / 72
    placed = []
    offsets = [(7, 5), (7, -30), (-7, 5), (-7, -30), (7, 22), (7, -48), (-7, 22), (-7, -48), (7, 40), (7, -66)]
    for x, y, text in sorted(points, key=lambda p: (p[0], p[1])):
        px, py = ax.transData.transform((x, y))
        w = max(len(t) for t in text.splitlines()) * ch
        h = len(text.splitlines()) * lh
        best = None
        for dx, dy in offsets:
            dxp, dyp = dx * ax.figure.dpi / 72, dy * ax.figure.dpi / 72
            x0 = px + dxp if dx > 0 else px + dxp - w
            box = (x0, py + dyp, x0 + w, py + dyp + h)
            if all(box[2] < b[0] or box[0] > b[2] or box[3] < b[1] or box[1] > b[3] for b in placed):
                best = (dx, dy, box)
                break
        if best is None:
            dx, dy = offsets[0]
            best = (dx, dy, None)
        dx, dy, box = best
        if box is not None:
            placed.append(box)
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), fontsize=fontsize,
                    ha="left" if dx > 0 else "right", va="bottom", zorder=4,
                    arrowprops=dict(arrowstyle="-", color="0.5", lw=0.5) if abs(dy) > 10 else None)


def write_plot(path, rows, summary, title, speed="wall"):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed (pip install -e '.[bench]'): no plot"
    key = "c_cpu_kbps" if speed == "cpu" else "c_kbps"
    fig, ax = plt.subplots(figsize=(9, 6), dpi=120)
    for s in summary:
        m, col = MARKERS.get(s["codec"], ("o", "black"))
        pts = [r for r in rows if r["codec"] == s["codec"]]
        if len(pts) > 1:  # per-file points, faint
            ax.scatter([r[key] for r in pts], [r["bpb"] for r in pts], marker=m, color=col,
                       alpha=0.25, s=22, linewidths=0)
        ax.scatter([s[key]], [s["bpb"]], marker=m, color=col, s=110, edgecolors="black",
                   linewidths=0.6, zorder=3, label=s["codec"])
    ax.set_xscale("log")
    ax.set_xlabel("compression speed, KB/s of input (log scale; one core; "
                  + ("CPU time)" if speed == "cpu" else "wall time)"))
    ax.set_ylabel("bits per byte (8 × compressed / original; lower is better)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    ax.margins(x=0.12, y=0.08)
    fig.tight_layout()
    fig.canvas.draw()  # fixes the limits, so label boxes can be placed in pixels
    _place_labels(ax, [(s[key], s["bpb"], f"{s['codec']}\n{s['bpb']:.3f} bpb") for s in summary])
    fig.savefig(path)
    plt.close(fig)
    return None


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", nargs="+", default=None,
                   help="file names, paths or sets: english (default), quick, canterbury, calgary, "
                        "artificial, silesia, ood, all")
    p.add_argument("--codecs", default=",".join(B.REPORT_DEFAULT),
                   help=f"comma list (default: %(default)s; also xz-6, nlm, baselines, all)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per phase; medians (default 3)")
    p.add_argument("--warmup", type=int, default=0, help="untimed runs before timing (default 0)")
    p.add_argument("--model", default="default", help="nlmcodec model name or .nlmm path (default: default)")
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"))
    p.add_argument("--name", default="report", help="output file stem (default: report)")
    p.add_argument("--quick", action="store_true", help="files = quick set (unless --files), one run")
    p.add_argument("--in-process", action="store_true",
                   help="measure in this process (faster, no per-codec peak memory)")
    p.add_argument("--plot-speed", choices=("wall", "cpu"), default="wall",
                   help="x axis of the plot: wall-clock (default) or CPU-time compress speed")
    p.add_argument("--timeout", type=float, default=0, help="seconds per worker subprocess (0: none)")
    p.add_argument("--worker", nargs=3, metavar=("PHASE", "CODEC", "FILE"), help=argparse.SUPPRESS)
    p.add_argument("--tmp", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.quick:
        a.runs = 1 if "--runs" not in (argv or sys.argv) else a.runs
        a.files = a.files or ["quick"]
    a.files = a.files or ["english"]
    return a


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        phase, codec_name, file_spec = args.worker
        return worker(phase, codec_name, file_spec, args.runs, args.warmup, args.model, args.tmp)

    files = B.expand_files(args.files)
    codec_names = B.expand_codecs([args.codecs])
    codecs, skipped = B.make_codecs(codec_names, args.model)
    mi = B.machine_info()
    started = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    mem = ("peak RSS (VmHWM) of a fresh subprocess per codec and direction, interpreter (~20 MB) + "
           "buffers + model included" if not args.in_process else "not measured (--in-process)")
    header = [
        f"{started}, commit {git_commit()}",
        f"machine: {mi['cpu']}, {mi['cores']} cores ({mi['usable_cores']} usable), load average "
        f"{mi['loadavg']} at start; {mi['python']}; {mi['platform']}",
        f"single thread, in memory, round trip verified; speeds = input KB (1000 B) / median wall time "
        f"of {args.runs} run(s) after {args.warmup} warm-up; memory: {mem}",
        "speeds are noisy on a shared 2-core machine (a training run may hold the other core): "
        "compare codecs within this run (the vs xz-9e columns), not across runs",
        "versions: " + "; ".join(f"{c.name} = {c.version}" for c in codecs),
    ]
    if any(c.name in B.NLM for c in codecs):
        c0 = next(c for c in codecs if c.name in B.NLM)
        header.append(f"nlmcodec model: {args.model}, {c0.model_size:,} bytes, id {c0.model_id or '?'}")
    try:
        if os.getloadavg()[0] > max(1.0, (os.cpu_count() or 1) - 1):
            header.append(f"WARNING: load average {mi['loadavg']} on {mi['cores']} cores: other processes "
                          "compete for the CPU, so wall-clock speeds are low and noisy; the CPU-time speeds "
                          "(c_cpu_kbps, d_cpu_kbps) are steadier")
    except (OSError, AttributeError):
        pass
    for h in header:
        print("# " + h)
    for name, why in skipped.items():
        print(f"# not measured: {name} ({why})")
    sys.stdout.flush()

    anchors = load_anchors()
    os.makedirs(args.out_dir, exist_ok=True)
    stem = os.path.join(args.out_dir, args.name)
    rows, rc = [], 0
    width = max([len(c.name) for c in codecs] + [8])
    order = [c.name for c in codecs]
    for spec in files:
        for codec in codecs:
            t0 = time.perf_counter()
            try:
                r = (measure_inprocess(codec, spec, args) if args.in_process
                     else measure_subprocess(codec.name, spec, args))
            except Exception as exc:
                print(f"!! {codec.name} on {spec}: {type(exc).__name__}: {exc}", file=sys.stderr)
                rc = 1
                continue
            a = anchors.get(r["file"], {}).get(codec.name)
            r["anchor_bytes"] = a if a is not None else ""
            rows.append(r)
            line = B.format_line(r, r["file"], width)
            if r.get("c_peak_rss_mb") == r.get("c_peak_rss_mb"):
                line += f", {r['c_peak_rss_mb']:.0f}/{r['d_peak_rss_mb']:.0f} MB"
            if a is not None and a != r["bytes_out"]:
                line += f"  [!= anchor {a}]"
            print(line + f"  ({time.perf_counter() - t0:.1f} s)")
            sys.stdout.flush()
        add_relative(rows)
        write_csv(stem + ".csv", rows)  # after every file, so an interrupted run keeps its rows

    add_relative(rows)
    summary, common = summary_rows(rows, order)
    write_csv(stem + ".csv", rows)
    write_markdown(stem + ".md", rows, summary, common, header, skipped)
    with open(stem + ".json", "w") as f:
        json.dump({"header": header, "machine": mi, "args": {k: v for k, v in vars(args).items()
                                                             if k not in ("worker", "tmp")},
                   "skipped": skipped, "rows": rows, "summary": summary}, f, indent=1, default=str)
    title = (f"{len(common)} file(s) ({', '.join(args.files)}), {mi['cpu']}, one core, median of "
             f"{args.runs}; {started}")
    msg = write_plot(stem + ".png", rows, summary, title, args.plot_speed) if summary else "no results: no plot"
    print()
    print(f"{'codec':<{width}}  files      bytes in     bytes out    bpb  vs xz  C KB/s   D KB/s  +model vs xz")
    for s in summary:
        print(f"{s['codec']:<{width}}  {s['files']:>5} {s['bytes_in']:>13,} {s['bytes_out']:>13,} "
              f"{s['bpb']:6.3f} {fnum(s['size_vs_xz9e'], '6.3f')} {s['c_kbps']:8.1f} {s['d_kbps']:8.1f} "
              f"{fnum(s['total_vs_xz9e'], '6.3f')}")
    print(f"\nwrote {stem}.md, {stem}.csv, {stem}.json" + (f", {stem}.png" if msg is None else f" ({msg})"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
