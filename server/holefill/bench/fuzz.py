"""Differential fuzzing of the checker against compilers (benchmarks/fuzz_differential.py).

Real files (a seeded sample of the running interpreter's standard library for Python,
HumanEval-X's C++ canonical solutions, the repository's own C sources and C corpus files),
each original accepted by the oracle, go through two probes:

(a) Mutation: a token-level edit (delete, duplicate, swap a token; insert a keyword or a
    bracket; indentation to tabs; a form feed; a non-ASCII identifier character; an f-string,
    a match statement, a designated initializer, ...; some keep the text valid, most do not)
    and the whole text is checked: `Checker.check([text])` must agree with the oracle.
(b) Cut: 1-3 random spans removed. `check(chunks, want_witness=True)`: a YES's witness filled
    in must be accepted by the oracle (else: an invalid witness); when the removed text keeps
    the reading of the text around it (`Checker.keeps_reading`) the answer must be YES (the
    original is a filling: else a false NO; cuts that re-read are counted apart). Then one
    hole gets a proposal (a run of 1-6 tokens from elsewhere in the file), the others their
    real text, and the closed text is checked whole: a YES the oracle refuses is a false YES,
    a NO it accepts a false NO (C/C++: the compiler is asked only on YES, it is slow).

Oracles (holefill.bench.oracles_syntax): Python's parser, C/C++'s `-fsyntax-only` whose
semantic errors (names, types) make a text "unsure", counted apart and never a disagreement.

Python version policy: our grammar targets Python 3.8-3.12 syntax, so a text counts as valid
iff CPython 3.12's parser accepts it (the standard library of 3.11 that we sample is 3.12
syntax too). 3.11 and 3.13 answer for every judged text as well; where either disagrees with
3.12 the text is listed under `version_disagreements`, never counted in the table. When 3.12
is missing the running interpreter judges.

Every probe is seeded: (language, seed, number of cuts) fixes the run (a time budget may end
it early). The first three examples of each class of failure are kept, minimized by lines
when that is cheap (whole texts only).
"""

from __future__ import annotations

import io
import random
import re
import sys
import time
import tokenize
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from holefill.bench.oracles_syntax import CompilerOracle, Judgement, PythonOracles
from holefill.check.checker import Checker, Verdict

LANGUAGES = ("python", "cpp", "c")
EXAMPLES = 3  # kept per (class, failure)
MINIMIZE_CHARS = 15_000  # longer texts are not minimized (each try checks the whole text)
# invalid_witness: a witness our own whole-text check accepts and the oracle refuses (a false
# YES in disguise); unverified_witness: one the checker's own re-check refused too (every
# rendering of the witness path failed: the YES itself may be right, the text handed out is not)
FAILURES = ("false_yes", "false_no", "invalid_witness", "unverified_witness", "unknown")

# --------------------------------------------------------------------------- corpora


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def corpus(language: str, seed: int, files: int | None = None,
           max_lines: int = 300) -> list[tuple[str, str]]:
    """(name, text) of the language's default corpus (files of at most `max_lines` lines), a
    fixed seeded sample for Python. C: the repository's own C sources and the C files of
    tests/data/corpus (gcc cannot judge those without their projects' headers: skipped)."""
    if language == "python":
        paths = stdlib_sources(max_lines)
        rng = random.Random(f"fuzz-corpus:{seed}")
        paths = sorted(rng.sample(paths, min(len(paths), files or 300)))
        import sysconfig

        root = Path(sysconfig.get_paths()["stdlib"])
        return [(str(p.relative_to(root)), p.read_text(encoding="utf-8")) for p in paths]
    if language == "cpp":
        from holefill.datasets import humaneval_cpp_programs

        return [(n, t) for n, t in humaneval_cpp_programs()
                if t.count("\n") <= max_lines][:files]
    root = repo_root()
    paths = sorted((root / "native").rglob("*.c")) + sorted(
        (root / "tests" / "data" / "corpus").rglob("*.c"))
    texts = [(str(p.relative_to(root)), p.read_text(encoding="utf-8")) for p in paths]
    return [(n, t) for n, t in texts if t.count("\n") <= max_lines][:files]


def stdlib_sources(max_lines: int) -> list[Path]:
    """The running interpreter's standard library .py files (not site-packages) of at most
    `max_lines` lines, sorted; validity is the oracle's to judge (a test file with a syntax
    error on purpose is skipped then)."""
    from holefill.datasets import stdlib_files

    return stdlib_files(max_lines, parses=False)


def c_include_dirs() -> list[Path]:
    root = repo_root()
    return [root / "native", *sorted({p.parent for p in
                                      (root / "tests" / "data" / "corpus").rglob("*.c")})]


# --------------------------------------------------------------------------- oracles


