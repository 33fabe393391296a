"""Parse a grammar file (docs/grammar-format.md) into definitions, keeping line/column.

A small hand-written tokenizer and recursive-descent parser, so that every error can point at
the exact spot: `path:line:col: message`, then the source line, then a caret under the spot.
All checks that need the whole file (undefined and duplicate names, recursive terminals,
unsupported regex features, a missing `start` rule) happen here too, so later stages can
assume a well-formed grammar.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import GrammarError
from .regex import RegexError, parse_regex

# ----------------------------------------------------------------------------- AST


@dataclass(frozen=True)
class Pos:
    line: int       # 1-based
    col: int        # 1-based, in code points
    offset: int     # 0-based offset into the source


@dataclass(frozen=True)
class Ref:
    name: str
    pos: Pos


@dataclass(frozen=True)
class Lit:
    text: str
    icase: bool
    pos: Pos


@dataclass(frozen=True)
class Regex:
    pattern: str
    flags: str
    pos: Pos


@dataclass(frozen=True)
class Range:
    lo: str
    hi: str
    pos: Pos


@dataclass(frozen=True)
class Group:
    alts: Alts
    optional: bool   # True for [ ... ]
    pos: Pos


@dataclass(frozen=True)
class Repeat:
    item: Item
    lo: int
    hi: int | None   # None = unbounded
    pos: Pos


Item = Ref | Lit | Regex | Range | Group | Repeat
Alts = tuple[tuple[Item, ...], ...]          # alternatives of sequences


@dataclass(frozen=True)
class Definition:
    name: str
    terminal: bool
    priority: int
    alts: Alts
    pos: Pos
    index: int       # declaration order among all definitions


@dataclass
class GrammarFile:
    path: str
    source: str
    rules: dict[str, Definition] = field(default_factory=dict)
    terminals: dict[str, Definition] = field(default_factory=dict)
    ignore: list[Item] = field(default_factory=list)
    declare: dict[str, Pos] = field(default_factory=dict)
    soft: list[Lit] = field(default_factory=list)
    layout: list[Item] = field(default_factory=list)

    def error(self, pos: Pos | None, message: str) -> GrammarError:
        return make_error(self.path, self.source, pos, message)


def is_terminal_name(name: str) -> bool:
    core = name.lstrip("_")
    return bool(core) and core[0].isupper()


def make_error(path: str, source: str, pos: Pos | None, message: str) -> GrammarError:
    """A GrammarError `path:line:col: message` with the source line and a caret."""
    if pos is None:
        pos = Pos(1, 1, 0)
    lines = source.split("\n")
    line = lines[pos.line - 1] if 0 < pos.line <= len(lines) else ""
    line = line.rstrip("\r")
    pad = "".join("\t" if ch == "\t" else " " for ch in line[: pos.col - 1])
    return GrammarError(f"{path}:{pos.line}:{pos.col}: {message}\n    {line}\n    {pad}^")


# ----------------------------------------------------------------------------- tokens

_TOKEN = re.compile(
    r"""
    (?P<WS>[ \t\f\r]+)
  | (?P<COMMENT>//[^\n]*)
  | (?P<NL>\n)
  | (?P<DIRECTIVE>%[A-Za-z_]+)
  | (?P<STRING>"(?:\\.|[^"\\\n])*"i?)
  | (?P<REGEXP>/(?!/)(?:\\.|[^/\\\n])+/[A-Za-z]*)
  | (?P<NAME>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<NUMBER>-?[0-9]+)
  | (?P<OP>->|\.\.|[:|()\[\]?*+~.])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Tok:
    kind: str
    text: str
    pos: Pos


