"""A catalogue of malformed input for the server, and the table of how it answers each one.

Every entry is bytes a broken client could write; after each, a valid request must still be
answered (`bad_input_table`). Used by the protocol tests and the soak benchmark
(`benchmarks/soak_lsp.py`), which prints the table.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from holefill.lsp.client import RawClient
from holefill.lsp.framing import frame


def _body(msg_id: str, method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                       "params": params}).encode()


@dataclass(frozen=True)
class BadInput:
    name: str
    make: Callable[[str, str], bytes]  # (request id, document uri) -> the bytes to write
    answered: bool  # whether the bad request itself must get an answer
    pause_s: float = 0.0  # wait before the next valid request (nothing follows at once)


def _action(uri: str, **change: Any) -> dict[str, Any]:
    params = {"textDocument": {"uri": uri},
              "range": {"start": {"line": 0, "character": 0},
                        "end": {"line": 0, "character": 0}},
              "context": {"diagnostics": []}}
    params.update(change)
    return params


def _at(uri: str, line: Any, character: Any = 0) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 1}}


def _ok(i: str, uri: str) -> bytes:
    return _body(i, "textDocument/codeAction", _action(uri))


def _header(value: bytes) -> Callable[[str, str], bytes]:
    return lambda i, u: b"Content-Length: " + value + b"\r\n\r\n" + _ok(i, u)


BAD_INPUTS: tuple[BadInput, ...] = (
    BadInput("Content-Length too short (by 5)",
             lambda i, u: b"Content-Length: %d\r\n\r\n" % (len(_ok(i, u)) - 5) + _ok(i, u),
             True),
    BadInput("Content-Length too long (by 50), next message right after",
             lambda i, u: b"Content-Length: %d\r\n\r\n" % (len(_ok(i, u)) + 50) + _ok(i, u),
             True),
    BadInput("Content-Length too long (by 50), nothing after",
             lambda i, u: b"Content-Length: %d\r\n\r\n" % (len(_ok(i, u)) + 50) + _ok(i, u),
             True, pause_s=1.0),
    BadInput("Content-Length negative", _header(b"-12"), True),
    BadInput("Content-Length not a number", _header(b"twelve"), True),
    BadInput("Content-Length 10^12", _header(b"1000000000000"), True),
    BadInput("Content-Length missing (Content-Type only)",
             lambda i, u: b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + _ok(i, u), True),
    BadInput("header name in lower case",
             lambda i, u: b"content-length: %d\r\n\r\n" % len(_ok(i, u)) + _ok(i, u), True),
    BadInput("headers ending in LF only",
             lambda i, u: b"Content-Length: %d\n\n" % len(_ok(i, u)) + _ok(i, u), True),
    BadInput("a line of junk before the header",
             lambda i, u: b"hello server\r\n" + frame(_ok(i, u)), True),
    BadInput("binary junk", lambda i, u: b"\x00\xff\xfe\x80 \x1b[2J", False),
    BadInput("body is not JSON", lambda i, u: frame(b"this is not json"), False),
    BadInput("body is cut JSON, next frame inside it",
             lambda i, u: b'Content-Length: 24\r\n\r\n{"jsonrpc": "2.0", "id":', False),
    BadInput("body is a JSON array (a batch)", lambda i, u: frame(b"[1, 2, 3]"), False),
    BadInput("body is a JSON number", lambda i, u: frame(b"42"), False),
    BadInput("no \"jsonrpc\" member",
             lambda i, u: frame(json.dumps({"id": i, "method": "shutdown"}).encode()), True),
    BadInput("id is an object",
             lambda i, u: frame(json.dumps({"jsonrpc": "2.0", "id": {"a": 1},
                                            "method": "shutdown"}).encode()), False),
    BadInput("method is a number",
             lambda i, u: frame(json.dumps({"jsonrpc": "2.0", "id": i,
                                            "method": 5}).encode()), True),
    BadInput("unknown method", lambda i, u: frame(_body(i, "holefill/noSuchMethod", {})), True),
    BadInput("inline completion at line -1",
             lambda i, u: frame(_body(i, "textDocument/inlineCompletion", _at(u, -1))), True),
    BadInput("inline completion at line 2^40",
             lambda i, u: frame(_body(i, "textDocument/inlineCompletion", _at(u, 2**40))),
             True),
    BadInput('inline completion at line "a"',
             lambda i, u: frame(_body(i, "textDocument/inlineCompletion", _at(u, "a"))), True),
    BadInput("inline completion without a position",
             lambda i, u: frame(_body(i, "textDocument/inlineCompletion",
                                      {"textDocument": {"uri": u}})), True),
    BadInput("inline completion past the last line",
             lambda i, u: frame(_body(i, "textDocument/inlineCompletion", _at(u, 4000))), True),
    BadInput("inline completion in a document that is not open",
             lambda i, u: frame(_body(i, "textDocument/inlineCompletion",
                                      _at("file:///nowhere.py", 0))), True),
    BadInput("code action without a range",
             lambda i, u: frame(_body(i, "textDocument/codeAction",
                                      {"textDocument": {"uri": u},
                                       "context": {"diagnostics": []}})), True),
    BadInput("code action with params null",
             lambda i, u: frame(_body(i, "textDocument/codeAction", None)), True),
    BadInput("code action resolve with data not ours",
             lambda i, u: frame(_body(i, "codeAction/resolve",
                                      {"title": "x", "data": {"holes": "all"}})), True),
    BadInput("fillHoles command with a number for arguments",
             lambda i, u: frame(_body(i, "workspace/executeCommand",
                                      {"command": "holefill.fillHoles", "arguments": [42]})),
             True),
    BadInput("fillHoles command at a negative position",
             lambda i, u: frame(_body(i, "workspace/executeCommand",
                                      {"command": "holefill.fillHoles",
                                       "arguments": [{"uri": u, "positions": [
                                           {"line": -1, "character": 0}]}]})), True),
    BadInput("didChange without a text document (a notification)",
             lambda i, u: frame(json.dumps({"jsonrpc": "2.0",
                                            "method": "textDocument/didChange",
                                            "params": {"contentChanges": []}}).encode()),
             False),
    BadInput("didChange of a document that is not open",
             lambda i, u: frame(json.dumps({
                 "jsonrpc": "2.0", "method": "textDocument/didChange",
                 "params": {"textDocument": {"uri": "file:///nowhere.py", "version": 3},
                            "contentChanges": [{"text": "x"}]}}).encode()), False),
    BadInput("cancel of a request that does not exist",
             lambda i, u: frame(json.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                            "params": {"id": "nobody"}}).encode()), False),
    BadInput("a second initialize",
             lambda i, u: frame(_body(i, "initialize", {"processId": None, "rootUri": None,
                                                        "capabilities": {}})), True),
)


@dataclass
class Row:
    name: str
    answer: str  # what the server answered to the bad input
    next_answered: bool  # the valid request after it was answered
    next_ms: float


def _describe(message: dict[str, Any] | None) -> str:
    if message is None:
        return "no answer"
    if "error" in message:
        err = message["error"]
        text = str(err.get("message", ""))
        return f"{err.get('code')} {text[:90]}"
    result = message.get("result")
    return "result " + (json.dumps(result)[:60] if result is not None else "null")


async def bad_input_table(client: RawClient, uri: str, timeout: float = 30) -> list[Row]:
    """Write each bad input, then a valid code action request; what came back."""
    rows = []
    loop = asyncio.get_running_loop()
    for n, bad in enumerate(BAD_INPUTS):
        bad_id = f"bad-{n}"
        answer = client.expect(bad_id, bad.name)
        orphans = len(client.received.orphans)
        client.send_bytes(bad.make(bad_id, uri))
        if bad.pause_s:
            await asyncio.sleep(bad.pause_s)
        t0 = loop.time()
        try:
            await asyncio.wait_for(client.request_nowait(
                "textDocument/codeAction", _action(uri), msg_id=f"next-{n}"), timeout)
            ok = True
        except (TimeoutError, ConnectionError):
            ok = False
        ms = 1e3 * (loop.time() - t0)
        await asyncio.sleep(0.05)
        got = answer.result() if answer.done() and not answer.exception() else None
        if got is None and len(client.received.orphans) > orphans:
            got = client.received.orphans[-1]
        rows.append(Row(bad.name, _describe(got), ok, ms))
        client.sent.pop(bad_id, None)
    return rows


def format_table(rows: list[Row]) -> str:
    out = ["| malformed input | the server's answer | next valid request |", "|---|---|---|"]
    for r in rows:
        nxt = f"answered in {r.next_ms:.0f} ms" if r.next_answered else "**NOT answered**"
        out.append(f"| {r.name} | {r.answer.replace('|', '/')} | {nxt} |")
    return "\n".join(out)
