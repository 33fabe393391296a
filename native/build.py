"""cffi build script for the native core (API mode): `ffibuilder` compiles native/*.c into
the extension module `holefill._native`.

The cdef is generated from native/holefill.h by dropping its preprocessor lines, so the
header stays the single source of truth (tests/core/test_native_build.py checks it parses).
Used by setup.py (`cffi_modules=["native/build.py:ffibuilder"]`) and by tests that build
instrumented copies.
"""

from __future__ import annotations

import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "holefill.h")
SOURCES = ["hf_alloc.c", "hf_grammar.c", "hf_checker.c", "hf_right.c", "hf_parser.c",
           "hf_munch.c", "hf_layout.c", "hf_lexer.c"]
CFLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Wshadow", "-Wpedantic"]

# The Python-side cancel trampoline, passed to hf_checker_run as an HfCancelFn.
PYTHON_CALLBACKS = 'extern "Python" int _hf_cancel_trampoline(void *);\n'


def header_cdef(path: str = HEADER) -> str:
    """The header with preprocessor lines removed: what cffi's cdef() reads."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if not line.lstrip().startswith("#")]
    return "".join(lines)


def make_ffibuilder(
    module_name: str = "holefill._native",
    extra_compile_args: list[str] | None = None,
    extra_link_args: list[str] | None = None,
    relative: bool = True,
) -> FFI:
    """An FFI builder for the core.  `relative` gives source paths relative to the current
    directory (what setuptools wants when building from the project root)."""
    base = os.path.relpath(HERE) if relative else HERE
    ffi = FFI()
    ffi.cdef(header_cdef() + PYTHON_CALLBACKS)
    ffi.set_source(
        module_name,
        '#include "holefill.h"\n',
        sources=[os.path.join(base, name) for name in SOURCES],
        include_dirs=[base],
        extra_compile_args=CFLAGS + list(extra_compile_args or []),
        extra_link_args=list(extra_link_args or []),
    )
    return ffi


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