def tokenize(path: str, source: str) -> list[Tok]:
    toks: list[Tok] = []
    i = 0
    line = 1
    line_start = 0
    n = len(source)
    while i < n:
        m = _TOKEN.match(source, i)
        pos = Pos(line, i - line_start + 1, i)
        if m is None:
            ch = source[i]
            if ch == '"':
                raise make_error(path, source, pos, "unterminated string literal")
            if ch == "/":
                raise make_error(path, source, pos, "unterminated regex literal")
            if ch == "{":
                raise make_error(path, source, pos, "templates `name{...}` are not supported")
            raise make_error(path, source, pos, f"unexpected character {ch!r}")
        kind = m.lastgroup or ""
        text = m.group()
        if kind == "NL":
            toks.append(Tok("NL", text, pos))
            line += 1
            line_start = m.end()
        elif kind == "OP":
            toks.append(Tok(text, text, pos))
        elif kind not in ("WS", "COMMENT"):
            toks.append(Tok(kind, text, pos))
        i = m.end()
    toks.append(Tok("EOF", "", Pos(line, n - line_start + 1, n)))
    return toks


# ----------------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, path: str, source: str) -> None:
        self.g = GrammarFile(path, source)
        self.toks = tokenize(path, source)
        self.i = 0
        self.depth = 0           # bracket depth: newlines are insignificant inside brackets
        self.n_defs = 0

    # token helpers
    def peek(self) -> Tok:
        if self.depth > 0:
            while self.toks[self.i].kind == "NL":
                self.i += 1
        return self.toks[self.i]

    def next(self) -> Tok:
        t = self.peek()
        self.i += 1
        return t

    def expect(self, kind: str, what: str) -> Tok:
        t = self.peek()
        if t.kind != kind:
            raise self.g.error(t.pos, f"expected {what}, found {_describe(t)}")
        return self.next()

    def parse(self) -> GrammarFile:
        while True:
            t = self.peek()
            if t.kind == "EOF":
                break
            if t.kind == "NL":
                self.next()
                continue
            if t.kind == "DIRECTIVE":
                self.directive()
            elif t.kind in ("NAME", "?"):
                self.definition()
            else:
                raise self.g.error(t.pos, f"expected a rule, a terminal or a directive, "
                                          f"found {_describe(t)}")
            self.end_of_statement()
        return self.g

    def end_of_statement(self) -> None:
        t = self.peek()
        if t.kind not in ("NL", "EOF"):
            raise self.g.error(t.pos, f"unexpected {_describe(t)}")

    def directive(self) -> None:
        d = self.next()
        name = d.text
        if name == "%ignore":
            t = self.peek()
            if t.kind not in ("NAME", "STRING", "REGEXP"):
                raise self.g.error(t.pos, "expected a terminal name or a literal after %ignore")
            while self.peek().kind in ("NAME", "STRING", "REGEXP"):
                self.g.ignore.append(self.atom())
        elif name == "%layout":
            t = self.peek()
            if t.kind != "NAME":
                raise self.g.error(t.pos, "expected terminal names after %layout")
            while self.peek().kind == "NAME":
                self.g.layout.append(self.atom())
        elif name == "%declare":
            t = self.peek()
            if t.kind != "NAME":
                raise self.g.error(t.pos, "expected terminal names after %declare")
            while self.peek().kind == "NAME":
                t = self.next()
                if not is_terminal_name(t.text):
                    raise self.g.error(t.pos, f"%declare takes terminal names (UPPER_CASE), "
                                              f"not {t.text!r}")
                if t.text in self.g.declare:
                    raise self.g.error(t.pos, f"terminal {t.text} declared twice")
                self.g.declare[t.text] = t.pos
        elif name == "%soft":
            t = self.peek()
            if t.kind != "STRING":
                raise self.g.error(t.pos, "expected string literals after %soft")
            while self.peek().kind == "STRING":
                lit = self.atom()
                assert isinstance(lit, Lit)
                self.g.soft.append(lit)
        elif name in ("%import", "%override", "%extend"):
            raise self.g.error(d.pos, f"{name} is not supported: grammar files are "
                                      "self-contained")
        else:
            raise self.g.error(d.pos, f"unknown directive {name}")

    def definition(self) -> None:
        t = self.next()
        if t.kind == "?":
            t = self.peek()
            if t.kind != "NAME":
                raise self.g.error(t.pos, "expected a rule name after '?'")
            self.next()
        name = t.text
        terminal = is_terminal_name(name)
        priority = 0
        if self.peek().kind == ".":
            self.next()
            num = self.expect("NUMBER", "a priority number after '.'")
            priority = int(num.text)
        colon = self.peek()
        if colon.kind != ":":
            raise self.g.error(colon.pos, f"expected ':' after {'terminal' if terminal else 'rule'}"
                                          f" name {name!r}, found {_describe(colon)}")
        self.next()
        alts = self.expansions()
        table = self.g.terminals if terminal else self.g.rules
        other = self.g.rules if terminal else self.g.terminals
        if name in table or name in other:
            first = (table.get(name) or other[name]).pos
            kind = "terminal" if terminal else "rule"
            raise self.g.error(t.pos, f"duplicate definition of {kind} {name} (first defined at "
                                      f"line {first.line})")
        table[name] = Definition(name, terminal, priority, alts, t.pos, self.n_defs)
        self.n_defs += 1

    def expansions(self) -> Alts:
        alts = [self.sequence()]
        while True:
            # a newline followed by '|' continues the rule
            j = self.i
            while self.toks[j].kind == "NL":
                j += 1
            if self.toks[j].kind == "|":
                self.i = j + 1
                alts.append(self.sequence())
            else:
                break
        return tuple(alts)

    def sequence(self) -> tuple[Item, ...]:
        items: list[Item] = []
        while self.peek().kind in ("NAME", "STRING", "REGEXP", "(", "["):
            items.append(self.item())
        if self.peek().kind == "->":
            self.next()
            self.expect("NAME", "an alias name after '->'")
        return tuple(items)

    def item(self) -> Item:
        it = self.atom()
        while True:
            t = self.peek()
            if t.kind == "?":
                self.next()
                it = Repeat(it, 0, 1, t.pos)
            elif t.kind == "*":
                self.next()
                it = Repeat(it, 0, None, t.pos)
            elif t.kind == "+":
                self.next()
                it = Repeat(it, 1, None, t.pos)
            elif t.kind == "~":
                self.next()
                lo = int(self.expect("NUMBER", "a count after '~'").text)
                hi = lo
                if self.peek().kind == "..":
                    self.next()
                    hi = int(self.expect("NUMBER", "a count after '..'").text)
                if lo < 0 or hi < lo:
                    raise self.g.error(t.pos, "bad repetition count")
                it = Repeat(it, lo, hi, t.pos)
            else:
                return it

    def atom(self) -> Item:
        t = self.next()
        if t.kind == "NAME":
            return Ref(t.text, t.pos)
        if t.kind == "STRING":
            lit = self.string(t)
            if self.peek().kind == "..":
                self.next()
                t2 = self.expect("STRING", "a string after '..'")
                hi = self.string(t2)
                if len(lit.text) != 1 or len(hi.text) != 1:
                    raise self.g.error(t.pos, "a range needs one-character strings: \"a\"..\"z\"")
                if ord(lit.text) > ord(hi.text):
                    raise self.g.error(t.pos, "empty range: the first character is after the "
                                              "second")
                return Range(lit.text, hi.text, t.pos)
            return lit
        if t.kind == "REGEXP":
            body_end = t.text.rindex("/")
            pattern = t.text[1:body_end]
            flags = t.text[body_end + 1:]
            for k, f in enumerate(flags):
                if f not in "isx":
                    p = Pos(t.pos.line, t.pos.col + body_end + 1 + k, t.pos.offset + body_end
                            + 1 + k)
                    raise self.g.error(p, f"unsupported regex flag {f!r} (supported: i, s, x)")
            return Regex(pattern, flags, t.pos)
        if t.kind in ("(", "["):
            self.depth += 1
            alts = self.expansions()
            self.depth -= 1
            close = ")" if t.kind == "(" else "]"
            c = self.peek()
            if c.kind == "EOF":
                raise self.g.error(t.pos, f"unclosed '{t.kind}' (reached the end of the file)")
            if c.kind != close:
                raise self.g.error(c.pos, f"expected '{close}' to close the '{t.kind}' at line "
                                          f"{t.pos.line}, found {_describe(c)}")
            self.next()
            return Group(alts, t.kind == "[", t.pos)
        raise self.g.error(t.pos, f"expected a rule, terminal, string or regex, found "
                                  f"{_describe(t)}")

    def string(self, t: Tok) -> Lit:
        text = t.text
        icase = text.endswith("i")
        body = text[:-1] if icase else text
        try:
            value = ast.literal_eval(body)
        except (ValueError, SyntaxError) as e:
            raise self.g.error(t.pos, f"bad string literal: {e}") from None
        if not isinstance(value, str):  # pragma: no cover
            raise self.g.error(t.pos, "bad string literal")
        if value == "":
            raise self.g.error(t.pos, "empty string literal")
        return Lit(value, icase, t.pos)


