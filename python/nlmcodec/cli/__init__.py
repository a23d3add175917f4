"""The ``nlmcodec`` command line (``python -m nlmcodec`` / console script ``nlmcodec``).

This package owns the command line; this module owns main() (the dispatch and the consistency of the
options), the rest is split by concern:

* options.py   the argument parser (xz/zstd-style options);
* coding.py    compression, decompression and -t, file after file, streaming;
* files.py     outputs (temporary file, fsync, rename) and the checks on inputs;
* listing.py   -l / --list;
* modes.py     the entry points of --train, --explain and -b/--bench;
* terminal.py  messages, exit status, the progress line, signals.

Follows xz/zstd conventions: ``nlmcodec FILE`` writes ``FILE.nlm`` and keeps
``FILE``; ``-d`` strips the suffix; ``-c`` writes to stdout; ``-t`` tests; ``-l`` lists.  Exit status: 0 ok,
1 error, 2 warning (an error wins over a warning), 128 + N after signal N (130 Ctrl-C, 143 SIGTERM,
129 SIGHUP; 141 when the reader of standard output went away, without a message, as xz dies of SIGPIPE).
Bad options exit 1, not argparse's 2.  xz's -0 ... -9, --fast, --best and -e choose a mode (options.LEVEL_MODES:
nlmcodec has modes, not presets); -F accepts auto and nlm; -M LIMIT is the decoder's memlimit=; -T defaults to 0
(one thread per CPU: no thread count changes a byte).

Safety rules: output goes to a temporary file ``.NAME.PID.RANDOM.tmp`` in the destination directory (one left by a
killed process is removed by the next run writing NAME once PID is gone) that is renamed into place only
after it has been completely written and fsynced; every write is checked (a short write, a full disk or a
closed pipe is an error); an existing file is never replaced without ``-f``; the input is removed only with
``--rm``, only when writing to a file, only after the output has been verified, only if the input is
unchanged since it was opened, and (without ``-f``) only if it has no other hard link.

Streaming: inputs are read in CHUNK pieces and output is written as the coder returns it.  The coding runs
in a worker thread; the main thread redraws the progress line and handles SIGINT/SIGTERM/SIGHUP (it removes
the temporary outputs and exits at once, even while a C call of the coder is running).

Only the public API of :mod:`nlmcodec` is used, plus ``nlmcodec._frame.list_frames`` for ``-l`` (standard
input, which cannot seek, is read into memory first) and ``nlmcodec._registry`` for the names of the models.
``-T N`` is passed to the coders as ``threads=N``, ``-M`` to the decoders as ``memlimit=`` (when the API has it);
the progress line reads their ``progress`` counters.  ``--train`` is delegated to :mod:`nlmcodec.train`
(``parse_args`` and ``run``), ``-b/--bench`` to ``nlmcodec._bench.bench_main(files, opts)``, ``--explain`` to
:mod:`nlmcodec._explain` (the page).
"""

import signal
import sys

from .coding import _run_files
from .listing import _run_list
from .modes import _run_bench, _split_mode
from .options import FORMATS, LEVEL_MODES, _build_parser, parse_memlimit
from .terminal import EXIT_ERROR, EXIT_OK, PROG, _PROGRESS, _Status, _eprint, _supervised

__all__ = ["main"]


