"""The language server with a remote model, end to end: `holefill serve` configured with the
URL of a real inference server (tests/inference_server.py: the tiny random model of
tests/conftest.py behind llama.cpp's HTTP API, in its own process), driven by an LSP client.

Pinned here (issue 20): fills through the server parse (`ast.parse`); an inference server
killed in the middle of a request, down at the start, answering errors or garbage, or not
answering at all gives the editor one plain message naming the server and what happened,
never a hang, and the language server keeps answering; while it stays down, the requests after
the first fail into the log only (one message per outage, not a pop-up per keystroke); once
the inference server is back (on the same port) the next request works and the editor is told
once; `$/cancelRequest` during a remote fill closes the HTTP
request (the inference server sees its client go and stops generating) within milliseconds.

The fill test uses pytest-lsp's client, as tests/lsp/test_server_e2e.py does; the others use
holefill's raw client (tests/lsp/test_cancel.py), which sends `$/cancelRequest` for a request
id of its choosing and keeps every message with the time it came."""

from __future__ import annotations

import ast
import asyncio
import sys
import sysconfig
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import pytest_lsp
from lsp_testing import inline_params, open_doc, scaled, server_env, start_server, until
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from holefill.decode.llama_server import LlamaServer, free_port, llama_cpp_available
from holefill.lsp.client import RawClient
from inference_server import InferenceServer

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.asyncio
TIMEOUT_S = 2  # holefill.remoteTimeout in these tests: the longest wait for one answer
ERROR, INFO = 1, 3  # MessageType.Error, .Info


def remote_options(url: str, **extra: Any) -> dict[str, Any]:
    return {"model": url, "maxNewTokens": 16, "topK": 4, "debounceMs": 0,
            "remoteTimeout": TIMEOUT_S, **extra}


@pytest.fixture(scope="module")
def inference(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[InferenceServer]:
    """One inference server for the tests that do not kill it; each heals it after use."""
    log = tmp_path_factory.mktemp("inference") / "server.log"
    srv = InferenceServer(tiny_model_dir, free_port(), log).start()
    yield srv
    srv.stop()


@pytest.fixture
def shared(inference: InferenceServer) -> Iterator[InferenceServer]:
    inference.control(None, token_delay_s=0.0)
    yield inference
    if inference.process is not None and inference.process.poll() is None:
        inference.control(None, token_delay_s=0.0)


@pytest.fixture
def own(tiny_model_dir: Path, tmp_path: Path) -> Iterator[InferenceServer]:
    """An inference server of this test's own, not started: the test kills and starts it."""
    srv = InferenceServer(tiny_model_dir, free_port(), tmp_path / "server.log")
    yield srv
    srv.stop()


@pytest_asyncio.fixture
async def lsp() -> AsyncIterator[RawClient]:
    client = await start_server()
    yield client
    await client.stop(timeout=scaled(5))


async def initialized(client: RawClient, url: str, *, loaded: bool = True) -> None:
    await client.initialize(remote_options(url), timeout=scaled(30))
    if loaded:
        assert await until(lambda: logged(client, "model loaded:"), scaled(30)), \
            shown(client)


def logged(client: RawClient, start: str) -> list[str]:
    return [m["message"] for m in client.notifications("window/logMessage")
            if m["message"].startswith(start)]


def shown(client: RawClient, kind: int = ERROR) -> list[str]:
    return [m["message"] for m in client.notifications("window/showMessage")
            if m["type"] == kind]


def repeats(client: RawClient) -> list[str]:
    """The model's failures logged (type Error) rather than shown: repeats in one outage."""
    return [m["message"] for m in client.notifications("window/logMessage")
            if m["type"] == ERROR and "; shown once until the model answers)" in m["message"]]


def applied(text: str, result: dict[str, Any] | None, line: int, character: int) -> str:
    """``text`` with the first inline suggestion accepted (single-line ranges)."""
    assert result is not None and result["items"], "no suggestion"
    item = result["items"][0]
    lines = text.splitlines(keepends=True)
    start = sum(len(x) for x in lines[:line]) + character
    end_pos = item["range"]["end"]
    end = sum(len(x) for x in lines[:end_pos["line"]]) + end_pos["character"]
    return text[:start] + item["insertText"] + text[end:]


BROKEN = "def f(x):\n    return (x +\n"  # the cursor at the end of line 1
CURSOR = (1, 15)


async def suggest(client: RawClient, uri: str, timeout: float = 10) -> Any:
    return await client.request("textDocument/inlineCompletion",
                                inline_params(uri, *CURSOR), timeout=scaled(timeout))


async def answered(client: RawClient, uri: str) -> tuple[dict, float]:
    """An inline completion's whole answer and how long it took."""
    t0 = time.monotonic()
    answer = await asyncio.wait_for(client.request_nowait(
        "textDocument/inlineCompletion", inline_params(uri, *CURSOR)), scaled(15))
    return answer, time.monotonic() - t0


async def answered_after_a_message(client: RawClient, uri: str) -> tuple[dict, list[str], float]:
    """An inline completion's whole answer, the error messages shown meanwhile, and how long
    the answer took."""
    before = len(shown(client))
    t0 = time.monotonic()
    answer = await asyncio.wait_for(client.request_nowait(
        "textDocument/inlineCompletion", inline_params(uri, *CURSOR)), scaled(15))
    took = time.monotonic() - t0
    assert await until(lambda: len(shown(client)) > before, scaled(2)), "no message shown"
    return answer, shown(client)[before:], took


# ------------------------------------------------------------------- fills through the server

CONFIG = ClientServerConfig(server_command=[sys.executable, "-m", "holefill", "serve"],
                            server_env=server_env())


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, inference: InferenceServer):
    inference.control(None, token_delay_s=0.0)
    params = types.InitializeParams(
        capabilities=client_capabilities("neovim"),
        initialization_options=remote_options(inference.url))
    await asyncio.wait_for(lsp_client.initialize_session(params), scaled(30))
    yield
    await asyncio.wait_for(lsp_client.shutdown_session(), scaled(10))


