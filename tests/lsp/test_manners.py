"""The manners of the server in an editor (issue 13, items 2-4), through the real `holefill
serve` and the tiny random model of tests/conftest.py: cancelling leaves no traceback in the
output, Fill holes is cancellable from its progress item and stops with a message that says
why when the user types, one progress item at a time, the loading messages say each thing
once, the log says which model is loaded and when a suggestion's end came from the grammar's
witness rather than the model (`inlineWitness` decides whether inline suggestions may be so
completed), and a 2-hole Fill holes on real code keeps every top-level function a function.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsp_testing import (
    inline_params,
    open_doc,
    scaled,
    start_server,
    tiny_options,
    until,
)

from holefill.lsp.client import RawClient

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.asyncio

MANY = "".join(f"x{i} = <|hole|>\n" for i in range(12))
NOISE = ("Traceback", "never retrieved", "Task exception", "was destroyed but it is pending")


def fill_action_params(uri: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0},
                      "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["source.fillHoles"]}}


def progress(client: RawClient) -> list[dict[str, Any]]:
    """Every $/progress notification, in order, as {token, kind, title/message...}."""
    return [{"token": p["token"], **p["value"]} for p in client.notifications("$/progress")
            if isinstance(p, dict) and isinstance(p.get("value"), dict)]


def logs(client: RawClient) -> list[str]:
    return [m["message"] for m in client.notifications("window/logMessage")]


async def fill_under_way(client: RawClient) -> str:
    """Wait until a fill reports its second hole; its progress token."""
    def token() -> str | None:
        for p in progress(client):
            if "hole 2 of" in (p.get("message") or ""):
                return p["token"]
        return None

    assert await until(lambda: token() is not None, scaled(60)), "the fill did not start"
    found = token()
    assert found is not None
    return found


async def resolve_fill(client: RawClient, uri: str, msg_id: str) -> asyncio.Future:
    actions = await client.request("textDocument/codeAction", fill_action_params(uri),
                                   timeout=scaled(10))
    return client.request_nowait("codeAction/resolve", actions[0], msg_id=msg_id)


async def test_cancelled_requests_leave_no_traceback_in_the_output(tiny_model_dir):
    """Cancels at every stage (while the model loads, while a fill runs, an inline request
    right after it starts), then a clean shutdown: stderr holds no traceback and no "Future
    exception was never retrieved"."""
    client = await start_server()
    try:
        await client.initialize(tiny_options(tiny_model_dir), timeout=scaled(30))
        uri = "file:///project/noise.py"
        open_doc(client, uri, MANY)
        early = client.request_nowait("textDocument/inlineCompletion",
                                      inline_params(uri, 0, 5), msg_id="early")
        client.cancel("early")  # the model is most likely still loading
        fill = await resolve_fill(client, uri, "fill")
        await fill_under_way(client)
        client.cancel("fill")
        for n in range(3):
            msg_id = f"inline-{n}"
            client.request_nowait("textDocument/inlineCompletion", inline_params(uri, 1, 5),
                                  msg_id=msg_id)
            await asyncio.sleep(0.05 * n)
            client.cancel(msg_id)
        for answer in await asyncio.wait_for(asyncio.gather(early, fill), scaled(30)):
            assert answer.get("error", {}).get("code", -32800) == -32800, answer
        other = "file:///project/after.py"
        open_doc(client, other, "y = \n")
        await client.request("textDocument/inlineCompletion", inline_params(other, 0, 4),
                             timeout=scaled(60))
    finally:
        status = await client.stop(timeout=scaled(10))
    output = "".join(client.stderr)
    assert not any(n in output for n in NOISE), output
    assert status == 0


async def test_fill_holes_is_cancellable_from_its_progress_item(served):
    uri = "file:///project/progress-cancel.py"
    open_doc(served, uri, MANY)
    resolve = await resolve_fill(served, uri, "resolve")
    token = await fill_under_way(served)
    begin, = [p for p in progress(served) if p["token"] == token and p["kind"] == "begin"]
    assert begin["cancellable"] is True
    served.notify("window/workDoneProgress/cancel", {"token": token})
    answer = await asyncio.wait_for(resolve, scaled(10))
    assert answer["error"]["code"] == -32800 and "cancelled" in answer["error"]["message"]
    assert await until(lambda: any(p["token"] == token and p["kind"] == "end"
                                   for p in progress(served)), scaled(10))
    assert "could not" not in answer["error"]["message"]


