"""What the user sees and what the process does on a signal: messages and exit status, the progress line
(drawn by the main thread while a worker thread codes), the formatting of sizes and times, and the signal
handler that removes the temporary outputs (registered in _Temps by files._Output) before it exits."""

import argparse
import os
import signal
import sys
import threading
import time

PROG = "nlmcodec"
DEFAULT_SUFFIX = ".nlm"
CHUNK = 1 << 16              # bytes read from the input at a time
PROGRESS_MIN_SIZE = 1 << 20  # by default no progress line for inputs smaller than this
TICK = 0.25                  # seconds between redraws of the progress line (and checks of the worker)
EXIT_OK, EXIT_ERROR, EXIT_WARNING = 0, 1, 2
# standard output closed by its reader (``nlmcodec -c f | head -c 1``): xz dies of SIGPIPE without a word (the
# shell's status 141); Python ignores SIGPIPE and sees EPIPE, so the CLI stops quietly and exits 128 + SIGPIPE,
# the same status as seen by a shell (by the convention of the other signals: 128 + N)
_BROKEN_PIPE = 128 + getattr(signal, "SIGPIPE", 13)
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
    """API messages name API arguments; on the command line the options are -m MODEL and -M LIMIT."""
    import re

    s = str(msg)
    if "memlimit=" in s:
        s = re.sub(r"memlimit=(\d+)", r"-M \1", s)
        s = s.replace("memlimit= or nlmcodec -M", "-M").replace("memlimit=", "-M LIMIT")
    return re.sub(r"(?<![a-z_])model=", "-m MODEL", s)


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



def _silence_stdout():
    # after EPIPE, make the interpreter's final flush of stdout harmless
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass
