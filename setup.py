"""Build nlmcodec: one C core (csrc/), two bindings (Cython extension, cffi API-mode module).

The determinism contract (codec/FORMAT.md, section "Arithmetic") is enforced here: every C file of the core is
compiled with -ffp-contract=off and without fast-math; SIMD paths are chosen at run time inside the
core, never by -march flags.  NLMCODEC_NO_SIMD=1 builds the scalar-only core (used by the dual-build test).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # PEP 517 backends do not put the source dir on sys.path

from setuptools import Extension, setup
from Cython.Build import cythonize

from build_cffi import CORE_SOURCES, INCLUDE_DIRS, EXTRA_COMPILE_ARGS, DEFINE_MACROS

ext = Extension(
    "nlmcodec._nlm_cy",
    ["python/nlmcodec/_nlm_cy.pyx", *CORE_SOURCES],
    include_dirs=INCLUDE_DIRS,
    extra_compile_args=EXTRA_COMPILE_ARGS,
    define_macros=DEFINE_MACROS,
)

setup(
    ext_modules=cythonize([ext], build_dir="build/cython", language_level=3),
    cffi_modules=["build_cffi.py:ffibuilder"],
)
