"""CPU seconds of compress() and decompress() of one corpus file in one mode, in this process, with whichever
nlmcodec this Python imports: an A/B of two builds runs it under each one's venv, interleaved (speed.py is the
measurement against xz -9e; this is the quick comparison of two versions of our own code).

    python benchmarks/cpu_times.py [--file calgary/book1] [--mode heads] [--runs 1]
"""
import argparse
import os
import resource

import nlmcodec
from nlmcodec._bench import require_corpus_dir

MODES = {"static": False, "heads": "heads", "dynamic": True}


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="calgary/book1", help="a file under the corpus's bench/ folder")
    ap.add_argument("--mode", default="heads", choices=sorted(MODES))
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    with open(os.path.join(require_corpus_dir(), "bench", args.file), "rb") as f:
        data = f.read()
    adapt = MODES[args.mode]
    nlmcodec.decompress(nlmcodec.compress(data[:5000], adapt=adapt))       # the models loaded before timing
    for _ in range(args.runs):
        t = cpu()
        frame = nlmcodec.compress(data, adapt=adapt)
        tc = cpu() - t
        t = cpu()
        assert nlmcodec.decompress(frame) == data
        td = cpu() - t
        print(f"format {nlmcodec.FORMAT_VERSION} {args.file} {args.mode}: {len(frame):,} bytes, "
              f"compress {tc:.2f} s, decompress {td:.2f} s (CPU)")


if __name__ == "__main__":
    main()