class Oracle:
    """One language's judge: `judge(text)` -> Judgement of the version that counts, with the
    other Python versions' disagreements recorded."""

    def __init__(self, language: str, workers: int = 2) -> None:
        self.language = language
        self.python = PythonOracles() if language == "python" else None
        self.compiler = (None if language == "python" else
                         CompilerOracle(language, c_include_dirs() if language == "c" else (),
                                        workers))
        self.cache: dict[str, Judgement] = {}
        self._inflight: dict[str, Future[Judgement]] = {}
        self._pool = ThreadPoolExecutor(workers) if self.compiler is not None else None
        self.disagreements: Counter[str] = Counter()
        self.disagreement_examples: list[dict[str, Any]] = []
        self.calls = 0

    def prefetch(self, text: str) -> None:
        """Start judging `text` in the background (compilers only: their processes run while
        the checker works on the next cut)."""
        if self._pool is None or text in self.cache or text in self._inflight:
            return
        self.calls += 1
        assert self.compiler is not None
        self._inflight[text] = self._pool.submit(self.compiler.judge, text)

    def judge(self, text: str) -> Judgement:
        hit = self.cache.get(text)
        if hit is not None:
            return hit
        future = self._inflight.pop(text, None)
        if future is not None:
            out = future.result()
        elif self.compiler is not None:
            self.calls += 1
            out = self.compiler.judge(text)
        else:
            assert self.python is not None
            self.calls += 1
            verdicts = self.python.judge_all(text)
            out = verdicts[self.python.judge_version] or Judgement("semantic", "the parser died")
            self._note_versions(text, verdicts, out)
        if len(self.cache) > 20_000:
            self.cache.clear()
        self.cache[text] = out
        return out

    def judge_many(self, texts: list[str]) -> None:
        """Judge the texts not judged yet (C/C++: `workers` compilers at once); the verdicts
        are then in the cache for `judge`."""
        for t in texts:
            self.prefetch(t)
        for t in texts:
            self.judge(t)

    def _note_versions(self, text: str, verdicts: dict[str, Judgement | None],
                       out: Judgement) -> None:
        for v, j in verdicts.items():
            if j is not None and j.ok != out.ok:
                self.disagreements[v] += 1
                if sum(e["version"] == v for e in self.disagreement_examples) < EXAMPLES:
                    self.disagreement_examples.append(
                        {"version": v, "accepts": j.ok, "message": j.message or out.message,
                         "text": text if len(text) < 4000 else None})

    def close(self) -> None:
        if self.python is not None:
            self.python.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


# --------------------------------------------------------------------------- tokens

_C_TOKEN = re.compile(r"""
    //[^\n]*|/\*.*?\*/                               # comments
  | (?:u8|u|U|L)?R"(?P<d>[^()\\\s]{0,16})\(.*?\)(?P=d)"  # raw strings
  | (?:u8|u|U|L)?"(?:\\.|[^"\\\n])*"                # strings
  | (?:u8|u|U|L)?'(?:\\.|[^'\\\n])*'                # characters
  | \.?\d(?:[eEpP][+-]|['\w.])*                      # numbers
  | [A-Za-z_]\w*                                     # words
  | ->\*?|\+\+|--|<<=?|>>=?|<=>|[<>=!]=|&&|\|\||::|\.\.\.|\.\*|[-+*/%&|^]=|\#\#
  | \S                                               # any other character
""", re.VERBOSE | re.DOTALL)

_PY_SKIP = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER, tokenize.COMMENT}


