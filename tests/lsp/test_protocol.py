"""The protocol of the real `holefill serve` over stdio, byte by byte (holefill.lsp.client):
malformed frames and params, the lifecycle, exit status, versions, closing documents.

Each test is a repro from issue 16's fuzz-and-soak; against the server before that issue the
bad-input table had 0 of 20 later requests answered after the first framing error, params
that did not validate got no answer, and `exit` without `shutdown` exited 0.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from lsp_testing import scaled, tiny_options, until

from holefill.lsp.badinput import BAD_INPUTS, bad_input_table, format_table
from holefill.lsp.client import NO_ANSWER, RawClient, ResponseError

pytestmark = pytest.mark.asyncio

TEXT = "def f(a):\n    return (a +\n\nx = 1\n"


def open_doc(client: RawClient, uri: str, text: str = TEXT, version: int = 1,
             language: str = "python") -> None:
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": version, "text": text}})


def action_params(uri: str, **extra) -> dict:
    return {"textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0},
                      "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []}, **extra}


async def test_every_malformed_input_is_followed_by_an_answered_request(served):
    uri = "file:///project/bad.py"
    open_doc(served, uri)
    rows = await bad_input_table(served, uri, timeout=scaled(10))
    print(format_table(rows))
    assert [r.name for r in rows if not r.next_answered] == []
    must = {b.name for b in BAD_INPUTS if b.answered}
    assert [r.name for r in rows if r.name in must and r.answer == "no answer"] == []
    assert not any("Traceback" in r.answer for r in rows)
    assert not served.received.bad_frames  # the server's own output is always well framed


@pytest.mark.parametrize("position, field", [
    ({"line": -1, "character": 0}, "line"),
    ({"line": 2**40, "character": 0}, "line"),
    ({"line": "a", "character": 0}, "line"),
    ({"line": 0, "character": -3}, "character"),
])
async def test_params_that_do_not_validate_get_invalid_params(served, position, field):
    uri = "file:///project/p.py"
    open_doc(served, uri)
    with pytest.raises(ResponseError) as err:
        await served.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": position,
            "context": {"triggerKind": 1}}, timeout=scaled(10))
    assert err.value.code == -32602
    assert field in err.value.message and "Traceback" not in err.value.message


async def test_a_code_action_without_a_range_gets_invalid_params(served):
    uri = "file:///project/r.py"
    open_doc(served, uri)
    params = action_params(uri)
    del params["range"]
    with pytest.raises(ResponseError) as err:
        await served.request("textDocument/codeAction", params, timeout=scaled(10))
    assert err.value.code == -32602 and "range" in err.value.message


async def test_client_mistakes_are_invalid_params_with_a_plain_message(served):
    uri = "file:///project/m.py"
    open_doc(served, uri)
    cases = [
        ("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                           "position": {"line": 40, "character": 0},
                                           "context": {"triggerKind": 1}},
         "past the last line"),
        ("textDocument/inlineCompletion", {"textDocument": {"uri": "file:///nowhere.py"},
                                           "position": {"line": 0, "character": 0},
                                           "context": {"triggerKind": 1}},
         "not open"),
        ("codeAction/resolve", {"title": "x", "data": None}, "carries no holes"),
        ("workspace/executeCommand", {"command": "holefill.fillHoles", "arguments": [42]},
         "takes"),
    ]
    for method, params, words in cases:
        answer = await served.request_nowait(method, params)
        error = answer.get("error")
        assert error is not None and error["code"] == -32602, (method, answer)
        assert words in error["message"] and "Traceback" not in json.dumps(answer)
        assert error.get("data") is None


async def test_requests_before_initialize_get_server_not_initialized(raw):
    uri = "file:///project/early.py"
    open_doc(raw, uri)  # dropped: it comes before initialize
    with pytest.raises(ResponseError) as err:
        await raw.request("textDocument/codeAction", action_params(uri), timeout=scaled(10))
    assert err.value.code == -32002
    await raw.initialize({}, timeout=scaled(30))
    with pytest.raises(ResponseError, match="not open"):
        await raw.request("textDocument/codeAction", action_params(uri), timeout=scaled(10))


async def test_requests_after_shutdown_get_invalid_request_and_exit_is_0(raw):
    await raw.initialize({}, timeout=scaled(30))
    await raw.request("shutdown", timeout=scaled(10))
    with pytest.raises(ResponseError) as err:
        await raw.request("textDocument/codeAction", action_params("file:///x.py"),
                          timeout=scaled(10))
    assert err.value.code == -32600
    raw.notify("exit")
    assert await raw.wait_exit(scaled(10)) == 0


async def test_exit_without_shutdown_exits_1(raw):
    await raw.initialize({}, timeout=scaled(30))
    raw.notify("exit")
    assert await raw.wait_exit(scaled(10)) == 1


async def test_a_late_answer_to_a_request_the_server_gave_up_is_ignored(raw, tiny_model_dir):
    """The server asks for a progress token for a fill; the fill is cancelled while it waits,
    and the client's answer comes after that. pygls raised InvalidStateError out of its read
    loop there, and the server died (found by the soak)."""
    raw.handlers["window/workDoneProgress/create"] = lambda p: NO_ANSWER
    await raw.initialize(tiny_options(tiny_model_dir), timeout=scaled(30))
    uri = "file:///project/late.py"
    open_doc(raw, uri, "x = <|hole|>\n")
    actions = await raw.request("textDocument/codeAction", action_params(uri),
                                timeout=scaled(10))
    fill = raw.request_nowait("codeAction/resolve", actions[0], msg_id="fill")

    def creates() -> list:
        return [r for r in raw.received.requests
                if r["method"] == "window/workDoneProgress/create"]

    assert await until(lambda: len(creates()) >= 2, scaled(30))  # the model's, the fill's
    raw.cancel("fill")
    answer = await asyncio.wait_for(fill, scaled(10))
    assert answer["error"]["code"] == -32800
    for request in creates():
        raw.send({"jsonrpc": "2.0", "id": request["id"], "result": None})
    # still alive
    actions = await raw.request("textDocument/codeAction", action_params(uri),
                                timeout=scaled(10))
    assert actions
    assert not any("Traceback" in line for line in raw.stderr)


async def test_the_end_of_input_ends_the_server(raw):
    await raw.initialize({}, timeout=scaled(30))
    raw.close_input()
    assert await raw.wait_exit(scaled(10)) == 1


async def test_a_change_with_a_lower_version_is_not_applied(served):
    uri = "file:///project/v.py"
    open_doc(served, uri, "x = 1\n", version=5)

    def change(version: int, text: str) -> None:
        served.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                          "end": {"line": 0, "character": 0}},
                                "text": text}]})

    change(3, "<|hole|>")  # an older version: must not be applied
    actions = await served.request("textDocument/codeAction", action_params(uri),
                                   timeout=scaled(10))
    assert actions == []  # no marker: the stale change was refused
    change(6, "<|hole|>")
    actions = await served.request("textDocument/codeAction", action_params(uri),
                                   timeout=scaled(10))
    assert actions and all(a["data"]["version"] == 6 for a in actions)
    logs = [m["message"] for m in served.notifications("window/logMessage")]
    assert any("older than" in m for m in logs)


async def test_closed_documents_free_their_memory(served):
    text = "".join(f"def f{i}(a):\n    return a * {i} + <|hole|>\n\n" for i in range(60))

    async def cycle(start: int, n: int) -> None:
        for k in range(start, start + n):
            uri = f"file:///project/many{k}.py"
            open_doc(served, uri, text)
            served.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        # a request answered after them: every notification before it was handled
        with pytest.raises(ResponseError):
            await served.request("textDocument/codeAction", action_params("file:///no.py"),
                                 timeout=scaled(30))

    # the model loaded (a completion waits for it), allocator pools and caches warm
    uri = "file:///project/first.py"
    open_doc(served, uri)
    await served.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 15},
        "context": {"triggerKind": 1}}, timeout=scaled(60))
    await cycle(0, 1000)  # the allocator's pools grow to their working size
    await asyncio.sleep(1)
    before = served.rss_kb()
    await cycle(1000, 2000)
    after = served.rss_kb()
    assert before is not None and after is not None
    print(f"RSS before {before / 1024:.1f} MB, after 2,000 more open+close {after / 1024:.1f}")
    assert after - before < 8 * 1024, f"2,000 closed documents kept {after - before} kB"


class _Sink:
    def __init__(self) -> None:
        self.data: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.data.append(data)


async def test_open_and_close_leave_no_bookkeeping_behind():
    """In the process: the protocol's table of running handlers is empty again after 2,000
    documents were opened and closed (pygls kept a future per didOpen and didClose)."""
    from holefill.lsp.server import server

    protocol = server.protocol
    protocol.set_writer(_Sink())
    protocol.handle_message(protocol.structure_message({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
    for k in range(2000):
        uri = f"file:///project/n{k}.py"
        for message in (
                {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                    "textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                     "text": "x = 1\n"}}},
                {"jsonrpc": "2.0", "method": "textDocument/didClose",
                 "params": {"textDocument": {"uri": uri}}}):
            protocol.handle_message(protocol.structure_message(message))
    await asyncio.sleep(0)
    assert len(server.store) == 0
    assert len(protocol._request_futures) == 0


async def test_many_bad_frames_in_a_row_cost_nothing_after_them(raw):
    await raw.initialize({}, timeout=scaled(30))
    for n in range(50):
        raw.send_bytes(b"Content-Length: -1\r\n\r\n{\"broken\": " + b"%d" % n)
    answer = await asyncio.wait_for(raw.request_nowait("shutdown"), scaled(10))
    assert answer.get("result") is None and "error" not in answer
    parse_errors = [m for m in raw.received.orphans if m["error"]["code"] == -32700]
    assert len(parse_errors) == 50
