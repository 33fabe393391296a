"""Judges that nobody here wrote (DESIGN §9): our grammar is never the judge of itself.

- Python: `ast.parse`.
- C++: tree-sitter-cpp (no ERROR or MISSING node), and `g++ -std=c++17 -fsyntax-only`, which
  also runs C++'s semantic analysis (names, types): stricter than "parses". Functional: the
  filled program compiled with the task's `test` (its `main`) and run under a time limit.
- JSON: `json.loads`.
- HumanEval-Infilling: the filled task with its tests, run by `python -I -S -B` in the sandbox
  of `bench.sandbox` (separate process, limits, scratch folder, no network where possible).
  The compiled C++ tests run in the same sandbox.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import sandbox

# The oracle column names, per language, in report order.
ORACLES: dict[str, tuple[str, ...]] = {
    "python": ("ast.parse",),
    "cpp": ("tree-sitter", "g++"),
    "json": ("json.loads",),
}
GPP_FLAGS = ("-std=c++17", "-w")


def python_valid(text: str) -> bool:
    with warnings.catch_warnings():
        # invalid escapes and the like only warn: noise for a validity oracle
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
            return False
    return True


def json_valid(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@functools.cache
def _ts_parser(language: str) -> Any:
    import tree_sitter

    if language == "cpp":
        import tree_sitter_cpp as grammar
    else:
        import tree_sitter_python as grammar  # type: ignore[no-redef]
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


def ts_parse(language: str, text: str) -> Any:
    """A full (not incremental) tree-sitter parse: what re-parsing per token costs."""
    return _ts_parser(language).parse(text.encode("utf-8"))


def cpp_ts_valid(text: str) -> bool:
    return not ts_parse("cpp", text).root_node.has_error


def fast_judge(language: str) -> Callable[[str], bool]:
    """The cheap in-process oracle of a language (used per prefix by the checked mode)."""
    return {"python": python_valid, "cpp": cpp_ts_valid, "json": json_valid}[language]


def have_gpp() -> bool:
    return shutil.which("g++") is not None


def gpp_syntax_ok(text: str, timeout_s: float) -> bool:
    """`g++ -fsyntax-only` on the program read from stdin."""
    try:
        proc = subprocess.run(["g++", *GPP_FLAGS, "-fsyntax-only", "-x", "c++", "-"],
                              input=text, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0


def cpp_passes(program: str, test: str, compile_timeout_s: float, run_timeout_s: float) -> bool:
    """Compile program + test with g++ and run it in the sandbox: True iff every assert held
    in time."""
    with tempfile.TemporaryDirectory(prefix="holefill-bench-") as tmp:
        src, exe = Path(tmp, "main.cpp"), Path(tmp, "main")
        src.write_text(program + "\n" + test, encoding="utf-8")
        try:
            built = subprocess.run(["g++", *GPP_FLAGS, "-O0", "-o", str(exe), str(src)],
                                   capture_output=True, timeout=compile_timeout_s)
        except subprocess.TimeoutExpired:
            return False
        if built.returncode != 0:
            return False
        exe.chmod(0o755)
        return sandbox.run_sandboxed([str(exe)], Path(tmp), run_timeout_s).passed


def python_verdicts(programs: Iterable[str], timeout_s: float) -> dict[str, bool]:
    """program -> its tests passed, each run once in the sandbox, in parallel."""
    unique = list(dict.fromkeys(programs))

    def one(program: str) -> bool:
        return sandbox.run_python(program, timeout_s).passed

    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        return dict(zip(unique, pool.map(one, unique), strict=True))


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def judge(language: str, text: str) -> dict[str, bool | None]:
    """The in-process oracles' verdicts; g++ is filled in later by `gpp_verdicts`."""
    if language == "python":
        return {"ast.parse": python_valid(text)}
    if language == "json":
        return {"json.loads": json_valid(text)}
    return {"tree-sitter": cpp_ts_valid(text), "g++": None}


def gpp_verdicts(jobs: Iterable[tuple[str, str]], compile_timeout_s: float,
                 run_timeout_s: float) -> dict[tuple[str, str], tuple[bool, bool]]:
    """(program, test) -> (g++ -fsyntax-only ok, test passed), run in parallel; identical
    jobs (modes often agree) run once."""
    unique = list(dict.fromkeys(jobs))

    def one(job: tuple[str, str]) -> tuple[bool, bool]:
        program, test = job
        syntax = gpp_syntax_ok(program, compile_timeout_s)
        passed = syntax and cpp_passes(program, test, compile_timeout_s, run_timeout_s)
        return syntax, passed

    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        return dict(zip(unique, pool.map(one, unique), strict=True))
