"""The one loader of python/nlmcodec/_bench.py for the scripts in benchmarks/.

_bench.py is loaded by path: it needs nothing from the package, so the baselines are measured (and their
memory counted) without importing nlmcodec, numpy or the extension.
"""
import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bench():
    """_bench.py, and the test models (tests/models: "tiny" ...) on the model search path of this process and
    its children."""
    models = os.path.join(REPO, "tests", "models")
    paths = [d for d in os.environ.get("NLMCODEC_MODEL_PATH", "").split(os.pathsep) if d]
    if os.path.isdir(models) and models not in paths:
        os.environ["NLMCODEC_MODEL_PATH"] = os.pathsep.join(paths + [models])
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


def code_group(model, text: bytes, adapt: bool, **reset_args):
    """text as one group of the encoder's word-model blocks from the trained state (nlmcodec imported here,
    not above): (payload bytes of each block, the codec's statistics, CPU seconds).  reset_args: options of
    Codec.lab_reset (none: the current format in the codec's mode); with max_tokens=0 the blocks are 64 KiB
    pieces, without the token bound."""
    import time

    from nlmcodec import _core
    from nlmcodec._encode import BLOCK_SIZE, _model_pieces, _pieces

    c = _core.Codec(model, adapt)
    c.lab_reset(**reset_args) if reset_args else c.reset()
    pieces = _pieces(text, BLOCK_SIZE) if reset_args.get("max_tokens") == 0 else _model_pieces(text)
    t = time.process_time()
    sizes = [len(c.encode_block(text[pos:pos + k])) for pos, k in pieces]
    return sizes, c.stats(), time.process_time() - t


def write_report(rows, out=None):
    """Print a markdown report (a list of lines) and write it to out when given."""
    import pathlib

    text = "\n".join(rows) + "\n"
    print(text)
    if out:
        pathlib.Path(out).write_text(text)
