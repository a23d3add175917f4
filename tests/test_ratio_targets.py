"""Ratio targets of the default model, exact sizes against the anchors of
benchmarks/anchor_sizes.json (a copy of ../shared/guide/anchor_sizes.json: xz -9e, PPMd order 16 ...).

* dynamic mode is smaller than PPMd on each literary file and on the sum of the fourteen English files,
  and smaller than xz -9e on every one of the fourteen;
* static mode is at most 0.8 x xz -9e on each literary file;
* in every mode (static, dynamic and heads, the default) no file under bench/ or ood/ comes out larger than
  xz -9e plus 64 bytes;
* (the byte model, docs/format.md §9) in every mode each file the word model cannot help is smaller than
  PPMd order 16 and at most 0.85 x xz -9e;
* (issue 10's targets, met by the token experts: the match flag §3.4, the token cache §3.6, the body mixer
  §5.1.1) dynamic news at most 2.09, book2 1.65, paper1 1.95, lcet10.txt 1.45 bits per byte, the fourteen
  English files together at most 1.50, and dynamic mode below paq8px -8 on each of the four files
  ANCHORS.md measured it on;
* (issue 11, the default mode, §6.5) heads mode, the default, is smaller than PPMd on each of the fourteen, and no
  larger on any of them than dynamic mode was when issue 11 was filed (ISSUE11_DYNAMIC: 3ff68f1's
  benchmarks/ratios.csv), the condition under which the issue lets a cheaper default cost ratio.
"""
import json

import pytest

import corpus_cache as cc

ANCHORS = json.loads((cc.REPO / "benchmarks" / "anchor_sizes.json").read_text())
LITERARY = ["alice29.txt", "asyoulik.txt", "plrabn12.txt", "book1", "dickens"]
ENGLISH = LITERARY + ["lcet10.txt", "book2", "paper1", "paper2", "paper3", "paper4", "paper5", "paper6", "news"]
BYTE_TARGETS = ["zlib-source.c", "apache-access.log", "company-tickers.json", "german-gutenberg.txt", "bib", "bible.txt",
                "cp.html", "fields.c", "progc", "progl", "progp", "trans", "world192.txt", "xargs.1", "xml", "reymont"]

# dynamic mode's sizes when issue 11 ("Speed") was filed: `git show 3ff68f1:benchmarks/ratios.csv` (2,647,949 bytes)
ISSUE11_DYNAMIC = {"alice29.txt": 27960, "asyoulik.txt": 28310, "lcet10.txt": 82633, "plrabn12.txt": 110597,
                   "book1": 163870, "book2": 139844, "paper1": 14539, "paper2": 18074, "paper3": 11137,
                   "paper4": 3313, "paper5": 3911, "paper6": 11213, "news": 109612, "dickens": 1922936}

MODES = [False, True, "heads"]          # static, dynamic and heads (the default mode)
MODE_IDS = ["static", "dynamic", "heads"]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not cc.has_default_model(), reason="no bundled default model")]


def size(name, adapt):
    return len(cc.frame(cc.find(name), adapt))


def by_name(names):
    return [pytest.param(n, marks=pytest.mark.xdist_group(n)) for n in names]


@pytest.mark.parametrize("name", by_name(ENGLISH))
def test_dynamic_beats_xz(name):
    assert size(name, True) < ANCHORS[name]["xz-9e"]


@pytest.mark.parametrize("name", by_name(LITERARY))
def test_dynamic_beats_ppmd_on_literary(name):
    assert size(name, True) < ANCHORS[name]["ppmd-o16"]


@pytest.mark.xdist_group("dickens")
def test_dynamic_beats_ppmd_on_english_sum():
    ours = sum(size(n, True) for n in ENGLISH)
    ppmd = sum(ANCHORS[n]["ppmd-o16"] for n in ENGLISH)
    assert ours < ppmd, f"{ours} >= {ppmd}"


@pytest.mark.xdist_group("dickens")
def test_issue10_fourteen_at_most_150():
    """The fourteen English files together, dynamic mode: at most 1.50 bits per byte."""
    ours = sum(size(n, True) for n in ENGLISH)
    raw = sum(len(cc.read(cc.find(n))) for n in ENGLISH)
    assert 8 * ours / raw <= 1.50, f"{8 * ours / raw:.4f}"


@pytest.mark.parametrize("name", by_name(ENGLISH))
def test_default_mode_paid_for_and_below_ppmd(name):
    """The default mode (heads) against dynamic mode at issue 11's filing, and against PPMd order 16."""
    n = size(name, "heads")
    assert n <= ISSUE11_DYNAMIC[name], f"{n} > {ISSUE11_DYNAMIC[name]}"
    assert n < ANCHORS[name]["ppmd-o16"]


@pytest.mark.parametrize("name", by_name(LITERARY))
def test_static_at_most_080_xz_on_literary(name):
    assert size(name, False) <= 0.8 * ANCHORS[name]["xz-9e"]


@pytest.mark.parametrize("adapt", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("path", cc.corpus_params())
def test_never_worse_than_xz_plus_64(path, adapt):
    name = cc.name_of(path)
    xz = ANCHORS[name]["xz-9e"] if name in ANCHORS else cc.xz9e_size(path)
    assert len(cc.frame(path, adapt)) <= xz + 64


@pytest.mark.parametrize("adapt", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("name", by_name(BYTE_TARGETS))
def test_below_ppmd_and_085_xz(name, adapt):
    n = size(name, adapt)
    assert n < ANCHORS[name]["ppmd-o16"], (n, ANCHORS[name]["ppmd-o16"])
    assert n <= 0.85 * ANCHORS[name]["xz-9e"], (n, ANCHORS[name]["xz-9e"])


# (issue 10: the token match flag and its two APMs, §3.4, the token cache, §3.6, the body mixer, §5.1.1)
# the per-file targets, exact sizes, dynamic mode
ISSUE10_MET = {"news": 2.09, "book2": 1.65, "paper1": 1.95, "lcet10.txt": 1.45}


@pytest.mark.parametrize("name", by_name(ISSUE10_MET))
def test_issue10_targets_met(name):
    raw = len(cc.read(cc.find(name)))
    assert 8 * size(name, True) / raw <= ISSUE10_MET[name]


# paq8px v216 -8, bits per byte as measured in ../shared/guide/ANCHORS.md (not in anchor_sizes.json): the
# default model is below it on all four files measured
PAQ8PX_8 = {"alice29.txt": 1.740, "plrabn12.txt": 1.950, "book1": 1.908, "lcet10.txt": 1.483}


@pytest.mark.parametrize("name", by_name(PAQ8PX_8))
def test_dynamic_below_paq8px_where_measured(name):
    raw = len(cc.read(cc.find(name)))
    assert 8 * size(name, True) / raw < PAQ8PX_8[name]
