"""What others pay per token, measured here side by side with our checker.

- Re-parsing the whole file per token: `ast.parse` and a full (not incremental) tree-sitter
  parse. Both answer an easier question ("is the file valid now?") and say nothing about
  whether a half-written file can still become valid; they are the naive cost floor.
- llguidance (PyPI, runs offline): the per-token mask for left-to-right generation without a
  suffix, on a Python-ish Lark grammar derived from ours. llguidance has no INDENT/DEDENT
  (DESIGN §10), so the layout is erased: line breaks are whitespace, compound statements are
  flat "header:" clauses, and blocks are not nested. It accepts a superset of Python; it is
  the cost, not the answer, that is compared. The tokenizer is the model's `tokenizer.json`.
"""

from __future__ import annotations

import ast
import gc
import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .oracles import ts_parse

T = TypeVar("T")

# Rules of python.lark that carry layout (NEWLINE, INDENT, DEDENT) or nest blocks, and the
# layout terminals: replaced by the flat rules below.
_DROPPED = frozenset({
    "start", "stmt", "simple_stmts", "block", "compound_stmt", "else_block", "finally_block",
    "except_block", "except_star_block", "for_stmt", "with_stmt", "decorator", "funcdef",
    "classdef", "case_block", "NL", "UNCLOSED_TRIPLE",
})
_FLAT_RULES = r'''
// ---- layout-free statements (holefill bench): llguidance has no INDENT/DEDENT
// llguidance allows no ignored text before the first lexeme, hence LEAD
start: [LEAD] stmt*
?stmt: simple_stmts | clause | "@" named_expr
simple_stmts: simple_stmt (";" simple_stmt)* [";"]
clause: clause_head ":" [simple_stmts]
?clause_head: ("if" | "elif" | "while") named_expr | "else" | "try" | "finally"
    | "except" [expr ["as" NAME]] | "except" "*" expr ["as" NAME]
    | ["async"] "for" star_targets "in" star_expressions
    | ["async"] "with" ("(" with_item ("," with_item)* [","] ")" | with_item ("," with_item)*)
    | ["async"] "def" NAME [type_params] "(" [parameters] ")" ["->" expr]
    | "class" NAME [type_params] ["(" [arguments] ")"]
    | "match" (tuple_items | named_expr)
    | "case" (pattern | open_sequence_pattern) ["if" named_expr]
NLWS: /(\r\n|\r|\n)[ \t\f]*/
SKIP: WS | COMMENT | LINE_CONT | NLWS
LEAD: (WS | COMMENT | LINE_CONT | NLWS)+
%ignore SKIP
'''
_RULE_HEAD = re.compile(r"\??([A-Za-z_][A-Za-z_0-9]*)\s*:")


def llguidance_python_grammar(source: str) -> str:
    """Our python.lark without layout, in the Lark dialect llguidance reads."""
    out: list[str] = []
    skipping = False
    for line in source.splitlines():
        if line.startswith("%"):  # %ignore / %layout / %declare / %soft: replaced below
            continue
        head = _RULE_HEAD.match(line)
        if head:
            skipping = head.group(1) in _DROPPED
        elif line and not line[0].isspace() and not line.startswith("//"):
            skipping = False
        if not skipping:
            out.append(line)
    # llguidance's lexer does not split `..` into two `.` once `...` is possible
    # (`from .. import x`), so `..` is spelled out
    text = "\n".join(out).replace('("." | "...")', '("." | ".." | "...")')
    return text + _FLAT_RULES


def timed_ms(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """fn(*args) and its wall time in ms, with the garbage collector paused as `timeit` does:
    a collection pass scales with everything the process holds (the model, the records), not
    with the work being timed."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn(*args)
        return out, (time.perf_counter() - t0) * 1e3
    finally:
        if enabled:
            gc.enable()


def parse_times(text: str, repeat: int, language: str = "python") -> dict[str, list[float]]:
    """ms per full re-parse of `text` with tree-sitter, and for Python with `ast.parse`."""
    out: dict[str, list[float]] = {"ast.parse": []} if language == "python" else {}
    out["tree-sitter"] = []
    with warnings.catch_warnings():  # invalid escapes in old code warn; not what we time
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        for _ in range(repeat):
            if language == "python":
                out["ast.parse"].append(timed_ms(ast.parse, text)[1])
            out["tree-sitter"].append(timed_ms(ts_parse, language, text)[1])
    return out


@dataclass
class Guidance:
    """llguidance with our Python-ish grammar, or why it could not run."""

    tokenizer: Any = None
    grammar: str = ""
    error: str = ""
    version: str = ""
    vocab: int = 0

    @property
    def ok(self) -> bool:
        return not self.error


def load_guidance(tokenizer_json: Path | None) -> Guidance:
    from holefill.languages import get_language

    python_lark = get_language("python").grammar_path
    try:
        import llguidance
    except ImportError as exc:
        return Guidance(error=f"llguidance is not installed ({exc}); pip install llguidance")
    if tokenizer_json is None or not tokenizer_json.is_file():
        return Guidance(error=f"the model has no tokenizer.json ({tokenizer_json})")
    try:
        tok = llguidance.LLTokenizer(str(tokenizer_json))
        grammar = llguidance.LLMatcher.grammar_from_lark(
            llguidance_python_grammar(python_lark.read_text(encoding="utf-8")))
        problem = llguidance.LLMatcher.validate_grammar(grammar, tok)
    except Exception as exc:  # any failure of a third-party library: report it, do not fake
        return Guidance(error=f"llguidance failed to load: {type(exc).__name__}: {exc}")
    if problem:
        return Guidance(error=f"llguidance rejected the grammar: {problem[:300]}")
    return Guidance(tok, grammar, version=llguidance.__version__, vocab=tok.vocab_size)


@dataclass
class MaskRun:
    prefix_tokens: int = 0
    prefix_ms: float = 0.0  # consuming the prefix (once per request, like a prefill)
    mask_ms: list[float] = field(default_factory=list)  # one full-vocabulary mask per token
    error: str = ""


def mask_times(g: Guidance, prefix: str, middle: str, max_tokens: int | None) -> MaskRun:
    """Consume `prefix`, then per token of `middle`: time the mask, consume the token."""
    import llguidance

    run = MaskRun()
    matcher = llguidance.LLMatcher(g.tokenizer, g.grammar, log_level=0)
    ids = g.tokenizer.tokenize_str(prefix) if prefix else []
    t0 = time.perf_counter()
    if ids and not matcher.consume_tokens(ids):
        run.error = "prefix: " + matcher.get_error()[:200]
        return run
    run.prefix_tokens, run.prefix_ms = len(ids), (time.perf_counter() - t0) * 1e3
    todo = g.tokenizer.tokenize_str(middle)[:max_tokens]
    for token in todo:
        run.mask_ms.append(timed_ms(matcher.compute_bitmask)[1])
        if not matcher.consume_token(token):
            run.error = "middle: " + matcher.get_error()[:200]
            break
    return run


def guidance_on_files(g: Guidance, files: Sequence[Path], max_tokens: int) -> list[MaskRun]:
    """Left-to-right over whole files from their start: many masks per file, for the p99."""
    return [mask_times(g, "", path.read_text(encoding="utf-8"), max_tokens) for path in files]
