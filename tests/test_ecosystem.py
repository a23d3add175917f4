# Owns the tests of nlmcodec where users already are: the fsspec "nlm" compression (python/nlmcodec/_fsspec.py)
# and what is built on it (dask.bag, pandas), GNU tar and the shell through the console script, tarfile and
# shutil over nlmcodec.open(), and nlmcodec.dask (per-file tasks; a real LocalCluster in the slow test).
"""Ecosystem tests.  The optional packages (fsspec, pandas, dask, distributed) are installed by .ci/run
(the [dask] extra); pytest.importorskip only guards a checkout without them.  Small inputs and the bundled
"tiny" model wherever the API lets the test choose; files written through fsspec use NLMFile's default
model (the bundled "default"), as a user's would.
"""
import hashlib
import importlib
import io
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

import nlmcodec
from conftest import word_salad
from corpus_cache import CORPUS

BIN = os.path.dirname(sys.executable)          # the venv's bin/: python and the console script nlmcodec
TEXT = word_salad(3000, seed=7) + b"\n"


def _text(seed, n=2000):
    words = word_salad(n, seed=seed).split(b" ")
    return b"\n".join(b" ".join(words[i:i + 12]) for i in range(0, len(words), 12)) + b"\n"


def _prose(limit):
    """Real English (the first lines of alice29.txt) when the corpus is there, else word salad."""
    p = CORPUS / "bench" / "canterbury" / "alice29.txt"
    text = p.read_bytes()[:limit] if p.is_file() else _text(5, limit // 6)
    return text[:text.rindex(b"\n") + 1]


def _py(code, **env):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **env))
    assert r.returncode == 0, r.stderr
    return r.stdout


# ------------------------------------------------------------------------------------------ fsspec registration
def test_import_does_not_import_fsspec():
    out = _py("import sys, nlmcodec; print('fsspec' in sys.modules, 'fsspec.compression' in sys.modules)")
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize("first", ["nlmcodec", "fsspec"])
def test_registered_whichever_is_imported_first(first):
    pytest.importorskip("fsspec")
    second = "fsspec" if first == "nlmcodec" else "nlmcodec"
    out = _py(f"import {first}, {second}, sys\n"
              "import fsspec.compression, fsspec.utils, nlmcodec._fsspec as h\n"
              "assert fsspec.compression.compr['nlm'] is h.nlm_file\n"
              "assert fsspec.utils.compressions['nlm'] == 'nlm'\n"
              "assert fsspec.utils.infer_compression('a/b.txt.nlm') == 'nlm'\n"
              "assert 'nlm' in fsspec.available_compressions()\n"
              "print(sum(getattr(f, '_nlmcodec_fsspec_hook', False) for f in sys.meta_path))")
    assert out.split() == ["0"]           # the import hook is gone once it has registered


def test_without_fsspec_nothing_is_hooked():
    out = _py("import sys\nsys.modules['fsspec'] = None   # as if not installed\n"
              "import nlmcodec\nprint(sum(getattr(f, '_nlmcodec_fsspec_hook', False) for f in sys.meta_path))\n"
              "print(nlmcodec.decompress(nlmcodec.compress(b'x', model='tiny')) == b'x')")
    assert out.split() == ["0", "True"]


def test_registering_twice():
    fsspec = pytest.importorskip("fsspec")
    import fsspec.compression
    from nlmcodec import _fsspec

    _fsspec.register()
    _fsspec.register(fsspec.compression)
    mod = importlib.reload(_fsspec)        # a reload registers again (force=True), never raises
    assert fsspec.compression.compr["nlm"] is mod.nlm_file
    assert sum(getattr(f, "_nlmcodec_fsspec_hook", False) for f in sys.meta_path) == 0


