"""Scale: a directory of many text files compressed on a dask.distributed LocalCluster (worker processes)
against the serial CLI (one process, the files one after another), with the same model and mode.

    python benchmarks/dask_scale.py [--total-mb 24] [--min-kb 200] [--max-kb 1000] [--workers 2]
                                    [--model default] [--static] [--out benchmarks/dask_scale.md]

The files are cut from the corpus's train/*.jsonl.xz documents (joined by blank lines, cut at a line end,
sizes drawn uniformly between --min-kb and --max-kb with a fixed seed, until --total-mb), written to a
temporary folder.  Serial: ``python -m nlmcodec -k -m MODEL [--static] FILE...`` in one process, writing
FILE.nlm beside each.  Cluster: nlmcodec.dask.compress_files on LocalCluster(n_workers=N, processes=True,
threads_per_worker=1), writing into another folder; its time runs from the call (plugin registration,
so the model load, included) to the last result, the cluster start is shown apart.  Peak memory: the
CLI process's ru_maxrss, and each worker's ru_maxrss reported by client.run.  The outputs of the two runs
are compared file by file and as one SHA-256 over all of them (in file-name order).  The load average of
the machine is recorded before and after (other work on it slows either run).  Writes a Markdown report.
"""
import argparse
import hashlib
import json
import lzma
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def corpus_train():
    sys.path.insert(0, os.path.join(REPO, "python"))
    from nlmcodec._bench import corpus_dir

    c = corpus_dir()
    if c is None:
        sys.exit("no corpus found (set NLMCODEC_CORPUS)")
    train = os.path.join(c, "train")
    shards = sorted(f for f in os.listdir(train) if f.endswith(".jsonl.xz"))
    return [os.path.join(train, f) for f in shards]


def documents(shards):
    for path in shards:
        with lzma.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)["text"].encode("utf-8")


def make_files(folder, total, min_size, max_size, seed=15):
    """Files cut from the documents (joined by blank lines, in corpus order) at a line end, sizes uniform
    in [min_size, max_size], until total bytes."""
    rng = random.Random(seed)
    docs = documents(corpus_train())
    buf = bytearray()
    paths, written = [], 0
    while written < total:
        target = min(rng.randint(min_size, max_size), total - written)
        if target < min_size and paths:
            break                               # no file smaller than min_size: the total stops short
        for d in docs:
            if len(buf) >= target + 1:
                break
            buf += d + b"\n\n"
        if not buf:
            break                               # the corpus ran out
        cut = buf.rfind(b"\n", 0, target) + 1 or min(target, len(buf))
        p = os.path.join(folder, f"doc{len(paths):04d}.txt")
        with open(p, "wb") as f:
            f.write(buf[:cut])
        del buf[:cut]
        paths.append(p)
        written += cut
    return paths, written


def digest(paths):
    h = hashlib.sha256()
    for p in sorted(paths, key=os.path.basename):
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest(), sum(os.path.getsize(p) for p in paths)


def machine_busy_s():
    """CPU seconds the whole machine has been busy (all processes, /proc/stat)."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq = (int(x) for x in f.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu_s():
    """CPU seconds of this process and its finished children."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def wait_quiet(max_cores, timeout_s, window=5.0):
    """Wait until the other processes use less than max_cores over a window (at most timeout_s)."""
    t_end = time.monotonic() + timeout_s
    while True:
        b0, o0 = machine_busy_s(), own_cpu_s()
        time.sleep(window)
        others = (machine_busy_s() - b0 - (own_cpu_s() - o0)) / window
        if others < max_cores or time.monotonic() > t_end:
            return others
        print(f"waiting: other processes use {others:.2f} cores", flush=True)


