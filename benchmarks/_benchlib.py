"""The one loader of python/nlmcodec/_bench.py for the scripts in benchmarks/.

_bench.py is loaded by path: it needs nothing from the package, so the baselines are measured (and their
memory counted) without importing nlmcodec, numpy or the extension.
"""
import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bench():
    path = os.path.join(REPO, "python", "nlmcodec", "_bench.py")
    if not os.path.isfile(path):  # an installed nlmcodec without the source tree
        from nlmcodec import _bench
        return _bench
    name = "nlmcodec_bench_standalone"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