def tokens(language: str, text: str) -> list[tuple[int, int]]:
    """[start, end) of each token of a valid text (no comments or layout tokens for Python)."""
    if language != "python":
        return [m.span() for m in _C_TOKEN.finditer(text)
                if not m.group().startswith(("//", "/*"))]
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _PY_SKIP:
                continue
            (r0, c0), (r1, c1) = tok.start, tok.end
            out.append((starts[r0 - 1] + c0, starts[r1 - 1] + c1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def statement_starts(language: str, text: str) -> list[int]:
    """Offsets of the starts of lines where a statement begins: Python's logical lines (by
    tokenize), C/C++ lines after a line ending in `;`, `{` or `}`."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    if language != "python":
        return [a for a, b in zip(starts, starts[1:], strict=False) if text[a:b].strip()
                and (a == 0 or text[:a].rstrip().endswith((";", "{", "}")))]
    out, fresh = [], True
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                fresh = True
            elif tok.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER) and fresh:
                out.append(starts[tok.start[0] - 1])
                fresh = False
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


# --------------------------------------------------------------------------- mutations

Mutator = Callable[[str, list[tuple[int, int]], random.Random], str | None]

PY_KEYWORDS = ["if", "else", "elif", "for", "while", "def", "class", "return", "lambda",
               "yield", "await", "async", "not", "in", "is", "and", "or", "pass", "with",
               "global", "nonlocal", "try", "except", "finally", "raise", "del", "import",
               "from", "as", "assert", "match", "case", "type", "_", "print"]
C_KEYWORDS = ["if", "else", "for", "while", "do", "return", "int", "const", "static",
              "struct", "union", "enum", "typedef", "switch", "case", "default", "sizeof",
              "goto", "break", "continue", "void", "unsigned", "volatile", "register",
              "inline", "extern", "restrict", "_Bool", "_Alignof", "_Generic", "__attribute__"]
CPP_KEYWORDS = C_KEYWORDS + ["template", "typename", "class", "namespace", "using",
                             "auto", "decltype", "constexpr", "noexcept", "operator", "new",
                             "delete", "this", "public", "private", "try", "catch", "throw",
                             "nullptr", "static_cast", "virtual", "override", "final",
                             "co_await", "requires", "concept", "export", "module"]
BRACKETS = ["(", ")", "[", "]", "{", "}"]
NON_ASCII = ["é", "µ", "ª", "Ω", "ℕ", "ﬁ", "·", "٣", "ǅ", "€", "—", "\u00a0", "\u200b",
             "\u0301", "𝔘", "中", "ー", "ⅷ", "℘", "℮"]

PY_EXPRESSIONS = [
    'f"{x!r:>{w}}"', "f'{f\"{x}\"}'", 'f"{x=}"', 'f"{x:{y}.{z}f}"', 'f"{"a"}"',
    "f'{x!z}'", 'f"{}"', 'f"{x:}}"', 'rf"\\{x}"', 'f"{x for x in y}"', "f'''{\n1}'''",
    "(y := 3)", "lambda *a, **k: a", "[*a, *b]", "{**a, 'b': 1}", "a if b else c",
    "not not x", "x[1:2, ::3]", "await x", "(yield)", "b'\\xff'", "0x_1", "1_000.0j",
    "1__0", "0777", "...", "x @ y", "-~+x", "(*a,)", "print(*a, sep='')", "a < b < c",
]
PY_STATEMENTS = [
    "match x:\n    case 1:\n        pass\n    case [a, *_] if a:\n        pass\n"
    "    case {'k': v, **r}:\n        pass\n    case Point(x=0) | None:\n        pass\n",
    "match (x, y):\n    case (1, 2) as z:\n        pass\n",
    "match x:\n    case 1:\n    pass\n", "match x:\ncase 1: pass\n",
    "match = 1\n", "case = match(x)\n", "match[x] = 1\n", "print(match, case, type)\n",
    "type X = int\n", "type = 3\n", "_ = match\n",
    "def f[T](x: T) -> T: return x\n", "class C[T]: pass\n",
    "async def f():\n    async with a as b, c:\n        await d\n",
    "with (open(a) as b, open(c) as d):\n    pass\n",
    "try:\n    pass\nexcept* E:\n    pass\n", "try:\n    pass\nfinally:\n    pass\n",
    "@a.b[c](d)\ndef f(): pass\n", "if x:\n    pass\nelif y:\n    pass\nelse:\n    pass\n",
    "x = 1; y = 2;\n", "del (a), [b]\n", "global x, y\n", "print(x)\\\n    .y\n",
    "for x, in y: pass\n", "def f(a, /, b, *, c): pass\n", "lambda: (yield)\n",
    "nonlocal x\n", "return\n", "x: int\n", "(x): int = 1\n", "assert x, (y)\n",
]
C_EXPRESSIONS = [
    "((struct S){.a = 1, .b[2] = 3})", "(int[]){[0] = 1, [2 ... 3] = 4}", "sizeof(int[3])",
    "(a ? : b)", "_Generic(x, int: 1, default: 2)", "a<:0:>", "x ? y : z", "'\\x41'",
    "u8\"s\" \"t\"", "0x1p-3", "1e+5f", "076", "L'a'", "(int)+x", "*&x", "a->b.c[1]",
    "(a, b)", "!~x", "x++ + ++y", "\"a\\\nb\"", "sizeof x", "({ int q = 1; q; })",
]
CPP_EXPRESSIONS = [
    "[&](int v) { return v; }(1)", "std::vector<std::vector<int>>{}", "R\"x(a)\")x\"",
    "1'000'000", "0b1010", "u8\"s\"", "12_km", "static_cast<int>(x)", "new int[3]{1, 2}",
    "a <=> b", "x.template f<int>()", "typename T::type()", "[]{}", "S{.a = 1}",
    "decltype(x)(1)", "sizeof...(T)", "throw 1", "x->*p", "::f()", "operator+(a, b)",
    "a<b>(c)", "(a < b) > c", "{1, 2}", "noexcept(x)", "alignof(int)",
]
C_STATEMENTS = [
    "#if 0\nnot code at all '\n#endif\n", "#define M(a, ...) a __VA_ARGS__\n",
    "struct P { int x, y; } p = { .y = 2, .x = 1 };\n", "int a[4] = { [1] = 1, [3] = 2 };\n",
    "static_assert(1, \"x\");\n", "_Static_assert(1, \"x\");\n", "label: ;\n",
    "int (*fp)(int, ...);\n", "typedef int T; T t;\n", "__attribute__((unused)) int u;\n",
    "enum { A = 1, B, };\n", "do ; while (0);\n", "switch (x) { case 1 ... 3: break; }\n",
    "??=define X\n", "%:define Y 1\n", "<% %>\n",
]
CPP_STATEMENTS = C_STATEMENTS + [
    "[[nodiscard]] int g();\n", "template <typename T> T id(T v) { return v; }\n",
    "namespace a::b { }\n", "using V = std::vector<int>;\n", "auto [a, b] = p;\n",
    "if constexpr (true) {}\n", "for (auto& [k, v] : m) {}\n", "struct S { int a; } s{.a = 1};\n",
    "try { } catch (...) { }\n", "enum class E : int { A, B };\n",
]


def _at_token(text: str, toks: list[tuple[int, int]], rng: random.Random) -> int:
    return toks[rng.randrange(len(toks))][0] if toks else rng.randrange(len(text) + 1)


def mut_delete(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    a, b = toks[rng.randrange(len(toks))]
    return text[:a] + text[b:]


def mut_duplicate(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    a, b = toks[rng.randrange(len(toks))]
    return text[:b] + rng.choice(["", " "]) + text[a:b] + text[b:]


def mut_swap(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    if len(toks) < 2:
        return None
    i = rng.randrange(len(toks) - 1)
    (a, b), (c, d) = toks[i], toks[i + 1]
    return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]


def _insert_word(words: list[str]) -> Mutator:
    def mutate(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
        at = _at_token(text, toks, rng)
        return text[:at] + rng.choice(words) + " " + text[at:]
    return mutate


def mut_bracket(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    at = _at_token(text, toks, rng)
    return text[:at] + rng.choice(BRACKETS) + text[at:]


def mut_non_ascii(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    """A non-ASCII character in a word: in one occurrence, or in every occurrence of it."""
    words = [(a, b) for a, b in toks if re.fullmatch(r"[A-Za-z_]\w*", text[a:b])]
    if not words:
        return None
    a, b = rng.choice(words)
    word = text[a:b]
    k = rng.randint(0, len(word))
    new = word[:k] + rng.choice(NON_ASCII) + word[k:]
    if rng.random() < 0.5:
        return re.sub(rf"(?<![\w]){re.escape(word)}(?![\w])", new, text)
    return text[:a] + new + text[b:]


def mut_tabs(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    """Indentation to tabs: every line's (consistent), or one line's, or a mix in one line."""
    lines = text.splitlines(keepends=True)
    indented = [i for i, line in enumerate(lines) if line.startswith("    ")]
    if not indented:
        return None
    mode = rng.randrange(3)
    if mode == 0:
        lines = [re.sub(r"^(?:    )+", lambda m: "\t" * (len(m.group()) // 4), line)
                 for line in lines]
    else:
        i = rng.choice(indented)
        lead = len(lines[i]) - len(lines[i].lstrip(" "))
        tabbed = "\t" * (lead // 8) + " " * (lead % 8) if mode == 1 else \
            " " * (lead % 4) + "\t" * (lead // 4)
        lines[i] = tabbed + lines[i].lstrip(" ")
    return "".join(lines)


def mut_form_feed(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    starts = [m.start() for m in re.finditer(r"^", text, re.MULTILINE)]
    at = rng.choice(starts) if rng.random() < 0.6 else _at_token(text, toks, rng)
    if rng.random() < 0.5:  # in the indentation, not only at its start
        m = re.compile(r"[ \t]*").match(text, at)
        at = rng.randint(at, m.end() if m else at)
    return text[:at] + "\f" + text[at:]


def _replace_operand(snippets: list[str]) -> Mutator:
    """A word or number replaced by an expression (parenthesized half of the time)."""
    def mutate(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
        operands = [(a, b) for a, b in toks if re.fullmatch(r"\w+", text[a:b])]
        if not operands:
            return None
        a, b = rng.choice(operands)
        snippet = rng.choice(snippets)
        if rng.random() < 0.5:
            snippet = f"({snippet})"
        return text[:a] + snippet + text[b:]
    return mutate


def _insert_statement(language: str, snippets: list[str]) -> Mutator:
    """A statement (several lines, indented like the line it goes before) at a line start."""
    def mutate(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
        starts = statement_starts(language, text)
        if not starts:
            return None
        at = rng.choice(starts)
        line = text[at:text.find("\n", at) if "\n" in text[at:] else len(text)]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        body = "".join(indent + x for x in rng.choice(snippets).splitlines(keepends=True))
        return text[:at] + body + text[at:]
    return mutate


def mut_splice(text: str, toks: list[tuple[int, int]], rng: random.Random) -> str | None:
    """C/C++: a backslash-newline inside a token or between two."""
    a, b = toks[rng.randrange(len(toks))]
    at = rng.randint(a, b)
    return text[:at] + "\\\n" + text[at:]


def mutators(language: str) -> dict[str, Mutator]:
    common: dict[str, Mutator] = {
        "delete": mut_delete, "duplicate": mut_duplicate, "swap": mut_swap,
        "bracket": mut_bracket, "non-ascii": mut_non_ascii, "form-feed": mut_form_feed,
    }
    if language == "python":
        return {**common, "keyword": _insert_word(PY_KEYWORDS), "tabs": mut_tabs,
                "expression": _replace_operand(PY_EXPRESSIONS),
                "statement": _insert_statement(language, PY_STATEMENTS)}
    cpp = language == "cpp"
    return {**common, "keyword": _insert_word(CPP_KEYWORDS if cpp else C_KEYWORDS),
            "splice": mut_splice,
            "expression": _replace_operand(CPP_EXPRESSIONS if cpp else C_EXPRESSIONS),
            "statement": _insert_statement(language, CPP_STATEMENTS if cpp else C_STATEMENTS)}


# --------------------------------------------------------------------------- the run


@dataclass
class Row:
    cases: int = 0
    false_yes: int = 0
    false_no: int = 0
    invalid_witness: int = 0
    unverified_witness: int = 0
    unknown: int = 0
    unsure: int = 0  # the oracle could not decide (a semantic error of a compiler)
    # of those, YES (or a witness) where tree-sitter finds a syntax error (not counted as a
    # failure: tree-sitter has grammar gaps of its own; examples kept as "ts_rejects")
    ts_rejects: int = 0
    reread: int = 0  # cuts whose real middle re-reads the fixed text (no false NO there)


@dataclass
class Report:
    language: str
    seed: int
    rows: dict[str, Row] = field(default_factory=dict)
    examples: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    files: int = 0
    files_skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cuts: int = 0
    oracle_calls: int = 0
    version_disagreements: dict[str, int] = field(default_factory=dict)
    version_examples: list[dict[str, Any]] = field(default_factory=list)

    def row(self, cls: str) -> Row:
        return self.rows.setdefault(cls, Row())

    def failure(self, cls: str, kind: str, example: dict[str, Any]) -> bool:
        """Count a failure; True when its example is kept (the first EXAMPLES per class)."""
        row = self.row(cls)
        setattr(row, kind, getattr(row, kind) + 1)
        kept = self.examples.setdefault(cls, {}).setdefault(kind, [])
        if len(kept) < EXAMPLES:
            kept.append(example)
            return True
        return False

    def failures(self, kinds: tuple[str, ...] = FAILURES[:4]) -> dict[str, int]:
        """class -> count of the given failure kinds (all but UNKNOWN by default)."""
        out = {cls: sum(getattr(r, k) for k in kinds) for cls, r in self.rows.items()}
        return {cls: n for cls, n in out.items() if n}

    def failure_kinds(self, kinds: tuple[str, ...] = FAILURES[:4]) -> dict[tuple[str, str], int]:
        """(class, kind) -> count, for the kinds given that occurred."""
        return {(cls, k): getattr(r, k) for cls, r in self.rows.items() for k in kinds
                if getattr(r, k)}

    def table(self) -> str:
        head = (f"{'class':<22}{'cases':>7}{'falseYES':>9}{'falseNO':>8}{'badWit':>7}"
                f"{'unverW':>7}"
                f"{'unknown':>8}{'unsure':>7}{'tsNO':>6}{'reread':>7}")
        lines = [f"{self.language}: {self.cuts} cuts over {self.files} files "
                 f"({len(self.files_skipped)} skipped), {self.seconds:.0f} s "
                 f"({self.cuts / max(self.seconds, 1e-9):.1f} cuts/s), "
                 f"{self.oracle_calls} oracle calls", head]
        total = Row()
        for cls in sorted(self.rows):
            r = self.rows[cls]
            lines.append(_row_line(cls, r))
            for k in vars(total):
                setattr(total, k, getattr(total, k) + getattr(r, k))
        lines.append(_row_line("total", total))
        if self.version_disagreements:
            lines.append("python versions disagreeing with 3.12 (not counted above): "
                         + ", ".join(f"{v}: {n}" for v, n in
                                     sorted(self.version_disagreements.items())))
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {"language": self.language, "seed": self.seed, "cuts": self.cuts,
                "files": self.files, "files_skipped": self.files_skipped,
                "seconds": round(self.seconds, 1), "oracle_calls": self.oracle_calls,
                "rows": {c: vars(r) for c, r in sorted(self.rows.items())},
                "examples": self.examples,
                "version_disagreements": self.version_disagreements,
                "version_examples": self.version_examples}


def _row_line(cls: str, r: Row) -> str:
    return (f"{cls:<22}{r.cases:>7}{r.false_yes:>9}{r.false_no:>8}{r.invalid_witness:>7}"
            f"{r.unverified_witness:>7}"
            f"{r.unknown:>8}{r.unsure:>7}{r.ts_rejects:>6}{r.reread:>7}")


@dataclass
class Subject:
    """One corpus file the oracle and the checker may both be asked about."""

    name: str
    text: str
    toks: list[tuple[int, int]]


class Fuzzer:
    """The probes of one language; `run` fills a Report. The oracle's verdicts are asked for
    in batches (`batch` cuts at a time), so that `workers` compilers run at once."""

    def __init__(self, language: str, *, seed: int = 0, workers: int = 2,
                 max_steps: int = 2_000_000, minimize_calls: int = 120, batch: int = 16,
                 progress: Callable[[str], None] | None = None) -> None:
        self.language, self.seed, self.batch = language, seed, batch
        self.checker = Checker.for_language(language)
        self.oracle = Oracle(language, workers)
        self.mutators = mutators(language)
        self.max_steps, self.minimize_calls = max_steps, minimize_calls
        self.progress = progress or (lambda s: None)
        self.report = Report(language, seed)
        self.pending: list[tuple[str, Callable[[Judgement], None]]] = []

    def whole(self, text: str) -> Verdict:
        return self.checker.check([text], max_steps=self.max_steps).verdict

    def later(self, text: str, then: Callable[[Judgement], None]) -> None:
        self.oracle.prefetch(text)
        self.pending.append((text, then))

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for text, then in pending:
            then(self.oracle.judge(text))

    def subjects(self, texts: list[tuple[str, str]]) -> list[Subject]:
        """The files whose original the oracle accepts (the others are listed as skipped)."""
        self.oracle.judge_many([t for _, t in texts])
        out = []
        for name, text in texts:
            judged = self.oracle.judge(text)
            toks = tokens(self.language, text)
            if not judged.ok or len(toks) < 4:
                why = f"{judged.kind} {judged.message}" if not judged.ok else "too short"
                self.report.files_skipped.append(f"{name}: {why}")
                continue
            out.append(Subject(name, text, toks))
            self.report.row("file").cases += 1
            ours = self.whole(text)
            if ours is not Verdict.YES:
                self._compare("file", name, text, ours, judged)
        self.report.files = len(out)
        return out

    def run(self, texts: list[tuple[str, str]], cuts: int,
            time_budget: float | None = None) -> Report:
        t0 = time.perf_counter()
        subjects = self.subjects(texts)
        if not subjects:
            raise ValueError(f"no {self.language} file is accepted by the oracle")
        rng = random.Random(f"fuzz:{self.language}:{self.seed}")
        last = t0
        for i in range(cuts):
            if time_budget is not None and time.perf_counter() - t0 > time_budget:
                break
            subject = rng.choice(subjects)
            self.mutation(subject, random.Random(rng.random()))
            self.cut(subject, random.Random(rng.random()))
            self.report.cuts = i + 1
            if len(self.pending) >= self.batch:
                self.flush()
            if time.perf_counter() - last > 10:
                last = time.perf_counter()
                self.progress(f"{self.language}: {i + 1}/{cuts} cuts, "
                              f"{last - t0:.0f} s, failures {self.report.failures()}")
        self.flush()
        self.report.seconds = time.perf_counter() - t0
        self.report.oracle_calls = self.oracle.calls
        self.report.version_disagreements = dict(self.oracle.disagreements)
        self.report.version_examples = self.oracle.disagreement_examples
        return self.report

    # (a) mutation
    def mutation(self, s: Subject, rng: random.Random) -> None:
        name = rng.choice(sorted(self.mutators))
        text = self.mutators[name](s.text, s.toks, rng)
        if text is None or text == s.text:
            return
        self._whole_text(f"mutate:{name}", s.name, text, ask_on_no=True, original=s.text)

    def _whole_text(self, cls: str, name: str, text: str, ask_on_no: bool,
                    original: str | None = None) -> None:
        """Our whole-text verdict against the oracle's (one case of class `cls`); with
        `ask_on_no` off the oracle is asked only when we say YES."""
        self.report.row(cls).cases += 1
        if self.language != "python" and original is not None and in_define(original, text):
            # a macro's body is any tokens: whether an edit there compiles is decided where
            # the macro is used, by the preprocessor, which no grammar of the text follows
            self.report.row(cls).unsure += 1
            return
        ours = self.whole(text)
        if ours is Verdict.UNKNOWN:
            self.report.failure(cls, "unknown", {"file": name, "text": short(text)})
        elif ours is Verdict.YES or ask_on_no:
            self.later(text, lambda j: self._compare(cls, name, text, ours, j, original))

    def _compare(self, cls: str, name: str, text: str, ours: Verdict,
                 judged: Judgement, original: str | None = None) -> None:
        row = self.report.row(cls)
        if judged.kind == "semantic":
            row.unsure += 1
            if judged.ts_rejects and ours is Verdict.YES:
                row.ts_rejects += 1
                self.report.examples.setdefault(cls, {}).setdefault("ts_rejects", [])
                kept = self.report.examples[cls]["ts_rejects"]
                if len(kept) < EXAMPLES:
                    kept.append({"file": name, "compiler": judged.message,
                                 "text": short(text)})
            return
        if (ours is Verdict.YES) == judged.ok:
            return
        kind = "false_yes" if ours is Verdict.YES else "false_no"
        example: dict[str, Any] = {"file": name, "oracle": judged.message}
        if original is not None:
            example["diff"] = diff(original, text)
        if self.report.failure(cls, kind, example):
            small = self.minimize(text, ours, judged.ok)
            if small != text or len(text) <= MINIMIZE_CHARS:
                example["minimized"] = small

    # (b) cut
    def cut(self, s: Subject, rng: random.Random) -> None:
        from holefill.datasets import cut as make_cut
        from holefill.datasets import random_spans

        holes = rng.randint(1, 3)
        spans = random_spans(s.text, holes, rng, 1, 80)
        if spans is None:
            return
        c = make_cut(s.name, s.text, spans)
        cls = f"cut:{holes}h"
        row = self.report.row(cls)
        row.cases += 1
        keeps = self.checker.keeps_place(c.chunks, c.middles)
        res = self.checker.check(c.chunks, want_witness=True, max_steps=self.max_steps)
        example = {"file": s.name, "spans": spans, "middles": list(c.middles),
                   "excerpt": excerpt(s.text, spans)}
        if res.verdict is Verdict.UNKNOWN:
            self.report.failure(cls, "unknown", {**example, "reason": res.reason})
        elif res.verdict is Verdict.NO:
            if keeps:
                self.report.failure(cls, "false_no", example)
            else:
                row.reread += 1
        elif res.fills is not None and self.language != "python" and any(
                spans_in_define(s.text, a, b) for a, b in spans):
            row.unsure += 1  # a witness in a macro's body compiles or not where it is used
        elif res.fills is not None:
            fills = res.fills
            verified = bool(res.stats.get("witness_verified"))
            self.later(c.filled(fills), lambda j: self._witness(cls, example, fills, verified,
                                                                 c.filled(fills), j))
        self.proposal(s, c.chunks, list(c.middles), rng)

    def _witness(self, cls: str, example: dict[str, Any], fills: list[str], verified: bool,
                 text: str, judged: Judgement) -> None:
        row = self.report.row(cls)
        if judged.kind == "semantic":
            row.unsure += 1
            if judged.ts_rejects:
                row.ts_rejects += 1
                kept = self.report.examples.setdefault(cls, {}).setdefault("ts_rejects", [])
                if len(kept) < EXAMPLES:
                    kept.append({**example, "fills": fills, "compiler": judged.message})
        elif not judged.ok:
            self.report.failure(cls, "invalid_witness" if verified else "unverified_witness",
                                {**example, "fills": fills, "oracle": judged.message})

    def proposal(self, s: Subject, chunks: tuple[str, ...], middles: list[str],
                 rng: random.Random) -> None:
        """One hole filled with 1-6 tokens from elsewhere, the others with their real text;
        the compilers are asked only on YES (they are slow), Python's parsers always."""
        i = rng.randrange(len(middles))
        j = rng.randrange(len(s.toks))
        k = min(len(s.toks) - 1, j + rng.randint(0, 5))
        fills = list(middles)
        fills[i] = s.text[s.toks[j][0]:s.toks[k][1]]
        text = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
        self._whole_text(f"propose:{len(middles)}h", s.name, text,
                         ask_on_no=self.language == "python", original=s.text)

    # minimization of whole texts
    def minimize(self, text: str, ours: Verdict, oracle_ok: bool) -> str:
        """`text` with runs of lines removed while our verdict and the oracle's still
        disagree the same way, within `minimize_calls` checks; texts of more than
        MINIMIZE_CHARS characters are left as they are (the example's diff locates them)."""
        if len(text) > MINIMIZE_CHARS:
            return text
        calls = [0]

        def still(t: str) -> bool:
            if calls[0] >= self.minimize_calls or t == text:
                return False
            calls[0] += 1
            j = self.oracle.judge(t)
            return j.kind != "semantic" and j.ok == oracle_ok and self.whole(t) is ours

        return ddmin_lines(text, still)


def ddmin_lines(text: str, still: Callable[[str], bool]) -> str:
    """Greedy delta debugging over lines: drop runs of lines, halving the run length."""
    lines = text.splitlines(keepends=True)
    n = max(1, len(lines) // 2)
    while n >= 1:
        i = 0
        changed = False
        while i < len(lines):
            trial = lines[:i] + lines[i + n:]
            if trial and still("".join(trial)):
                lines = trial
                changed = True
            else:
                i += n
        if not changed:
            n //= 2
    return "".join(lines)


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define\b(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)


def in_define(before: str, after: str) -> bool:
    """Whether the first difference between the texts lies in a `#define` of `before`."""
    at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
              min(len(before), len(after)))
    return spans_in_define(before, at, at)


def spans_in_define(text: str, a: int, b: int) -> bool:
    """Whether [a, b] meets a `#define` line (with its continuation lines) of `text`."""
    return any(m.start() <= b and a <= m.end() for m in _DEFINE.finditer(text))


def diff(before: str, after: str) -> str:
    """The changed lines, with one line of context (a unified diff without its header)."""
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True), n=1)
    return "".join(list(lines)[2:])[:2000]


