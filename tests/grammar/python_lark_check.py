"""Validation harness for `grammars/python.lark`, independent of holefill's own checker.

Source text is tokenized with CPython's `tokenize` module, the tokens are mapped to the
terminals of our grammar, and the token stream is parsed by Lark's Earley parser built from our
grammar text. This answers "does python.lark accept this file?" while holefill's own lexer and
checker are not there yet, and later serves as a second opinion.

Mapping (CPython token -> our terminal):
  NAME     -> the keyword literal when the word is a literal of the grammar (`"if"`, and the
              soft keywords `"match"`, `"case"`, `"type"`), else NAME
  OP       -> the literal with the same text
  NUMBER, STRING, NEWLINE, INDENT, DEDENT -> the same name
  NL, COMMENT, ENCODING, ENDMARKER        -> dropped
  3.12 FSTRING_START .. FSTRING_END       -> joined back into one STRING (the source slice)
Soft keywords follow holefill's `%soft` rule: every use of NAME in a rule also accepts the soft
keyword literals. The lexemes are also checked against our terminal regexes with maximal munch
(the longest match at the token's offset over all terminals must be the token itself);
disagreements are reported as "lexdiff" and do not change the verdict.

Usage (from the repository root):
  python tests/grammar/python_lark_check.py --fixtures
  python tests/grammar/python_lark_check.py --stdlib [--count 150] [--max-lines 300] [--seed 0]
                                            [--time-cap 300] [--file-cap 30] [--skip N]
  python tests/grammar/python_lark_check.py FILE...
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import keyword
import random
import re
import signal
import sys
import sysconfig
import time
import token as tok
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR_PATH = ROOT / "server" / "holefill" / "grammars" / "python.lark"
FIXTURES_PATH = ROOT / "tests" / "data" / "grammars" / "python.jsonl"
STDLIB_DIR = Path(sysconfig.get_paths()["stdlib"])

LAYOUT = {tok.NEWLINE: "NEWLINE", tok.INDENT: "INDENT", tok.DEDENT: "DEDENT"}
DROPPED = {tok.NL, tok.COMMENT, tok.ENCODING, tok.ENDMARKER}
FSTRING_START = getattr(tok, "FSTRING_START", None)
FSTRING_END = getattr(tok, "FSTRING_END", None)


class Rejected(Exception):
    """The tokenizer (not the grammar) rejected the text."""


@dataclass
class Lexeme:
    kind: str  # "NAME", "NUMBER", "STRING", "NEWLINE", "INDENT", "DEDENT", or "LIT"
    text: str
    offset: int  # code-point offset in the source (-1 for layout tokens)


def _glued_names(tokens):
    """The tokenize module of Python < 3.12 reads names as `\\w+`, so a name holding an
    XID character outside `\\w` (`a\u00b7`, `\u2118`) comes out as NAME and ERRORTOKEN
    pieces. Glue adjacent pieces back into one NAME where the result is an identifier (what
    CPython's C tokenizer reads)."""
    held = None
    for t in tokens:
        if held is not None and t.type in (tok.NAME, tok.ERRORTOKEN) and t.start == held.end \
                and (held.string + t.string).isidentifier():
            held = held._replace(type=tok.NAME, string=held.string + t.string, end=t.end)
            continue
        if held is not None:
            yield held
            held = None
        if t.type in (tok.NAME, tok.ERRORTOKEN) and t.string.isidentifier():
            held = t._replace(type=tok.NAME)
        else:
            yield t
    if held is not None:
        yield held


def _tab_error(source: str) -> bool:
    """Whether CPython's C tokenizer raises TabError on `source` (what `compile` meets
    first: a parser error on an earlier line hides it)."""
    try:
        compile(source, "<tabs>", "exec", dont_inherit=True)
    except TabError:
        return True
    except (SyntaxError, ValueError):
        return False
    return False


def cpython_lexemes(source: str) -> list[Lexeme]:
    """Tokenize with CPython and return our lexemes. Raises Rejected on tokenizer errors."""
    line_starts = [0]
    for line in source.split("\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)

    def offset(pos: tuple[int, int]) -> int:
        return line_starts[pos[0] - 1] + pos[1]

    out: list[Lexeme] = []
    fdepth = 0
    fstart = 0
    if "\0" in source:  # CPython's tokenizer refuses it anywhere; the tokenize module does not
        raise Rejected("source code cannot contain null bytes")
    if "\t" in source and _tab_error(source):  # the tokenize module of 3.11 lets them pass
        raise Rejected("tokenizer: inconsistent use of tabs and spaces in indentation")
    try:
        for t in _glued_names(tokenize.generate_tokens(io.StringIO(source).readline)):
            if FSTRING_START is not None and t.type == FSTRING_START:
                if fdepth == 0:
                    fstart = offset(t.start)
                fdepth += 1
                continue
            if FSTRING_END is not None and t.type == FSTRING_END:
                fdepth -= 1
                if fdepth == 0:
                    end = offset(t.end)
                    out.append(Lexeme("STRING", source[fstart:end], fstart))
                continue
            if fdepth:
                continue
            if t.type in DROPPED:
                continue
            if t.type in LAYOUT:
                out.append(Lexeme(LAYOUT[t.type], t.string, -1))
            elif t.type == tok.ERRORTOKEN:
                raise Rejected(f"tokenizer error token {t.string!r} at {t.start}")
            elif t.type == tok.OP:
                out.append(Lexeme("LIT", t.string, offset(t.start)))
            elif t.type in (tok.NAME, tok.NUMBER, tok.STRING):
                out.append(Lexeme(tok.tok_name[t.type], t.string, offset(t.start)))
            else:
                raise Rejected(f"unexpected token {tok.tok_name[t.type]} {t.string!r}")
    except (tokenize.TokenError, SyntaxError) as e:  # IndentationError is a SyntaxError
        raise Rejected(f"tokenizer: {e}") from None
    return out


# ------------------------------------------------------------------ grammar text -> Lark

_SOFT_RE = re.compile(r"^%soft\b(.*)$", re.M)
_LIT_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')
_TERM_DEF_RE = re.compile(r"^([A-Z_][A-Z0-9_]*)(?:\.\d+)?\s*:\s*(.*)$", re.M)


def soft_keywords(grammar: str) -> list[str]:
    words: list[str] = []
    for m in _SOFT_RE.finditer(grammar):
        words += [json.loads(f'"{w}"') for w in _LIT_RE.findall(m.group(1))]
    return words


def to_lark(grammar: str) -> str:
    """Our grammar text -> a Lark grammar: drop `%soft` and `%layout` (the layout terminal NL
    is CPython's business here), let every NAME in a rule also match the soft keyword
    literals. `%declare` is Lark syntax already."""
    soft = soft_keywords(grammar)
    lines = []
    for line in grammar.splitlines():
        if line.startswith(("%soft", "%layout")):
            continue
        if soft and not _TERM_DEF_RE.match(line) and not line.startswith("%"):
            code, sep, comment = line.partition("//")
            code = re.sub(r'(?<![\w"])NAME(?![\w"])', "softname", code)
            line = code + sep + comment
        lines.append(line)
    if soft:
        lines.append("softname: NAME | " + " | ".join(json.dumps(w) for w in soft))
    return "\n".join(lines) + "\n"


def terminal_regexes(grammar: str) -> dict[str, re.Pattern[str]]:
    """The regex terminals of our grammar (single regex literal definitions only)."""
    out = {}
    for m in _TERM_DEF_RE.finditer(grammar):
        body = m.group(2).strip()
        rm = re.fullmatch(r"/(.*)/([is]*)", body)
        if rm:
            flags = (re.I if "i" in rm.group(2) else 0) | (re.S if "s" in rm.group(2) else 0)
            out[m.group(1)] = re.compile(rm.group(1), flags)
    return out


class Checker:
    """Parses token streams with Lark Earley built from python.lark."""

    def __init__(self, grammar_path: Path = GRAMMAR_PATH):
        from lark import Lark
        from lark.lexer import Lexer

        class ListLexer(Lexer):
            __future_interface__ = 0

            def __init__(self, lexer_conf):
                pass

            def lex(self, data):
                return iter(data.tokens)

        self.grammar = grammar_path.read_text(encoding="utf-8")
        # ambiguity="forest": a recognizer needs no tree, only the shared packed forest
        self.lark = Lark(
            to_lark(self.grammar),
            parser="earley",
            lexer=ListLexer,
            start="start",
            ambiguity="forest",
        )
        self.literal_type: dict[str, str] = {}
        for t in self.lark.terminals:
            if t.pattern.type == "str":
                self.literal_type[t.pattern.value] = t.name
        self.regexes = terminal_regexes(self.grammar)

    # -- lexeme agreement ------------------------------------------------
    def matches(self, text: str) -> str | None:
        """The terminal (regex name or literal) that fully matches `text`, if any."""
        if text in self.literal_type:
            return text
        for name, rx in self.regexes.items():
            if rx.fullmatch(text):
                return name
        return None

    def lexdiffs(self, source: str, lexemes: list[Lexeme]) -> list[str]:
        """Check each lexeme against our terminals: its text must fully match the terminal it
        was mapped to, and (maximal munch) no terminal may match a longer text at the same
        offset. Python's `re` is leftmost-first, not longest, so longer matches are probed at
        candidate ends: 1-3 characters further, the ends of the next two lexemes, and the end
        of the physical line."""
        out = []
        located = [lx for lx in lexemes if lx.offset >= 0]
        for k, lx in enumerate(located):
            if lx.kind in self.regexes and not self.regexes[lx.kind].fullmatch(lx.text):
                out.append(f"{lx.kind} regex does not match {lx.text[:40]!r}")
            end = lx.offset + len(lx.text)
            eol = source.find("\n", end)
            ends = {end + 1, end + 2, end + 3, eol if eol >= 0 else len(source)}
            ends.update(n.offset + len(n.text) for n in located[k + 1 : k + 3])
            for e in sorted(ends):
                if end < e <= len(source):
                    name = self.matches(source[lx.offset : e])
                    if name is not None:
                        out.append(
                            f"maximal munch: {name} {source[lx.offset : e][:40]!r}"
                            f" is longer than {lx.kind} {lx.text[:40]!r}"
                        )
                        break
        return out

    # -- parsing -----------------------------------------------------------
    def lark_tokens(self, lexemes: list[Lexeme]):
        from lark import Token

        out = []
        for lx in lexemes:
            if lx.kind in ("LIT", "NAME"):
                ttype = self.literal_type.get(lx.text)
                if ttype is None:
                    if lx.kind == "LIT":
                        return None, f"operator {lx.text!r} is not in the grammar"
                    if keyword.iskeyword(lx.text):
                        return None, f"keyword {lx.text!r} is not in the grammar"
                    ttype = "NAME"
            else:
                ttype = lx.kind
                rx = self.regexes.get(ttype)
                if rx is not None and not rx.fullmatch(lx.text):
                    # our lexer would split this text differently; treat it as rejected
                    return None, f"{ttype} {lx.text[:40]!r} is not a lexeme of our grammar"
            out.append(Token(ttype, lx.text))
        return out, ""

    def check(self, source: str) -> tuple[bool, str]:
        """(accepted, reason)."""
        from lark.exceptions import UnexpectedInput

        try:
            lexemes = cpython_lexemes(source)
        except Rejected as e:
            return False, str(e)
        toks, why = self.lark_tokens(lexemes)
        if toks is None:
            return False, why

        class Data:
            tokens = toks

        try:
            self.lark.parse(Data())
        except UnexpectedInput as e:
            return False, f"parse error: {str(e).splitlines()[0][:160]}"
        return True, ""


def python_ok(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def load_fixtures(path: Path = FIXTURES_PATH) -> list[dict]:
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            row["line"] = i
            rows.append(row)
    return rows


def grammar_expectation(row: dict) -> str:
    """What our grammar should answer: `grammar` when it knowingly differs, else `expect`."""
    return row.get("grammar", row["expect"])


def stdlib_sample(
    count: int, max_lines: int, seed: int, stdlib_dir: Path = STDLIB_DIR
) -> list[Path]:
    """`count` files of at most `max_lines` lines, a seeded choice from the sorted list of the
    standard library's .py files (site-packages excluded)."""
    files = []
    for p in sorted(stdlib_dir.rglob("*.py")):
        if "site-packages" in p.parts:
            continue
        try:
            with tokenize.open(p) as f:
                n = sum(1 for _ in f)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        if n <= max_lines:
            files.append(p)
    return sorted(random.Random(seed).sample(files, min(count, len(files))))


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--fixtures", action="store_true")
    ap.add_argument("--stdlib", action="store_true")
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--max-lines", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stdlib-dir", type=Path, default=STDLIB_DIR)
    ap.add_argument("--skip", type=int, default=0, help="skip the first N sample files")
    ap.add_argument("--time-cap", type=float, default=300.0, help="total seconds")
    ap.add_argument("--file-cap", type=int, default=30, help="seconds per file")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.time()
    checker = Checker()
    print(f"grammar loaded in {time.time() - t0:.1f}s", flush=True)
    bad = 0

    if args.fixtures:
        rows = load_fixtures()
        ok = 0
        for row in rows:
            want = grammar_expectation(row) == "accept"
            got, why = checker.check(row["text"])
            try:
                diffs = checker.lexdiffs(row["text"], cpython_lexemes(row["text"]))
            except Rejected:
                diffs = []
            if diffs:
                print(f"LEXDIFF fixture line {row['line']}: {diffs[:3]}")
            if got == want:
                ok += 1
            else:
                bad += 1
                print(f"FIXTURE line {row['line']}: want {want} got {got}: {row['text']!r} {why}")
        print(f"fixtures: {ok}/{len(rows)} agree")

    paths: list[Path] = list(args.files)
    if args.stdlib:
        paths += stdlib_sample(args.count, args.max_lines, args.seed, args.stdlib_dir)[args.skip :]
    if paths:
        signal.signal(signal.SIGALRM, _alarm)
        passed = excluded = timeouts = lexbad = 0
        done = 0
        for p in paths:
            if time.time() - t0 > args.time_cap:
                print(f"time cap reached after {done} files")
                break
            with tokenize.open(p) as f:
                src = f.read()
            done += 1
            if not python_ok(src):
                excluded += 1
                continue
            t1 = time.time()
            signal.alarm(args.file_cap)
            try:
                got, why = checker.check(src)
            except _Timeout:
                timeouts += 1
                print(f"TIMEOUT {p}")
                continue
            finally:
                signal.alarm(0)
            try:
                diffs = checker.lexdiffs(src, cpython_lexemes(src))
            except Rejected:
                diffs = []
            if diffs:
                lexbad += 1
                print(f"LEXDIFF {p}: {diffs[:3]}")
            if got:
                passed += 1
                if args.verbose:
                    print(f"ok {p} {time.time() - t1:.1f}s", flush=True)
            else:
                bad += 1
                print(f"FAIL {p}: {why}", flush=True)
        tested = done - excluded
        print(
            f"files: {passed}/{tested} accepted ({excluded} excluded: ast.parse rejects; "
            f"{timeouts} timeouts; {lexbad} with lexeme differences) in "
            f"{time.time() - t0:.0f}s"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
