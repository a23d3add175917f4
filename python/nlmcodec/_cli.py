"""The ``nlmcodec`` command line (``python -m nlmcodec`` / console script ``nlmcodec``).

Follows xz/zstd conventions (see guide CONVENTIONS.md §2): ``nlmcodec FILE`` writes ``FILE.nlm`` and keeps
``FILE``; ``-d`` strips the suffix; ``-c`` writes to stdout; ``-t`` tests; ``-l`` lists.  Exit status: 0 ok,
1 error, 2 warning (an error wins over a warning).  Bad options exit 1, not argparse's 2.

Safety rules: output goes to a temporary file in the destination directory that is renamed into place only
after it has been completely written and fsynced; an existing file is never replaced without ``-f``; the
input is removed only with ``--rm``, only when writing to a file, and only after the output has been verified.

Only the public API of :mod:`nlmcodec` is used.  ``--train`` is delegated to :func:`nlmcodec.train.main`
(it receives the command line without ``--train``), ``-b/--bench`` to ``nlmcodec._bench.bench_main(files, opts)``.
"""

import argparse
import hashlib
import io
import json
import os
import stat
import sys
import tempfile
import time

PROG = "nlmcodec"
DEFAULT_SUFFIX = ".nlm"
CHUNK = 1 << 16            # bytes fed to the incremental objects at a time (also the progress granularity)
PROGRESS_MIN_SIZE = 1 << 16  # no progress bar for inputs smaller than this
EXIT_OK, EXIT_ERROR, EXIT_WARNING = 0, 1, 2


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
    try:
        print(msg, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2, which means "warning" for xz/gzip/zstd: use 1
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


# ---------------------------------------------------------------------------------------------------------------
# extension hooks: --train and -b/--bench are separate modes with their own options

def _run_train(argv):
    """``nlmcodec --train FILE... -o MODEL [training options]`` -> ``nlmcodec.train.main(argv)``."""
    try:
        from . import train
    except ImportError as e:
        _eprint(f"{PROG}: --train is not available: {e}")
        return EXIT_ERROR
    return _call_mode(train.main, argv)


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
    return _call_mode(lambda _: bench_main(files, opts), None)


def _call_mode(fn, argv):
    try:
        rc = fn(argv)
    except SystemExit as e:  # an argparse inside the mode: keep "bad option" = 1
        rc = e.code
        if rc == 2:
            rc = EXIT_ERROR
    except KeyboardInterrupt:
        _eprint(f"{PROG}: interrupted")
        return EXIT_ERROR
    if rc is None:
        return EXIT_OK
    if isinstance(rc, int):
        return rc
    _eprint(str(rc))
    return EXIT_ERROR


_MODE_HOOKS = {"--train": _run_train}


def _split_mode(argv):
    """Find a --train token (before any ``--``); return (hook, argv without it) or (None, argv)."""
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a in _MODE_HOOKS:
            return _MODE_HOOKS[a], argv[:i] + argv[i + 1:]
    return None, argv


# ---------------------------------------------------------------------------------------------------------------
# argument parsing

def _build_parser():
    p = _Parser(
        prog=PROG,
        usage="%(prog)s [MODE] [OPTIONS] [FILE ...]",
        description="Lossless text compression with a word-level RNN language model. "
                    "With no FILE, or when FILE is -, read standard input and write standard output.",
        epilog="training: %(prog)s --train FILE... -o MODEL [training options] "
               "(see %(prog)s --train --help). "
               "Exit status: 0 ok, 1 error, 2 warning.",
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
                   help="remove each input file after its output has been written and verified")
    o.add_argument("-f", "--force", action="store_true",
                   help="overwrite existing output files; compress files that already have the suffix; follow symlinks")
    o.add_argument("-S", "--suffix", metavar=".SUF", default=DEFAULT_SUFFIX,
                   help=f"suffix of compressed files (default {DEFAULT_SUFFIX})")
    c = p.add_argument_group("compression")
    c.add_argument("-m", "--model", metavar="NAME|PATH",
                   help="bundled model name or model file (default: the bundled default model); "
                        "decompression finds bundled models by the id stored in the frame")
    c.add_argument("--static", "--no-adapt", dest="adapt", action="store_false", default=True,
                   help="static mode: do not adapt the model to the input while coding (faster)")
    c.add_argument("-C", "--check", choices=("none", "crc32"), default="crc32",
                   help="integrity check of the original data stored in each frame (default crc32)")
    b = p.add_argument_group("benchmark (-b)")
    b.add_argument("--against", metavar="LIST",
                   help="comma-separated baselines, e.g. xz-9e,bz2-9,zlib-9,zstd-19 (default: all installed)")
    b.add_argument("--runs", "--iterations", dest="runs", type=int, metavar="N", help="timed runs per codec (median)")
    v = p.add_argument_group("output")
    v.add_argument("-v", "--verbose", action="count", default=0,
                   help="one summary line per file on stderr; with -l, more detail")
    v.add_argument("-q", "--quiet", action="count", default=0,
                   help="suppress warnings; twice to suppress errors too")
    v.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar (default: when stderr is a terminal; needs tqdm)")
    v.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")
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
# progress bar (tqdm, optional and lazily imported)

class _NoBar:
    def update(self, n):
        pass

    def close(self):
        pass


def _progress_bar(opts, total, desc):
    want = opts.progress
    if want is None:
        want = opts.quiet == 0 and _isatty(sys.stderr)
    if not want or opts.quiet or total is None or total < PROGRESS_MIN_SIZE:
        return _NoBar()
    try:
        from tqdm import tqdm
    except Exception:
        return _NoBar()
    try:
        return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, leave=False,
                    file=sys.stderr, mininterval=0.2, dynamic_ncols=True)
    except Exception:
        return _NoBar()


def _isatty(f):
    try:
        return f.isatty()
    except (AttributeError, ValueError, OSError):
        return False


# ---------------------------------------------------------------------------------------------------------------
# streaming coders

def _check_constant(api, name):
    return getattr(api, "CHECK_" + name.upper())


def _compress_stream(api, opts, read, write, bar):
    """Feed the incremental compressor in CHUNK pieces.  Returns (bytes in, bytes out, sha256 of the input)."""
    comp = api.NLMCompressor(model=opts.model_obj, adapt=opts.adapt, check=_check_constant(api, opts.check))
    h = hashlib.sha256()
    nin = nout = 0
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        h.update(chunk)
        nin += len(chunk)
        out = comp.compress(chunk)
        if out:
            write(out)
            nout += len(out)
        bar.update(len(chunk))
    out = comp.flush()
    write(out)
    nout += len(out)
    return nin, nout, h.digest()


def _decompress_stream(api, model, read, write, bar=_NoBar()):
    """Decode every concatenated frame from ``read``.  Returns (bytes in, bytes out, sha256 of the output, frames).

    Raises the API's NLMError for corrupt data, and NLMError for truncated or empty input.
    """
    h = hashlib.sha256()
    nin = nout = frames = 0
    dec = api.NLMDecompressor(model=model)
    started = False          # bytes of the current frame have been fed
    pending = b""
    while True:
        if dec.eof:
            frames += 1
            pending = dec.unused_data
            dec = api.NLMDecompressor(model=model)
            started = False
            if not pending:
                pending = read(CHUNK)
                nin += len(pending)
                bar.update(len(pending))
                if not pending:
                    break
        if dec.needs_input and not pending:
            pending = read(CHUNK)
            nin += len(pending)
            bar.update(len(pending))
            if not pending:
                if frames == 0 and not started:
                    raise api.NLMError("empty input: no compressed data")
                raise api.NLMError("compressed data ended before the end of the frame (truncated input)")
        data, pending = pending, b""
        if data:
            started = True
        out = dec.decompress(data, max_length=CHUNK * 16)
        if out:
            h.update(out)
            nout += len(out)
            write(out)
        elif not data and not dec.eof and dec.needs_input is False:
            # no input, no output, no progress: should not happen with a conforming decompressor
            raise api.NLMError("decompressor made no progress")
    return nin, nout, h.digest(), frames


# ---------------------------------------------------------------------------------------------------------------
# files

class _Output:
    """Write to a temporary file next to ``path``; ``commit()`` fsyncs, copies metadata and renames into place."""

    def __init__(self, path, force, src_stat=None):
        self.path = path
        self.force = force
        self.src_stat = src_stat
        d = os.path.dirname(os.path.abspath(path))
        fd, self.tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
        self.f = os.fdopen(fd, "wb")
        self.committed = False

    def write(self, b):
        self.f.write(b)

    def commit(self):
        self.f.flush()
        os.fsync(self.f.fileno())
        if self.src_stat is not None:
            try:
                os.chmod(self.tmp, stat.S_IMODE(self.src_stat.st_mode))
            except OSError:
                pass
        self.f.close()
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
        self.committed = True
        _fsync_dir(os.path.dirname(os.path.abspath(self.path)))

    def discard(self):
        if not self.committed:
            try:
                self.f.close()
            except OSError:
                pass
            try:
                os.unlink(self.tmp)
            except OSError:
                pass


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