def _stdlib_cut(name: str, width: int) -> tuple[str, int]:
    """A standard-library file with ``width`` characters of its first multi-statement
    function's last statement deleted (the file no longer parses), and where."""
    text = (Path(sysconfig.get_paths()["stdlib"]) / name).read_text()
    fn = next(n for n in ast.walk(ast.parse(text))
              if isinstance(n, ast.FunctionDef) and len(n.body) > 1)
    stmt = fn.body[-1]
    lines = text.splitlines(keepends=True)
    a = sum(len(x) for x in lines[: stmt.lineno - 1]) + stmt.col_offset
    for n in (width, 12, 6, 3):
        try:
            ast.parse(text[:a] + text[a + n:])
        except SyntaxError:
            return text[:a] + text[a + n:], a
    raise AssertionError(f"no deletion breaks {name}")


def _position(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


@pytest.mark.parametrize("module", ["colorsys.py", "bisect.py", "heapq.py"])
async def test_inline_suggestions_through_an_inference_server_make_the_file_parse(
        client: LanguageClient, inference: InferenceServer, module: str) -> None:
    text, at = _stdlib_cut(module, 30)
    uri = f"file:///project/remote_{module}"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=text)))
    asked = len(inference.events("completion-done"))
    result = await asyncio.wait_for(client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=_position(text, at),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Invoked))), scaled(60))
    assert result is not None and result.items, f"no suggestion for {module}"
    item = result.items[0]
    assert item.range is not None and item.range.start == _position(text, at)
    end = at + (item.range.end.character - item.range.start.character)
    ast.parse(text[:at] + str(item.insert_text) + text[end:])
    assert len(inference.events("completion-done")) > asked, "the server was not asked"
    assert not [m for m in client.messages if m.type == types.MessageType.Error]