# ------------------------------------------------------------------------------------------ fsspec files
def test_fsspec_open_text_infer(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    p = str(tmp_path / "x.txt.nlm")
    text = TEXT.decode()
    with fsspec.open(p, "wt", compression="infer", encoding="utf-8") as f:
        f.write(text)
    blob = open(p, "rb").read()
    assert blob == nlmcodec.compress(TEXT)   # NLMFile's defaults: bundled default model, dynamic, CRC32
    with fsspec.open(p, "rt", compression="infer", encoding="utf-8") as f:
        assert f.read() == text
    with fsspec.open(p, "rt", compression="nlm") as f:
        assert f.readline() == text.splitlines(keepends=True)[0]


def test_fsspec_binary_append_and_tiny_frames(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    p = tmp_path / "y.bin.nlm"
    p.write_bytes(nlmcodec.compress(TEXT, model="tiny", adapt=False))     # found by the id in the frame
    with fsspec.open(str(p), "ab", compression="infer") as f:
        f.write(b"more\n")
    with fsspec.open(str(p), "rb", compression="infer") as f:
        assert f.read() == TEXT + b"more\n"
    with fsspec.open(str(p), "rb", compression=None) as f:                 # no compression: the frames
        assert f.read(4) == p.read_bytes()[:4]


def test_fsspec_memory_filesystem():
    fsspec = pytest.importorskip("fsspec")
    url = "memory://nlmcodec-test/notes.txt.nlm"
    with fsspec.open(url, "wb", compression="infer") as f:
        f.write(TEXT)
    fs = fsspec.filesystem("memory")
    assert nlmcodec.decompress(fs.cat(url)) == TEXT
    with fsspec.open(url, "rb", compression="infer") as f:
        assert f.read() == TEXT
    fs.rm(url)


def test_fsspec_corrupt_file_raises(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    p = tmp_path / "bad.txt.nlm"
    p.write_bytes(nlmcodec.compress(TEXT, model="tiny")[:-3])
    with pytest.raises(nlmcodec.NLMError):
        with fsspec.open(str(p), "rb", compression="infer") as f:
            f.read()


def test_pandas_read_csv(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    pd = pytest.importorskip("pandas")
    rows = [f"{i},{w.decode()},{i * 0.5}" for i, w in enumerate(TEXT.split()[:300])]
    csv = "n,word,half\n" + "\n".join(rows) + "\n"
    p = str(tmp_path / "t.csv.nlm")
    with nlmcodec.open(p, "wt", model="tiny", encoding="utf-8") as f:
        f.write(csv)
    df = pd.read_csv(fsspec.open(p, "rt", compression="nlm").open())
    expected = pd.read_csv(io.StringIO(csv))
    pd.testing.assert_frame_equal(df, expected)
    assert len(df) == 300 and list(df.columns) == ["n", "word", "half"]
    with fsspec.open(p, "rb", compression="infer") as f:                # pandas reading a binary file object
        pd.testing.assert_frame_equal(pd.read_csv(f), expected)
    with nlmcodec.open(p, "rt", encoding="utf-8") as f:                 # the README's route: no fsspec needed
        pd.testing.assert_frame_equal(pd.read_csv(f), expected)


# ------------------------------------------------------------------------------------------ dask.bag
def _write_parts(d, n=3):
    d.mkdir()
    lines = []
    for i in range(n):
        part = [f"part {i} line {j} {w.decode()}\n" for j, w in enumerate(_text(i, 200).split()[:40])]
        lines += part
        with nlmcodec.open(d / f"{i}.txt.nlm", "wt", model="tiny", encoding="utf-8") as f:
            f.write("".join(part))
    return lines


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_dask_bag_read_and_write(tmp_path, scheduler):
    pytest.importorskip("fsspec")
    db = pytest.importorskip("dask.bag")
    lines = _write_parts(tmp_path / "in")
    b = db.read_text(str(tmp_path / "in" / "*.txt.nlm"))
    assert b.npartitions == 3
    assert b.compute(scheduler=scheduler) == lines
    out = tmp_path / "out"
    b.map(lambda s: s.rstrip("\n").upper()).to_textfiles(str(out / "*.txt.nlm"), compression="nlm",
                                                         scheduler=scheduler)    # adds the "\n" back
    names = sorted(os.listdir(out))
    assert names == ["0.txt.nlm", "1.txt.nlm", "2.txt.nlm"]
    got = []
    for n in names:
        blob = (out / n).read_bytes()
        assert nlmcodec.get_frame_info(blob).format_version == nlmcodec.FORMAT_VERSION
        got += nlmcodec.decompress(blob).decode().splitlines()
    assert got == [x.rstrip("\n").upper() for x in lines]
    assert db.read_text(str(out / "*.txt.nlm")).count().compute(scheduler=scheduler) == len(lines)


def test_dask_bag_process_scheduler(tmp_path):
    """dask's local process pool (spawned processes): they know "nlm" once they import nlmcodec, which
    nlmcodec.dask.init_process as the pool's initializer makes them do; without it they cannot."""
    pytest.importorskip("fsspec")
    pytest.importorskip("distributed")
    import dask
    import dask.bag as db
    import nlmcodec.dask

    lines = _write_parts(tmp_path / "in")
    b = db.read_text(str(tmp_path / "in" / "*.txt.nlm"))
    with dask.config.set({"multiprocessing.initializer": nlmcodec.dask.init_process}):
        assert b.compute(scheduler="processes", num_workers=2) == lines


# ------------------------------------------------------------------------------------------ tar and the shell
def _tree(root):
    """{relative path: bytes or 'dir' or ('link', target)} of everything under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = "dir"
            else:
                out[rel] = open(p, "rb").read()
    return out


@pytest.fixture
def src_dir(tmp_path):
    d = tmp_path / "docs"
    (d / "sub" / "deeper").mkdir(parents=True)
    (d / "a.txt").write_bytes(_prose(40_000))
    (d / "sub" / "b.md").write_bytes(_text(2, 300))
    (d / "sub" / "deeper" / "c.txt").write_bytes("ünïcödé €\n".encode() * 10)
    (d / "sub" / "empty").write_bytes(b"")
    (d / "bytes.bin").write_bytes(bytes(range(256)) * 4)
    os.symlink("a.txt", d / "link.txt")
    return d


def _tar_env():
    if shutil.which("tar") is None:
        pytest.skip("no tar")
    if not os.path.exists(os.path.join(BIN, "nlmcodec")):
        pytest.skip("the console script nlmcodec is not installed beside this python")
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))


def _run(args, cwd, env, **kw):
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=300, **kw)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r


@pytest.mark.parametrize("program", ["nlmcodec", "nlmcodec -m tiny --static"])
def test_tar_create_and_extract(tmp_path, src_dir, program):
    env = _tar_env()
    _run(["tar", "-I", program, "-cf", "x.tar.nlm", "docs/"], tmp_path, env)
    blob = (tmp_path / "x.tar.nlm").read_bytes()
    with tarfile.open(fileobj=io.BytesIO(nlmcodec.decompress(blob))) as t:   # a plain tar inside
        assert "docs/sub/deeper/c.txt" in t.getnames()
    listing = _run(["tar", "-I", "nlmcodec", "-tf", "x.tar.nlm"], tmp_path, env).stdout.decode().split()
    assert "docs/a.txt" in listing and "docs/link.txt" in listing
    out = tmp_path / "out"
    out.mkdir()
    _run(["tar", "-I", "nlmcodec", "-xf", str(tmp_path / "x.tar.nlm")], out, env)   # model found by id
    assert _tree(out / "docs") == _tree(src_dir)


def test_tar_of_prose_uses_the_model(tmp_path):
    """The model codes tar's NUL padding poorly, so such blocks may go to lzma; a 64 KiB block of prose
    is coded by the model, and the archive is smaller than xz -9e of the same tar."""
    import lzma

    env = _tar_env()
    if not (CORPUS / "bench").is_dir():
        pytest.skip("needs real prose from the corpus")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "alice.txt").write_bytes(_prose(100_000))
    _run(["tar", "-I", "nlmcodec", "-cf", "b.tar.nlm", "book"], tmp_path, env)
    blob = (tmp_path / "b.tar.nlm").read_bytes()
    assert "model" in {b.kind for b in nlmcodec.get_frame_info(blob).blocks}
    raw = nlmcodec.decompress(blob)
    assert len(blob) < 0.8 * len(lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME))


def test_tar_through_pipes(tmp_path, src_dir):
    env = _tar_env()
    _run(["sh", "-c", "tar -cf - docs | nlmcodec -m tiny > p.tar.nlm"], tmp_path, env)
    (tmp_path / "out").mkdir()
    _run(["sh", "-c", "nlmcodec -dc < p.tar.nlm | tar -xf - -C out"], tmp_path, env)
    assert _tree(tmp_path / "out" / "docs") == _tree(src_dir)
    r = _run(["sh", "-c", "nlmcodec -d < p.tar.nlm | tar -tf - | sort"], tmp_path, env)
    assert b"docs/sub/empty" in r.stdout


def test_tarfile_write_read(tmp_path, src_dir):
    p = tmp_path / "t.tar.nlm"
    with nlmcodec.open(p, "wb", model="tiny") as f, tarfile.open(fileobj=f, mode="w") as t:
        t.add(src_dir, arcname="docs")
        data = b"made in memory\n" * 100
        ti = tarfile.TarInfo("docs/generated.txt")
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    with nlmcodec.open(p) as f, tarfile.open(fileobj=f) as t:          # "r:*": seekable, detected
        assert t.extractfile("docs/generated.txt").read() == data
        assert t.extractfile("docs/sub/b.md").read() == (src_dir / "sub" / "b.md").read_bytes()
        t.extractall(tmp_path / "out", filter="data")
    expected = _tree(src_dir)
    expected["generated.txt"] = data
    assert _tree(tmp_path / "out" / "docs") == expected
    with open(p, "rb") as raw:                                           # "r|": one pass, no seeking
        pipe = io.BufferedReader(_NoSeek(raw))
        with nlmcodec.open(pipe) as f, tarfile.open(fileobj=f, mode="r|") as t:
            names = [m.name for m in t]
    assert "docs/generated.txt" in names and "docs/sub/deeper/c.txt" in names


class _NoSeek(io.RawIOBase):
    def __init__(self, f):
        self._f = f

    def readable(self):
        return True

    def readinto(self, b):
        return self._f.readinto(b)


def test_tarfile_and_tar_cli_read_each_other(tmp_path, src_dir):
    env = _tar_env()
    with nlmcodec.open(tmp_path / "py.tar.nlm", "wb", model="tiny") as f, tarfile.open(fileobj=f, mode="w") as t:
        t.add(src_dir, arcname="docs")
    (tmp_path / "o1").mkdir()
    _run(["tar", "-I", "nlmcodec", "-xf", "../py.tar.nlm"], tmp_path / "o1", env)
    assert _tree(tmp_path / "o1" / "docs") == _tree(src_dir)
    _run(["tar", "-I", "nlmcodec -m tiny", "-cf", "cli.tar.nlm", "docs"], tmp_path, env)
    with nlmcodec.open(tmp_path / "cli.tar.nlm") as f, tarfile.open(fileobj=f) as t:
        t.extractall(tmp_path / "o2", filter="data")
    assert _tree(tmp_path / "o2" / "docs") == _tree(src_dir)


def test_shutil_unpack_format_recipe(tmp_path, src_dir):
    """The README's shutil recipe: nlmcodec leaves shutil's registry alone; one call adds .tar.nlm."""
    def unpack_tar_nlm(filename, extract_dir):
        with nlmcodec.open(filename) as f, tarfile.open(fileobj=f) as t:
            t.extractall(extract_dir, filter="data")

    assert "nlmtar" not in dict((n, e) for n, e, _ in shutil.get_unpack_formats())
    with nlmcodec.open(tmp_path / "s.tar.nlm", "wb", model="tiny") as f, tarfile.open(fileobj=f, mode="w") as t:
        t.add(src_dir, arcname="docs")
    shutil.register_unpack_format("nlmtar", [".tar.nlm"], unpack_tar_nlm, description="tar, nlmcodec")
    try:
        shutil.unpack_archive(tmp_path / "s.tar.nlm", tmp_path / "out")
    finally:
        shutil.unregister_unpack_format("nlmtar")
    assert _tree(tmp_path / "out" / "docs") == _tree(src_dir)


# ------------------------------------------------------------------------------------------ nlmcodec.dask tasks
def _sha(b):
    return hashlib.sha256(b).hexdigest()


@pytest.mark.parametrize("adapt", [True, False])
def test_compress_file_is_compress(tmp_path, adapt, monkeypatch):
    pytest.importorskip("distributed")
    import nlmcodec.dask as nd

    monkeypatch.setattr(nd, "CHUNK", 10_000)         # several pieces: streaming gives the one-shot bytes
    src = tmp_path / "a.txt"
    src.write_bytes(_text(3, 9000))
    os.chmod(src, 0o640)
    r = nd.compress_file(src, model="tiny", adapt=adapt)
    blob = (tmp_path / "a.txt.nlm").read_bytes()
    assert blob == nlmcodec.compress(src.read_bytes(), model="tiny", adapt=adapt)
    assert r["dst"] == str(src) + ".nlm" and r["bytes_in"] == src.stat().st_size
    assert r["bytes_out"] == len(blob) and r["sha256"] == _sha(blob) and r["pid"] == os.getpid()
    assert os.stat(tmp_path / "a.txt.nlm").st_mode & 0o777 == 0o640
    os.unlink(src)
    r2 = nd.decompress_file(tmp_path / "a.txt.nlm")
    assert r2["dst"] == str(src) and _sha(src.read_bytes()) == r2["sha256"]
    assert src.read_bytes() == nlmcodec.decompress(blob)
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "a.txt.nlm"]       # no temporary file left


def test_task_failures_leave_nothing(tmp_path):
    pytest.importorskip("distributed")
    import nlmcodec.dask as nd

    src = tmp_path / "a.txt"
    src.write_bytes(TEXT)
    (tmp_path / "a.txt.nlm").write_bytes(b"keep me")
    with pytest.raises(FileExistsError):
        nd.compress_file(src, model="tiny")
    assert (tmp_path / "a.txt.nlm").read_bytes() == b"keep me"
    bad = tmp_path / "bad.txt.nlm"
    bad.write_bytes(nlmcodec.compress(TEXT, model="tiny")[:-5])
    with pytest.raises(nlmcodec.NLMError):
        nd.decompress_file(bad)
    with pytest.raises(ValueError, match="suffix"):
        nd.decompress_file(src)
    with pytest.raises(TypeError, match="bundled model name or a path"):
        nd.compress_file(src, tmp_path / "z.nlm", model=nlmcodec.load_model("tiny"))
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "a.txt.nlm", "bad.txt.nlm"]
    nd.compress_file(src, model="tiny", overwrite=True)
    assert nlmcodec.decompress((tmp_path / "a.txt.nlm").read_bytes()) == TEXT


def test_model_and_paths_are_sent_as_absolute_names(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import nlmcodec.dask as nd

    monkeypatch.chdir(tmp_path)
    nlmcodec.load_model("tiny").save(tmp_path / "mine.nlmm")
    assert nd._model_arg("tiny") == "tiny" and nd._model_arg(None) is None
    assert nd._model_arg("mine.nlmm") == str(tmp_path / "mine.nlmm")    # a worker may run elsewhere
    (tmp_path / "a.txt").write_bytes(TEXT)
    r = nd.compress_file("a.txt", model="mine.nlmm")
    assert r["dst"] == "a.txt.nlm"
    assert nlmcodec.decompress((tmp_path / "a.txt.nlm").read_bytes(), model="mine.nlmm") == TEXT


# ------------------------------------------------------------------------------------------ LocalCluster
def _count_model_loads():
    """Run on each worker: count Model.load calls from now on (the plugin's and the tasks')."""
    from nlmcodec import _model

    if not hasattr(_model.Model, "_nlm_test_loads"):
        orig = _model.Model.load.__func__

        def load(cls, path):
            cls._nlm_test_loads.append(str(path))
            return orig(cls, path)

        _model.Model._nlm_test_loads = []
        _model.Model.load = classmethod(load)
    return os.getpid()


def _model_loads():
    from nlmcodec import _model

    return list(_model.Model._nlm_test_loads)


@pytest.mark.slow
def test_local_cluster(tmp_path):
    pytest.importorskip("fsspec")
    distributed = pytest.importorskip("distributed")
    import dask.bag as db
    import nlmcodec.dask as nd

    d = tmp_path / "corpus"
    d.mkdir()
    files = []
    for i, n in enumerate([0, 40, 900, 3000, 6000, 9000, 200, 1500]):
        p = d / f"doc{i}.txt"
        p.write_bytes(_text(10 + i, n) if n else b"")
        files.append(str(p))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        pids = set(client.run(_count_model_loads).values())
        assert len(pids) == 2 and os.getpid() not in pids
        res = nd.compress_files(files, client=client, model="tiny", adapt=True)
        assert [r["src"] for r in res] == files and {r["pid"] for r in res} <= pids
        for f, r in zip(files, res):
            blob = open(r["dst"], "rb").read()
            assert blob == nlmcodec.compress(open(f, "rb").read(), model="tiny", adapt=True), f
            assert r["sha256"] == _sha(blob)
        # static mode with a second model argument in the same session; outputs named explicitly
        outs = [str(tmp_path / f"static{i}.nlm") for i in range(len(files))]
        nd.compress_files(files, outs, client=client, model="tiny", adapt=False)
        for f, o in zip(files, outs):
            assert open(o, "rb").read() == nlmcodec.compress(open(f, "rb").read(), model="tiny", adapt=False)
        # decompress on the cluster, back beside the originals' names in another folder
        back = [str(tmp_path / f"back{i}.txt") for i in range(len(files))]
        dres = nd.decompress_files([r["dst"] for r in res], back, client=client)
        for f, b, r in zip(files, back, dres):
            assert open(b, "rb").read() == open(f, "rb").read() and r["sha256"] == _sha(open(f, "rb").read())
        # the model was loaded once per worker (by the plugin), never by a task
        loads = client.run(_model_loads)
        assert all(len(v) == 1 and v[0].endswith("tiny.nlmm") for v in loads.values()), loads
        # an existing output is refused and left as it was; no temporary files anywhere
        with pytest.raises(FileExistsError):
            nd.compress_files(files[:2], client=client, model="tiny")
        assert not [n for n in os.listdir(d) + os.listdir(tmp_path) if n.endswith(".tmp")]
        # the workers imported nlmcodec, so fsspec's "nlm" works in them: dask.bag on the cluster
        bag = db.read_text(str(d / "doc*.txt.nlm"))
        expected = b"".join(open(f, "rb").read() for f in sorted(files)).decode().splitlines(keepends=True)
        assert sorted(bag.compute()) == sorted(expected)
