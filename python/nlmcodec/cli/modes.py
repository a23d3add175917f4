"""The entry points of the modes with options of their own: --train (nlmcodec.train), --explain
(nlmcodec._explain's page) and -b/--bench (nlmcodec._bench.bench_main); each is imported only when asked
for, and each failure is one line."""

import os
import signal
import time

from .files import _Output
from .terminal import EXIT_ERROR, EXIT_OK, PROG, _Parser, _Skip, _cli_words, _elapsed, _eprint


class _TrainUsage(Exception):
    pass


def _run_train(argv):
    """``nlmcodec --train FILE... -o MODEL [-f] [training options]``: nlmcodec.train.parse_args + run.

    Every error is one line naming the file or the option; an existing MODEL is replaced only with -f.
    """
    try:
        from .. import train
        from .._errors import NLMError
    except ImportError as e:
        _eprint(f"{PROG}: --train is not available: {e}")
        return EXIT_ERROR
    force = False
    rest = []
    for i, a in enumerate(argv):
        if a == "--":
            rest += argv[i:]
            break
        if a in ("-f", "--force"):
            force = True
        else:
            rest.append(a)
    ap = train.build_parser()
    ap.prog = f"{PROG} --train"
    ap.epilog = "-f, --force: replace an existing output model"

    def one_line(message):
        raise _TrainUsage(message)

    ap.error = one_line
    try:
        args = train.parse_args(rest, ap)
    except _TrainUsage as e:
        _eprint(f"{PROG}: --train: {e} (see {PROG} --train --help)")
        return EXIT_ERROR
    except SystemExit as e:          # --help
        return e.code if isinstance(e.code, int) else EXIT_OK
    for p in list(args.files) + list(args.dev):
        if not os.path.exists(p):
            _eprint(f"{PROG}: {p}: No such file or directory")
            return EXIT_ERROR
    if os.path.isdir(args.output):
        _eprint(f"{PROG}: {args.output}: Is a directory")
        return EXIT_ERROR
    if os.path.lexists(args.output) and not force:
        _eprint(f"{PROG}: {args.output}: File exists (use -f to replace it)")
        return EXIT_ERROR
    try:
        rc = train.run(args)
    except (KeyboardInterrupt, OSError, MemoryError, ValueError, NLMError) as e:
        return _mode_failure("--train", e, args.output)
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            return e.code or EXIT_OK
        _eprint(f"{PROG}: --train: {e.code}")
        return EXIT_ERROR
    except Exception as e:  # a bug, not bad input: still one line
        _eprint(f"{PROG}: --train: internal error: {type(e).__name__}: {e}")
        return EXIT_ERROR
    return rc if isinstance(rc, int) else EXIT_OK


def _run_bench(files, opts):
    """``nlmcodec -b FILE... [--against LIST] [--runs N] [--static] [-m MODEL] [--json]``.

    The hook is ``bench_main(files, options) -> int`` in :mod:`nlmcodec._bench` (the benchmark module);
    ``options`` is this parser's Namespace (``against``, ``runs``, ``model``, ``adapt``, ``quiet``, ``json``).
    """
    try:
        from .._bench import bench_main
    except ImportError as e:
        _eprint(f"{PROG}: -b/--bench is not available: {e}")
        return EXIT_ERROR
    try:
        rc = bench_main(files, opts)
    except SystemExit as e:  # an argparse inside the mode: keep "bad option" = 1
        rc = EXIT_ERROR if e.code == 2 else e.code
    except KeyboardInterrupt:
        _eprint(f"{PROG}: interrupted")
        return 128 + signal.SIGINT
    if rc is None:
        return EXIT_OK
    if isinstance(rc, int):
        return rc
    _eprint(str(rc))
    return EXIT_ERROR


def _detail_size(text):
    """--explain --detail: bytes with an optional K/KiB/M/MiB suffix (powers of 1024), or ``all``."""
    t = text.strip().lower()
    if t == "all":
        return None
    mult = 1
    for suffix, m in (("kib", 1 << 10), ("mib", 1 << 20), ("k", 1 << 10), ("m", 1 << 20)):
        if t.endswith(suffix):
            t, mult = t[:-len(suffix)].strip(), m
            break
    if not t.isdigit():
        raise ValueError(f"{text}: not a size (e.g. 64KiB, 1MiB, all)")
    return int(t) * mult


