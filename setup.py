"""Build nlmcodec: one C core (csrc/), two bindings (Cython extension, cffi API-mode module).

The core is compiled once per build, into the static library ``nlmcore`` (build_clib), and linked into
both bindings (build_ext links every extension against the package's C libraries).

The determinism contract (docs/format.md, section "Arithmetic") is enforced by build_flags.py, the one
build definition of the C core: -std=c11, -ffp-contract=off, no fast-math, no -march (SIMD paths are
chosen at run time inside the core).  NLMCODEC_NO_SIMD=1 builds the scalar-only core.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # PEP 517 backends do not put the source dir on sys.path

from setuptools import Extension, setup
from Cython.Build import cythonize

from build_flags import CORE_SOURCES, DEFINE_MACROS, EXTRA_COMPILE_ARGS, INCLUDE_DIRS

CORE = ("nlmcore", {"sources": CORE_SOURCES, "include_dirs": INCLUDE_DIRS, "macros": DEFINE_MACROS,
                   "cflags": EXTRA_COMPILE_ARGS})

ext = Extension(
    "nlmcodec._nlm_cy",
    ["python/nlmcodec/_nlm_cy.pyx"],
    include_dirs=INCLUDE_DIRS,
    extra_compile_args=EXTRA_COMPILE_ARGS,
    define_macros=DEFINE_MACROS,
)

setup(
    libraries=[CORE],
    # nlmcodec(1), rendered from the CLI's parser (python -m nlmcodec.cli.manpage), into PREFIX/share/man/man1
    data_files=[("share/man/man1", ["docs/nlmcodec.1"])],
    ext_modules=cythonize([ext], build_dir="build/cython", language_level=3),
    cffi_modules=["build_cffi.py:ffibuilder"],
)
