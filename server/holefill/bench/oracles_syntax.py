"""Syntax oracles for the differential fuzzer (holefill.bench.fuzz): compilers nobody here wrote.

- Python: the parser of each CPython version, `compile(text, ..., ast.PyCF_ONLY_AST)` (what
  `ast.parse` runs: the PEG grammar and the parser's own checks such as invalid targets; not
  the symbol table's or the compiler's checks such as `return` outside a function or a
  duplicate argument, which no grammar decides). The running interpreter answers in process;
  every other version through one long-lived subprocess that reads texts as JSON lines and
  answers one JSON verdict per line, so thousands of texts cost milliseconds each.
- C and C++: `gcc -std=c17 -fsyntax-only` and `g++ -std=gnu++17 -fsyntax-only`. Both also run
  semantic analysis (names, types), which a grammar cannot decide, so each verdict is one of
  "ok", "syntax" (every error is one the parser reports: `expected ...`, a stray character,
  an unterminated literal, ...) or "semantic" (at least one error about names or types: the
  oracle cannot say whether the text parses, and such a text is counted apart, never as a
  disagreement). A "syntax" verdict that tree-sitter-c/-cpp (a parser without name lookup)
  does not share is "semantic" too: the compiler's parse depended on what a name denotes
  (`f2 f2 = m;` declares f2 when f2 names a type). For C++ a precompiled prelude of the
  standard headers HumanEval-X includes is passed with `-include` (built once, cached under
  ~/.cache/holefill/fuzz): the texts' own includes then cost nothing, and removing an include
  only changes semantics.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The Python versions asked besides the running interpreter, by pyenv's usual places.
PYENV = Path.home() / ".pyenv" / "versions"
PYTHON_VERSIONS = {"3.12": PYENV / "3.12.1" / "bin" / "python",
                   "3.13": PYENV / "3.13.0" / "bin" / "python"}

_SERVER = r"""
import ast, json, sys, warnings
warnings.simplefilter("ignore")
for line in sys.stdin:
    text = json.loads(line)
    try:
        compile(text, "<fuzz>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        out = {"ok": True, "msg": ""}
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        out = {"ok": False, "msg": f"{type(exc).__name__}: {getattr(exc, 'msg', exc)} "
                                   f"(line {getattr(exc, 'lineno', '?')})"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


@dataclass(frozen=True)
class Judgement:
    """One oracle's answer: ok, or why not; `kind` is "ok", "syntax" or "semantic" (C/C++
    only: an error about names or types, so the oracle cannot decide the syntax)."""

    kind: str
    message: str = ""
    # a "semantic" C/C++ verdict whose text tree-sitter cannot parse either (a second,
    # independent parser: reported apart, as it has grammar gaps of its own)
    ts_rejects: bool = False

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def python_parse(text: str) -> Judgement:
    """The running interpreter's parser."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<fuzz>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            line = getattr(exc, "lineno", "?")
            return Judgement("syntax", f"{type(exc).__name__}: "
                                       f"{getattr(exc, 'msg', exc)} (line {line})")
    return Judgement("ok")


class PythonServer:
    """One CPython version's parser in a subprocess (JSON lines in, JSON lines out)."""

    def __init__(self, executable: Path) -> None:
        self.executable = executable
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        return subprocess.Popen([str(self.executable), "-I", "-S", "-c", _SERVER],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, encoding="utf-8")

    def judge(self, text: str) -> Judgement | None:
        """The verdict, or None when the interpreter died on the text (it is restarted)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            assert self._proc.stdin is not None and self._proc.stdout is not None
            try:
                self._proc.stdin.write(json.dumps(text) + "\n")
                self._proc.stdin.flush()
                line = self._proc.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            if not line:
                self._proc = None
                return None
            out = json.loads(line)
            return Judgement("ok" if out["ok"] else "syntax", out["msg"])

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


class PythonOracles:
    """The parsers of several CPython versions; `judge` is the version whose verdicts count
    (see holefill.bench.fuzz for the policy), the others are compared with it."""

    def __init__(self, judge: str = "3.12") -> None:
        here = f"{sys.version_info.major}.{sys.version_info.minor}"
        self.servers = {v: PythonServer(p) for v, p in PYTHON_VERSIONS.items()
                        if v != here and p.exists()}
        self.versions = sorted({here, *self.servers})
        self.here = here
        self.judge_version = judge if judge in self.versions else here

    def judge_all(self, text: str) -> dict[str, Judgement | None]:
        out: dict[str, Judgement | None] = {}
        for v in self.versions:
            out[v] = python_parse(text) if v == self.here else self.servers[v].judge(text)
        return out

    def close(self) -> None:
        for s in self.servers.values():
            s.close()


# Errors that only the parser reports (the text cannot be read as C/C++ at all).
_SYNTAX = re.compile(
    r"expected|stray |missing terminating|unterminated|at end of input|"
    r"invalid preprocessing directive|without #if|unbalanced|empty character constant|"
    r"invalid suffix|exponent has no digits|invalid digit|too many decimal points|"
    r"macro names must|no macro name|missing '\)'|extra tokens|#endif|#else|#elif|"
    r"unexpected|invalid token|missing binary operator|attribute ignored|"
    r"'\S+' without a previous|badly punctuated|unknown escape|invalid character|"
    r"multi-character character constant|universal character|not valid in an identifier|"
    r"is not valid in|parameter name omitted|duplicate '|two or more data types|"
    r"empty declaration|ISO C\+\+ forbids declaration of .* with no type|"
    r"label at end of compound statement|a label can only be part of a statement|"
    r"invalid use of 'auto'|storage class specified|invalid declarator|"
    r"lambda-expression in|decomposition declaration|'case' label not within|"
    r"'default' label not within|break statement not within|continue statement not within|"
    r"'else' without"
)
# Errors about names and types: the parser may have read the text fine.
_SEMANTIC = re.compile(
    r"not declared|undeclared|does not name a type|has not been declared|unknown type name|"
    r"no matching|cannot convert|invalid conversion|incompatible|no member|is not a member|"
    r"redefinition|redeclar|conflicting|incomplete type|not a template|was not declared|"
    r"invalid operands|cannot be used as a function|no match for|lvalue|not a type|"
    r"request for member|initializer|too few|too many arguments|ambiguous|"
    r"non-static|return-statement|void value|cannot bind|deleted function|overload|"
    r"uninitialized|previous declaration|narrowing|does not have|specifier|"
    r"declared as|qualified-id|array|subscripted|pointer|type of|operand|expression list|"
    r"must be|only|cannot|invalid use|implicit declaration|called object"
)
_ERROR = re.compile(r"^[^:\n]*:(?:\d+:)*\s*(?:fatal )?error: (.*)$", re.MULTILINE)


def classify_errors(stderr: str) -> Judgement:
    """ok / syntax / semantic from a compiler's diagnostics (see the module docstring)."""
    errors = _ERROR.findall(stderr)
    if not errors:
        return Judgement("ok")
    syntax = [e for e in errors
              if e.startswith("expected") or (_SYNTAX.search(e) and not _SEMANTIC.search(e))]
    if len(syntax) == len(errors):
        return Judgement("syntax", errors[0][:200])
    first_semantic = next(e for e in errors if e not in syntax)
    return Judgement("semantic", first_semantic[:200])


_TS_LOCK = threading.Lock()


def ts_rejects(language: str, text: str) -> bool:
    """tree-sitter-c/-cpp finds an ERROR or MISSING node in `text`."""
    with _TS_LOCK:
        return bool(_ts_parser(language).parse(text.encode("utf-8")).root_node.has_error)


@functools.cache
def _ts_parser(language: str) -> Any:
    import tree_sitter

    if language == "cpp":
        import tree_sitter_cpp as grammar
    else:
        import tree_sitter_c as grammar  # type: ignore[no-redef]
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


# The standard headers HumanEval-X C++ includes (boost/any and openssl/md5 are not here).
CPP_PRELUDE = ("algorithm", "assert.h", "list", "map", "math.h", "stdio.h", "stdlib.h",
               "string", "vector", "set", "climits", "numeric", "stack", "queue")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "holefill" / "fuzz"


class CompilerOracle:
    """`gcc`/`g++ -fsyntax-only` on texts read from stdin, `workers` at a time."""

    def __init__(self, language: str, include_dirs: Sequence[Path] = (), workers: int = 2,
                 timeout_s: float = 30.0) -> None:
        self.language = language
        self.workers, self.timeout_s = workers, timeout_s
        includes = [f"-I{d}" for d in include_dirs]
        if language == "cpp":
            self.cmd = ["g++", "-std=gnu++17", "-w", "-fsyntax-only", *includes,
                        "-include", str(self._prelude()), "-x", "c++", "-"]
        else:
            self.cmd = ["gcc", "-std=c17", "-w", "-fsyntax-only", *includes, "-x", "c", "-"]

    @staticmethod
    def _prelude() -> Path:
        """The precompiled prelude header (built on first use, keyed by compiler and text)."""
        text = "".join(f"#include <{h}>\n" for h in CPP_PRELUDE)
        version = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout
        key = hashlib.sha256((version + text).encode()).hexdigest()[:16]
        header = CACHE / f"prelude-{key}.hpp"
        if not Path(str(header) + ".gch").exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            header.write_text(text, encoding="utf-8")
            tmp = Path(f"{header}.gch.{os.getpid()}")
            subprocess.run(["g++", "-std=gnu++17", "-w", "-x", "c++-header", str(header),
                            "-o", str(tmp)], check=True, capture_output=True)
            tmp.replace(Path(str(header) + ".gch"))
        return header

    def judge(self, text: str) -> Judgement:
        try:
            proc = subprocess.run(self.cmd, input=text, capture_output=True, text=True,
                                  timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            return Judgement("semantic", "the compiler timed out")
        if proc.returncode == 0:
            return Judgement("ok")
        out = classify_errors(proc.stderr)
        if out.ok:
            out = Judgement("semantic", proc.stderr[-200:])
        if out.kind == "syntax" and not ts_rejects(self.language, text):
            # C and C++ parse by the kinds of names: `f2 f2 = m;` is a declaration when f2
            # names a type, and the compiler's "expected ';'" is then about the name, which
            # no context-free grammar knows; tree-sitter, which parses without name lookup,
            # reads it fine. Such a text is unsure, not a syntax error.
            return Judgement("semantic", f"(tree-sitter parses it) {out.message}")
        if out.kind == "semantic" and ts_rejects(self.language, text):
            out = Judgement("semantic", out.message, ts_rejects=True)
        return out

    def judge_many(self, texts: Sequence[str]) -> list[Judgement]:
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(self.judge, texts))
