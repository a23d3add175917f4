"""Argument parsing: the xz/zstd-style options of compression, decompression, -t, -l and -b (the --train and
--explain modes parse their own, in modes.py)."""

import argparse

from .terminal import DEFAULT_SUFFIX, PROG, _Parser


def _threads_arg(s):
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid thread count {s!r}")
    if n < 0:
        raise argparse.ArgumentTypeError(f"invalid thread count {s!r} (0 means all cores)")
    return n


def _build_parser():
    p = _Parser(
        prog=PROG,
        usage="%(prog)s [MODE] [OPTIONS] [FILE ...]",
        description="Lossless text compression with a word-level RNN language model. "
                    "With no FILE, or when FILE is -, read standard input and write standard output.",
        epilog="training: %(prog)s --train FILE... -o MODEL [-f] [training options] "
               "(see %(prog)s --train --help). "
               "explain: %(prog)s --explain FILE [-o OUT.html] [-m MODEL] [-f] (see %(prog)s --explain --help). "
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
                        "(default: the bundled default model); decompression finds models by the id stored "
                        "in the frame")
    c.add_argument("--static", "--no-adapt", dest="adapt", action="store_const", const=False, default=None,
                   help="static mode: do not adapt the model to the input while coding (fastest)")
    c.add_argument("--heads", dest="adapt", action="store_const", const="heads",
                   help="heads mode (the default): adapt only the model's output heads while coding")
    c.add_argument("--dynamic", "--full", dest="adapt", action="store_const", const=True,
                   help="dynamic mode: adapt every part of the model while coding (the smallest output: about "
                        "0.5%% fewer bytes than heads mode on English text, at about half its speed)")
    c.add_argument("-C", "--check", choices=("none", "crc32"), default="crc32",
                   help="integrity check of the original data stored in each frame (default crc32)")
    c.add_argument("-T", "--threads", type=_threads_arg, metavar="N",
                   help="coder threads (0: all cores; default 1)")
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
    v.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    p.add_argument("files", nargs="*", metavar="FILE")
    return p