def _describe(t: Tok) -> str:
    if t.kind == "EOF":
        return "end of file"
    if t.kind == "NL":
        return "end of line"
    return repr(t.text)


# ----------------------------------------------------------------------------- checks


def walk_items(alts: Alts) -> Iterator[Item]:
    """Every item of `alts`, nested groups and repeated items included."""
    for seq in alts:
        for it in seq:
            yield from _walk_item(it)


def _walk_item(it: Item) -> Iterator[Item]:
    yield it
    if isinstance(it, Group):
        yield from walk_items(it.alts)
    elif isinstance(it, Repeat):
        yield from _walk_item(it.item)


def _check_regex(g: GrammarFile, r: Regex) -> None:
    try:
        parse_regex(r.pattern, r.flags)
    except RegexError as e:
        off = 1 + (e.pos or 0) if e.pos is not None else 0
        raise g.error(Pos(r.pos.line, r.pos.col + off, r.pos.offset + off), e.message) from None


def check(g: GrammarFile) -> None:
    for name, pos in g.declare.items():
        if name in g.terminals:
            d = g.terminals[name]
            raise g.error(d.pos, f"terminal {name} is both %declare'd (line {pos.line}) and "
                                 "defined")
    for d in list(g.rules.values()) + list(g.terminals.values()):
        for it in walk_items(d.alts):
            if isinstance(it, Regex):
                _check_regex(g, it)
            elif isinstance(it, Ref):
                if is_terminal_name(it.name):
                    if it.name in g.declare and d.terminal:
                        raise g.error(it.pos, f"terminal {d.name} uses {it.name}, which is "
                                              "%declare'd and has no definition")
                    if it.name not in g.terminals and it.name not in g.declare:
                        raise g.error(it.pos, f"undefined terminal {it.name}")
                else:
                    if d.terminal:
                        raise g.error(it.pos, f"terminal {d.name} cannot use rule {it.name} "
                                              "(terminals are regular: use terminals only)")
                    if it.name not in g.rules:
                        raise g.error(it.pos, f"undefined rule {it.name}")
            elif isinstance(it, Range) and not d.terminal:
                raise g.error(it.pos, "ranges \"a\"..\"z\" are only allowed in terminals")
    for it in g.layout:
        if not isinstance(it, Ref) or not is_terminal_name(it.name):
            raise g.error(it.pos, "%layout takes terminal names")
        if it.name not in g.terminals:
            raise g.error(it.pos, f"undefined terminal {it.name}")
    for it in g.ignore:
        if isinstance(it, Ref):
            if not is_terminal_name(it.name):
                raise g.error(it.pos, f"%ignore takes terminals, not rule {it.name}")
            if it.name not in g.terminals:
                raise g.error(it.pos, f"undefined terminal {it.name}")
        elif isinstance(it, Regex):
            _check_regex(g, it)
    # recursive terminals
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        state[name] = 1
        for it in walk_items(g.terminals[name].alts):
            if isinstance(it, Ref) and it.name in g.terminals:
                s = state.get(it.name, 0)
                if s == 1:
                    raise g.error(it.pos, f"recursive terminal: {name} uses {it.name}, which "
                                          f"uses {name} (terminals must be regular; write a "
                                          "rule instead)")
                if s == 0:
                    visit(it.name)
        state[name] = 2

    for name in g.terminals:
        if state.get(name, 0) == 0:
            visit(name)
    if "start" not in g.rules:
        raise g.error(None, "no `start` rule: every grammar needs a rule named start")


def parse_grammar(source: str, path: str = "<grammar>") -> GrammarFile:
    """Parse and check a grammar file's text; raises GrammarError."""
    g = _Parser(path, source).parse()
    check(g)
    return g