async def test_fill_holes_through_an_inference_server_makes_the_file_parse(
        client: LanguageClient, inference: InferenceServer) -> None:
    text = ("def mean(xs):\n    total = <|hole|>\n    return total / <|hole|>\n\n"
            "ys = [1, 2, <|hole|>\n")
    uri = "file:///project/remote_holes.py"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=text)))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(line=0, character=0),
                          types.Position(line=5, character=0)),
        context=types.CodeActionContext(diagnostics=[], only=["source.fillHoles"])))
    assert actions and actions[0].title.startswith("Fill 3 hole(s)")
    resolved = await asyncio.wait_for(client.code_action_resolve_async(actions[0]), scaled(60))
    assert resolved.edit is not None and resolved.edit.document_changes
    edits = resolved.edit.document_changes[0].edits
    assert len(edits) == 3
    lines = text.splitlines(keepends=True)
    out = text
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        a = sum(len(x) for x in lines[: e.range.start.line]) + e.range.start.character
        b = sum(len(x) for x in lines[: e.range.end.line]) + e.range.end.character
        out = out[:a] + e.new_text + out[b:]
    assert "<|hole|>" not in out
    ast.parse(out)


# ------------------------------------------------------------------- a killed server

async def test_a_killed_inference_server_gives_one_message_per_outage_and_works_once_back(
        lsp: RawClient, own: InferenceServer) -> None:
    own.token_delay_s = 0.05  # 16 tokens a request take 0.8 s: long enough to kill it in one
    own.start()
    await initialized(lsp, own.url)
    uri = "file:///project/killed.py"
    open_doc(lsp, uri, BROKEN)
    before = len(shown(lsp))
    pending = lsp.request_nowait("textDocument/inlineCompletion", inline_params(uri, *CURSOR))
    assert await until(lambda: own.events("completion-start"), scaled(10))
    own.kill()
    t0 = time.monotonic()
    answer = await asyncio.wait_for(pending, scaled(10))
    print(f"answered {time.monotonic() - t0:.2f} s after the kill")
    # no suggestion, and the editor says which server and what happened, once
    assert "error" not in answer and not (answer["result"] or {}).get("items")
    assert await until(lambda: len(shown(lsp)) > before, scaled(2))
    (message,) = shown(lsp)[before:]
    assert message == (f"holefill: cannot reach the inference server at {own.url}/completions: "
                       "connection refused (is it running?)")
    # while it is down, the language server keeps answering, and the failures go to the log
    # only: a user typing gets no pop-up per keystroke
    for _ in range(4):
        answer, took = await answered(lsp, uri)
        assert not (answer.get("result") or {}).get("items") and took < scaled(3)
    assert await until(lambda: len(repeats(lsp)) == 4, scaled(2)), repeats(lsp)
    assert repeats(lsp)[0].startswith(f"holefill: cannot reach the inference server at "
                                      f"{own.root}/")  # now a tokenization fails first
    assert "(failure 2 since " in repeats(lsp)[0] and "(failure 5 since " in repeats(lsp)[-1]
    assert len(shown(lsp)) == before + 1
    # back on the same port: the next request is answered by the new process, and the editor
    # is told once that the server answers again
    own.start()
    result = await suggest(lsp, uri, timeout=30)
    ast.parse(applied(BROKEN, result, *CURSOR))
    assert await until(lambda: shown(lsp, INFO), scaled(2))
    (back,) = shown(lsp, INFO)
    assert back.startswith(f"holefill: the inference server at {own.url} answers again (5 "
                           "request(s) failed meanwhile, over ")
    assert len(shown(lsp)) == before + 1
    # a second outage is a new one: shown again (another document: the first one's
    # suggestion is cached)
    own.kill()
    other = "file:///project/killed_again.py"
    open_doc(lsp, other, BROKEN)
    answer, messages, took = await answered_after_a_message(lsp, other)
    assert messages[0].startswith(f"holefill: cannot reach the inference server at {own.root}/")