def worker_cpu_s():
    import resource as r

    u = r.getrusage(r.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def worker_peak_mb():
    import resource as r

    return r.getrusage(r.RUSAGE_SELF).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--total-mb", type=float, default=24)
    ap.add_argument("--min-kb", type=int, default=200)
    ap.add_argument("--max-kb", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--model", default="default")
    ap.add_argument("--static", action="store_true", help="static model (no dynamic evaluation)")
    ap.add_argument("--quiet-cores", type=float, default=0.25,
                    help="before each run, wait until other processes use fewer cores than this")
    ap.add_argument("--wait", type=float, default=600, help="seconds to wait for that at most")
    ap.add_argument("--out", default=os.path.join(HERE, "dask_scale.md"))
    args = ap.parse_args()

    import distributed
    import nlmcodec
    import nlmcodec.dask

    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="nlm-dask-scale-")
    try:
        src = os.path.join(work, "in")
        os.mkdir(src)
        t = time.perf_counter()
        paths, total = make_files(src, int(args.total_mb * 1e6), args.min_kb * 1000, args.max_kb * 1000)
        print(f"{len(paths)} files, {total:,} bytes generated in {time.perf_counter() - t:.1f} s", flush=True)
        sizes = [os.path.getsize(p) for p in paths]

        # serial CLI: one process, files one after another
        cmd = [sys.executable, "-m", "nlmcodec", "-k", "-q", "-m", args.model] + (["--static"] if args.static else [])
        quiet = [wait_quiet(args.quiet_cores, args.wait)]
        b0, o0 = machine_busy_s(), own_cpu_s()
        t = time.perf_counter()
        subprocess.run(cmd + paths, check=True)
        serial_s = time.perf_counter() - t
        serial_cpu = own_cpu_s() - o0
        serial_others = machine_busy_s() - b0 - serial_cpu
        serial_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        serial_out = [p + ".nlm" for p in paths]
        serial_hash, serial_bytes = digest(serial_out)
        print(f"serial CLI: {serial_s:.1f} s, peak {serial_peak:.0f} MB", flush=True)

        # the cluster
        dst = os.path.join(work, "out")
        os.mkdir(dst)
        outs = [os.path.join(dst, os.path.basename(p) + ".nlm") for p in paths]
        t = time.perf_counter()
        with distributed.LocalCluster(n_workers=args.workers, processes=True, threads_per_worker=1,
                                      dashboard_address=None, worker_dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            start_s = time.perf_counter() - t
            quiet.append(wait_quiet(args.quiet_cores, args.wait))
            w0 = sum(client.run(worker_cpu_s).values())
            b0, o0 = machine_busy_s(), own_cpu_s()
            t = time.perf_counter()
            res = nlmcodec.dask.compress_files(paths, outs, client=client, model=args.model,
                                               adapt=not args.static)
            cluster_s = time.perf_counter() - t
            cluster_cpu = sum(client.run(worker_cpu_s).values()) - w0 + own_cpu_s() - o0
            cluster_others = machine_busy_s() - b0 - cluster_cpu
            peaks = client.run(worker_peak_mb)
        per_worker = {}
        for r in res:
            w = per_worker.setdefault(r["pid"], [0, 0])
            w[0] += 1
            w[1] += r["bytes_in"]
        cluster_hash, cluster_bytes = digest(outs)
        same_files = all(open(a, "rb").read() == open(b, "rb").read() for a, b in zip(serial_out, outs))
        print(f"cluster: {cluster_s:.1f} s (+ {start_s:.1f} s start), identical: {same_files}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    mode = "static" if args.static else "dynamic"
    mb = total / 1e6
    lines = [
        "# Scale: many files on a Dask LocalCluster against the serial CLI",
        "",
        f"Made by `python benchmarks/dask_scale.py --total-mb {args.total_mb:g} --min-kb {args.min_kb} "
        f"--max-kb {args.max_kb} --workers {args.workers} --model {args.model}{' --static' if args.static else ''}`"
        f" ({os.cpu_count()} cores, CPython {sys.version.split()[0]}, nlmcodec backend {nlmcodec.backend}).",
        "",
        f"Input: {len(paths)} files, {total:,} bytes in all ({min(sizes):,} to {max(sizes):,} bytes each), cut at "
        f"line ends from the documents of the corpus's train/*.jsonl.xz; model `{args.model}`, {mode} mode.  Load average (1, 5, 15 min) "
        f"before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, after: "
        f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}.",
        "",
        "| run | processes | wall s | MB/s | speedup | CPU s (ours) | CPU s of other processes meanwhile | "
        "peak RSS MB per process | output bytes | SHA-256 of all outputs |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---|",
        f"| serial CLI (`python -m nlmcodec -k -m {args.model}{' --static' if args.static else ''} FILE...`) | 1 | "
        f"{serial_s:.1f} | {mb / serial_s:.3f} | 1.00 | {serial_cpu:.1f} | {serial_others:.1f} | {serial_peak:.0f} | "
        f"{serial_bytes:,} | `{serial_hash[:16]}` |",
        f"| nlmcodec.dask.compress_files, LocalCluster | {args.workers} workers | {cluster_s:.1f} | "
        f"{mb / cluster_s:.3f} | {serial_s / cluster_s:.2f} | {cluster_cpu:.1f} | {cluster_others:.1f} | "
        f"{' / '.join(f'{v:.0f}' for v in peaks.values())} | {cluster_bytes:,} | `{cluster_hash[:16]}` |",
        "",
        f"Outputs identical file by file: {'yes' if same_files else 'NO'}; the same SHA-256 over all: "
        f"{'yes' if serial_hash == cluster_hash else 'NO'}.  Cluster start (not in the wall time): {start_s:.1f} s.  "
        "Tasks per worker (files, input bytes): "
        + ", ".join(f"{n} / {b:,}" for n, b in per_worker.values()) + ".",
        "",
        "Other processes on the machine (other sessions' tests and benchmarks) were measured from /proc/stat "
        "less our own CPU time: before each run the script waited until they used under "
        f"{args.quiet_cores:g} cores over 5 s (they used {quiet[0]:.2f} and {quiet[1]:.2f} cores then); the "
        "column above is what they used during each run.  "
        "The wall time of the cluster run includes registering the worker plugin, which loads the model once "
        "in each worker; the serial run includes its interpreter start and one model load.  Peak RSS of a "
        "worker counts the interpreter, dask.distributed and the model.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w") as f:
        f.write(text)
    if not same_files:
        sys.exit(1)


if __name__ == "__main__":
    main()
