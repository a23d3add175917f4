"""Instructions the byte model spends (callgrind, so the figure does not depend on a noisy machine): the
byte-model encoder of tests/c/cm_driver.c (-e) over the first --bytes of a file, built from this checkout's
csrc/ or from another revision's (--rev, read with git archive), with the production flags (build_flags.py).

    python benchmarks/bytemodel_instructions.py [--file zlib-source.c] [--bytes 200000] [--rev 85f0875]

Prints the total instruction count (callgrind's "I refs") of the run; valgrind must be installed.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import build_flags  # noqa: E402
from _benchlib import load_bench  # noqa: E402

# the byte model and what it links (tests/c/cbuild.BYTEMODEL; an older revision needs fewer, none is missing)
SOURCES = ["bytemodel/cm.c", "coder/rc.c", "kernels/kern.c", "kernels/kern_math.c", "coder/quant.c"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", default="zlib-source.c")
    ap.add_argument("--bytes", type=int, default=200_000)
    ap.add_argument("--rev", default=None, help="a git revision whose csrc/ is built instead of this checkout's")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = ROOT
        if a.rev:
            src = tmp / "rev"
            src.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.rev, "csrc", "tests/c/cm_driver.c"],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        exe = tmp / "cm_driver"
        sources = [src / "tests" / "c" / "cm_driver.c"] + [src / "csrc" / s for s in SOURCES]
        cmd = [str(src / "csrc") if c == build_flags.CSRC else c for c in build_flags.cc_command(
            "gcc", "simd", exe, [p for p in sources if p.exists()])]
        subprocess.run(cmd, check=True)
        data = load_bench().read_file(a.file)[1][:a.bytes]
        (tmp / "in").write_bytes(data)
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp / 'cg'}", str(exe), "-e",
                            str(tmp / "in")], capture_output=True, text=True, check=True)
        refs = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr).group(1)
    print(f"{a.file}, first {len(data):,} bytes, {'revision ' + a.rev if a.rev else 'this checkout'}: "
          f"{refs} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