async def test_an_inference_server_down_at_the_start_is_named_once_and_used_once_it_is_up(
        lsp: RawClient, own: InferenceServer) -> None:
    await initialized(lsp, own.url, loaded=False)
    assert await until(lambda: shown(lsp), scaled(10)), "the failed load was not shown"
    assert shown(lsp) == [f"holefill: cannot reach the inference server at {own.url}/models: "
                          "connection refused (is it running?)"]
    uri = "file:///project/late.py"
    open_doc(lsp, uri, BROKEN)
    for _ in range(3):  # each request tries the load again: logged, not shown
        answer, took = await answered(lsp, uri)
        assert not (answer.get("result") or {}).get("items") and took < scaled(3)
    assert await until(lambda: len(repeats(lsp)) == 3, scaled(2)), repeats(lsp)
    assert len(shown(lsp)) == 1
    own.start()
    result = await suggest(lsp, uri, timeout=30)
    ast.parse(applied(BROKEN, result, *CURSOR))
    assert await until(lambda: shown(lsp, INFO), scaled(2))
    assert shown(lsp, INFO)[0].startswith(f"holefill: the inference server at {own.url} "
                                          "answers again (4 request(s) failed meanwhile")


def open_connections(port: int) -> set[int]:
    """The client ports of the established TCP connections to 127.0.0.1:``port`` (Linux)."""
    out = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state = fields[1], fields[2], fields[3]
        if state == "01" and int(local.split(":")[1], 16) == port:
            out.add(int(remote.split(":")[1], 16))
    return out


async def a_request_under_way(port: int, timeout: float, lasting: float = 0.05) -> bool:
    """Wait until one connection to ``port`` has been open for ``lasting`` seconds: a request
    the server is working on (its tokenizer's answers take a millisecond)."""
    seen: dict[int, float] = {}
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        now = time.monotonic()
        conns = open_connections(port)
        seen = {c: seen.get(c, now) for c in conns}
        if any(now - t >= lasting for t in seen.values()):
            return True
        await asyncio.sleep(0.005)
    return False


@pytest.fixture(scope="module")
def bundled_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("gguf", reason="the GGUF export needs the gguf package")
    from holefill.decode.gguf_export import export_gguf

    return export_gguf(None, tmp_path_factory.mktemp("llama") / "default.gguf")


@pytest.mark.skipif(not llama_cpp_available(), reason=(
    "llama-cpp-python[server] is not installed (it builds llama.cpp from source, about 25 "
    "minutes; .ci/run does not install it): tests/inference_server.py stands in above"))
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp")
async def test_a_killed_llama_cpp_server_gives_a_clear_message_and_works_again_once_back(
        lsp: RawClient, bundled_gguf: Path, tmp_path: Path) -> None:
    """The same as with tests/inference_server.py, with llama.cpp's server (llama-cpp-python)
    serving the bundled model; it is killed while it works on a request."""
    # a long file before the cursor: the server reads a prompt of about 1,500 tokens first,
    # which takes long enough (a second or so) to be killed in the middle of it
    before = (Path(sysconfig.get_paths()["stdlib"]) / "heapq.py").read_text()[:6000]
    before = before[: before.rindex("\n") + 1]
    text = before + BROKEN
    line, character = before.count("\n") + CURSOR[0], CURSOR[1]
    srv = LlamaServer(bundled_gguf, free_port(), n_ctx=2048,
                      log=tmp_path / "llama.log").start()
    try:
        await lsp.initialize(remote_options(srv.url, fimFormat="spm"), timeout=scaled(30))
        assert await until(lambda: logged(lsp, "model loaded:"), scaled(30)), shown(lsp)
        uri = "file:///project/llama_killed.py"
        open_doc(lsp, uri, text)
        pending = lsp.request_nowait("textDocument/inlineCompletion",
                                     inline_params(uri, line, character))
        assert await a_request_under_way(srv.port, scaled(20)), "no request reached it"
        srv.kill()
        answer = await asyncio.wait_for(pending, scaled(10))
        assert "error" not in answer and not (answer["result"] or {}).get("items")
        assert await until(lambda: shown(lsp), scaled(2))
        assert shown(lsp) == [f"holefill: cannot reach the inference server at "
                              f"{srv.url}/completions: connection refused (is it running?)"]
        srv.start()
        result = await lsp.request("textDocument/inlineCompletion",
                                   inline_params(uri, line, character), timeout=scaled(60))
        ast.parse(applied(text, result, line, character))
    finally:
        srv.stop()