def short(text: str, limit: int = 6000) -> str | None:
    """The text itself in an example when it is not too long to read."""
    return text if len(text) <= limit else None


def excerpt(text: str, spans: list[tuple[int, int]], context: int = 2) -> str:
    """The lines around the holes, each hole shown as <|hole|>."""
    marked = text
    for a, b in reversed(spans):
        marked = marked[:a] + "<|hole|>" + marked[b:]
    lines = marked.split("\n")
    hit = {i for i, line in enumerate(lines) if "<|hole|>" in line}
    keep = sorted({j for i in hit for j in range(i - context, i + context + 1)
                   if 0 <= j < len(lines)})
    out, prev = [], None
    for j in keep:
        if prev is not None and j != prev + 1:
            out.append("...")
        out.append(f"{j + 1}: {lines[j]}")
        prev = j
    return "\n".join(out)


def run_language(language: str, cuts: int, seed: int, *, corpus_seed: int | None = None,
                 files: int | None = None,
                 max_lines: int = 300, time_budget: float | None = None, workers: int = 2,
                 minimize_calls: int = 120,
                 progress: Callable[[str], None] | None = None) -> Report:
    fuzzer = Fuzzer(language, seed=seed, workers=workers, minimize_calls=minimize_calls,
                    progress=progress)
    try:
        texts = corpus(language, seed if corpus_seed is None else corpus_seed, files, max_lines)
        return fuzzer.run(texts, cuts, time_budget)
    finally:
        fuzzer.oracle.close()


def merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The `Report.as_json()` of runs of one language with different seeds, as one: counts
    summed, the first EXAMPLES examples of each failure kept (in seed order), the time the
    longest run took."""
    out: dict[str, Any] = {"language": parts[0]["language"],
                           "seeds": [p["seed"] for p in parts],
                           "cuts": sum(p["cuts"] for p in parts), "files": parts[0]["files"],
                           "files_skipped": parts[0]["files_skipped"],
                           "seconds": max(p["seconds"] for p in parts), "rows": {},
                           "oracle_calls": sum(p["oracle_calls"] for p in parts),
                           "examples": {}, "version_disagreements": Counter(),
                           "version_examples": []}
    for p in parts:
        for cls, row in p["rows"].items():
            if cls == "file" and cls in out["rows"]:
                continue  # the same originals, judged by every run
            into = out["rows"].setdefault(cls, dict.fromkeys(row, 0))
            for k, v in row.items():
                into[k] += v
        for cls, kinds in p["examples"].items():
            for kind, items in kinds.items():
                kept = out["examples"].setdefault(cls, {}).setdefault(kind, [])
                kept.extend(items[: EXAMPLES - len(kept)])
        out["version_disagreements"].update(p["version_disagreements"])
        out["version_examples"].extend(p["version_examples"][:EXAMPLES])
    out["version_disagreements"] = dict(out["version_disagreements"])
    return out


def table_of(report: dict[str, Any]) -> str:
    """The table of a (merged) report's JSON, as `Report.table` prints it."""
    rep = Report(report["language"], 0, files=report["files"],
                 files_skipped=report["files_skipped"], seconds=report["seconds"],
                 cuts=report["cuts"], oracle_calls=report["oracle_calls"],
                 version_disagreements=report["version_disagreements"])
    rep.rows = {cls: Row(**row) for cls, row in report["rows"].items()}
    return rep.table()


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
