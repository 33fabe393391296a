"""Loading an in-process model, as the user meets it in the editor (issue 20), through the real
`holefill serve` and tiny random models built here (tests/conftest.py):

- a model that fails to load is named once: every request tries the load again and fails
  again, and those repeats go to the log only (no pop-up per keystroke); once the folder is
  fixed, the next request loads it, answers, and the editor is told the model works again;
- the load's progress item is cancellable (`window/workDoneProgress/cancel`): the requests
  waiting on the load are answered at once, the load stops at its next step and keeps
  nothing, and automatic inline requests do not start it again (an explicit one does);
- `$/cancelRequest` of a request waiting on the load answers it at once; the load goes on
  (other requests, and the next one, want the same model) and the model is kept.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from lsp_testing import inline_params, open_doc, scaled, start_server, tiny_options, until

from holefill.lsp.client import RawClient

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.asyncio

ERROR, INFO = 1, 3  # MessageType.Error, .Info
TEXT = "def f(x):\n    return x +\n"
CURSOR = (1, 14)


def shown(client: RawClient, kind: int = ERROR) -> list[str]:
    return [m["message"] for m in client.notifications("window/showMessage")
            if m["type"] == kind]


def logs(client: RawClient, kind: int | None = None) -> list[str]:
    return [m["message"] for m in client.notifications("window/logMessage")
            if kind is None or m["type"] == kind]


def progress(client: RawClient) -> list[dict[str, Any]]:
    return [{"token": p["token"], **p["value"]} for p in client.notifications("$/progress")
            if isinstance(p, dict) and isinstance(p.get("value"), dict)]


def load_items(client: RawClient) -> list[dict[str, Any]]:
    """The begin notifications of the model's loading progress items."""
    return [p for p in progress(client)
            if p["kind"] == "begin" and p.get("title") == "holefill: loading model"]


def ended(client: RawClient, token: str) -> list[dict[str, Any]]:
    return [p for p in progress(client) if p["token"] == token and p["kind"] == "end"]


async def load_under_way(client: RawClient) -> str:
    """The token of the loading item, once the load reported a step (in a fresh server the
    first steps import torch and transformers: seconds)."""
    def reported() -> str | None:
        begun = {p["token"] for p in load_items(client)}
        return next((p["token"] for p in progress(client)
                     if p["kind"] == "report" and p["token"] in begun), None)

    assert await until(lambda: reported() is not None, scaled(30)), progress(client)
    token = reported()
    assert token is not None
    assert not [m for m in logs(client) if m.startswith("model loaded:")], "loaded already"
    return token


def fill_params(uri: str) -> dict[str, Any]:
    return {"textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["source.fillHoles"]}}


def inline(uri: str, automatic: bool = False) -> dict[str, Any]:
    params = inline_params(uri, *CURSOR)
    params["context"]["triggerKind"] = 2 if automatic else 1
    return params


async def test_a_model_that_fails_to_load_is_named_once_and_used_once_fixed(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    model = Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))
    weights = model / "model.safetensors"
    good = weights.read_bytes()
    weights.write_bytes(b"not a safetensors file")
    client = await start_server()
    try:
        await client.initialize(tiny_options(model), timeout=scaled(30))
        assert await until(lambda: shown(client), scaled(60)), "the failed load was not shown"
        (first,) = shown(client)
        assert first.startswith(f"holefill: cannot load the model {str(model)!r}")
        uri = "file:///project/broken_model.py"
        open_doc(client, uri, TEXT)
        for _ in range(3):  # each one tries the load again, which fails again
            answer = await client.request("textDocument/inlineCompletion", inline(uri, True),
                                          timeout=scaled(30))
            assert not (answer or {}).get("items")
        assert await until(lambda: len(logs(client, ERROR)) == 3, scaled(5)), logs(client)
        assert all(m.startswith(first) for m in logs(client, ERROR))
        assert shown(client) == [first]
        weights.write_bytes(good)  # fixed: the next request loads it
        answer = await client.request("textDocument/inlineCompletion", inline(uri),
                                      timeout=scaled(60))
        assert answer is not None and "items" in answer
        assert await until(lambda: shown(client, INFO), scaled(5))
        assert shown(client, INFO)[0].startswith(
            f"holefill: the model {model} works again (4 request(s) failed meanwhile")
        assert shown(client) == [first]
    finally:
        await client.stop(timeout=scaled(10))


