"""The last word on a finished fill: the exact check of the whole document.

Decoding checks each token through fast paths (segments, windows, the incremental engine, a
verdict memo). Each is a second implementation of the check with its own soundness argument,
and one of them was wrong once (a window let `if 0:` stand where only `case` may). So no fill
is called verified on their word (DESIGN.md §12): `final_check` looks at the document as the
fill leaves it, the holes not asked for still open, with the reading of the user's text the
request started from (holefill.lexing.anchors), and answers

- YES: the document is completable and keeps its reading: verified;
- NO: it is not; the fill must not be applied, and a fast path has a bug to report;
- UNKNOWN: the check ran out of time or budget: unverified, never applied as verified.

When no hole is left, the language's own reader judges first where we have one in this
process: `ast.parse` for Python (blocks an edit left alone are not parsed again, see
holefill.check.window), `json.loads` for JSON. It is cheaper than our whole check and it is the
oracle. For Python it also covers what our grammar only approximates (f-string replacement
fields, `\\N{...}` names: see the header of grammars/python.lark): CPython refusing a line
a filling touched is NO whatever our grammar says. CPython refusing only lines no filling
touched says the file holds syntax this interpreter does not read (a 3.12 `type` statement
read by 3.11); then our grammar's exact check decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from holefill.check.checker import DEFAULT_MAX_STEPS, Checker, Verdict
from holefill.lexing.anchors import Anchors, respected

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")

# Seconds the whole check of a finished fill may take before it answers UNKNOWN.
FINAL_DEADLINE_S = 10.0


@dataclass(frozen=True)
class FinalVerdict:
    verdict: Verdict
    reason: str | None = None  # why not YES, in words a user can act on
    # who said so: "check" (our exact check), "reading" (the anchors), or the language's
    # own reader ("cpython", "json"): a NO from a reader where our grammar says yes is a gap
    # in the grammar; a NO from "check" or "reading" is a fast path's bug
    judge: str = "check"

    @property
    def verified(self) -> bool:
        return self.verdict is Verdict.YES


def filled(chunks: Sequence[str], fills: dict[int, str]) -> tuple[list[str], list[int]]:
    """The document with the holes of `fills` (hole number -> text) filled: its chunks (the
    other holes still between them) and, for each chunk of `chunks`, the chunk of the result
    it lies in."""
    out, where = [chunks[0]], [0]
    for hole, chunk in enumerate(chunks[1:]):
        if hole in fills:
            out[-1] += fills[hole] + chunk
        else:
            out.append(chunk)
        where.append(len(out) - 1)
    return out, where


def moved_anchors(chunks: Sequence[str], fills: dict[int, str], anchors: Anchors) -> Anchors:
    """The anchors of `chunks` (each site at the start of the chunk after its hole) as sites
    of `filled(chunks, fills)`: a site after a filled hole moves into the merged chunk."""
    _, where = filled(chunks, fills)
    starts, at = [], 0
    for j, chunk in enumerate(chunks):
        if j and where[j] != where[j - 1]:
            at = 0
        starts.append(at)
        at += len(chunk) + len(fills.get(j, ""))
    return Anchors(tuple(s.moved(where[s.chunk], starts[s.chunk] + s.base)
                         for s in anchors.sites))


def final_check(checker: Checker, chunks: Sequence[str], fills: dict[int, str], *,
                anchored: bool = True, deadline: float | None = FINAL_DEADLINE_S,
                max_steps: int | None = None,
                cancel: Callable[[], bool] | None = None,
                structured: bool = True) -> FinalVerdict:
    """The exact verdict on `chunks` with the holes of `fills` filled (see the module
    docstring). `anchored`: keep the reading of the text of `chunks`, as the fill did;
    `structured`: and its structure (holefill.check.structure), judged first on the text."""
    chunks = list(chunks)
    if anchored and structured:
        order = [fills.get(i, "") for i in range(len(chunks) - 1)]
        why = checker.structure_violation(chunks, order)
        if why is not None:
            return FinalVerdict(Verdict.NO, why, "structure")
    anchors = checker.anchors(chunks) if anchored else Anchors(())
    merged, _ = filled(chunks, fills)
    reads = True
    if len(merged) == 1:
        order = [fills.get(i, "") for i in range(len(chunks) - 1)]
        judged = _oracle(checker.language, chunks, order)
        if judged is not None and judged.verdict is Verdict.NO:
            return judged
        # The re-lex by maximal munch is the quick test of the reading; where it finds a
        # change, the exact check (the anchors in the lexer with holes) decides: it is the
        # rule the fill was held to, and the re-lex may be stricter at a site's edge.
        reads = not anchored or respected(checker.lexer.reference, chunks, order, anchors)
        if judged is not None and reads:
            return judged
    res = checker.check(merged, anchors=moved_anchors(chunks, fills, anchors),
                        deadline=deadline, cancel=cancel,
                        max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps)
    if res.verdict is Verdict.YES:
        return FinalVerdict(Verdict.YES)
    if res.verdict is Verdict.NO:
        if not reads:
            return FinalVerdict(Verdict.NO, "the filling changes how the text around it "
                                "reads", "reading")
        return FinalVerdict(Verdict.NO, "the whole-document check refuses the filled text")
    return FinalVerdict(Verdict.UNKNOWN,
                        f"the whole-document check did not finish ({res.reason or 'budget'})")


def _oracle(language: str, chunks: Sequence[str], fills: Sequence[str]) -> FinalVerdict | None:
    """The in-process reader's verdict on the filled text, or None to let our check decide."""
    text = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
    if language == "json":
        try:
            json.loads(text)
        except ValueError as exc:
            return FinalVerdict(Verdict.NO, f"JSON refuses the filled text: {exc}", "json")
        return FinalVerdict(Verdict.YES, judge="json")
    if language != "python":
        return None
    if any("\0" in fill for fill in fills):
        return FinalVerdict(Verdict.NO, "CPython refuses source code with a NUL byte",
                            "cpython")
    from holefill.check.window import syntax_error

    error = syntax_error(text)
    if error is None:
        return FinalVerdict(Verdict.YES, judge="cpython")
    line, message = error
    first, last = _filled_lines(chunks, fills)
    if line < first or (line > last and _own_error(text, last, line)):
        return None  # the fixed text's own syntax, beyond this interpreter
    return FinalVerdict(Verdict.NO, f"CPython refuses line {line}: {message}", "cpython")


