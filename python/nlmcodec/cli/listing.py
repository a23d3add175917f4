"""-l / --list: the frames of each file (nlmcodec._frame.list_frames), as a table or as JSON (--json)."""

import io
import json
import sys

from .files import _open_input, _stdin_binary
from .terminal import _BROKEN_PIPE, _Skip, _bpb, _human, _isatty, _ratio, _silence_stdout


def _read_frames(f):
    """(list of FrameInfo, compressed size) of the frames in the binary file ``f``, from its position to
    its end (list_frames raises NLMError for bytes after the last frame that are not a frame)."""
    from .._frame import list_frames
    if not f.seekable():        # standard input from a pipe or a terminal
        f = io.BytesIO(f.read())
    frames = list_frames(f)
    return [info for info, _ in frames], sum(n for _, n in frames)


_KNOWN = {}


def _known_models():
    """{model id: (name, path)} of the models on the search path (the package's, add_model_dir's,
    NLMCODEC_MODEL_PATH's): a model's name is its file's name without .nlmm; "default" is an alias, a
    default model is listed by its own name ("default-2")."""
    from .._registry import DEFAULT_NAME, file_id, model_dirs, model_files

    key = tuple(model_dirs())
    if key not in _KNOWN:
        files = model_files()
        own = {p: n for n, p in files.items() if n != DEFAULT_NAME}
        known = {}
        for name, p in sorted((own.get(p, n), p) for n, p in files.items()):
            try:
                known.setdefault(file_id(p), (name, p))
            except OSError:
                continue
        _KNOWN[key] = known
    return _KNOWN[key]


def _model_about(path):
    """(where, stored name): "bundled" or the directory, with ", the default" for the default model; the
    name stored in the model file when it differs from the file's name (e.g. the name it was trained under)."""
    import mmap

    from .._model import _parse
    from .._registry import default_model_names, model_files, package_dir

    where = "bundled" if path.parent == package_dir() else f"in {path.parent}"
    files = model_files()
    if any(files[n] == path for n in default_model_names()):
        where += ", a default"
    stored = None
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mp:
            stored = str(_parse(mp)["metadata"].get("name", "")) or None
    except (OSError, ValueError):
        pass
    return where, (stored if stored != path.stem else None)


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
    found = [_known_models().get(m) for m in ids]
    names = [f[0] if f else None for f in found]
    about = [_model_about(f[1]) if f else None for f in found]
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
        "model_files": [str(f[1]) if f else None for f in found],
        "model_where": [a[0] if a else None for a in about],
        "model_stored_names": [a[1] if a else None for a in about],
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
    mw = max([12] + [len(r["model"]) for r in rows])        # model names are shown whole
    head = (f"{'Frames':>6} {'Compressed':>12} {'Uncompressed':>12} {'Ratio':>6} {'bpb':>6} "
            f"{'Check':<6} {'Mode':<8} {'Model':<{mw}}  Filename")
    print(head, file=out)

    def line(r):
        ratio = _ratio(r["compressed"], r["uncompressed"])
        bpb = _bpb(r["compressed"], r["uncompressed"])
        return (f"{r['frames']:>6} {_human(r['compressed']):>12} {_human(r['uncompressed']):>12} "
                f"{ratio:>6} {bpb:>6} "
                f"{r['check']:<6} {r['mode']:<8} {r['model']:<{mw}}  {r['name']}")

    for r in rows:
        print(line(r), file=out)
        if opts.verbose:
            print(f"         format version: {','.join(str(v) for v in r['format_version'])}", file=out)
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["block_kinds"].items()))
            print(f"         blocks:         {r['blocks']}{f' ({kinds})' if kinds else ''}", file=out)
            named = f" ({r['model_name']})" if r["model_name"] else ""
            print(f"         model id:       {r['model_id']}{named}", file=out)
            for name, where, stored in zip(r["model"].split(","), r["model_where"], r["model_stored_names"]):
                if where is None:
                    about = "not on the model search path (NLMCODEC_MODEL_PATH); decoding needs -m MODEL"
                else:
                    about = where + (f"; the name stored in the model: {stored}" if stored else "")
                print(f"         model:          {name} ({about})", file=out)
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
    except BrokenPipeError:     # like xz: quiet, 128 + SIGPIPE (terminal._BROKEN_PIPE)
        _silence_stdout()
        return _BROKEN_PIPE
    except OSError as e:
        status.error(f"(stdout): {e.strerror or e}")
    return status.rc
