"""Argument parsing: the xz/zstd-style options of compression, decompression, -t, -l and -b (the --train and
--explain modes parse their own, in modes.py)."""

import argparse
import os

from .terminal import DEFAULT_SUFFIX, PROG, _Parser

# xz's preset levels mapped onto the coding modes (nlmcodec has modes, not presets): the fast end is static
# mode, the middle (xz's default -6) heads mode, the top dynamic mode; -e/--extreme is dynamic mode at any
# level.  A mode option (--static/--heads/--dynamic) wins over a level.  Same mode, same bytes.
LEVEL_MODES = {**{n: False for n in range(0, 4)}, **{n: "heads" for n in range(4, 7)},
               **{n: True for n in range(7, 10)}}
MODE_NAMES = {False: "static", "heads": "heads", True: "dynamic"}
FORMATS = ("auto", "nlm")     # -F/--format: what can be read and written (xz's names for its own are refused)
_MULTIPLIERS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "ki": 1 << 10, "kib": 1 << 10,
                "m": 1 << 20, "mb": 1 << 20, "mi": 1 << 20, "mib": 1 << 20,
                "g": 1 << 30, "gb": 1 << 30, "gi": 1 << 30, "gib": 1 << 30}


def _threads_arg(s):
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid thread count {s!r}")
    if n < 0:
        raise argparse.ArgumentTypeError(f"invalid thread count {s!r} (0 means all cores)")
    return n


def physical_memory():
    """Bytes of RAM (for -M N%), or None when the system does not say."""
    try:
        n = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    return n if n > 0 else None


