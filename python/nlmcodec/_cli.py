"""The ``nlmcodec`` command line (``python -m nlmcodec`` / console script ``nlmcodec``).

This module owns the CLI: options, files and their safety rules, streaming, the progress line and signals.

Follows xz/zstd conventions (see guide CONVENTIONS.md §2): ``nlmcodec FILE`` writes ``FILE.nlm`` and keeps
``FILE``; ``-d`` strips the suffix; ``-c`` writes to stdout; ``-t`` tests; ``-l`` lists.  Exit status: 0 ok,
1 error, 2 warning (an error wins over a warning), 128 + N after signal N (130 Ctrl-C, 143 SIGTERM,
129 SIGHUP).  Bad options exit 1, not argparse's 2.

Safety rules: output goes to a temporary file in the destination directory that is renamed into place only
after it has been completely written and fsynced; every write is checked (a short write, a full disk or a
closed pipe is an error); an existing file is never replaced without ``-f``; the input is removed only with
``--rm``, only when writing to a file, only after the output has been verified and only if the input is
unchanged since it was opened.

Streaming: inputs are read in CHUNK pieces and output is written as the coder returns it.  The coding runs
in a worker thread; the main thread redraws the progress line and handles SIGINT/SIGTERM/SIGHUP (it removes
the temporary outputs and exits at once, even while a C call of the coder is running).

Only the public API of :mod:`nlmcodec` is used, plus ``nlmcodec._frame.list_frames`` for ``-l`` (frames
of format 1 and 2; standard input, which cannot seek, is read into memory first).  ``-T N`` is passed to
the coders as ``threads=N``; the progress line reads their ``progress`` counters.  ``--train`` is
delegated to :mod:`nlmcodec.train` (``parse_args`` and ``run``), ``-b/--bench`` to
``nlmcodec._bench.bench_main(files, opts)``, ``--explain`` to :mod:`nlmcodec._explain` (the page).
"""

import argparse
import errno
import hashlib
import io
import json
import os
import signal
import stat
import sys
import threading
import time

PROG = "nlmcodec"
DEFAULT_SUFFIX = ".nlm"
CHUNK = 1 << 16              # bytes read from the input at a time
PROGRESS_MIN_SIZE = 1 << 20  # by default no progress line for inputs smaller than this
TICK = 0.25                  # seconds between redraws of the progress line (and checks of the worker)
EXIT_OK, EXIT_ERROR, EXIT_WARNING = 0, 1, 2
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


# ---------------------------------------------------------------------------------------------------------------
# messages and exit status

class _Skip(Exception):
    """A file is skipped with a message; ``warning`` selects exit status 2 instead of 1."""

    def __init__(self, msg, warning=False):
        super().__init__(msg)
        self.warning = warning


class _Status:
    def __init__(self, quiet=0):
        self.quiet = quiet
        self.rc = EXIT_OK

    def error(self, msg):
        self.rc = EXIT_ERROR
        if self.quiet < 2:
            _eprint(f"{PROG}: {msg}")

    def warning(self, msg):
        if self.rc == EXIT_OK:
            self.rc = EXIT_WARNING
        if self.quiet < 1:
            _eprint(f"{PROG}: {msg}")


