"""Files and their safety rules: checked writes (_Sink), outputs written to a temporary file that is fsynced
and renamed into place (_Output: an existing file is never replaced without -f), and xz's checks on the
inputs (symbolic links, directories, special files, a suffix already there)."""

import errno
import os
import re
import secrets
import stat
import sys

from .terminal import _Skip, _Temps


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


_TEMP_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789_"
_TEMP_RAND = 8


def _temp_name(path, pid):
    """``.NAME.PID.RANDOM.tmp`` beside ``path``: the writer's pid lets a later run see that it is dead."""
    rand = "".join(secrets.choice(_TEMP_ALPHABET) for _ in range(_TEMP_RAND))
    return os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.{pid}.{rand}.tmp")


def _pid_alive(pid):
    if pid == os.getpid():
        return True
    if pid <= 0:
        return True          # not a process (kill(0) or kill(-1) would mean groups): never treated as dead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:           # EPERM: alive, another user's; anything else: do not guess
        return True
    return True


def _remove_stale_temps(path):
    """Remove the temporary outputs of ``path`` left by writers that died without cleaning up (SIGKILL, power):
    only names of the exact form ``.NAME.PID.RANDOM.tmp`` (files this CLI makes for NAME), only regular files of
    this user, only when process PID no longer exists.  Never anything else; errors are ignored."""
    d = os.path.dirname(os.path.abspath(path))
    pat = re.compile(r"\." + re.escape(os.path.basename(path)) + r"\.([1-9][0-9]{0,9})\.[" + _TEMP_ALPHABET
                     + r"]{" + str(_TEMP_RAND) + r"}\.tmp")
    try:
        names = os.listdir(d)
    except OSError:
        return
    for n in names:
        m = pat.fullmatch(n)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        p = os.path.join(d, n)
        try:
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and (not hasattr(os, "geteuid") or st.st_uid == os.geteuid()):
                os.unlink(p)
        except OSError:
            pass


# Linux: outputs are first written to an unnamed file (O_TMPFILE) and linked into place through /proc, so a
# killed process leaves nothing behind.  False (or a file system without O_TMPFILE) uses a named temporary file.
UNNAMED_TEMPS = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


def _link_fd(fd, dest):
    """Give open file ``fd`` the name ``dest`` (linkat through /proc with AT_SYMLINK_FOLLOW; a plain link()
    would link the /proc entry itself).  Raises FileExistsError if ``dest`` exists."""
    proc = os.open("/proc/self/fd", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.link(str(fd), dest, src_dir_fd=proc, follow_symlinks=True)
    finally:
        os.close(proc)


def _open_unnamed(path):
    """An unnamed file in ``path``'s directory, or None where the system or the file system has none."""
    if not UNNAMED_TEMPS:
        return None
    try:
        return os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_TMPFILE | os.O_RDWR, 0o600)
    except OSError:
        return None       # EOPNOTSUPP, EISDIR (old kernels), EINVAL...: the named file reports real errors


class _Output:
    """Write to a temporary file next to ``path``; ``commit()`` fsyncs, copies metadata and puts it in place.

    On Linux the temporary file has no name (O_TMPFILE) until commit() links it: a killed process leaves
    nothing.  Elsewhere it is ``.NAME.PID.RANDOM.tmp`` (NAME the output's name, PID this process's): a signal
    removes it (terminal._on_signal), and what a SIGKILL leaves behind is removed by the next run that writes
    NAME (_remove_stale_temps), once process PID is gone.  With -f an unnamed file is linked to such a name
    and renamed over the old output (rename is the only atomic replace)."""

    def __init__(self, path, force, src_stat=None):
        self.path = path
        self.force = force
        self.src_stat = src_stat
        self.committed = False
        with _Temps.lock:     # registered before the signal handler can look
            if _Temps.dying:
                raise _Skip("interrupted")
            _remove_stale_temps(path)
            self.tmp = None
            self.fd = _open_unnamed(path)
            if self.fd is None:
                self.fd, self.tmp = self._open_named()
        self.sink = _Sink(self.fd, path)

    def _open_named(self):
        """A new ``.NAME.PID.RANDOM.tmp``, registered for the signal handler (hold _Temps.lock)."""
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        for _ in range(100):
            tmp = _temp_name(self.path, os.getpid())
            try:
                fd = os.open(tmp, flags, 0o600)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, "no unused temporary file name", tmp)
        _Temps.paths.add(tmp)
        return fd, tmp

    def _name_unnamed(self):
        """Give the unnamed file a temporary name (for -f's rename, or where linking to ``path`` failed for a
        reason other than an existing file): linked through /proc, or copied if that link is refused."""
        with _Temps.lock:
            if _Temps.dying:
                raise _Skip("interrupted")
            for _ in range(100):
                tmp = _temp_name(self.path, os.getpid())
                try:
                    _link_fd(self.fd, tmp)
                    _Temps.paths.add(tmp)
                    self.tmp = tmp
                    return
                except FileExistsError:
                    continue
                except OSError:
                    break
        with _Temps.lock:
            fd, self.tmp = self._open_named()
        try:
            size = os.fstat(self.fd).st_size
            off = 0
            while off < size:
                n = os.copy_file_range(self.fd, fd, size - off, off, off) if hasattr(os, "copy_file_range") \
                    else os.write(fd, os.pread(self.fd, min(size - off, 1 << 20), off))
                if n <= 0:
                    raise OSError(errno.EIO, "short copy of the temporary output", self.path)
                off += n
            os.fchmod(fd, stat.S_IMODE(os.fstat(self.fd).st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)

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
            if self.tmp is None and self._link_unnamed():
                return
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
        self._committed()

    def _committed(self):
        self.committed = True
        with _Temps.lock:
            _Temps.paths.discard(self.tmp)
        _fsync_dir(os.path.dirname(os.path.abspath(self.path)))

    def _link_unnamed(self):
        """Put the unnamed file in place: True when done; False when it now has a temporary name and the named
        path of commit() finishes (-f, or a /proc link refused)."""
        if self.src_stat is not None and os.utime in os.supports_fd:
            try:
                os.utime(self.fd, ns=(self.src_stat.st_atime_ns, self.src_stat.st_mtime_ns))
            except OSError:
                pass
        if not self.force:
            try:
                _link_fd(self.fd, self.path)                 # never replaces an existing file
            except FileExistsError:
                raise _Skip(f"{self.path}: File exists (use -f to overwrite)")
            except OSError:
                pass
            else:
                fd, self.fd = self.fd, None
                os.close(fd)
                self._committed()
                return True
        self._name_unnamed()
        return False

    def discard(self):
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
        if not self.committed and self.tmp is not None:
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
    """Open a named input after xz's checks.  Returns (binary file, stat).

    As xz does before it would remove an input: --rm refuses (a warning, the file is skipped and kept) an
    input with other hard links unless -f, since removing one name would not remove the data."""
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
    if st.st_nlink > 1 and opts.rm and to_file and not opts.force and opts.mode in ("compress", "decompress"):
        f.close()
        raise _Skip(f"{name}: Input file has {st.st_nlink} hard links, skipping (--rm; use -f to remove "
                    f"this name anyway)", warning=True)
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
