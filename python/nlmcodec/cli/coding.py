"""Compression, decompression and -t of one file after another: the streaming coders (NLMCompressor /
NLMDecompressor fed in CHUNK pieces), the per-file operation and --rm's verification."""

import hashlib
import io
import os
import stat
import sys
import time

from .files import _Output, _discard, _open_input, _output_name, _stdin_binary, _stdout_sink, _unchanged
from .terminal import (
    _BROKEN_PIPE,
    CHUNK,
    _Job,
    _PROGRESS,
    _Skip,
    _cli_words,
    _eprint,
    _isatty,
    _show_progress,
    _silence_stdout,
    _summary,
)

# ---------------------------------------------------------------------------------------------------------------
# streaming coders

def _coder_options(opts):
    """Keyword arguments for NLMCompressor/NLMDecompressor: the model and -T (0, the default: one thread per
    CPU; the frame is the same for every thread count)."""
    return {"model": opts.model_obj, "threads": opts.threads}


def _decoder_options(api, opts):
    """_coder_options plus ``memlimit=`` from -M (bytes, 0 = no limit) when -M is given and the decoder
    accepts it."""
    kw = _coder_options(opts)
    if getattr(opts, "memlimit", None) is not None and _accepts(api.NLMDecompressor, "memlimit"):
        kw["memlimit"] = opts.memlimit
    return kw


def _accepts(fn, name):
    import inspect

    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


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
    kw = _decoder_options(api, opts)
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
            n = opts.threads or os.cpu_count() or 1
            extra = f", {n} thread{'s' if n > 1 else ''}"
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
            if e.filename not in (None, "(stdout)"):
                status.error(f"{e.filename}: {e.strerror or 'Broken pipe'}")
                continue
            _silence_stdout()               # like xz: no message, the status of death by SIGPIPE
            return _BROKEN_PIPE
        except OSError as e:
            status.error(f"{e.filename or where}: {e.strerror or e}")
        except MemoryError:
            status.error(f"{where}: out of memory")
        except Exception as e:  # a bug, not bad data: report it, keep going with the next file
            status.error(f"{where}: internal error: {type(e).__name__}: {e}")
    return status.rc