def _own_error(text: str, last: int, line: int) -> bool:
    """Whether the error at `line`, after every filled line (the last is `last`), is the
    fixed text's own: the text from the first column-0 statement line after the fills up to
    `line` fails alone at the same line. (A filling that left a bracket or a string open
    would be what breaks the text after it; then that text alone does not fail there, and
    CPython's NO stands.)"""
    from holefill.check.window import syntax_error

    lines = _LINE.findall(text)
    for k in range(last, min(line, len(lines))):  # k: 0-based index of line k + 1
        head = lines[k][:1]
        if head and not head.isspace() and head not in "#\\)]}":
            error = syntax_error("".join(lines[k:]))
            return error is not None and error[0] + k == line
    return False


def _filled_lines(chunks: Sequence[str], fills: Sequence[str]) -> tuple[int, int]:
    """The first and last line (1-based) of the filled text that a filling touches: from the
    first filling's own line to the line the text after the last one goes on from."""
    spans, line = [], 1
    for chunk, fill in zip(chunks, fills, strict=False):
        line += _breaks(chunk)
        spans.append((line, line + _breaks(fill)))
        line += _breaks(fill)
    return spans[0][0], spans[-1][1]


def _breaks(text: str) -> int:
    """Line breaks as CPython counts them: a lone CR is one too."""
    return len(_LINE.findall(text)) - (not text.endswith(("\n", "\r")) and bool(text))