def _stdout_binary():
    return sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout


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
            write, dest = (lambda b: None), None
        elif opts.to_stdout:
            if opts.mode == "compress" and _isatty(sys.stdout):
                raise _Skip("Compressed data cannot be written to a terminal")
            sout = _stdout_binary()
            write, dest = sout.write, None
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

        bar = _progress_bar(opts, size, os.path.basename(display))
        t0 = time.monotonic()
        try:
            if opts.mode == "compress":
                nin, nout, digest = _compress_stream(api, opts, fin.read, write, bar)
            else:
                nin, nout, digest, _ = _decompress_stream(api, opts.model_obj, fin.read, write, bar)
        finally:
            bar.close()
        if opts.to_stdout and opts.mode != "test":
            _stdout_binary().flush()
        if out is not None:
            out.commit()
        dt = time.monotonic() - t0
        if opts.verbose and opts.quiet == 0:
            if opts.mode == "test":
                _eprint(_summary(display, nin, nout, dt, "test") + ", OK")
            else:
                target = "(stdout)" if dest is None else dest
                _eprint(_summary(display, nin, nout, dt, opts.mode) + f" -> {target}")
    except BaseException:
        if out is not None:
            out.discard()
        raise
    finally:
        if close_in:
            fin.close()

    if opts.rm and out is not None and not is_stdin:
        _verify(api, opts, dest, digest)
        os.unlink(name)


def _verify(api, opts, path, digest):
    """Before --rm: check that ``path`` holds what it should (decode it back after compression)."""
    with open(path, "rb") as f:
        if opts.mode == "compress":
            _, _, got, _ = _decompress_stream(api, opts.model_obj, f.read, lambda b: None)
        else:
            h = hashlib.sha256()
            for chunk in iter(lambda: f.read(CHUNK), b""):
                h.update(chunk)
            got = h.digest()
    if got != digest:
        raise _Skip(f"{path}: verification failed, input not removed")


def _frames_info(api, data):
    """Headers of every concatenated frame in ``data`` (no decoding): a list of FrameInfo.

    FrameInfo does not carry the frame's length, so it is computed from the public header: the header
    length (the shortest prefix that ``get_frame_info`` accepts), plus the block payload sizes, plus the
    4-byte content CRC32 when the check is CRC32 (codec/FORMAT.md §7.1).
    """
    view = memoryview(data)
    infos = []
    pos = 0
    while pos < len(data):
        try:
            info = api.get_frame_info(view[pos:])
        except api.NLMError as e:
            raise api.NLMError(f"{e} (at offset {pos})" if pos else str(e)) from None
        infos.append(info)
        flen = getattr(info, "frame_size", None)
        if flen is None:
            blocks = info.blocks
            if not isinstance(blocks, (list, tuple)) or any(getattr(b, "compressed_size", None) is None
                                                            for b in blocks):
                break   # cannot tell where this frame ends: list the first one only
            flen = (_header_size(api, view[pos:], len(blocks)) + sum(b.compressed_size for b in blocks)
                    + (4 if info.check == getattr(api, "CHECK_CRC32", 1) else 0))
        if pos + flen > len(data):
            raise api.NLMError(f"truncated frame: the file ends {pos + flen - len(data)} bytes before "
                               f"the end of frame {len(infos)}")
        pos += flen
    return infos


def _header_size(api, view, nblocks):
    """Length of the frame header at the start of ``view``: the shortest prefix get_frame_info accepts."""
    lo, hi = 1, min(len(view), 64 + 32 + 19 * nblocks)  # magic..CRC with 9-byte varints: an upper bound
    api.get_frame_info(view[:hi])
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            api.get_frame_info(view[:mid])
        except api.NLMError:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _hex_id(mid):
    if isinstance(mid, (bytes, bytearray)):
        return bytes(mid).hex()
    return "" if mid is None else str(mid)


def _check_name(api, check):
    if isinstance(check, str):
        return check
    for attr in dir(api):
        if attr.startswith("CHECK_") and getattr(api, attr) == check:
            return attr[6:]
    return str(check)


def _nblocks(blocks):
    if blocks is None:
        return None
    try:
        return len(blocks)
    except TypeError:
        return int(blocks)


