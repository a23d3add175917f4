"""The default mode's ratio (issue 11 item 3): heads mode, the default of compress() and the CLI, against dynamic
mode, on dev and on the 14 English files, and against dynamic mode's sizes when issue 11 was filed.

    git worktree add /tmp/nlm-base 3ff68f1 && (cd /tmp/nlm-base && pip wheel --no-deps -w /tmp/w . \
        && cd /tmp/w && unzip -o *.whl 'nlmcodec/*.so' -d /tmp/nlm-base/python)
    python benchmarks/default_mode.py [--per-source 1000000] [--base 3ff68f1] [--base-build /tmp/nlm-base/python]
        [--out benchmarks/default_mode.md]

Dev (tuned on): the first --per-source bytes of each dev source (speller_dev.dev_set), each compressed as one
input by nlmcodec.compress() in each mode with the default model: whole frames, round trip checked.  With
--base-build (the python/ folder of a build of --base), the same texts in dynamic mode with that build and its
default model, in a child process, for the column "dynamic at --base".
The 14 English files (reported on, never tuned on): the exact sizes pinned in benchmarks/ratios.csv (checked by
make_ratios.py --check), and dynamic mode's sizes in that file at --base, the commit issue 11 and issue 13
measured ("today's 2,647,949 bytes"), read with git show.  Ratios only: the speeds are speed.py's.
"""
import argparse
import csv
import io
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import nlmcodec  # noqa: E402
from _benchlib import write_report  # noqa: E402
from speller_dev import dev_set  # noqa: E402

MODES = (("static", False), ("dynamic", True), ("heads (default)", "heads"))


def pct(new, old):
    return f"{100 * (new / old - 1):+.2f}%"


def bpb(n, raw):
    return f"{8 * n / raw:.4f}"


BASE_CHILD = """
import json, pathlib, sys
import nlmcodec
out = {}
for f in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    text = f.read_bytes()
    frame = nlmcodec.compress(text, adapt=True)
    assert nlmcodec.decompress(frame) == text
    out[f.name] = len(frame)
print(json.dumps([nlmcodec.__file__, out]))
"""


def base_dev_sizes(build, texts):
    """{source: dynamic-mode frame bytes} of texts from the build whose python/ folder is `build` (a child
    process: nothing of this build's package is imported there)."""
    env = dict(os.environ, PYTHONPATH=str(build))
    with tempfile.TemporaryDirectory() as d:
        for src, text in texts.items():
            (pathlib.Path(d) / src).write_bytes(text)
        out = subprocess.check_output([sys.executable, "-c", BASE_CHILD, d], env=env, text=True, cwd=d)
    where, sizes = json.loads(out)
    assert pathlib.Path(where).resolve().is_relative_to(pathlib.Path(build).resolve()), where
    return sizes


def dev_rows(per_source, base, base_build):
    m = nlmcodec.load_model("default")
    texts = dev_set(per_source)
    old = base_dev_sizes(base_build, texts) if base_build else None
    extra = f" dynamic at {base} | heads vs dynamic at {base} |" if old else ""
    rows = [f"## dev (tuned on): first {per_source:,} bytes of each source, one compress() call each", "",
            "| source | bytes | " + " | ".join(name for name, _ in MODES) + " | heads vs dynamic |" + extra,
            "|---|---:|" + "---:|" * len(MODES) + "---:|" + ("---:|---:|" if old else "")]
    tot = [0] * (len(MODES) + 2)
    for src, text in texts.items():
        sizes = []
        for _, adapt in MODES:
            frame = nlmcodec.compress(text, model=m, adapt=adapt)
            assert nlmcodec.decompress(frame, model=m) == text
            sizes.append(len(frame))
        o = old[src] if old else 0
        tot = [a + b for a, b in zip(tot, [len(text)] + sizes + [o])]
        rows.append(f"| {src} | {len(text):,} | " + " | ".join(f"{s:,}" for s in sizes) +
                    f" | {pct(sizes[2], sizes[1])} |" + (f" {o:,} | {pct(sizes[2], o)} |" if old else ""))
    raw, sizes, o = tot[0], tot[1:-1], tot[-1]
    rows.append(f"| all | {raw:,} | " + " | ".join(f"{s:,} ({bpb(s, raw)})" for s in sizes) +
                f" | {pct(sizes[2], sizes[1])} |" + (f" {o:,} ({bpb(o, raw)}) | {pct(sizes[2], o)} |" if old else ""))
    return rows


def english_rows(base):
    def read(text):
        return {(r["file"], r["mode"]): r for r in csv.DictReader(io.StringIO(text))}

    now = read((ROOT / "benchmarks" / "ratios.csv").read_text())
    old = read(subprocess.check_output(["git", "show", f"{base}:benchmarks/ratios.csv"], text=True, cwd=ROOT))
    rows = ["## The 14 English files (never tuned on): exact sizes, benchmarks/ratios.csv", "",
            f"| file | bytes | dynamic at {base} | dynamic now | heads now (default) | heads vs dynamic now | "
            f"heads vs dynamic at {base} |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    t = [0, 0, 0, 0]
    for f in sorted({k[0] for k in now}):
        raw = int(now[(f, "dynamic")]["bytes_in"])
        o, d, h = (int(x["bytes_out"]) for x in (old[(f, "dynamic")], now[(f, "dynamic")], now[(f, "heads")]))
        t = [a + b for a, b in zip(t, (raw, o, d, h))]
        rows.append(f"| {f} | {raw:,} | {o:,} | {d:,} | {h:,} | {pct(h, d)} | {pct(h, o)} |")
    raw, o, d, h = t
    rows.append(f"| all 14 | {raw:,} | {o:,} ({bpb(o, raw)}) | {d:,} ({bpb(d, raw)}) | {h:,} ({bpb(h, raw)}) | "
                f"{pct(h, d)} | {pct(h, o)} |")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-source", type=int, default=1_000_000)
    ap.add_argument("--base", default="3ff68f1", help="the commit whose dynamic sizes the issue quotes")
    ap.add_argument("--base-build", default=None, help="the python/ folder of a build of --base (dev column)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    cmd = "python benchmarks/default_mode.py" + (f" --per-source {a.per_source}" if a.per_source != 1_000_000
                                                 else "") + (f" --base {a.base}" if a.base != "3ff68f1" else "") + \
        (" --base-build <build of the base>/python" if a.base_build else "")
    rows = ["# The default mode: heads mode against dynamic mode", "", f"Command: `{cmd}`.  Model `default` (the base "
            f"build's own default model in its column).", ""]
    rows += dev_rows(a.per_source, a.base, a.base_build) + [""] + english_rows(a.base)
    write_report(rows, a.out)


if __name__ == "__main__":
    main()
