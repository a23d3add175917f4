"""The "nlm" compression of fsspec: this module owns nlmcodec's registration with fsspec (and so with
everything that opens files through it: dask.bag, dask.dataframe, pandas given an fsspec file, ...).

    fsspec.open("x.txt.nlm", "rt", compression="infer")     # or compression="nlm"

fsspec has no entry points for compressions (only for filesystems), so the registration is done when
nlmcodec is imported, without importing fsspec (which would double the import time of nlmcodec):

* fsspec already imported: register now;
* fsspec installed but not imported: a one-shot import hook (sys.meta_path) registers as soon as
  fsspec.compression has been executed, whichever of the two packages is imported first;
* fsspec not installed: nothing.

Registering again replaces the previous registration (force=True), so importing this module twice,
or reloading it, is harmless.  A process only knows "nlm" once it has imported nlmcodec: worker
processes of a cluster get it from nlmcodec.dask.NLMCodecPlugin (or from any task that uses nlmcodec).

Files written through fsspec use NLMFile's defaults (the bundled "default" model, dynamic evaluation,
CRC32); for other options open the file with fsspec without compression and wrap it yourself:
``nlmcodec.open(fsspec.open(path, "wb").open(), "wb", model="tiny")``.
"""
import importlib
import importlib.util
import sys
import warnings

NAME = "nlm"
EXTENSION = "nlm"
_TARGET = "fsspec.compression"


def nlm_file(infile, mode="rb", **kwargs):
    """fsspec's compression callback: wrap fsspec's binary file object in an NLMFile.  mode is the
    single letter fsspec passes ("r", "w", "a" or "x"; a trailing "b" is accepted); kwargs go to NLMFile
    (model, adapt, check, threads)."""
    from ._file import NLMFile

    return NLMFile(infile, mode.replace("b", ""), **kwargs)


def register(compression_module=None):
    """Register (or re-register) "nlm" with fsspec.  compression_module: fsspec.compression, if the
    caller has it (the import hook does: fsspec itself may still be half initialised then)."""
    mod = compression_module if compression_module is not None else importlib.import_module(_TARGET)
    mod.register_compression(NAME, nlm_file, EXTENSION, force=True)


class _Loader:
    """fsspec.compression's own loader, with the registration run right after the module is executed
    (a plain class: importlib.abc would cost a millisecond of nlmcodec's import time)."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _remove_hook()
        try:
            register(module)
        except Exception as e:  # pragma: no cover - an fsspec without register_compression
            warnings.warn(f"nlmcodec could not register the {NAME!r} compression with fsspec: {e}",
                          RuntimeWarning, stacklevel=2)

    def __getattr__(self, name):           # get_source, get_filename, is_package, ...
        if name == "_loader":
            raise AttributeError(name)
        return getattr(self._loader, name)


class _ImportHook:
    """Finds nothing itself: when fsspec.compression is about to be imported it asks the other finders
    for the module and wraps the loader they return; the loader removes the hook once it has run."""

    _nlmcodec_fsspec_hook = True

    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _TARGET or self._busy:
            return None
        self._busy = True                  # importlib.util.find_spec below asks this finder too
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def _remove_hook():
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "_nlmcodec_fsspec_hook", False)]


def _install():
    if sys.modules.get(_TARGET) is not None:
        register(sys.modules[_TARGET])
    elif sys.modules.get("fsspec") is not None or importlib.util.find_spec("fsspec") is not None:
        _remove_hook()                     # one hook at a time (this module may be reloaded)
        sys.meta_path.insert(0, _ImportHook())


_install()