def _run_explain(argv):
    """``nlmcodec --explain FILE [-o OUT.html] [-m MODEL] [--static|--heads|--dynamic] [--all-modes]
    [--detail SIZE] [-f] [-q]``: the page of nlmcodec._explain.explain_page.

    The mode (default: the default mode of compression) is explained over the whole file, token by token for
    the detail window (the first 64 KiB by default) and per block for the rest; the other two modes over the
    window's bytes (--all-modes: over the whole file).  OUT defaults to FILE.explain.html, is written to a
    temporary file and renamed into place (an existing OUT is replaced only with -f).
    """
    from .._frame import DEFAULT_ADAPT, HEADS

    ap = _Parser(prog=f"{PROG} --explain", description="Draw where the bits go: a self-contained HTML page "
                 "with each token coloured by its cost, bits by category with a legend, the blocks of the frame "
                 "and a cumulative-size curve against xz -9e.  The mode is explained over the whole file "
                 "(token by token in the detail window, per block after it); the other two modes over the "
                 "detail window's bytes, for comparison.")
    ap.add_argument("file", metavar="FILE")
    ap.add_argument("-o", "--output", metavar="OUT.html", help="output page (default FILE.explain.html)")
    ap.add_argument("-m", "--model", metavar="MODEL", help="bundled model name or .nlmm path (default: default)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--static", dest="adapt", action="store_const", const=False, default=DEFAULT_ADAPT,
                      help="explain static mode")
    mode.add_argument("--heads", dest="adapt", action="store_const", const=HEADS,
                      help="explain heads mode (the default, as when compressing)")
    mode.add_argument("--dynamic", dest="adapt", action="store_const", const=True, help="explain dynamic mode")
    ap.add_argument("--all-modes", action="store_true",
                    help="the other two modes over the whole file too (each costs its own compression time)")
    ap.add_argument("--detail", metavar="SIZE", default="64KiB",
                    help="bytes drawn token by token, from the start, rounded down to a block end (default 64KiB; "
                         "K/KiB/M/MiB or 'all'); the page grows by about 60 bytes per token per mode")
    ap.add_argument("-f", "--force", action="store_true", help="replace an existing output")
    ap.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_ERROR
    try:
        detail = _detail_size(args.detail)
    except ValueError as e:
        _eprint(f"{PROG}: --explain: --detail {e}")
        return EXIT_ERROR
    out = args.output or args.file + ".explain.html"
    if os.path.isdir(out):
        _eprint(f"{PROG}: {out}: Is a directory")
        return EXIT_ERROR
    if os.path.lexists(out) and not args.force:
        _eprint(f"{PROG}: {out}: File exists (use -f to overwrite)")
        return EXIT_ERROR
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as e:
        _eprint(f"{PROG}: {args.file}: {e.strerror or e}")
        return EXIT_ERROR
    try:
        from .. import _explain
        from .._errors import NLMError
    except ImportError as e:
        _eprint(f"{PROG}: --explain is not available: {e}")
        return EXIT_ERROR
    o = None
    try:
        t0 = time.monotonic()
        page, exps = _explain.explain_page(data, os.path.basename(args.file), model=args.model, adapt=args.adapt,
                                           detail=detail, all_modes=args.all_modes)
        page = page.encode("utf-8")
        o = _Output(out, args.force)
        o.write(page)
        umask = os.umask(0o22)
        os.umask(umask)
        os.fchmod(o.fd, 0o666 & ~umask)     # a page, not a copy of FILE: the usual mode of a new file
        o.commit()
        if not args.quiet:
            main = exps[0]
            others = ", ".join(f"{e.mode} {e.frame_size:,} B" + ("" if e.size == len(data) else
                                                                 f" of the first {e.size:,} B") for e in exps[1:])
            _eprint(f"{PROG}: {out}: {main.token_count:,} tokens ({len(main):,} drawn); {main.mode} "
                    f"{main.frame_size:,} B of {len(data):,} B; {others}; page {len(page):,} B "
                    f"({_elapsed(time.monotonic() - t0)})")
    except _Skip as e:
        _eprint(f"{PROG}: {e}")
        return EXIT_ERROR
    except (KeyboardInterrupt, OSError, MemoryError, ValueError, NLMError) as e:
        return _mode_failure("--explain", e, out)
    finally:
        if o is not None:
            o.discard()
    return EXIT_OK


def _mode_failure(mode, e, path):
    """The one-line message and exit status of a --train / --explain run that failed with e (path: the
    file the mode was writing, named when an OSError carries no file name)."""
    if isinstance(e, KeyboardInterrupt):
        _eprint(f"{PROG}: interrupted")
        return 128 + signal.SIGINT
    if isinstance(e, FileNotFoundError) and e.filename is None:     # no such model
        _eprint(f"{PROG}: {mode}: {_cli_words(e)}")
    elif isinstance(e, OSError):
        _eprint(f"{PROG}: {e.filename or path}: {e.strerror or e}")
    elif isinstance(e, MemoryError):
        _eprint(f"{PROG}: {mode}: out of memory")
    else:
        _eprint(f"{PROG}: {mode}: {_cli_words(e)}")
    return EXIT_ERROR


_MODE_HOOKS = {"--train": _run_train, "--explain": _run_explain}


def _split_mode(argv):
    """Find a --train or --explain token (before any ``--``); return (hook, argv without it) or (None, argv)."""
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a in _MODE_HOOKS:
            return _MODE_HOOKS[a], argv[:i] + argv[i + 1:]
    return None, argv
