"""Cancellation through the real server: a cancelled command never edits the document, a
cancelled fill stops within milliseconds (measured by the server, reported in its log), the
newest request on a document wins, and a model reload does not wait behind cancelled work.
The tiny random model of tests/conftest.py fills 12 holes, which takes seconds."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
from lsp_testing import inline_params, open_doc, progress_reports, scaled, tiny_options, until

from holefill.lsp.client import RawClient

pytestmark = pytest.mark.asyncio

MANY = "".join(f"x{i} = <|hole|>\n" for i in range(12))
STOPPED = re.compile(r"(.+): stopped (\d+) ms after its cancel \((.+)\)")


def stops(client: RawClient) -> list[tuple[str, int, str]]:
    out = []
    for m in client.notifications("window/logMessage"):
        found = STOPPED.match(m["message"])
        if found:
            out.append((found.group(1), int(found.group(2)), found.group(3)))
    return out


async def fill_under_way(client: RawClient) -> None:
    """Wait until a fill reports its second hole: the model is at work."""
    ok = await until(lambda: any("hole 2 of" in (r.get("message") or "")
                                 for r in progress_reports(client)), scaled(60))
    assert ok, "the fill did not get under way"


async def test_a_cancelled_fill_holes_command_never_applies_its_edit(served):
    uri = "file:///project/many.py"
    open_doc(served, uri, MANY)
    command = served.request_nowait("workspace/executeCommand", {
        "command": "holefill.fillHoles", "arguments": [{"uri": uri, "positions": []}]},
        msg_id="fill-cmd")
    await fill_under_way(served)
    served.cancel("fill-cmd")
    answer = await asyncio.wait_for(command, scaled(10))
    assert answer.get("error", {}).get("code") == -32800, answer
    # the model thread is free again once the next request on another document is served
    other = "file:///project/other.py"
    open_doc(served, other, "y = [1,\n")
    await served.request("textDocument/inlineCompletion", inline_params(other, 0, 7),
                         timeout=scaled(120))
    await asyncio.sleep(0.5)
    edits = [r for r in served.received.requests if r["method"] == "workspace/applyEdit"]
    assert edits == [], "a cancelled command edited the document"
    (name, ms, reason), = [s for s in stops(served) if s[0] == "fill holes"]
    assert reason == "cancelled" and ms < scaled(0.5) * 1000


async def test_a_cancelled_code_action_resolve_stops_within_milliseconds(served):
    uri = "file:///project/many2.py"
    open_doc(served, uri, MANY)
    actions = await served.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fillHoles"]}}, timeout=scaled(10))
    resolve = served.request_nowait("codeAction/resolve", actions[0], msg_id="resolve")
    await fill_under_way(served)
    served.cancel("resolve")
    answer = await asyncio.wait_for(resolve, scaled(10))
    assert answer.get("error", {}).get("code") == -32800
    assert await until(lambda: stops(served), scaled(10))
    (name, ms, reason), = stops(served)
    print(f"stopped {ms} ms after the cancel")
    assert ms < scaled(0.5) * 1000


async def test_the_newest_request_on_a_document_wins(served):
    uri = "file:///project/storm.py"
    open_doc(served, uri, "def f(a):\n    return (a +\n")
    storm = [served.request_nowait("textDocument/inlineCompletion", inline_params(uri, 1, 15))
             for _ in range(30)]
    answers = await asyncio.wait_for(asyncio.gather(*storm), scaled(120))
    assert all("error" not in a for a in answers)
    assert answers[-1]["result"] and answers[-1]["result"]["items"]
    # the superseded ones were answered without running the model (at most the first ran)
    ran = [m for m in served.notifications("window/logMessage")
           if m["message"].startswith("inline completion:")]
    assert len(ran) <= 2


async def test_a_model_reload_does_not_wait_behind_a_running_fill(served, tiny_model_dir,
                                                                   tmp_path):
    other_model = Path(shutil.copytree(tiny_model_dir, tmp_path / "other-model"))
    uri = "file:///project/many3.py"
    open_doc(served, uri, MANY)
    command = served.request_nowait("workspace/executeCommand", {
        "command": "holefill.fillHoles", "arguments": [{"uri": uri, "positions": []}]})
    await fill_under_way(served)
    served.notify("workspace/didChangeConfiguration",
                  {"settings": {"holefill": tiny_options(other_model)}})
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    second = "file:///project/second.py"
    open_doc(served, second, "y = [1,\n")
    res = await served.request("textDocument/inlineCompletion", inline_params(second, 0, 7),
                               timeout=scaled(120))
    waited = loop.time() - t0
    assert res is not None
    answer = await asyncio.wait_for(command, scaled(10))
    result = answer.get("result")
    assert result["applied"] is False and "model is being replaced" in result["reason"]
    assert [s[2] for s in stops(served)] == ["the model is being replaced"]
    assert waited < scaled(10), f"the reload waited {waited:.1f} s"
