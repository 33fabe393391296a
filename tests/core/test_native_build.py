"""The native core as C: the header doubles as cffi cdef, the sources compile warning-free,
and a sanitizer build (ASan + UBSan) survives a deterministic random batch without leaks.

Data: native/holefill.h, native/hf_*.c, and native/tests/fuzz_driver.c (its own xorshift
PRNG; the seed is printed and fixed below, so failures reproduce with the same command).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import holefill._native as native
import pytest
from cffi import FFI

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
SOURCES = sorted(NATIVE.glob("hf_*.c"))
WARNINGS = ["-std=c99", "-Wall", "-Wextra", "-Wshadow", "-Wpedantic", "-Werror"]
FUZZ_SEED = 20260101
FUZZ_COUNT = 3000

gcc = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(gcc is None, reason="gcc not available")


def _build_module():  # native/build.py is a script, not a package module
    spec = importlib.util.spec_from_file_location("holefill_native_build", NATIVE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_header_parses_as_cdef_and_matches_compiled_module() -> None:
    """The cdef generated from holefill.h parses, and every function it declares exists in
    the compiled holefill._native (the module was built from the same header)."""
    cdef = _build_module().header_cdef()
    FFI().cdef(cdef)
    declared = set(re.findall(r"\b(hf_[a-z_]+)\s*\(", cdef))
    assert {"hf_checker_run", "hf_grammar_new", "hf_live_blocks"} <= declared
    missing = sorted(name for name in declared if not hasattr(native.lib, name))
    assert not missing


@needs_gcc
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_sources_compile_without_warnings(tmp_path: Path, opt: str) -> None:
    """Every native/hf_*.c and the fuzz driver compile with -Werror under the project's
    warning flags."""
    for src in [*SOURCES, NATIVE / "tests" / "fuzz_driver.c"]:
        subprocess.run(
            [gcc, *WARNINGS, opt, f"-I{NATIVE}", "-c", str(src), "-o", str(tmp_path / "x.o")],
            check=True,
            capture_output=True,
            text=True,
        )


@needs_gcc
def test_sanitizer_build_runs_random_batch_clean(tmp_path: Path) -> None:
    """ASan+UBSan build of the core plus native/tests/fuzz_driver.c: 3,000 random instances
    (both modes, tiny budgets, malformed edges, a swapped-in counting allocator) finish with
    exit 0, no sanitizer report, and zero live blocks."""
    exe = tmp_path / "fuzz_driver"
    flags = [
        "-g",
        "-O1",
        "-fsanitize=address,undefined",
        "-fno-omit-frame-pointer",
        "-fno-sanitize-recover=all",
    ]
    subprocess.run(
        [
            gcc,
            *WARNINGS,
            *flags,
            f"-I{NATIVE}",
            *map(str, SOURCES),
            str(NATIVE / "tests" / "fuzz_driver.c"),
            "-o",
            str(exe),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    env = dict(
        os.environ,
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
    )
    proc = subprocess.run(
        [str(exe), str(FUZZ_SEED), str(FUZZ_COUNT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    print(proc.stdout)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report
    assert "runtime error" not in report, report
    assert "Sanitizer" not in report, report
    assert "fuzz_driver ok" in proc.stdout


ASAN_LEXER_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import _native_asan
import holefill.lexing.native_holes as nh
nh.ffi, nh.lib = _native_asan.ffi, _native_asan.lib
from holefill.budget import Budget, BudgetExhausted
from holefill.lexing.anchors import PLAIN
from holefill.lexing.holes import Place
from tests.lexing.test_native_lexer import LEXERS, PIECES, _both, _graphs_equal
import random
rng = random.Random(7)
count = 0
for name, lexer in LEXERS.items():
    for _ in range(int(sys.argv[2])):
        chunks = ["".join(rng.choice(PIECES[name]) for _ in range(rng.randint(0, 8)))
                  for _ in range(rng.randint(1, 4))]
        for anchors in (None, PLAIN):
            py, nat = _both(lexer, chunks, anchors)
            for k in range(0, len(chunks[0]) + 1, 3):
                assert py.state_of(Place(0, k)) == nat.state_of(Place(0, k))
            _graphs_equal(py.nfa(), nat.nfa())
            count += 1
        try:  # a budget that runs out halfway leaves a partial graph to free
            lexer.graph(chunks, None, Budget(steps=rng.randint(0, 40)))
        except BudgetExhausted:
            pass
print("asan lexer ok", count)
"""


@needs_gcc
def test_native_lexer_equality_under_address_sanitizer(tmp_path: Path) -> None:
    """The cffi module built with ASan+UBSan (native/build.py's builder, instrumented)
    builds the same raw graphs as the Python path on a random batch of texts of every test
    lexer, growth and exhausted budgets included, with no sanitizer report."""
    libasan = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if not os.path.isabs(libasan):
        pytest.skip("libasan not available")
    flags = ["-g", "-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
             "-fno-sanitize-recover=all"]
    builder = _build_module().make_ffibuilder("_native_asan", flags, flags, relative=False)
    builder.compile(tmpdir=str(tmp_path))
    env = dict(os.environ, LD_PRELOAD=libasan, ASAN_OPTIONS="detect_leaks=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(["python", "-c", ASAN_LEXER_SCRIPT, str(tmp_path), "25"],
                          capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report[-4000:]
    assert "runtime error" not in report, report[-4000:]
    assert "asan lexer ok" in proc.stdout
