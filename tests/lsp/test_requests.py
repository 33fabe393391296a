"""Requests on documents that broke the server before issue 16: a lone surrogate in the text
(a JSON string may carry one; the tokenizer refused the text with a TypeError, so every
completion in that document failed) and an explicit position right after a hole marker
(refused: "none of the holes of this action is still in the document")."""

from __future__ import annotations

import ast

import pytest
from lsp_testing import inline_params, open_doc, scaled

pytestmark = pytest.mark.asyncio


def apply(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


async def test_a_lone_surrogate_does_not_break_completions(served):
    text = "# note: \ud800 is a lone surrogate\ndef f(a):\n    return [a,\n"
    uri = "file:///project/surrogate.py"
    open_doc(served, uri, text)
    result = await served.request("textDocument/inlineCompletion",
                                  inline_params(uri, 2, 14), timeout=scaled(60))
    assert result and result["items"], result
    item = result["items"][0]
    assert item["range"]["start"] == {"line": 2, "character": 14}
    filled = text + item["insertText"]
    tail = filled.split("\n", 1)[1]
    ast.parse(tail + "\n")  # the suggestion closes the list (nothing else is open)


async def test_a_position_right_after_a_marker_fills_that_marker(served):
    text = "def f(a):\n    return a + <|hole|>\n"
    uri = "file:///project/after.py"
    open_doc(served, uri, text)
    applied: list = []
    served.handlers["workspace/applyEdit"] = lambda p: applied.append(p) or {"applied": True}
    marker_end = len("    return a + <|hole|>")
    result = await served.request("workspace/executeCommand", {
        "command": "holefill.fillHoles",
        "arguments": [{"uri": uri, "positions": [{"line": 1, "character": marker_end}]}]},
        timeout=scaled(120))
    assert result == {"applied": True}
    (change,) = applied[0]["edit"]["documentChanges"]
    (edit,) = change["edits"]
    assert edit["range"] == {"start": {"line": 1, "character": 15},
                             "end": {"line": 1, "character": marker_end}}
    start = text.index("<|hole|>")
    ast.parse(apply(text, start, start + len("<|hole|>"), edit["newText"]))