async def test_typing_during_a_fill_stops_it_and_says_so(served):
    uri = "file:///project/typing.py"
    open_doc(served, uri, MANY)
    resolve = await resolve_fill(served, uri, "resolve")
    await fill_under_way(served)
    served.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 12, "character": 0},
                                      "end": {"line": 12, "character": 0}}, "text": "#"}]})
    answer = await asyncio.wait_for(resolve, scaled(10))
    assert answer["error"]["code"] == -32801  # ContentModified
    assert "the document changed while its holes were being filled" in (
        answer["error"]["message"])
    # the work stopped at once (not at the fill's end): the server measured it
    assert await until(lambda: any(m.startswith("fill holes: stopped") and "(changed" in m
                                   for m in logs(served)), scaled(10)), logs(served)


async def test_the_first_fill_shows_one_progress_item_at_a_time(tiny_model_dir):
    """Right after the start the model is loading (the server preloads it) when Fill holes
    comes: one "loading model" item, then one "filling" item, never two at once; the loading
    messages do not repeat the title; the log names the model once it is loaded."""
    client = await start_server()
    try:
        await client.initialize(tiny_options(tiny_model_dir), timeout=scaled(30))
        uri = "file:///project/first.py"
        open_doc(client, uri, "def f(a):\n    return <|hole|>\n\nx = <|hole|>\n")
        resolve = await resolve_fill(client, uri, "first")
        answer = await asyncio.wait_for(resolve, scaled(120))
        assert "result" in answer and answer["result"]["edit"], answer
        await asyncio.sleep(0.2)
        events = progress(client)
    finally:
        await client.stop(timeout=scaled(10))
    live: set[str] = set()
    titles = []
    for p in events:
        if p["kind"] == "begin":
            live.add(p["token"])
            titles.append(p["title"])
            assert len(live) == 1, f"two progress items at once: {titles}"
        elif p["kind"] == "end":
            live.discard(p["token"])
    assert titles.count("holefill: loading model") <= 1, titles
    assert [t for t in titles if t.startswith("holefill: filling")] == [
        "holefill: filling 2 hole(s)"]
    messages = [p.get("message") or "" for p in events]
    assert not any("loading model" in m for m in messages), messages
    assert any(m.startswith(f"model loaded: {tiny_model_dir}") for m in logs(client))


async def test_a_model_change_names_the_new_model_in_the_log(served, tiny_model_dir, tmp_path):
    import shutil

    assert await until(lambda: any(m.startswith("model loaded:") for m in logs(served)),
                       scaled(60))
    other = Path(shutil.copytree(tiny_model_dir, tmp_path / "other-model"))
    served.notify("workspace/didChangeConfiguration",
                  {"settings": {"holefill": tiny_options(other)}})
    assert await until(lambda: any(m.startswith(f"model loaded: {other}")
                                   for m in logs(served)), scaled(60)), logs(served)


WITNESS_TEXT = "total = (1 + \n"


async def _witness_suggestion(tiny_model_dir: Path, inline_witness: bool) -> tuple[Any, list]:
    client = await start_server()
    try:
        # one token cannot close the bracket: the witness completes the suggestion
        await client.initialize(tiny_options(tiny_model_dir, maxNewTokens=1,
                                             inlineWitness=inline_witness),
                                timeout=scaled(30))
        uri = "file:///project/witness.py"
        open_doc(client, uri, WITNESS_TEXT)
        result = await client.request("textDocument/inlineCompletion",
                                      inline_params(uri, 0, 12), timeout=scaled(60))
        return result, logs(client)
    finally:
        await client.stop(timeout=scaled(10))


async def test_inline_suggestions_completed_by_the_witness_are_named_in_the_log(
        tiny_model_dir):
    result, lines = await _witness_suggestion(tiny_model_dir, True)
    said = [m for m in lines if "completed by the grammar's witness" in m]
    assert said, lines
    item, = result["items"]
    filled = WITNESS_TEXT[:12] + item["insertText"] + WITNESS_TEXT[12:]
    ast.parse(filled)


async def test_inline_witness_off_shows_no_witness_completed_suggestion(tiny_model_dir):
    result, lines = await _witness_suggestion(tiny_model_dir, False)
    assert any("holefill.inlineWitness is off" in m for m in lines), lines
    assert result == {"items": []}