def main(argv=None):
    """Run the command line; returns the exit status (0 ok, 1 error, 2 warning)."""
    if argv is None:
        argv = sys.argv[1:]
    argv = list(argv)
    hook, rest = _split_mode(argv)
    if hook is not None:
        return hook(rest)

    parser = _build_parser()
    try:
        opts = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_ERROR

    # xz's presets onto the modes (options.LEVEL_MODES): an explicit mode wins, then -e, then the level
    if opts.adapt is None:
        if opts.extreme:
            opts.adapt = True
        elif opts.level is not None:
            opts.adapt = LEVEL_MODES[opts.level]

    if opts.mode == "bench" and not opts.version:   # before importing the package: baselines work without it
        if not opts.files:
            _eprint(f"{PROG}: -b/--bench needs at least one FILE")
            return EXIT_ERROR
        return _run_bench(opts.files, opts)

    try:
        import nlmcodec as api
    except ImportError as e:
        _eprint(f"{PROG}: cannot import nlmcodec: {e}")
        return EXIT_ERROR
    except KeyboardInterrupt:        # Ctrl-C before the handlers of _supervised are in place
        _eprint(f"{PROG}: interrupted")
        return 128 + signal.SIGINT

    if opts.version:
        return _print_version(api)

    status = _Status(opts.quiet)
    _PROGRESS.quiet = opts.quiet
    opts.mode = opts.mode or "compress"
    files = opts.files or ["-"]

    # option consistency
    if opts.format.strip().lower() not in FORMATS:
        status.error(f"{opts.format}: unknown file format type (-F/--format: {' or '.join(FORMATS)})")
        return status.rc
    if opts.memlimit is not None:
        try:
            opts.memlimit = parse_memlimit(opts.memlimit)
        except ValueError as e:
            status.error(f"-M/--memlimit: {e}")
            return status.rc
    if not opts.suffix or "/" in opts.suffix or opts.suffix in (".", ".."):
        status.error(f"invalid suffix {opts.suffix!r}")
        return status.rc
    if opts.json and opts.mode not in ("list", "bench"):
        status.error("--json is only valid with -l/--list or -b/--bench")
        return status.rc
    if opts.mode != "bench" and (opts.against is not None or opts.runs is not None):
        status.error("--against and --runs are only valid with -b/--bench")
        return status.rc
    if opts.output is not None:
        if opts.mode in ("test", "list"):
            status.error(f"-o/--output cannot be used with --{opts.mode}")
            return status.rc
        if len(files) > 1:
            status.error("-o/--output takes a single input file")
            return status.rc
        if opts.output == "-":
            opts.output, opts.stdout = None, True
        elif opts.stdout:
            status.error("-o/--output and -c/--stdout cannot be used together")
            return status.rc
    opts.to_stdout = opts.stdout or opts.mode == "test"
    if not opts.to_stdout and opts.output is None and opts.mode in ("compress", "decompress"):
        # stdin always goes to stdout (xz): only possible for the implicit '-' among named files when alone
        if files == ["-"]:
            opts.to_stdout = True
        elif "-" in files:
            status.error("standard input needs -c/--stdout when other files are given")
            return status.rc
    if files.count("-") > 1:
        status.error("standard input given more than once")
        return status.rc

    if opts.mode == "list":
        return _supervised(lambda: _run_list(api, opts, status, files))
    return _supervised(lambda: _run_files(api, opts, status, files))




def _print_version(api):
    """``-V``: the package, the frame format it writes and those it reads, the default models."""
    from .._frame import READ_VERSIONS

    lines = [f"{PROG} {api.__version__} ({api.backend} backend)",
             f"writes frame format {api.FORMAT_VERSION}; reads format{'s' if len(READ_VERSIONS) > 1 else ''} "
             f"{_ranges(READ_VERSIONS)} (.nlm files; -F auto|nlm)"]
    try:
        from .._registry import default_model_names, file_id, model_files

        names = default_model_names()
        if not names:
            lines.append("default model: none bundled (-m NAME|PATH needed to compress)")
        else:
            files = model_files()
            models = ", ".join(f"{n} (id {file_id(files[n]).hex()[:16]}...)" for n in names)
            lines.append(f"default model{'s' if len(names) > 1 else ''}: {models}"
                         + ("; each file uses the one that codes a probe of its first 128 KiB smaller (under 32 KiB: the "
                            "first)" if len(names) > 1 else ""))
    except Exception as e:      # a broken install still says its version
        lines.append(f"default model: unknown ({type(e).__name__}: {e})")
    print("\n".join(lines))
    return EXIT_OK


def _ranges(versions):
    vs = sorted(versions)
    if vs and vs == list(range(vs[0], vs[-1] + 1)) and len(vs) > 2:
        return f"{vs[0]} to {vs[-1]}"
    return ", ".join(map(str, vs))
