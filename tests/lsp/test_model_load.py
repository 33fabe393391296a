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

import shutil
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