TEXTWRAP_LIKE = '''\
def wrap(text, width=70):
    """Wrap a single paragraph of text."""
    words = text.split()
    lines, line = [], ""
    for w in words:
        if len(line) + len(w) + 1 > width:
            lines.append(line)
            line = <|hole|>
        else:
            line = (line + " " + w).strip()
    return lines + [line]


def fill(text, width=70):
    return "\\n".join(wrap(text, width))


def dedent(text):
    margin = <|hole|>
    for line in text.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        if margin is None or len(indent) < len(margin):
            margin = indent
    return "\\n".join(line[len(margin or ""):] for line in text.splitlines())


def indent(text, prefix):
    return "".join(prefix + line for line in text.splitlines(True))
'''


async def test_a_two_hole_fill_keeps_every_top_level_function(served):
    """The e2e editor scenario of issue 13 as an LSP test: Fill holes on two markers of
    textwrap-like code; every top-level function is still a function afterwards (no string
    or comment swallowed them), and nothing was printed on stderr."""
    uri = "file:///project/textwrap_like.py"
    open_doc(served, uri, TEXTWRAP_LIKE)
    actions = await served.request("textDocument/codeAction", fill_action_params(uri),
                                   timeout=scaled(10))
    fill, = [a for a in actions if a["kind"] == "source.fillHoles"]
    resolved = await served.request("codeAction/resolve", fill, timeout=scaled(240))
    edits = resolved["edit"]["documentChanges"][0]["edits"]
    assert len(edits) == 2
    lines = TEXTWRAP_LIKE.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: e["range"]["start"]["line"], reverse=True):
        s, t = e["range"]["start"], e["range"]["end"]
        assert s["line"] == t["line"]
        line = lines[s["line"]]
        lines[s["line"]] = line[:s["character"]] + e["newText"] + line[t["character"]:]
    filled = "".join(lines)
    tree = ast.parse(filled)
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert functions == ["wrap", "fill", "dedent", "indent"], filled
    assert not [x for x in served.stderr if any(n in x for n in NOISE)]


async def test_a_dot_h_file_goes_to_the_language_its_text_is():
    """`language_of` asks `languages.language_for_document`: a `.h` announced as C whose text
    is evidently C++ is C++, a `.h` with a language id we do not know is C."""
    from holefill.lsp.documents import Document
    from holefill.lsp.server import HolefillServer

    server = HolefillServer()
    cpp_text = "namespace ns {\ntemplate <typename T> class Box { T v; };\n}\n"
    c_text = "struct point { int x, y; };\nint norm(struct point p);\n"
    assert server.language_of(Document("file:///w/box.h", "c", 1, cpp_text)) == "cpp"
    assert server.language_of(Document("file:///w/point.h", "c", 1, c_text)) == "c"
    assert server.language_of(Document("file:///w/point.h", "objective-c", 1, c_text)) == "c"
    assert server.language_of(Document("file:///w/point.c", "c", 1, c_text)) == "c"
    assert server.language_of(Document("file:///w/a.py", "python", 1, "x = 1\n")) == "python"
    assert server.language_of(Document("file:///w/a.txt", "plaintext", 1, "x")) is None


async def test_a_fill_whose_checks_ran_out_of_budget_is_not_applied_unverified(
        tiny_model_dir):
    """Issue 13's quick fix at `margin = <|hole|>` that filled the hole with nothing: its
    checks answered UNKNOWN (out of budget), which decoding accepts and marks unverified, and
    the server applied it. Now an unverified fill is applied only after one check of the
    filled text says YES; here (1,000 steps) none can, so the answer says so and no edit
    leaves `margin = `."""
    client = await start_server()
    try:
        await client.initialize(tiny_options(tiny_model_dir, maxCheckSteps=1000),
                                timeout=scaled(30))
        uri = "file:///project/margin.py"
        open_doc(client, uri, TEXTWRAP_LIKE)
        line = TEXTWRAP_LIKE.splitlines().index("    margin = <|hole|>")
        actions = await client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": line, "character": 0},
                      "end": {"line": line, "character": 0}},
            "context": {"diagnostics": [], "only": ["quickfix"]}}, timeout=scaled(10))
        fix, = [a for a in actions if a["title"] == f"Fill the hole at line {line + 1}"]
        answer = await asyncio.wait_for(
            client.request_nowait("codeAction/resolve", fix), scaled(120))
    finally:
        await client.stop(timeout=scaled(10))
    assert "edit" not in answer.get("result", {}), answer
    assert "no filling it could verify" in answer["error"]["message"]
    assert "maxCheckSteps" in answer["error"]["message"]
