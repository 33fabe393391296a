"""Check holefill's language grammars with Lark, independently of holefill's own compiler.

An oracle for grammar authors while (and after) holefill's checker is built: the grammar file
is given to Lark's Earley parser with a lexer that follows holefill's documented lexing
(docs/grammar-format.md): maximal munch over all terminals together; among terminals matching
the same longest text, higher priority, then a string literal over a regex, then declaration
order; `%ignore`d terminals dropped. holefill-only directives (`%soft`, `%layout`) are stripped
first; `%layout` terminals stay in the lexer (`KeepLayout`).

Usage (from the repository root):
    python tests/grammar/lark_check.py json|cpp                  # fixtures + (cpp) HumanEval-X
    python tests/grammar/lark_check.py cpp --fixtures            # fixture table only
    python tests/grammar/lark_check.py cpp --humaneval [N ...]   # all tasks, or tasks N ...
    python tests/grammar/lark_check.py cpp FILE ...              # parse files; print errors
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GRAMMARS = ROOT / "server" / "holefill" / "grammars"
FIXTURES = ROOT / "tests" / "data" / "grammars"


class LexError(Exception):
    pass


def maximal_munch_lexer() -> type:
    """A Lark lexer class that follows holefill's lexing rule (Lark is imported lazily)."""
    from lark import Token
    from lark.lexer import Lexer, PatternStr

    class MaximalMunchLexer(Lexer):
        def __init__(self, lexer_conf: Any) -> None:
            self.ignore = set(lexer_conf.ignore)
            self.terminals = []
            for order, t in enumerate(lexer_conf.terminals):
                rx = re.compile(t.pattern.to_regexp())
                is_literal = isinstance(t.pattern, PatternStr)
                # Tie-break key (bigger wins): priority, literal over regex, earlier declared.
                self.terminals.append((rx, t.name, (t.priority, is_literal, -order)))

        def lex(self, data: Any, parser_state: Any = None) -> Iterator[Token]:
            # Lark hands a custom lexer the text or a LexerState, depending on the signature.
            text = data if isinstance(data, str) else data.text.text
            pos, n = 0, len(text)
            while pos < n:
                best: tuple[int, tuple[int, bool, int], str] | None = None
                for rx, name, key in self.terminals:
                    m = rx.match(text, pos)
                    if m and m.end() > pos and (best is None or (m.end(), key) > best[:2]):
                        best = (m.end(), key, name)
                if best is None:
                    raise LexError(f"no lexeme at offset {pos}: {text[pos : pos + 20]!r}")
                end, _, name = best
                if name not in self.ignore:
                    yield Token(name, text[pos:end], start_pos=pos)
                pos = end

    return MaximalMunchLexer


def subset_alternatives(lang: str) -> dict[str, list[str]]:
    """holefill's subset-terminal rule (docs/grammar-format.md): a terminal whose words are all
    words of a larger one, and wins ties, is allowed wherever the larger one stands (`MACRO_NAME`
    where `NAME`, `%soft` keywords where `NAME`). Which pairs are subsets is read from holefill's
    lexer (a property of the regexes); Lark then parses with the rule spelled out."""
    from holefill.languages import get_language

    compiled = get_language(lang).compile()
    terms = compiled.grammar.terminals
    out: dict[str, list[str]] = {}
    for small, big in compiled.subset_allowed:
        out.setdefault(terms[big].name, []).append(terms[small].name)
    return out


def grammar_text(lang: str) -> str:
    """The grammar file minus holefill-only directives, with every use of a terminal in a rule
    widened to the subset terminals allowed there."""
    text = (GRAMMARS / f"{lang}.lark").read_text()
    widen = subset_alternatives(lang) if lang != "json" else {}
    out, in_rule = [], False
    for line in text.splitlines():
        if line.startswith(("%soft", "%layout")):
            continue
        if line[:1].isalpha() or line[:1] in "?_":
            in_rule = not line.lstrip("?_")[:1].isupper()
        if in_rule and not line.lstrip().startswith("//"):
            for big, smalls in widen.items():
                alts = " | ".join([big, *smalls])
                line = re.sub(rf'(?<![\w"]){re.escape(big)}(?![\w"])', f"({alts})", line)
        out.append(line)
    return "\n".join(out)


class KeepLayout:
    """A post-lexer that passes tokens through; its `always_accept` keeps the `%layout`
    terminals (lexed, used by no rule, so a text holding one is refused) in Lark's lexer,
    which otherwise drops terminals no rule uses."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.always_accept = names

    def process(self, stream: Iterator[Any]) -> Iterator[Any]:
        return stream


def layout_terminals(lang: str) -> tuple[str, ...]:
    text = (GRAMMARS / f"{lang}.lark").read_text()
    return tuple(name for line in text.splitlines() if line.startswith("%layout")
                 for name in line.split()[1:])


@cache
def parser(lang: str) -> Any:
    from lark import Lark

    return Lark(grammar_text(lang), parser="earley", lexer=maximal_munch_lexer(), start="start",
                postlex=KeepLayout(layout_terminals(lang)))


def check(lang: str, text: str) -> str | None:
    """None if the grammar accepts `text`, else a one-line reason."""
    from lark.exceptions import LarkError

    try:
        parser(lang).parse(text)
    except (LarkError, LexError) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    return None


def fixtures(lang: str) -> list[dict[str, str]]:
    path = FIXTURES / f"{lang}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def humaneval_cpp() -> list[dict[str, str]]:
    """The HumanEval-X C++ tasks, from the copy shipped with holefill (holefill.datasets)."""
    from holefill.datasets import humaneval_x

    return humaneval_x("cpp")


def main(argv: list[str]) -> int:
    lang, rest = argv[0], argv[1:]
    failures = 0
    files = [a for a in rest if not a.startswith("--") and not a.isdigit()]
    if files:
        for f in files:
            err = check(lang, Path(f).read_text())
            print(f"{f}: {'ok' if err is None else err}")
            failures += err is not None
        return 1 if failures else 0
    if "--humaneval" not in rest:
        rows = fixtures(lang)
        for i, row in enumerate(rows):
            err = check(lang, row["text"])
            got = "accept" if err is None else "reject"
            if got != row["expect"]:
                failures += 1
                print(f"fixture {i}: expected {row['expect']}, got {got} ({row['why']})")
                print(f"    text: {row['text']!r}" + (f"\n    {err}" if err else ""))
        print(f"{lang} fixtures: {len(rows) - failures}/{len(rows)} as expected")
    if lang == "cpp" and "--fixtures" not in rest:
        wanted = {int(a) for a in rest if a.isdigit()}
        bad = 0
        tasks = humaneval_cpp()
        for i, task in enumerate(tasks):
            if wanted and i not in wanted:
                continue
            err = check(lang, task["declaration"] + task["canonical_solution"])
            if err:
                bad += 1
                print(f"{task['task_id']}: {err}")
        print(f"HumanEval-X C++: {len(wanted or tasks) - bad}/{len(wanted or tasks)} accepted")
        failures += bad
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
