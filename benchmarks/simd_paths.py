"""Speed of each SIMD path of the C core on one core, and the bytes each path writes (they must be equal).

    python benchmarks/simd_paths.py [--file alice29.txt] [--bytes 40960] [--rounds 5]

One child per (mode, NLMCODEC_SIMD_CAP): it builds a codec from the default model and encodes the first
--bytes of the file as one block --rounds times from a reset state; CPU time of the best round (the machine
is shared, so CPU time and the best round).  Caps above the CPU's best level run its best level.
Prints a Markdown table and exits 1 if two paths wrote different bytes.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

CHILD = r"""
import hashlib, json, sys, time
import nlmcodec
from nlmcodec import _core
path, nbytes, adapt, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = open(path, "rb").read()[:nbytes]
codec = _core.Codec(nlmcodec.load_model("default"), bool(adapt))
best, out = None, None
for _ in range(rounds):
    codec.reset()
    t0 = time.process_time()
    out = codec.encode_block(data)
    t = time.process_time() - t0
    best = t if best is None or t < best else best
print(json.dumps({"cpu_s": best, "out": len(out), "sha": hashlib.sha256(out).hexdigest()[:16],
                  "tokens": int(codec.stats()["tokens"])}))  # stats count the last block only (reset clears them)
"""

LEVELS = {0: "scalar", 1: "SSE2", 2: "AVX2", 3: "AVX-512F"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", default="alice29.txt")
    ap.add_argument("--bytes", type=int, default=40960)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    path = a.file
    if not os.path.exists(path):
        from nlmcodec._bench import corpus_dir
        base = corpus_dir()
        hits = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(base or "", "bench")) for f in fs
                if f == a.file]
        if not hits:
            print(f"simd_paths: cannot find {a.file} (set NLMCODEC_CORPUS)", file=sys.stderr)
            return 2
        path = hits[0]
    print(f"{os.path.basename(path)}, first {a.bytes} bytes, default model, best of {a.rounds} (CPU time)\n")
    print("| mode | path (NLMCODEC_SIMD_CAP) | CPU s | KB/s | µs/token | payload bytes | sha256 |")
    print("|---|---|---|---|---|---|---|")
    shas = set()
    for mode, adapt in (("static", 0), ("dynamic", 1)):
        for cap in (3, 2, 1, 0):
            env = {**os.environ, "NLMCODEC_SIMD_CAP": str(cap)}
            p = subprocess.run([sys.executable, "-c", CHILD, path, str(a.bytes), str(adapt), str(a.rounds)],
                               capture_output=True, text=True, env=env, check=True)
            r = json.loads(p.stdout.strip().splitlines()[-1])
            shas.add((mode, r["sha"]))
            print(f"| {mode} | {LEVELS[cap]} ({cap}) | {r['cpu_s']:.3f} | {a.bytes / 1024 / r['cpu_s']:.1f} | "
                  f"{1e6 * r['cpu_s'] / r['tokens']:.1f} | {r['out']} | {r['sha']} |")
    same = len(shas) == 2
    print("\nevery path wrote the same bytes" if same else "\nPATHS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