def _eprint(msg):
    with _PROGRESS.lock:
        _PROGRESS.erase()
        try:
            print(msg, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def _cli_words(msg):
    """API messages name API arguments; on the command line the option is -m MODEL."""
    return str(msg).replace("model=", "-m MODEL")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2, which means "warning" for xz/gzip/zstd: use 1
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


# ---------------------------------------------------------------------------------------------------------------
# temporary outputs and signals

class _Temps:
    """The temporary output files that exist right now (removed by the signal handler)."""
    lock = threading.RLock()
    paths = set()
    dying = False


def _on_signal(signum, frame):
    """Runs in the main thread: remove the temporary outputs, say why, exit 128 + signum at once."""
    if _Temps.lock.acquire(timeout=1.0):   # the worker holds it only around mkstemp / unlink
        _Temps.dying = True
    for p in list(_Temps.paths):
        try:
            os.unlink(p)
        except OSError:
            pass
    why = "interrupted" if signum == signal.SIGINT else f"terminated by {signal.Signals(signum).name}"
    if _PROGRESS.lock.acquire(timeout=0.5):
        _PROGRESS.erase()
    if _PROGRESS.quiet < 2:
        try:
            sys.stderr.write(f"{PROG}: {why}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    os._exit(128 + signum)


def _supervised(fn):
    """Run ``fn()`` in a worker thread while the main thread handles signals and draws the progress line.

    In the main thread only (signal handlers cannot be set elsewhere); otherwise ``fn()`` runs directly.
    """
    if threading.current_thread() is not threading.main_thread():
        return fn()
    old = {}
    for name in SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            old[sig] = signal.signal(sig, _on_signal)
    result = {}

    def work():
        try:
            result["rc"] = fn()
        except BaseException as e:  # handed to the main thread
            result["exc"] = e

    try:
        t = threading.Thread(target=work, name="nlmcodec-worker", daemon=True)
        t.start()
        while t.is_alive():
            t.join(TICK)
            _PROGRESS.tick()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if "exc" in result:
        raise result["exc"]
    return result["rc"]


# ---------------------------------------------------------------------------------------------------------------
# progress line (drawn by the main thread from the counters the worker updates)

class _Job:
    """One coding pass: ``total`` bytes of input; ``done()`` is the input bytes coded so far, from the
    ``progress`` counter of the current coder (updated by its worker threads) plus those before it."""

    def __init__(self, label, total):
        self.label = label
        self.total = total
        self.t0 = time.monotonic()
        self.coder = None   # the NLMCompressor / NLMDecompressor being fed
        self.base = 0       # input bytes consumed by the coders before the current one
        self.fed = 0        # input bytes given to the coders so far

    def done(self):
        if self.coder is None:
            return 0
        return min(self.base + self.coder.progress, self.fed)


class _Progress:
    """One line on stderr, redrawn with ``\\r`` by ``tick()`` and erased when the job ends or a message is printed."""

    def __init__(self):
        self.lock = threading.RLock()
        self.job = None
        self.shown = 0      # length of the line on the screen (0: nothing shown)
        self.quiet = 0

    def start(self, job, show):
        with self.lock:
            self.job = job if show else None

    def finish(self):
        with self.lock:
            self.job = None
            self.erase()

    def tick(self):
        with self.lock:
            if self.job is not None:
                self._draw(_progress_text(self.job, time.monotonic()))

    def erase(self):
        if self.shown:
            self._write("\r" + " " * self.shown + "\r")
            self.shown = 0

    def _draw(self, text):
        try:
            width = os.get_terminal_size(sys.stderr.fileno()).columns or 80   # 0: size not set
        except (OSError, ValueError, AttributeError):
            width = 80
        text = text[:max(width - 1, 20)]
        self._write("\r" + text + " " * max(self.shown - len(text), 0))
        self.shown = len(text)

    @staticmethod
    def _write(s):
        try:
            sys.stderr.write(s)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


_PROGRESS = _Progress()


def _progress_text(job, now):
    done, el = job.done(), now - job.t0
    speed = done / el if el > 0 else 0.0
    text = f"{job.label}: "
    if job.total:
        text += f"{min(100.0, 100.0 * done / job.total):5.1f} %  {_human(done)} / {_human(job.total)}"
    else:
        text += _human(done)
    text += f"  {_human(speed)}/s  {_elapsed(el)}"
    if job.total and speed > 0 and done < job.total:
        text += f"  ETA {_elapsed((job.total - done) / speed)}"
    return text


def _show_progress(opts, total):
    if opts.progress is not None:   # --progress / --no-progress
        return opts.progress
    return opts.quiet == 0 and _isatty(sys.stderr) and total is not None and total >= PROGRESS_MIN_SIZE


def _isatty(f):
    try:
        return f.isatty()
    except (AttributeError, ValueError, OSError):
        return False


# ---------------------------------------------------------------------------------------------------------------
# extension hooks: --train and -b/--bench are separate modes with their own options

class _TrainUsage(Exception):
    pass


def _run_train(argv):
    """``nlmcodec --train FILE... -o MODEL [-f] [training options]``: nlmcodec.train.parse_args + run.

    Every error is one line naming the file or the option; an existing MODEL is replaced only with -f.
    """
    try:
        from . import train
        from ._errors import NLMError
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
        from ._bench import bench_main
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


def _run_explain(argv):
    """``nlmcodec --explain FILE [-o OUT.html] [-m MODEL] [-f] [-q]``: the page of nlmcodec._explain.

    Both modes (static and dynamic) are computed and drawn; OUT defaults to FILE.explain.html, is written
    to a temporary file and renamed into place (an existing OUT is replaced only with -f).
    """
    ap = _Parser(prog=f"{PROG} --explain", description="Draw where the bits go: a self-contained HTML page "
                 "with each token coloured by its cost (static and dynamic), bits by category and a "
                 "cumulative-size curve against xz -9e.")
    ap.add_argument("file", metavar="FILE")
    ap.add_argument("-o", "--output", metavar="OUT.html", help="output page (default FILE.explain.html)")
    ap.add_argument("-m", "--model", metavar="MODEL", help="bundled model name or .nlmm path (default: default)")
    ap.add_argument("-f", "--force", action="store_true", help="replace an existing output")
    ap.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else EXIT_ERROR
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
        from . import _explain
        from ._errors import NLMError
    except ImportError as e:
        _eprint(f"{PROG}: --explain is not available: {e}")
        return EXIT_ERROR
    o = None
    try:
        t0 = time.monotonic()
        exps = [_explain.explain(data, model=args.model, adapt=a) for a in (False, True)]
        page = _explain.render_html(data, os.path.basename(args.file), exps).encode("utf-8")
        o = _Output(out, args.force)
        o.write(page)
        umask = os.umask(0o22)
        os.umask(umask)
        os.fchmod(o.fd, 0o666 & ~umask)     # a page, not a copy of FILE: the usual mode of a new file
        o.commit()
        if not args.quiet:
            _eprint(f"{PROG}: {out}: {len(exps[0]):,} tokens; static {exps[0].frame_size:,} B, dynamic "
                    f"{exps[1].frame_size:,} B of {len(data):,} B ({_elapsed(time.monotonic() - t0)})")
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


# ---------------------------------------------------------------------------------------------------------------
# argument parsing

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
                   help="bundled model name or model file (default: the bundled default model); "
                        "decompression finds bundled models by the id stored in the frame")
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


# ---------------------------------------------------------------------------------------------------------------
# formatting

def _human(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _elapsed(sec):
    sec = int(sec)
    h, rem = divmod(sec, 3600)
    mnt, s = divmod(rem, 60)
    return f"{h}:{mnt:02d}:{s:02d}" if h else f"{mnt}:{s:02d}"


def _ratio(comp, orig):
    """xz's ratio: compressed / uncompressed ('---' when undefined)."""
    return f"{comp / orig:.3f}" if orig else "---"


def _bpb(comp, orig):
    return f"{8.0 * comp / orig:.3f}" if orig else "---"


def _summary(name, nin, nout, seconds, mode):
    """One xz-style line: ``name: in -> out = ratio, bits/byte, speed, time``."""
    comp, orig = (nout, nin) if mode == "compress" else (nin, nout)
    speed = _human(orig / seconds) + "/s" if seconds > 0 else "--- /s"   # uncompressed bytes per second
    return (f"{name}: {_human(nin)} -> {_human(nout)} = {_ratio(comp, orig)}, "
            f"{_bpb(comp, orig)} bits/byte, {speed}, {_elapsed(seconds)}")


# ---------------------------------------------------------------------------------------------------------------
# streaming coders

def _coder_options(opts):
    """Keyword arguments for NLMCompressor/NLMDecompressor; ``threads=`` only when -T is given."""
    kw = {"model": opts.model_obj}
    if opts.threads is not None:
        kw["threads"] = opts.threads
    return kw


def _compress_stream(api, opts, read, write, job):
    """Feed the incremental compressor in CHUNK pieces.  Returns (bytes in, bytes out, sha256 of the input)."""
    mode = {} if opts.adapt is None else {"adapt": opts.adapt}      # None: the API's default (heads mode)
    comp = api.NLMCompressor(check=getattr(api, "CHECK_" + opts.check.upper()), **mode, **_coder_options(opts))
    job.coder = comp
    h = hashlib.sha256()
    nin = nout = 0
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        h.update(chunk)
        nin += len(chunk)
        job.fed = nin
        out = comp.compress(chunk)
        if out:
            write(out)
            nout += len(out)
    out = comp.flush()
    write(out)
    nout += len(out)
    return nin, nout, h.digest()


def _decompress_stream(api, opts, read, write, job):
    """Decode every concatenated frame from ``read``.  Returns (bytes in, bytes out, sha256 of the output).

    Raises the API's NLMError for corrupt data, and NLMError for truncated or empty input.
    """
    kw = _coder_options(opts)
    h = hashlib.sha256()
    nin = nout = frames = 0
    dec = job.coder = api.NLMDecompressor(**kw)
    started = False          # bytes of the current frame have been fed
    pending = b""
    while True:
        if dec.eof:
            frames += 1
            pending = dec.unused_data
            job.base = nin - len(pending)
            dec = job.coder = api.NLMDecompressor(**kw)
            started = False
            if not pending:
                pending = read(CHUNK)
                nin += len(pending)
                if not pending:
                    break
        if dec.needs_input and not pending:
            pending = read(CHUNK)
            nin += len(pending)
            if not pending:
                if frames == 0 and not started:
                    raise api.NLMError("empty input: no compressed data")
                raise api.NLMError("compressed data ended before the end of the frame (truncated input)")
        data, pending = pending, b""
        if data:
            started = True
        job.fed = nin
        out = dec.decompress(data, max_length=CHUNK * 16)
        if out:
            h.update(out)
            nout += len(out)
            write(out)
        elif not data and not dec.eof and dec.needs_input is False:
            # no input, no output, no progress: should not happen with a conforming decompressor
            raise api.NLMError("decompressor made no progress")
    return nin, nout, h.digest()


def _run_job(opts, label, total, fn):
    job = _Job(label, total)
    _PROGRESS.start(job, _show_progress(opts, total))
    try:
        return fn(job)
    finally:
        _PROGRESS.finish()


# ---------------------------------------------------------------------------------------------------------------
# files

class _Sink:
    """Writes all of every buffer to a file descriptor or raises OSError naming ``name`` (os.write may write
    less than asked: loop; a write of 0 bytes is an error)."""

    def __init__(self, fd, name):
        self.fd = fd
        self.name = name

    def write(self, b):
        view = memoryview(b).cast("B")
        while len(view):
            try:
                n = os.write(self.fd, view)
            except OSError as e:
                raise OSError(e.errno, e.strerror, self.name) from None
            if n <= 0:
                raise OSError(errno.EIO, "short write (no bytes written)", self.name)
            view = view[n:]


def _discard(b):
    pass


class _Output:
    """Write to a temporary file next to ``path``; ``commit()`` fsyncs, copies metadata and renames into place."""

    def __init__(self, path, force, src_stat=None):
        self.path = path
        self.force = force
        self.src_stat = src_stat
        self.committed = False
        d = os.path.dirname(os.path.abspath(path))
        with _Temps.lock:     # registered before the signal handler can look
            if _Temps.dying:
                raise _Skip("interrupted")
            import tempfile   # here: writing to standard output (the start-up benchmark) never loads it

            self.fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
            _Temps.paths.add(self.tmp)
        self.sink = _Sink(self.fd, path)

    def write(self, b):
        self.sink.write(b)

    def commit(self):
        try:
            os.fsync(self.fd)
            if self.src_stat is not None:
                try:
                    os.fchmod(self.fd, stat.S_IMODE(self.src_stat.st_mode))
                except OSError:
                    pass
            fd, self.fd = self.fd, None
            os.close(fd)
            if self.src_stat is not None:
                try:
                    os.utime(self.tmp, ns=(self.src_stat.st_atime_ns, self.src_stat.st_mtime_ns))
                except OSError:
                    pass
            if self.force:
                os.replace(self.tmp, self.path)
            else:
                # link() refuses to replace an existing file, so a file created since the first check is never lost
                try:
                    os.link(self.tmp, self.path)
                except FileExistsError:
                    raise _Skip(f"{self.path}: File exists (use -f to overwrite)")
                except OSError:
                    if os.path.lexists(self.path):
                        raise _Skip(f"{self.path}: File exists (use -f to overwrite)")
                    os.replace(self.tmp, self.path)
                else:
                    os.unlink(self.tmp)
        except OSError as e:
            raise OSError(e.errno, e.strerror, self.path) from None
        self.committed = True
        with _Temps.lock:
            _Temps.paths.discard(self.tmp)
        _fsync_dir(os.path.dirname(os.path.abspath(self.path)))

    def discard(self):
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
        if not self.committed:
            with _Temps.lock:
                try:
                    os.unlink(self.tmp)
                except OSError:
                    pass
                _Temps.paths.discard(self.tmp)


def _fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _stdout_sink():
    sys.stdout.flush()
    return _Sink(sys.stdout.fileno(), "(stdout)")


def _stdin_binary():
    return sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin


def _output_name(opts, name):
    suf = opts.suffix
    if opts.mode == "compress":
        if name.endswith(suf) and not opts.force:
            raise _Skip(f"{name}: already has {suf} suffix, skipping", warning=True)
        return name + suf
    if len(name) <= len(suf) or not name.endswith(suf):
        raise _Skip(f"{name}: filename has an unknown suffix, skipping", warning=True)
    return name[:-len(suf)]


def _open_input(opts, name):
    """Open a named input after xz's checks.  Returns (binary file, stat)."""
    to_file = not opts.to_stdout
    try:
        lst = os.lstat(name)
    except FileNotFoundError:
        raise _Skip(f"{name}: No such file or directory")
    except OSError as e:
        raise _Skip(f"{name}: {e.strerror}")
    if stat.S_ISLNK(lst.st_mode) and to_file and not opts.force and opts.mode in ("compress", "decompress"):
        raise _Skip(f"{name}: Is a symbolic link, skipping", warning=True)
    try:
        f = open(name, "rb")
    except IsADirectoryError:
        raise _Skip(f"{name}: Is a directory, skipping", warning=True)
    except OSError as e:
        raise _Skip(f"{name}: {e.strerror}")
    st = os.fstat(f.fileno())
    if stat.S_ISDIR(st.st_mode):
        f.close()
        raise _Skip(f"{name}: Is a directory, skipping", warning=True)
    if not stat.S_ISREG(st.st_mode) and to_file and opts.mode in ("compress", "decompress"):
        f.close()
        raise _Skip(f"{name}: Not a regular file, skipping", warning=True)
    return f, st


def _unchanged(name, st, nread):
    """The input is the file that was opened, with the size and mtime it had then, and all of it was read."""
    try:
        now = os.stat(name)
    except OSError:
        return False
    same = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (st.st_dev, st.st_ino, st.st_size,
                                                                      st.st_mtime_ns)
    return same and nread == st.st_size


# ---------------------------------------------------------------------------------------------------------------
# per-file operations

def _process(api, opts, status, name):
    """Compress, decompress or test one input (``-`` is stdin)."""
    is_stdin = name == "-"
    display = "(stdin)" if is_stdin else name
    compressed_in = opts.mode in ("decompress", "test")
    if is_stdin:
        fin, st = _stdin_binary(), None
        if compressed_in and _isatty(sys.stdin):
            raise _Skip("Compressed data cannot be read from a terminal")
        try:
            st0 = os.fstat(fin.fileno())
            size = st0.st_size if stat.S_ISREG(st0.st_mode) else None
        except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
            size = None
        close_in = False
    else:
        fin, st = _open_input(opts, name)
        size = st.st_size if stat.S_ISREG(st.st_mode) else None
        close_in = True

    out = None
    try:
        # where the output goes
        if opts.mode == "test":
            write, dest = _discard, None
        elif opts.to_stdout:
            if opts.mode == "compress" and _isatty(sys.stdout):
                raise _Skip("Compressed data cannot be written to a terminal")
            write, dest = _stdout_sink().write, None
        else:
            dest = opts.output if opts.output is not None else _output_name(opts, name)
            if os.path.lexists(dest):
                if not opts.force:
                    raise _Skip(f"{dest}: File exists (use -f to overwrite)")
                if os.path.isdir(dest):
                    raise _Skip(f"{dest}: Is a directory")
                if not is_stdin and os.path.exists(dest) and os.path.samefile(dest, name):
                    raise _Skip(f"{name}: input and output are the same file")
            try:
                out = _Output(dest, opts.force, st)
            except OSError as e:
                raise _Skip(f"{dest}: {e.strerror or e}")
            write = out.write

        t0 = time.monotonic()
        stream = _compress_stream if opts.mode == "compress" else _decompress_stream
        nin, nout, digest = _run_job(opts, os.path.basename(display), size,
                                     lambda job: stream(api, opts, fin.read, write, job))
        if out is not None:
            out.commit()
        dt = time.monotonic() - t0
        if opts.verbose and opts.quiet == 0:
            extra = ""
            if opts.threads is not None:
                extra = f", {opts.threads or os.cpu_count()} threads"
            if opts.mode == "test":
                _eprint(_summary(display, nin, nout, dt, "test") + extra + ", OK")
            else:
                target = "(stdout)" if dest is None else dest
                _eprint(_summary(display, nin, nout, dt, opts.mode) + extra + f" -> {target}")
    except BaseException:
        if out is not None:
            out.discard()
        raise
    finally:
        if close_in:
            fin.close()

    if opts.rm and out is not None and not is_stdin:
        _verify(api, opts, dest, digest)
        if not _unchanged(name, st, nin):
            raise _Skip(f"{name}: changed while it was being read (size, time or inode differ); "
                        f"not removed (--rm)", warning=True)
        os.unlink(name)


def _verify(api, opts, path, digest):
    """Before --rm: check that ``path`` holds what it should (decode it back after compression)."""
    with open(path, "rb") as f:
        if opts.mode == "compress":
            size = os.fstat(f.fileno()).st_size
            _, _, got = _run_job(opts, f"{os.path.basename(path)} (verify)", size,
                                 lambda job: _decompress_stream(api, opts, f.read, _discard, job))
        else:
            h = hashlib.sha256()
            for chunk in iter(lambda: f.read(CHUNK), b""):
                h.update(chunk)
            got = h.digest()
    if got != digest:
        raise _Skip(f"{path}: verification failed, input not removed")


def _run_files(api, opts, status, files):
    """The per-file loop of -z/-d/-t (in the worker thread)."""
    opts.model_obj = None
    if opts.model is not None:
        try:
            opts.model_obj = api.load_model(opts.model)
        except (api.NLMError, OSError, ValueError) as e:
            status.error(f"cannot load model {opts.model!r} (-m): {e}")
            return status.rc
    for name in files:
        where = "(stdin)" if name == "-" else name
        try:
            _process(api, opts, status, name)
        except _Skip as e:
            (status.warning if e.warning else status.error)(str(e))
        except api.NLMError as e:
            status.error(f"{where}: {_cli_words(e)}")
        except BrokenPipeError as e:        # the reader went away: nothing more can be written
            status.error(f"{e.filename or '(stdout)'}: {e.strerror or 'Broken pipe'}")
            _silence_stdout()
            return status.rc
        except OSError as e:
            status.error(f"{e.filename or where}: {e.strerror or e}")
        except MemoryError:
            status.error(f"{where}: out of memory")
        except Exception as e:  # a bug, not bad data: report it, keep going with the next file
            status.error(f"{where}: internal error: {type(e).__name__}: {e}")
    return status.rc


# ---------------------------------------------------------------------------------------------------------------
# -l / --list

def _read_frames(f):
    """(list of FrameInfo, compressed size) of the frames in the binary file ``f``, from its position to
    its end (list_frames raises NLMError for bytes after the last frame that are not a frame)."""
    from ._frame import list_frames
    if not f.seekable():        # standard input from a pipe or a terminal
        f = io.BytesIO(f.read())
    frames = list_frames(f)
    return [info for info, _ in frames], sum(n for _, n in frames)


_BUNDLED_IDS = None


def _bundled_names():
    """{model id: name} of the bundled models (a model's id is the SHA-256 of its file)."""
    global _BUNDLED_IDS
    if _BUNDLED_IDS is None:
        _BUNDLED_IDS = {}
        import nlmcodec as api

        for name, p in api._bundled_files().items():
            try:
                mid = api._bundled_manifest_id(p) or hashlib.sha256(p.read_bytes()).digest()
            except OSError:
                continue
            _BUNDLED_IDS[mid] = name
    return _BUNDLED_IDS


def _check_name(api, check):
    return {api.CHECK_NONE: "NONE", api.CHECK_CRC32: "CRC32"}.get(check, str(check))


def _uses_model(info):
    """False when the frame has no word-model block (its adapt flag then means nothing)."""
    return any(b.kind == "model" for b in info.blocks)


def _list_one(api, opts, name):
    is_stdin = name == "-"
    display = "(stdin)" if is_stdin else name
    try:
        if is_stdin:
            if _isatty(sys.stdin):
                raise _Skip("Compressed data cannot be read from a terminal")
            infos, csize = _read_frames(_stdin_binary())
        else:
            f, _ = _open_input(opts, name)
            with f:
                infos, csize = _read_frames(f)
    except api.NLMError as e:
        raise _Skip(f"{display}: {e}")
    if not infos:
        raise _Skip(f"{display}: File is empty")
    usize = sum(i.decompressed_size for i in infos)
    checks = sorted({_check_name(api, i.check) for i in infos})
    modes = sorted({{False: "static", True: "dynamic"}.get(i.adapt, i.adapt) for i in infos if _uses_model(i)}) \
        or ["-"]
    ids = sorted({bytes(i.model_id) for i in infos if i.model_id is not None})
    names = [_bundled_names().get(m) for m in ids]
    kinds = {}
    for i in infos:
        for blk in i.blocks:
            kinds[blk.kind] = kinds.get(blk.kind, 0) + 1
    return {
        "name": display,
        "frames": len(infos),
        "compressed": csize,
        "uncompressed": usize,
        "ratio": (csize / usize) if usize else None,
        "bits_per_byte": (8.0 * csize / usize) if usize else None,
        "check": ",".join(checks),
        "mode": ",".join(modes),
        "model_id": ",".join(m.hex() for m in ids) or "-",
        "model_name": ",".join(n for n in names if n) or None,
        "model": ",".join(n or m.hex()[:12] for n, m in zip(names, ids)) or "-",
        "blocks": sum(len(i.blocks) for i in infos),
        "block_kinds": kinds,
        "format_version": sorted({i.format_version for i in infos}),
    }


def _do_list(api, opts, status, files):
    rows = []
    for name in files:
        try:
            rows.append(_list_one(api, opts, name))
        except _Skip as e:
            (status.warning if e.warning else status.error)(str(e))
        except OSError as e:
            status.error(f"{name}: {e.strerror or e}")
    out = sys.stdout
    if opts.json:
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    if not rows:
        return
    head = (f"{'Frames':>6} {'Compressed':>12} {'Uncompressed':>12} {'Ratio':>6} {'bpb':>6} "
            f"{'Check':<6} {'Mode':<8} {'Model':<12}  Filename")
    print(head, file=out)

    def line(r):
        ratio = _ratio(r["compressed"], r["uncompressed"])
        bpb = _bpb(r["compressed"], r["uncompressed"])
        return (f"{r['frames']:>6} {_human(r['compressed']):>12} {_human(r['uncompressed']):>12} "
                f"{ratio:>6} {bpb:>6} "
                f"{r['check']:<6} {r['mode']:<8} {r['model'][:12]:<12}  {r['name']}")

    for r in rows:
        print(line(r), file=out)
        if opts.verbose:
            print(f"         format version: {','.join(str(v) for v in r['format_version'])}", file=out)
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["block_kinds"].items()))
            print(f"         blocks:         {r['blocks']}{f' ({kinds})' if kinds else ''}", file=out)
            named = f" ({r['model_name']})" if r["model_name"] else ""
            print(f"         model id:       {r['model_id']}{named}", file=out)
            print(f"         compressed:     {r['compressed']} bytes", file=out)
            print(f"         uncompressed:   {r['uncompressed']} bytes", file=out)
    if len(rows) > 1:
        tc = sum(r["compressed"] for r in rows)
        tu = sum(r["uncompressed"] for r in rows)
        total = {"frames": sum(r["frames"] for r in rows), "compressed": tc, "uncompressed": tu,
                 "check": "", "mode": "", "model": "", "name": f"{len(rows)} files (total)"}
        print("-" * len(head), file=out)
        print(line(total), file=out)


def _run_list(api, opts, status, files):
    try:
        _do_list(api, opts, status, files)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        status.error("(stdout): Broken pipe")
    except OSError as e:
        status.error(f"(stdout): {e.strerror or e}")
    return status.rc


# ---------------------------------------------------------------------------------------------------------------
# main

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
        print(f"{PROG} {api.__version__} ({api.backend} backend)")
        return EXIT_OK

    status = _Status(opts.quiet)
    _PROGRESS.quiet = opts.quiet
    opts.mode = opts.mode or "compress"
    files = opts.files or ["-"]

    # option consistency
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


def _silence_stdout():
    # after EPIPE, make the interpreter's final flush of stdout harmless
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass
