"""cffi (API mode) binding of the C core.  Its declarations are read from csrc/nlm.h (the public header) and
csrc/nlm_lab.h (the tuning switches) by cdef_from_headers: there is no second copy to keep in step.

Sources and compiler flags come from build_flags.py, the one build definition (setup.py uses it too).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # build backends do not put the source dir on sys.path

from cffi import FFI

from build_flags import CORE_SOURCES, DEFINE_MACROS, EXTRA_COMPILE_ARGS, INCLUDE_DIRS

HEADERS = ("nlm.h", "nlm_lab.h")   # the public header and the tuning switches the tests use


def cdef_from_headers(csrc: str = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")) -> str:
    """The cffi declarations, read from the C headers themselves (one copy of the API): comments, include
    guards, #include and extern "C" lines dropped; integer #defines kept (cffi reads `#define NAME 42`); the
    error list's X-macro expanded into its enum."""
    import re

    out = []
    for name in HEADERS:
        text = open(os.path.join(csrc, name), encoding="utf-8").read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        errors = re.findall(r"X\((NLM_\w+), (-?\d+), \"", text)
        if errors:
            out.append("enum { " + ", ".join(f"{n} = {v}" for n, v in errors) + " };")
        text = re.sub(r"#define NLM_ERR_LIST\(X\)(?:[^\n]*\\\n)*[^\n]*\n", "", text)
        text = re.sub(r"enum \{\s*#define NLM_X_ENUM.*?#undef NLM_X_ENUM\s*\};", "", text, flags=re.S)
        keep = []
        depth_cpp = 0
        for line in text.splitlines():
            t = line.strip()
            if t.startswith("#ifdef __cplusplus"):
                depth_cpp = 1
                continue
            if depth_cpp:
                if t.startswith("#endif"):
                    depth_cpp = 0
                continue
            m = re.match(r"#define (NLM_\w+) (-?\d+)$", t)
            if m:
                keep.append(f"#define {m.group(1)} {m.group(2)}")
            elif t.startswith("#"):
                continue
            elif t:
                keep.append(line)
        out.append("\n".join(keep))
    return "\n".join(out)


CDEF = cdef_from_headers()
PREAMBLE = "".join(f'#include "{h}"\n' for h in HEADERS)   # the C side of the same declarations

ffibuilder = FFI()
ffibuilder.cdef(CDEF)
# Built by setup.py: the core comes from the static library nlmcore (setup.py's build_clib), which build_ext
# links into every extension; run alone (python build_cffi.py), the module compiles the core's sources itself.
STANDALONE = __name__ == "__main__"
ffibuilder.set_source(
    "nlmcodec._nlm_cffi",
    PREAMBLE,
    sources=CORE_SOURCES if STANDALONE else [],
    include_dirs=INCLUDE_DIRS,
    extra_compile_args=EXTRA_COMPILE_ARGS,
    define_macros=DEFINE_MACROS,
)

if STANDALONE:
    ffibuilder.compile(verbose=True)
