"""The format is the code, written down (docs/format.md): no build switch may change the bytes
of a stream, and the format text and the C comments name only files and functions that exist.

* Every preprocessor conditional in csrc/ tests only the identifiers of ALLOWED (platform and compiler
  detection, refused builds, and NLM_NO_SIMD, which must not change a byte: tests/test_dual_build.py) or
  its header's include guard.  A constant or a variant of the arithmetic selected by a macro would make
  the same input and model give other bytes under another build; it must be a model or format parameter.
* The switches removed for that reason (REMOVED) appear nowhere in the C sources, the C harnesses, the
  build scripts, the benchmarks or the CI scripts, and no build passes a -D macro outside ALLOWED.
* Every path docs/format.md names exists in the repository, every C function it names is defined in csrc/,
  and every `_module.function` it names is defined in python/nlmcodec; the same for the paths and files
  the comments of csrc/ name.
No build, no model: these read files only.
"""
import functools
import pathlib
import re

import pytest

pytestmark = pytest.mark.one_lane   # no binding involved: the cffi lane skips it

ROOT = pathlib.Path(__file__).resolve().parents[1]
CSRC = ROOT / "csrc"
FORMAT = ROOT / "docs" / "format.md"

# Identifiers a preprocessor conditional in csrc/ may test, each with why it cannot change the bytes.
ALLOWED = {
    "NLM_NO_SIMD": "scalar-only build; same bytes as the dispatching build (tests/test_dual_build.py)",
    "KERN_X86": "defined in kernels/ from the platform macros and NLM_NO_SIMD only",
    "__x86_64__": "platform", "__i386__": "platform", "__SSE2__": "platform", "__aarch64__": "platform",
    "__arm__": "platform", "_M_X64": "platform", "_M_IX86": "platform", "_M_ARM64": "platform",
    "__s390x__": "platform", "__powerpc64__": "platform", "__BYTE_ORDER__": "platform",
    "__ORDER_LITTLE_ENDIAN__": "platform", "__ORDER_BIG_ENDIAN__": "platform", "__SIZEOF_INT128__": "platform",
    "__F16C__": "platform", "__AVX2__": "platform",
    "__clang__": "compiler (pragma spelling)", "__GNUC__": "compiler", "_MSC_VER": "compiler",
    "__cplusplus": "C++ linkage of nlm.h", "__STDC_VERSION__": "compiler", "__has_builtin": "compiler",
    "__has_include": "compiler",
    "__FAST_MATH__": "refused build (#error)", "_M_FP_FAST": "refused build (#error)",
    "FLT_EVAL_METHOD": "refused build (#error / static assertion)",
    "__unix__": "platform", "__APPLE__": "platform", "__has_feature": "compiler",
    "__SANITIZE_ADDRESS__": "sanitizer build (where bytemodel/cm.c's tables' memory comes from, not their contents)",
    "address_sanitizer": "sanitizer build (as __SANITIZE_ADDRESS__)",
    "CM_ASAN_BUILD": "bytemodel/cm.c: defined from address_sanitizer only",
    "CM_TABLES_MAPPED": "bytemodel/cm.c: defined from the platform and sanitizer macros only; where the tables' "
                        "memory comes from (mapped pages or the C heap), never their contents",
    "NLM_SELFTEST_PERTURB_ROUNDING": "test-only build whose self-test fails: it refuses to create any model or "
                                     "codec, so it never writes a byte (tests/test_selftest.py)",
}
# Stream-changing switches that existed and were removed (their default is now the only behaviour).
REMOVED = ("SP_INC", "SP_LIMIT", "SP_ESC_C", "SP_FULL_UPDATE", "NLM_GAPMIX_OFF")

COND = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b(.*)$")
C_FUNC = re.compile(r"\b(step_token|(?:kern|lm|quant|rc|fen|speller|gapmix|lex|nlm)_[a-z0-9_]+)\b(?!\.(?:[ch]|py|md)\b)")


def c_files(csrc=CSRC):
    return sorted(p for p in csrc.rglob("*") if p.suffix in (".c", ".h"))


def strip_c_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S))


@functools.lru_cache(maxsize=None)
def repo_files():
    skip = {".git", "build", "__pycache__", ".hypothesis", ".benchmarks", ".pytest_cache"}
    out = []
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT)
        if p.is_file() and not skip.intersection(rel.parts) and not rel.parts[0].endswith(".egg-info"):
            out.append(rel)
    return tuple(out)


def conditionals(csrc=CSRC):
    """(file, line number, directive, identifiers tested) of every conditional in csrc/."""
    out = []
    for path in c_files(csrc):
        for i, line in enumerate(strip_c_comments(path.read_text(encoding="utf-8")).splitlines(), 1):
            m = COND.match(line)
            if m:
                names = [n for n in re.findall(r"[A-Za-z_]\w*", m.group(2)) if n != "defined"]
                out.append((path.relative_to(csrc.parent).as_posix(), i, m.group(1), names))
    return out


def disallowed(conds):
    bad = []
    for f, i, directive, names in conds:
        guard = f.endswith(".h") and directive == "ifndef" and len(names) == 1 and re.fullmatch(r"NLM_(\w+_)?H", names[0])
        if guard:
            continue
        bad += [f"{f}:{i}: #{directive} tests {n}" for n in names if n not in ALLOWED]
    return bad


def test_conditionals_only_test_allowed_identifiers():
    conds = conditionals()
    assert len(conds) >= 10, "the scan found almost no conditionals: is csrc/ where it should be?"
    bad = disallowed(conds)
    assert not bad, ("preprocessor switches that may change output bytes (make them model/format parameters, or, "
                     "if they only detect the platform, add them to ALLOWED with the reason):\n" + "\n".join(bad))


def test_include_guards_are_guards():
    """An `#ifndef NLM_..._H` passes only as the first conditional of a header: never as a default switch."""
    for path in c_files():
        if path.suffix != ".h":
            continue
        lines = strip_c_comments(path.read_text(encoding="utf-8")).splitlines()
        guards = [(i, ln) for i, ln in enumerate(lines) if re.match(r"\s*#\s*ifndef\s+NLM_(\w+_)?H\b", ln)]
        assert len(guards) <= 1, f"{path}: more than one include guard"
        for i, ln in guards:
            name = ln.split()[-1]
            first = next(k for k, l2 in enumerate(lines) if COND.match(l2))
            assert first == i and re.match(rf"\s*#\s*define\s+{name}\s*$", lines[i + 1]), f"{path}: {ln.strip()}"


def test_removed_switches_stay_removed():
    places = [*c_files(), *(ROOT / "tests" / "c").glob("*"), ROOT / "setup.py", ROOT / "build_cffi.py",
              *(ROOT / ".ci").glob("*"), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.c"),
              *(ROOT / "tools").glob("*.py"), *(ROOT / "tests").glob("*.py")]
    me = pathlib.Path(__file__).resolve()
    hits = []
    for p in places:
        if not p.is_file() or p.resolve() == me:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        hits += [f"{p.relative_to(ROOT)}: {name}" for name in REMOVED if re.search(rf"\b{name}\b", text)]
        hits += [f"{p.relative_to(ROOT)}: -D{d}" for d in re.findall(r"-D([A-Za-z_]\w*)", text) if d not in ALLOWED]
    assert not hits, "stream-changing build switches:\n" + "\n".join(hits)


def format_text():
    return FORMAT.read_text(encoding="utf-8")


PATH = re.compile(r"(?<![\w./-])((?:\.ci|csrc|codec|python|tests|tools|benchmarks)/[\w./-]*[\w/])")
BARE = re.compile(r"(?<![\w./-])([\w-]+\.(?:c|h|py|pyx|md|csv|json))\b")


def test_format_names_only_existing_paths():
    text = format_text()
    files = repo_files()
    names = {p.name for p in files}
    missing = [m for m in PATH.findall(text) if not (ROOT / m.rstrip("/")).exists()]
    missing += [m for m in BARE.findall(text) if "/" not in m and m not in names]
    assert PATH.findall(text), "docs/format.md names no path: the pattern is broken"
    assert not missing, "docs/format.md names files that do not exist: " + ", ".join(sorted(set(missing)))


def test_format_names_only_existing_functions():
    text = format_text()
    code = " ".join(strip_c_comments(p.read_text(encoding="utf-8")) for p in c_files())
    named = set(C_FUNC.findall(text))
    assert len(named) >= 5, "docs/format.md names almost no C function: the pattern is broken"
    missing = sorted(n for n in named if not re.search(rf"\b{n}\b", code))
    pyref = {(m, f) for m, f in re.findall(r"`(_\w+)\.(\w+)`", text) if f not in ("py", "pyx", "c", "h", "md")}
    for mod, fn in pyref:
        src = ROOT / "python" / "nlmcodec" / f"{mod}.py"
        if not src.exists() or not re.search(rf"^\s*(def|class)\s+{fn}\b|^{fn}\s*=", src.read_text(encoding="utf-8"), re.M):
            missing.append(f"{mod}.{fn}")
    assert not missing, "docs/format.md names functions that do not exist: " + ", ".join(missing)