# ------------------------------------------------------------------- cancel

async def test_cancel_request_during_a_remote_fill_closes_the_http_request_at_once(
        lsp: RawClient, shared: InferenceServer) -> None:
    await initialized(lsp, shared.url)
    shared.control(None, token_delay_s=0.2)  # 16 tokens take 3.2 s
    uri = "file:///project/cancelled.py"
    open_doc(lsp, uri, BROKEN)
    started = len(shared.events("completion-start"))
    pending = lsp.request_nowait("textDocument/inlineCompletion",
                                 inline_params(uri, *CURSOR), msg_id="remote-inline")
    assert await until(lambda: len(shared.events("completion-start")) > started, scaled(10))
    await asyncio.sleep(0.3)  # in the middle of generating
    cancelled_at, t0 = time.time(), time.monotonic()
    lsp.cancel("remote-inline")
    answer = await asyncio.wait_for(pending, scaled(5))
    took = time.monotonic() - t0
    assert answer.get("error", {}).get("code") == -32800, answer
    # the inference server saw its client go: the HTTP request was closed, not left running
    assert await until(lambda: shared.events("client-gone"), scaled(2)), "the request ran on"
    gone_at = shared.events("client-gone")[-1][0]
    stop = [m for m in logged(lsp, "inline completion: stopped")]
    print(f"answered {1e3 * took:.0f} ms after the cancel; the inference server saw the "
          f"connection close {1e3 * (gone_at - cancelled_at):.0f} ms after it; {stop}")
    assert took < scaled(0.5)
    assert gone_at - cancelled_at < scaled(0.5)
    assert not shown(lsp), "a cancel is no error"
    # the language server and the inference server go on
    shared.control(None, token_delay_s=0.0)
    ast.parse(applied(BROKEN, await suggest(lsp, uri), *CURSOR))


async def test_cancelling_the_load_closes_its_request_to_a_server_that_does_not_answer(
        lsp: RawClient, shared: InferenceServer) -> None:
    """The load's first request hangs; the user cancels the load's progress item: the request
    is closed then (the inference server sees its client go), not at the timeout (60 s
    here), and the model loads once asked for after the server answers again."""
    hangs, ends = len(hanging(shared)), len(shared.events("hang-ended"))
    shared.control("hang", paths=["/v1/models"])
    await lsp.initialize(remote_options(shared.url, remoteTimeout=60), timeout=scaled(30))
    assert await until(lambda: len(hanging(shared)) > hangs, scaled(30)), shared.events()
    token = _load_item(lsp)
    assert token is not None, "no load progress item"
    t0 = time.monotonic()
    lsp.notify("window/workDoneProgress/cancel", {"token": token})
    assert await until(lambda: len(shared.events("hang-ended")) > ends, scaled(5)), \
        shared.events()
    took = time.monotonic() - t0
    ended = shared.events("hang-ended")[-1]
    print(f"the load's request was closed {1e3 * took:.0f} ms after the cancel: {ended}")
    assert ended[2] == "client gone"
    assert not shown(lsp), "a cancel is no error"
    shared.control(None)
    uri = "file:///project/after_cancelled_load.py"
    open_doc(lsp, uri, BROKEN)
    ast.parse(applied(BROKEN, await suggest(lsp, uri, timeout=30), *CURSOR))


def hanging(server: InferenceServer) -> list[tuple[float, str, str]]:
    return [e for e in server.events("fault") if e[2].startswith("hang /v1/models")]


