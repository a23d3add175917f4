"""Peak memory of streaming: the CLI compresses and decompresses generated text of several sizes in
bounded memory (the model plus a few 4 MiB groups), and NLMDecompressor.decompress(frame, max_length=1)
on a high-ratio frame holds at most one block of output (and draining the rest is linear).

    python benchmarks/memory.py [--sizes 10 100 1000] [--model default] [--kind lines|english]

Each measurement runs in its own process (peak RSS = ru_maxrss of that child).  `lines` is numbered,
repetitive log-like text (lzma wins after the model's probe, so 1 GB runs in minutes); `english` repeats
text generated from the corpus's dev set (the word model codes it, about 0.2 MB/s static: use small sizes).
Prints a Markdown table.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

CHILD_GEN = r"""
import sys
n, kind, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(path, "wb") as f:
    i = 0
    left = n
    while left > 0:
        if kind == "lines":
            chunk = b"".join(b"%09d GET /static/page-%d.html HTTP/1.1 200 %d the quick brown fox\n"
                             % (i + k, (i + k) % 97, (i + k) * 7 % 5000) for k in range(1000))
        else:
            from nlmcodec._bench import read_file
            chunk = read_file("alice29.txt")[1]
        chunk = chunk[:left]
        f.write(chunk)
        left -= len(chunk)
        i += 1000
"""


def one(cmd):
    # a fresh interpreter per measurement: ru_maxrss of RUSAGE_CHILDREN is the max over all children,
    # so measure through a wrapper that reports its own child's peak
    wrapper = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]).returncode; "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r)")
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return time.perf_counter() - t, int(p.stdout.split()[-1]) / 1024


MAXLEN_MAKE = r"""
import sys, nlmcodec
data = b"All work and no play makes Jack a dull boy.\n" * (int(sys.argv[1]) // 45)
open(sys.argv[3], "wb").write(nlmcodec.compress(data, model=sys.argv[2], adapt=False))
"""
MAXLEN_CHILD = r"""
import resource, sys, time, nlmcodec
frame = open(sys.argv[1], "rb").read()
d = nlmcodec.NLMDecompressor()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = d.decompress(frame, max_length=1)
assert len(out) == 1 and not d.needs_input
peak1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.process_time()
n = 1
while not d.eof:                     # drain in 64 KiB pieces: linear, not quadratic
    n += len(d.decompress(b"", max_length=1 << 16))
cpu = time.process_time() - t
print(len(frame), base / 1024, peak1, n, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[10, 100, 1000], help="MB (10^6 bytes)")
    ap.add_argument("--model", default="default")
    ap.add_argument("--kind", default="lines", choices=["lines", "english"])
    ap.add_argument("--static", action="store_true", help="static mode (default: dynamic)")
    ap.add_argument("--maxlen-only", action="store_true", help="only the max_length measurement")
    a = ap.parse_args()
    py = sys.executable
    print(f"model {a.model}, {'static' if a.static else 'dynamic'}, text: {a.kind}\n")
    print("| input MB | frame bytes | compress s | compress peak MB | decompress s | decompress peak MB |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in ([] if a.maxlen_only else a.sizes):
            n = int(mb * 1e6)
            src = os.path.join(tmp, "in.txt")
            subprocess.run([py, "-c", CHILD_GEN, str(n), a.kind, src], check=True)
            mode = ["--static"] if a.static else []
            cs, cm = one([py, "-m", "nlmcodec", "-q", "-f", "-k", "-m", a.model, *mode, src])
            ds, dm = one([py, "-m", "nlmcodec", "-q", "-t", "-m", a.model, src + ".nlm"])
            size = os.path.getsize(src + ".nlm")
            os.remove(src)
            os.remove(src + ".nlm")
            print(f"| {mb:g} | {size:,} | {cs:.1f} | {cm:.0f} | {ds:.1f} | {dm:.0f} |", flush=True)
        fpath = os.path.join(tmp, "jack.nlm")
        subprocess.run([py, "-c", MAXLEN_MAKE, str(256 << 20), a.model, fpath], check=True)
        p = subprocess.run([py, "-c", MAXLEN_CHILD, fpath], capture_output=True, text=True, check=True)
    flen, base, peak1, n, cpu, peak = p.stdout.split()
    print(f"\ndecompress(frame, max_length=1) on a {int(flen):,}-byte frame of 256 MiB (static; ratio "
          f"{(256 << 20) / int(flen):,.0f}:1): peak RSS {float(base):.0f} MB before the call, {float(peak1):.0f} MB "
          f"after; draining the other {int(n) - 1:,} bytes with max_length=65536: {float(cpu):.2f} s of CPU, "
          f"peak {float(peak):.0f} MB")


if __name__ == "__main__":
    main()
