"""The layout product in C under AddressSanitizer and UBSan: an instrumented copy of the
native module (native/build.py make_ffibuilder) stands in for holefill._native inside
holefill.lexing.layout_native, in a child Python with libasan preloaded; its products on
hand cases and standard-library cuts equal the Python reference's, no sanitizer reports,
and every block it allocated is freed once the sessions are gone (hf_live_blocks)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
gcc = shutil.which("gcc")

CHILD = textwrap.dedent('''
    import gc, sys
    import _hf_sanitized as san
    import holefill.lexing.layout_native as ln
    ln.ffi, ln.lib = san.ffi, san.lib
    from holefill import Checker
    from holefill.budget import Budget, BudgetExhausted
    from holefill.datasets import python_cuts
    from holefill.lexing.python_layout import PythonLayoutLexer
    compiled = Checker.for_language("python").compiled
    ref = PythonLayoutLexer(compiled, native=False)
    nat = PythonLayoutLexer(compiled, native=True)
    cases = [["if a:\\n  b(", ")\\n  c = [1,\\n 2]\\nelse:\\n\\tpass\\n"],
             ["x = 1 \\\\\\n  + 2\\n", "\\n# c\\n  y\\n", ""],
             ["class A:\\n    def f(self):\\n        ", "\\n", "    z = (1 +\\n", ")\\n"]]
    cases += [list(c.chunks) for c in python_cuts("span", 6, seed=3, holes=2, max_lines=150)]
    for chunks in cases:
        a, b = ref.build(chunks), nat.build(chunks)
        assert list(a.edges) == list(b.edges) and a.n_states == b.n_states, chunks
        assert list(a.terms) == list(b.terms) and list(a.raw_edge) == list(b.raw_edge)
        assert dict(a.state_info) == dict(b.state_info)
    try:
        nat._product(cases[0], nat.raw.build(cases[0]), None, budget=Budget(5))
    except BudgetExhausted:
        pass
    del a, b
    gc.collect()
    assert san.lib.hf_live_blocks() == 0, san.lib.hf_live_blocks()
    print("sanitized layout ok", len(cases))
''')


def _build_module():
    spec = importlib.util.spec_from_file_location("holefill_native_build",
                                                  ROOT / "native" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(gcc is None or sys.platform != "linux", reason="needs gcc on Linux")
def test_sanitized_native_product_equals_python_and_frees_everything(tmp_path: Path) -> None:
    flags = ["-g", "-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
             "-fno-sanitize-recover=all"]
    builder = _build_module().make_ffibuilder("_hf_sanitized", extra_compile_args=flags,
                                              extra_link_args=flags[2:3], relative=False)
    builder.compile(tmpdir=str(tmp_path))
    asan = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                          text=True, check=True).stdout.strip()
    # The caller's PYTHONPATH stays behind ours: it names the holefill under test.
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, LD_PRELOAD=asan, PYTHONPATH=path,
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          env=env, timeout=600, cwd=tmp_path)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, report[-4000:]
    assert "runtime error" not in report and "Sanitizer" not in report, report[-4000:]
    assert "sanitized layout ok" in proc.stdout
