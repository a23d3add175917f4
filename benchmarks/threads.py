"""Threads: wall time of compress and decompress with 1 and 2 threads (and peak memory with 1, 2 and 8),
in the same run as xz -9e, on one file (default: Silesia dickens), dynamic mode, default model.

    python benchmarks/threads.py [--file dickens] [--threads 1 2 8] [--timed 1 2] [--static]

Each measurement is a fresh process (peak RSS = its ru_maxrss).  The frames of every thread count are
compared byte for byte (they must be identical).  Prints a Markdown table.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, lzma, resource, sys, time, nlmcodec
from nlmcodec._bench import read_file
what, name, threads, adapt, frame_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
data = read_file(name)[1]
if what == "xz":
    t = time.perf_counter(); c = lzma.compress(data, preset=9 | lzma.PRESET_EXTREME); tc = time.perf_counter() - t
    t = time.perf_counter(); assert lzma.decompress(c) == data; td = time.perf_counter() - t
    out = {"bytes": len(c), "compress_s": tc, "decompress_s": td}
elif what == "compress":
    nlmcodec.load_model("default")
    t = time.perf_counter(); c = nlmcodec.compress(data, adapt=adapt, threads=threads); tc = time.perf_counter() - t
    open(frame_path, "wb").write(c)
    out = {"bytes": len(c), "compress_s": tc}
else:
    c = open(frame_path, "rb").read()
    nlmcodec.load_model("default")
    t = time.perf_counter(); d = nlmcodec.decompress(c, threads=threads); td = time.perf_counter() - t
    assert d == data
    out = {"decompress_s": td}
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(*args):
    p = subprocess.run([sys.executable, "-c", CHILD, *map(str, args)], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(p.stderr)
    return json.loads(p.stdout.splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default="dickens")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 8])
    ap.add_argument("--static", action="store_true")
    a = ap.parse_args()
    adapt = 0 if a.static else 1
    from nlmcodec._bench import read_file
    n = len(read_file(a.file)[1])
    rows, digests = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        xz = child("xz", a.file, 1, adapt, "-")
        for t in a.threads:
            fp = os.path.join(tmp, f"t{t}.nlm")
            c = child("compress", a.file, t, adapt, fp)
            d = child("decompress", a.file, t, adapt, fp)
            digests.add(hashlib.sha256(open(fp, "rb").read()).hexdigest())
            rows.append((t, c, d))
    base_c, base_d = rows[0][1]["compress_s"], rows[0][2]["decompress_s"]
    print(f"{a.file}: {n:,} bytes, {'static' if a.static else 'dynamic'}, {os.cpu_count()} cores; frames identical "
          f"for every thread count: {len(digests) == 1}\n")
    print("| codec | threads | bytes | compress s | decompress s | compress KB/s | decompress KB/s "
          "| speedup c / d | peak MB c / d |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| xz -9e | 1 | {xz['bytes']:,} | {xz['compress_s']:.1f} | {xz['decompress_s']:.2f} | "
          f"{n / 1e3 / xz['compress_s']:,.0f} | {n / 1e3 / xz['decompress_s']:,.0f} | | {xz['peak_mb']:.0f} |")
    for t, c, d in rows:
        print(f"| nlmcodec | {t} | {c['bytes']:,} | {c['compress_s']:.1f} | {d['decompress_s']:.1f} | "
              f"{n / 1e3 / c['compress_s']:,.1f} | {n / 1e3 / d['decompress_s']:,.1f} | "
              f"{base_c / c['compress_s']:.2f} / {base_d / d['decompress_s']:.2f} | "
              f"{c['peak_mb']:.0f} / {d['peak_mb']:.0f} |")
    if len(digests) != 1:
        raise SystemExit("frames differ between thread counts")


if __name__ == "__main__":
    main()