async def test_cancelling_the_load_from_its_progress_item_stops_it_and_answers_at_once(
        tiny_model_dir: Path) -> None:
    client = await start_server()
    try:
        await client.initialize(tiny_options(tiny_model_dir), timeout=scaled(30))
        uri = "file:///project/cancel_load.py"
        open_doc(client, uri, TEXT + "y = <|hole|>\n")
        token = await load_under_way(client)
        (begin,) = load_items(client)
        assert begin["cancellable"] is True
        # two requests wait on the load: an inline suggestion and a Fill holes
        waiting = client.request_nowait("textDocument/inlineCompletion", inline(uri))
        actions = await client.request("textDocument/codeAction", fill_params(uri),
                                       timeout=scaled(10))
        fill = client.request_nowait("codeAction/resolve", actions[0])
        await asyncio.sleep(0.1)
        t0 = time.monotonic()
        client.notify("window/workDoneProgress/cancel", {"token": token})
        answer = await asyncio.wait_for(waiting, scaled(5))
        took = time.monotonic() - t0
        fill_answer = await asyncio.wait_for(fill, scaled(5))
        print(f"answered {1e3 * took:.0f} ms after the cancel")
        assert took < scaled(0.5)
        assert "error" not in answer and not (answer["result"] or {}).get("items")
        assert fill_answer["error"]["code"] == -32800
        assert fill_answer["error"]["message"] == ("holefill: Fill holes stopped: the model "
                                                   "load was cancelled")
        assert await until(lambda: ended(client, token), scaled(2))
        assert ended(client, token)[0]["message"] == "cancelled"
        # the load itself stopped at its next step, and kept nothing
        assert await until(lambda: [m for m in logs(client) if m.startswith("load: stopped")],
                           scaled(30)), logs(client)
        print([m for m in logs(client) if m.startswith("load: stopped")])
        assert not [m for m in logs(client) if m.startswith("model loaded:")]
        assert not shown(client), "a cancel is no error"
        # typing does not start it again ...
        t0 = time.monotonic()
        answer = await client.request("textDocument/inlineCompletion", inline(uri, True),
                                      timeout=scaled(5))
        assert not (answer or {}).get("items") and time.monotonic() - t0 < scaled(0.5)
        assert len(load_items(client)) == 1
        assert any(m.startswith("inline completion: no suggestion, the model load was "
                                "cancelled; ask for a suggestion") for m in logs(client))
        # ... asking for a suggestion does: the model loads and answers
        answer = await client.request("textDocument/inlineCompletion", inline(uri),
                                      timeout=scaled(60))
        assert answer is not None and "items" in answer
        assert len(load_items(client)) == 2
        assert [m for m in logs(client) if m.startswith("model loaded:")]
        assert not shown(client)
    finally:
        await client.stop(timeout=scaled(10))


async def test_cancel_request_while_the_model_loads_answers_at_once_and_keeps_the_load(
        tiny_model_dir: Path) -> None:
    client = await start_server()
    try:
        await client.initialize(tiny_options(tiny_model_dir), timeout=scaled(30))
        uri = "file:///project/cancel_waiting.py"
        open_doc(client, uri, TEXT)
        token = await load_under_way(client)
        waiting = client.request_nowait("textDocument/inlineCompletion", inline(uri),
                                        msg_id="waits-on-the-load")
        await asyncio.sleep(0.1)
        t0 = time.monotonic()
        client.cancel("waits-on-the-load")
        answer = await asyncio.wait_for(waiting, scaled(5))
        took = time.monotonic() - t0
        print(f"answered {1e3 * took:.0f} ms after the cancel")
        assert answer.get("error", {}).get("code") == -32800, answer
        assert took < scaled(0.5)
        # the load goes on and is kept: the next request uses it without loading again
        assert await until(lambda: [m for m in logs(client) if m.startswith("model loaded:")],
                           scaled(60)), logs(client)
        assert ended(client, token)[0]["message"] == "done"
        answer = await client.request("textDocument/inlineCompletion", inline(uri, True),
                                      timeout=scaled(30))
        assert answer is not None and "items" in answer
        assert len(load_items(client)) == 1
        assert not shown(client)
    finally:
        await client.stop(timeout=scaled(10))
