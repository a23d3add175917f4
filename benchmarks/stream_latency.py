"""When NLMCompressor's output comes (issue 43): an input fed in pieces, the input bytes fed when the first bytes
came out and the most input fed between two outputs after that, per thread count; the frame is compress()'s.

    python benchmarks/stream_latency.py [--mib 6] [--piece 16384] [--threads 1,2]

The input: Calgary book1, book2, news, Canterbury lcet10.txt and plrabn12.txt, then Silesia dickens, cut to
--mib MiB (two groups at 6); the default models and mode.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import nlmcodec  # noqa: E402
from nlmcodec import _bench as B  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=float, default=6)
    ap.add_argument("--piece", type=int, default=16384)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args(argv)
    data = b"".join(B.read_file(n)[1] for n in ("book1", "book2", "lcet10.txt", "plrabn12.txt", "news", "dickens"))
    data = data[:int(a.mib * (1 << 20))]
    one = nlmcodec.compress(data)
    print(f"{len(data):,} bytes in pieces of {a.piece:,}; compress(): {len(one):,} bytes, "
          f"{len(nlmcodec.get_frame_info(one).groups)} groups")
    for threads in map(int, a.threads.split(",")):
        c = nlmcodec.NLMCompressor(threads=threads)
        outs, parts = [], []
        for i in range(0, len(data), a.piece):
            o = c.compress(data[i:i + a.piece])
            if o:
                outs.append(min(len(data), i + a.piece))
            parts.append(o)
        parts.append(c.flush())
        gaps = [y - x for x, y in zip(outs, outs[1:])]
        print(f"threads={threads}: first output after {outs[0]:,} bytes of input, then at most {max(gaps):,} "
              f"between two outputs ({len(outs)} outputs before flush); frame equal to compress(): "
              f"{b''.join(parts) == one}")


if __name__ == "__main__":
    main()