def _list_one(api, opts, name):
    is_stdin = name == "-"
    display = "(stdin)" if is_stdin else name
    if is_stdin:
        if _isatty(sys.stdin):
            raise _Skip("Compressed data cannot be read from a terminal")
        data = _stdin_binary().read()
    else:
        f, _ = _open_input(opts, name)
        with f:
            data = f.read()
    if not data:
        raise _Skip(f"{display}: File is empty")
    try:
        infos = _frames_info(api, data)
    except api.NLMError as e:
        raise _Skip(f"{display}: {e}")
    sizes = [i.decompressed_size for i in infos]
    usize = sum(sizes) if all(s is not None for s in sizes) else None
    checks = sorted({_check_name(api, i.check) for i in infos})
    modes = sorted({"dynamic" if i.adapt else "static" for i in infos})
    ids = sorted({_hex_id(i.model_id) for i in infos} - {""}) or ["-"]
    blocks = [_nblocks(i.blocks) for i in infos]
    kinds = {}
    for i in infos:
        for blk in (i.blocks if isinstance(i.blocks, (list, tuple)) else ()):
            k = getattr(blk, "kind", None)
            if k is not None:
                kinds[str(k)] = kinds.get(str(k), 0) + 1
    row = {
        "name": display,
        "frames": len(infos),
        "compressed": len(data),
        "uncompressed": usize,
        "ratio": (len(data) / usize) if usize else None,
        "bits_per_byte": (8.0 * len(data) / usize) if usize else None,
        "check": ",".join(checks),
        "mode": ",".join(modes),
        "model_id": ",".join(ids),
        "blocks": sum(blocks) if all(b is not None for b in blocks) else None,
        "block_kinds": kinds,
        "format_version": sorted({i.format_version for i in infos}),
    }
    return row


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
        us = _human(r["uncompressed"]) if r["uncompressed"] is not None else "?"
        ratio = _ratio(r["compressed"], r["uncompressed"] or 0)
        bpb = _bpb(r["compressed"], r["uncompressed"] or 0)
        mid = r["model_id"][:12]
        return (f"{r['frames']:>6} {_human(r['compressed']):>12} {us:>12} {ratio:>6} {bpb:>6} "
                f"{r['check']:<6} {r['mode']:<8} {mid:<12}  {r['name']}")

    for r in rows:
        print(line(r), file=out)
        if opts.verbose:
            print(f"         format version: {','.join(str(v) for v in r['format_version'])}", file=out)
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["block_kinds"].items()))
            nb = r["blocks"] if r["blocks"] is not None else "?"
            print(f"         blocks:         {nb}{f' ({kinds})' if kinds else ''}", file=out)
            print(f"         model id:       {r['model_id']}", file=out)
            print(f"         compressed:     {r['compressed']} bytes", file=out)
            us = r["uncompressed"]
            print(f"         uncompressed:   {us if us is not None else '?'} bytes", file=out)
    if len(rows) > 1:
        tc = sum(r["compressed"] for r in rows)
        tu = sum(r["uncompressed"] for r in rows) if all(r["uncompressed"] is not None for r in rows) else None
        total = {"frames": sum(r["frames"] for r in rows), "compressed": tc, "uncompressed": tu,
                 "check": "", "mode": "", "model_id": "", "name": f"{len(rows)} files (total)"}
        print("-" * len(head), file=out)
        print(line(total), file=out)


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

    if opts.version:
        backend = getattr(api, "backend", None)
        print(f"{PROG} {api.__version__}" + (f" ({backend} backend)" if isinstance(backend, str) else ""))
        return EXIT_OK

    status = _Status(opts.quiet)
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

    opts.model_obj = None
    if opts.model is not None and opts.mode != "list":
        try:
            opts.model_obj = api.load_model(opts.model)
        except (api.NLMError, OSError, ValueError) as e:
            status.error(f"cannot load model {opts.model!r}: {e}")
            return status.rc

    if opts.mode == "list":
        try:
            _do_list(api, opts, status, files)
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
            return EXIT_ERROR
        return status.rc

    try:
        for name in files:
            try:
                _process(api, opts, status, name)
            except _Skip as e:
                (status.warning if e.warning else status.error)(str(e))
            except api.NLMError as e:
                status.error(f"{'(stdin)' if name == '-' else name}: {e}")
            except BrokenPipeError:
                _silence_stdout()
                return EXIT_ERROR
            except OSError as e:
                where = e.filename if e.filename else name
                status.error(f"{where}: {e.strerror or e}")
            except MemoryError:
                status.error(f"{name}: out of memory")
            except Exception as e:  # a bug, not bad data: report it, keep going with the next file
                status.error(f"{name}: internal error: {type(e).__name__}: {e}")
    except KeyboardInterrupt:
        _eprint(f"{PROG}: interrupted")
        return EXIT_ERROR
    return status.rc


def _silence_stdout():
    # after EPIPE, make the interpreter's final flush of stdout harmless
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass
