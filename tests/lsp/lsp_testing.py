"""Helpers of the server tests: a fresh `holefill serve` per test, and waits that scale with
the machine's load.

Every end-to-end test starts its own server process, so one test that times out or kills its
server cannot fail the tests after it (issue 15: one 60 s wait that timed out stopped a
shared client, and six later tests failed with "Client has been stopped"). Waits are
`scaled(seconds)`: the time a test needs on an idle machine, stretched by the load average
per core (a 2-core machine shared with four busy neighbours runs everything about 3x slower).

`HOLEFILL_SERVER_PYTHONPATH` puts another checkout's `server/` first on the servers' import
path, to run these tests against that server (how the repros were shown to fail before).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from holefill.lsp.client import RawClient

SERVER = [sys.executable, "-m", "holefill", "serve"]


def server_env() -> dict[str, str]:
    env = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    other = os.environ.get("HOLEFILL_SERVER_PYTHONPATH")
    if other:
        env["PYTHONPATH"] = os.pathsep.join([other, os.environ.get("PYTHONPATH", "")])
    return env


def load_factor() -> float:
    """How much slower than idle this machine runs now (1 on an idle machine)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1.0
    return max(1.0, min(8.0, load / max(1, os.cpu_count() or 1)))


def scaled(seconds: float) -> float:
    """A wait of ``seconds`` on an idle machine, stretched for the load now (at least 2x
    slack, since the load average lags behind a burst)."""
    return 2 * seconds * load_factor()


def tiny_options(model_dir: Path, **extra: Any) -> dict[str, Any]:
    return {"model": str(model_dir), "maxNewTokens": 8, "topK": 4, "debounceMs": 0, **extra}


async def start_server(*args: str) -> RawClient:
    return await RawClient.spawn([*SERVER, *args], env=server_env())


async def until(condition: Any, timeout: float, every: float = 0.02) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds passed."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            return False
        await asyncio.sleep(every)
    return True


def open_doc(client: RawClient, uri: str, text: str, version: int = 1,
             language: str = "python") -> None:
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": version, "text": text}})


def inline_params(uri: str, line: int, character: int) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 1}}


def progress_reports(client: RawClient) -> list[dict[str, Any]]:
    return [p["value"] for p in client.notifications("$/progress")
            if isinstance(p, dict) and isinstance(p.get("value"), dict)]