@pytest.mark.parametrize("path", c_files(), ids=lambda p: p.relative_to(CSRC).as_posix())
def test_c_comments_name_only_existing_files(path):
    comments = " ".join(re.findall(r"/\*.*?\*/|//[^\n]*", path.read_text(encoding="utf-8"), flags=re.S))
    names = {p.name for p in repo_files()}
    paths = PATH.findall(comments) + re.findall(r"(?<![\w./-])((?:[\w-]+/)+[\w-]+\.(?:c|h|py|pyx|md))\b", comments)
    missing = [m for m in paths if not any((base / m.rstrip("/")).exists() for base in (ROOT, CSRC))]
    missing += [m for m in BARE.findall(comments) if m not in names]
    assert not missing, f"{path.relative_to(ROOT)} names files that do not exist: {sorted(set(missing))}"


# "`NAME` = 24" and "24 (`NAME`)" (a value may be written `2^16`, `65,535`, "`c += 1` (`NAME`)", "32 bytes (`NAME`)").
VALUE = r"([0-9][0-9,]*(?:\^[0-9]+)?)"
NAME_EQ = re.compile(r"`([A-Z][A-Z0-9_]+)`\s*=\s*`?" + VALUE)
EQ_NAME = re.compile(r"`?(?:[\w ]*(?:\+=|=) )?" + VALUE + r"`?(?:\s+[a-z]+)?\s*\(`([A-Z][A-Z0-9_]+)`\)")


def c_constants(csrc=CSRC):
    """{name: set of values} of the numeric #defines in csrc/."""
    out = {}
    for path in c_files(csrc):
        for m in re.finditer(r"^\s*#\s*define\s+([A-Z][A-Z0-9_]+)\s+([^\n]+)$", strip_c_comments(path.read_text(encoding="utf-8")), re.M):
            expr = re.sub(r"\b(\d+(?:\.\d+)?)(?:[uU]?[lL]{0,2}|f)\b", r"\1", m.group(2).strip())
            if re.fullmatch(r"[0-9.()<>+\-* ]+", expr):
                out.setdefault(m.group(1), set()).add(eval(expr))  # noqa: S307  (digits and operators only)
    return out


def test_format_constants_match_the_code():
    text = format_text()
    stated = [(n, v) for n, v in NAME_EQ.findall(text)] + [(n, v) for v, n in EQ_NAME.findall(text)]
    consts = c_constants()
    checked, wrong = 0, []
    for name, value in stated:
        if name not in consts:
            continue
        v = value.replace(",", "")
        v = 2 ** int(v.split("^")[1]) if "^" in v and v.startswith("2") else float(v)
        checked += 1
        if consts[name] != {v}:
            wrong.append(f"docs/format.md says {name} = {value}, csrc defines {sorted(consts[name])}")
    assert checked >= 12, f"only {checked} constants found with their values: the patterns are broken"
    assert not wrong, "\n".join(wrong)


def test_the_checks_catch_a_reintroduced_switch(tmp_path):
    """The scans above fail on a switch put back (as speller.c had it) and on a constant that drifts."""
    csrc = tmp_path / "csrc"
    (csrc / "speller").mkdir(parents=True)
    text = (CSRC / "speller" / "speller.c").read_text(encoding="utf-8")
    text = text.replace("#define SPELL_INC 1", "#ifndef SPELL_INC\n#define SPELL_INC 2\n#endif", 1)
    (csrc / "speller" / "speller.c").write_text(text, encoding="utf-8")
    (csrc / "nlm.h").write_text("#ifndef NLM_H\n#define NLM_H\n#ifdef NLM_OLD_GAPS\n#endif\n#endif\n", encoding="utf-8")
    bad = disallowed(conditionals(csrc))
    assert any("SPELL_INC" in b for b in bad) and any("NLM_OLD_GAPS" in b for b in bad), bad
    assert not any("NLM_H" in b for b in bad), bad
    assert c_constants(csrc)["SPELL_INC"] == {2}  # ≠ the 1 docs/format.md states