def _load_item(client: RawClient) -> str | None:
    return next((p["token"] for p in client.notifications("$/progress")
                 if isinstance(p, dict) and isinstance(p.get("value"), dict)
                 and p["value"].get("kind") == "begin"
                 and p["value"].get("title") == "holefill: loading model"), None)


# ------------------------------------------------------------------- broken servers

FAULTS = {
    "500": "answered 500: injected 500 for the test",
    "503": "answered 503: injected 503 for the test",
    "garbage": "answered something that is not JSON: '<html><body><h1>It works!</h1>",
    "no-logprobs": "answered something that is not a completion: the answer has no logprobs",
    "drop": "closed the connection without answering (did it crash or restart?",
    "hang": f"did not answer within {TIMEOUT_S} s",
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_broken_inference_server_gives_a_clear_message_and_no_hang(
        lsp: RawClient, shared: InferenceServer, fault: str) -> None:
    await initialized(lsp, shared.url)
    uri = f"file:///project/fault_{fault}.py"
    open_doc(lsp, uri, BROKEN)
    shared.control(fault)
    answer, messages, took = await answered_after_a_message(lsp, uri)
    print(f"{fault}: answered in {took:.2f} s; {messages}")
    assert "error" not in answer and not (answer["result"] or {}).get("items")
    (message,) = messages
    assert message.startswith(f"holefill: the inference server at {shared.url}/completions ")
    assert FAULTS[fault] in message
    # a few seconds at most: the timeout, or the retries' waits (0.5 s + 1 s) for a 503
    assert took < scaled(TIMEOUT_S + 2)
    # healed: the next request is answered, with prompts as token ids still
    shared.control(None)
    started = len(shared.events("completion-start"))
    ast.parse(applied(BROKEN, await suggest(lsp, uri), *CURSOR))
    kinds = {d.split(" prompt")[0] for _, _, d in shared.events("completion-start")[started:]}
    assert kinds == {"ids"}


async def test_a_server_slower_than_the_timeout_is_named_and_stops_generating(
        lsp: RawClient, shared: InferenceServer) -> None:
    await initialized(lsp, shared.url)
    uri = "file:///project/slow.py"
    open_doc(lsp, uri, BROKEN)
    shared.control(None, token_delay_s=0.5)  # 16 tokens take 8 s: past the 2 s timeout
    gone = len(shared.events("client-gone"))
    answer, messages, took = await answered_after_a_message(lsp, uri)
    assert not (answer.get("result") or {}).get("items")
    assert messages == [f"holefill: the inference server at {shared.url}/completions did not "
                        f"answer within {TIMEOUT_S} s (busy, or the request is too large for "
                        "it)"]
    assert took < scaled(TIMEOUT_S + 1)
    # the request was closed at the timeout: the server does not go on generating for nobody
    assert await until(lambda: len(shared.events("client-gone")) > gone, scaled(2))


@pytest.mark.parametrize("fault", ["500", "garbage", "hang"])
async def test_a_broken_inference_server_at_the_model_load_is_named_and_used_once_healed(
        lsp: RawClient, shared: InferenceServer, fault: str) -> None:
    shared.control(fault, paths=["/v1/models"])
    t0 = time.monotonic()
    await initialized(lsp, shared.url, loaded=False)
    assert await until(lambda: shown(lsp), scaled(TIMEOUT_S + 2)), "the failed load was not shown"
    print(f"{fault}: shown {time.monotonic() - t0:.2f} s after the start: {shown(lsp)}")
    (message,) = shown(lsp)
    assert message.startswith(f"holefill: the inference server at {shared.url}/models ")
    assert FAULTS[fault] in message
    shared.control(None)
    uri = f"file:///project/load_{fault}.py"
    open_doc(lsp, uri, BROKEN)
    ast.parse(applied(BROKEN, await suggest(lsp, uri, timeout=30), *CURSOR))