def parse_memlimit(s):
    """xz's -M syntax: bytes with an optional KiB/MiB/GiB suffix (also k, KB, Ki, M, MB, Mi, G, GB, Gi: all powers
    of 1024), N% of the RAM, ``max`` or 0 (no limit).  Returns bytes (0: no limit); ValueError with the message."""
    t = s.strip()
    if t.lower() == "max":
        return 0
    if t.endswith("%"):
        try:
            pct = int(t[:-1])
        except ValueError:
            raise ValueError(f"{s}: invalid memory limit (a percentage is 1% to 100%)") from None
        if not 1 <= pct <= 100:
            raise ValueError(f"{s}: invalid memory limit (a percentage is 1% to 100%)")
        ram = physical_memory()
        if ram is None:
            raise ValueError(f"{s}: the amount of RAM is unknown here; give the limit in bytes")
        return max(1, ram * pct // 100)
    i = 0
    while i < len(t) and t[i].isdigit():
        i += 1
    if i == 0:
        raise ValueError(f"{s}: invalid memory limit (e.g. 200MiB, 1GiB, 50%, 0 for no limit)")
    mult = _MULTIPLIERS.get(t[i:].strip().lower())
    if mult is None:
        raise ValueError(f"{s}: invalid multiplier suffix (valid: KiB, MiB, GiB, powers of 1024)")
    return int(t[:i]) * mult


def _build_parser():
    p = _Parser(
        prog=PROG,
        usage="%(prog)s [MODE] [OPTIONS] [FILE ...]",
        description="Lossless text compression with a word-level RNN language model. "
                    "With no FILE, or when FILE is -, read standard input and write standard output.",
        epilog="training: %(prog)s --train FILE... -o MODEL [-f] [training options] "
               "(see %(prog)s --train --help). "
               "explain: %(prog)s --explain FILE [-o OUT.html] [-m MODEL] [--static|--heads|--dynamic] [--all-modes] "
               "[--detail SIZE] [-f] (see %(prog)s --explain --help). "
               "Exit status: 0 ok, 1 error, 2 warning, 128+N after signal N (130 after Ctrl-C).",
    )
    m = p.add_argument_group("operation mode (the last one given wins)")
    m.add_argument("-z", "--compress", dest="mode", action="store_const", const="compress",
                   help="compress (the default)")
    m.add_argument("-d", "--decompress", "--uncompress", dest="mode", action="store_const", const="decompress",
                   help="decompress")
    m.add_argument("-t", "--test", dest="mode", action="store_const", const="test",
                   help="test the integrity of compressed files (decode, verify the check, write nothing)")
    m.add_argument("-l", "--list", dest="mode", action="store_const", const="list",
                   help="list information about compressed files")
    m.add_argument("-b", "--bench", dest="mode", action="store_const", const="bench",
                   help="benchmark FILEs in memory against other codecs (round trip verified); "
                        "see --against, --runs")
    o = p.add_argument_group("operation modifiers")
    o.add_argument("-c", "--stdout", "--to-stdout", dest="stdout", action="store_true",
                   help="write to standard output and keep the input files")
    o.add_argument("-o", "--output", metavar="FILE",
                   help="write the output to FILE (one input only; - is standard output)")
    o.add_argument("-k", "--keep", action="store_true",
                   help="keep the input files (the default; accepted for xz/gzip compatibility)")
    o.add_argument("--rm", action="store_true",
                   help="remove each input file after its output has been written and verified, "
                        "if the input did not change meanwhile")
    o.add_argument("-f", "--force", action="store_true",
                   help="overwrite existing output files; compress files that already have the suffix; follow symlinks")
    o.add_argument("-S", "--suffix", metavar=".SUF", default=DEFAULT_SUFFIX,
                   help=f"suffix of compressed files (default {DEFAULT_SUFFIX})")
    c = p.add_argument_group("compression")
    c.add_argument("-m", "--model", metavar="NAME|PATH",
                   help="model name (bundled, or in a directory of NLMCODEC_MODEL_PATH) or model file "
                        "(default: the bundled default models, default-N: each file uses the one that codes a "
                        "probe of its first 128 KiB smaller, a file under 32 KiB the newest; 'default' names the "
                        "newest); decompression finds "
                        "models by the id stored in the frame")
    c.add_argument("--static", "--no-adapt", dest="adapt", action="store_const", const=False, default=None,
                   help="static mode (-0 ... -3, --fast): do not adapt the model to the input while coding (fastest)")
    c.add_argument("--heads", dest="adapt", action="store_const", const="heads",
                   help="heads mode (the default; -4 ... -6): adapt only the model's output heads while coding")
    c.add_argument("--dynamic", "--full", dest="adapt", action="store_const", const=True,
                   help="dynamic mode (-7 ... -9, --best, -e): adapt every part of the model while coding "
                        "(the smallest output: about 0.5%% fewer bytes than heads mode on English text, at about "
                        "half its speed)")
    for n in range(10):
        c.add_argument(f"-{n}", dest="level", action="store_const", const=n,
                       help=argparse.SUPPRESS if n not in (0, 9) else
                       ("-0 ... -9: xz's preset levels, mapped onto the modes (nlmcodec has coding modes, not "
                        "presets): -0 ... -3 static, -4 ... -6 heads (the default, as -6 is xz's), -7 ... -9 "
                        "dynamic.  A level only chooses the mode: same mode, same bytes.  --static, --heads or "
                        "--dynamic wins over a level.  Ignored when decompressing" if n == 0
                        else "dynamic mode (see -0)"))
    c.add_argument("--fast", dest="level", action="store_const", const=0, help="same as -0 (static mode)")
    c.add_argument("--best", dest="level", action="store_const", const=9, help="same as -9 (dynamic mode)")
    c.add_argument("-e", "--extreme", action="store_true",
                   help="dynamic mode (the smallest output) at any level, e.g. -9e, -e")
    c.add_argument("-F", "--format", metavar="FMT", default="auto",
                   help="file format: auto (the default) or nlm, the only one nlmcodec reads and writes; "
                        "any other is an error")
    c.add_argument("-C", "--check", choices=("none", "crc32"), default="crc32",
                   help="integrity check of the original data stored in each frame (default crc32)")
    c.add_argument("-T", "--threads", type=_threads_arg, metavar="N", default=0,
                   help="coder threads (default 0: as many as CPUs, like xz 5.4+); the output is the same "
                        "bytes for every thread count")
    c.add_argument("-M", "--memlimit", "--memlimit-decompress", "--memory", dest="memlimit", metavar="LIMIT",
                   help="the most memory decoding may need (-d, -t, and the check of --rm), with xz's syntax: "
                        "200MiB, 1GiB, 50%% (of the RAM), 0 or max for no limit (default 1 GiB); a frame "
                        "that needs more is refused, several threads are reduced to what fits")
    b = p.add_argument_group("benchmark (-b)")
    b.add_argument("--against", metavar="LIST",
                   help="comma-separated baselines, e.g. xz-9e,bz2-9,zlib-9,zstd-19 (default: all installed)")
    b.add_argument("--runs", "--iterations", dest="runs", type=int, metavar="N", help="timed runs per codec (median)")
    v = p.add_argument_group("output")
    v.add_argument("-v", "--verbose", action="count", default=0,
                   help="one summary line per file on stderr; with -l, more detail")
    v.add_argument("-q", "--quiet", action="count", default=0,
                   help="suppress warnings and the progress line; twice to suppress errors too")
    v.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="always show the progress line on stderr (default: when stderr is a terminal "
                        "and the input is at least 1 MiB)")
    v.add_argument("--no-progress", dest="progress", action="store_false", help="never show the progress line")
    v.add_argument("--json", "--robot", dest="json", action="store_true",
                   help="with -l or -b: machine-readable JSON output")
    v.add_argument("-V", "--version", action="store_true",
                   help="print the version, the frame format written and read, the default model, and exit")
    p.add_argument("files", nargs="*", metavar="FILE")
    return p
