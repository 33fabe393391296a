"""Function units: each Python function of the corpus as a small document of its own.

Completion at the cursor and HumanEval-style problems are about one function: a signature, a
docstring, a body, with the imports it uses above it. Chunks of whole files (``data.chunk_text``)
mostly show the middle of long modules. A *unit* is one function or method, dedented to column
0 (methods lose their class), with the file's top-level imports whose names it mentions placed
above it. Units are extra training documents beside the chunks; FIM cuts inside them teach the
model to fill a function body from its signature, docstring and the code after the hole.
"""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from collections.abc import Iterator

MIN_LINES = 4
MAX_LINES = 60
MAX_IMPORTS = 4
_NAME = re.compile(r"[A-Za-z_]\w*")


def _imports(tree: ast.Module, lines: list[str]) -> list[tuple[set[str], str]]:
    """(names bound, source line) of the module's one-line top-level imports."""
    out = []
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno != node.end_lineno:
            continue
        names = {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        out.append((names, lines[node.lineno - 1].strip()))
    return out


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Top-level functions and the methods of top-level classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield sub


def function_units(text: str) -> list[str]:
    """The units of a Python file (empty when it does not parse)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines()
    imports = _imports(tree, lines)
    out = []
    for fn in _functions(tree):
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        last = fn.end_lineno or fn.lineno
        if not MIN_LINES <= last - first + 1 <= MAX_LINES:
            continue
        body = textwrap.dedent("\n".join(lines[first - 1:last])) + "\n"
        if body[:1].isspace():
            continue  # a line less indented than the def (a string's text): not a clean unit
        used = set(_NAME.findall(body))
        head = [src for names, src in imports if names & used][:MAX_IMPORTS]
        out.append("\n".join(head) + ("\n\n\n" if head else "") + body)
    return out
