"""TCP mode (`holefill serve --tcp`): a token, one client, and no way in for another local
process. Before issue 16 any local process could connect, send `workspace/didChangeConfiguration`
with a model folder and `trustRemoteCode`, and so run that folder's code in the server; and a
second connection took over the first one's answers and edits."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from lsp_testing import open_doc, scaled, start_server, tiny_options, until

from holefill.lsp.client import RawClient, ResponseError

pytestmark = pytest.mark.asyncio

LISTENING = re.compile(r"listening on 127\.0\.0\.1:(\d+)")


async def tcp_server(*args: str) -> tuple[RawClient, int]:
    """`holefill serve --tcp 0 ...` and the port it announced on stderr."""
    proc = await start_server("--tcp", "0", *args)
    port = None

    def announced() -> bool:
        nonlocal port
        for line in proc.stderr:
            m = LISTENING.search(line)
            if m:
                port = int(m.group(1))
        return port is not None

    assert await until(announced, scaled(30)), "".join(proc.stderr)
    assert port is not None
    return proc, port


def action_params(uri: str) -> dict:
    return {"textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0},
                      "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []}}


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return tmp_path / "holefill.token"


async def test_the_token_file_is_private_and_goes_away_with_the_server(token_file):
    proc, port = await tcp_server("--token-file", str(token_file))
    try:
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert len(token_file.read_text().strip()) >= 32
        assert proc.process is not None
        proc.process.terminate()
        assert await proc.wait_exit(scaled(10)) is not None
        assert not token_file.exists()
    finally:
        await proc.stop(timeout=scaled(1))


async def test_a_client_without_the_token_is_refused(token_file, tiny_model_dir):
    proc, port = await tcp_server("--token-file", str(token_file))
    try:
        for options in ({}, {"token": "guessed-" * 5}):
            intruder = await RawClient.connect("127.0.0.1", port)
            with pytest.raises(ResponseError, match="needs its token") as err:
                await intruder.initialize(options, timeout=scaled(10))
            assert err.value.code == -32600
            assert await until(lambda c=intruder: c.closed.done(), scaled(5))
            await intruder.stop()
        # requests before initialize are not served either
        early = await RawClient.connect("127.0.0.1", port)
        with pytest.raises(ResponseError) as err:
            await early.request("textDocument/codeAction", action_params("file:///x.py"),
                                timeout=scaled(10))
        assert err.value.code == -32002
        await early.stop()
        # and the server is still there for its client
        client = await RawClient.connect("127.0.0.1", port)
        token = token_file.read_text().strip()
        await client.initialize(tiny_options(tiny_model_dir, token=token),
                                timeout=scaled(30))
        await client.stop()
        assert await proc.wait_exit(scaled(10)) == 0
    finally:
        await proc.stop(timeout=scaled(1))


async def test_one_client_per_server_and_a_second_cannot_take_over(token_file, tiny_model_dir):
    proc, port = await tcp_server("--token-file", str(token_file))
    token = token_file.read_text().strip()
    try:
        first = await RawClient.connect("127.0.0.1", port)
        first.handlers["workspace/applyEdit"] = lambda params: {"applied": True}
        await first.initialize(tiny_options(tiny_model_dir, token=token), timeout=scaled(30))
        uri = "file:///project/mine.py"
        open_doc(first, uri, "x = <|hole|>\n")
        # a second connection, even one that knows the token, is refused and sees nothing
        second = await RawClient.connect("127.0.0.1", port)
        assert await until(lambda: second.closed.done(), scaled(10))
        refusal, = second.received.orphans
        assert "already has its client" in refusal["error"]["message"]
        second.send({"jsonrpc": "2.0", "id": 1, "method": "workspace/executeCommand",
                     "params": {"command": "holefill.fillHoles",
                                "arguments": [{"uri": uri, "positions": []}]}})
        # the first client is served as before, and alone gets its edit
        result = await first.request("workspace/executeCommand", {
            "command": "holefill.fillHoles", "arguments": [{"uri": uri, "positions": []}]},
            timeout=scaled(120))
        assert result == {"applied": True}
        assert [r["method"] for r in first.received.requests].count("workspace/applyEdit") == 1
        assert second.received.requests == []
        await first.stop()
        assert await proc.wait_exit(scaled(10)) == 0  # the server leaves with its client
    finally:
        await proc.stop(timeout=scaled(1))


async def test_a_world_readable_token_file_is_refused(token_file):
    token_file.write_text("x" * 40)
    os.chmod(token_file, 0o644)
    proc = await start_server("--tcp", "0", "--token-file", str(token_file))
    assert await proc.wait_exit(scaled(30)) == 2
    assert any("chmod 600" in line for line in proc.stderr)


async def test_settings_that_run_code_are_refused_after_initialization(raw, tiny_model_dir,
                                                                       tmp_path):
    """The takeover of issue 16 (a): a model folder whose config names code to run, and a
    configuration change that trusts it. The code must never run."""
    evil = Path(shutil.copytree(tiny_model_dir, tmp_path / "evil-model"))
    ran = tmp_path / "the-code-ran"
    (evil / "evil.py").write_text(
        f"open({str(ran)!r}, 'w').write('yes')\n"
        "from transformers import LlamaForCausalLM as EvilModel\n")
    config = json.loads((evil / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "evil.EvilModel"}
    (evil / "config.json").write_text(json.dumps(config))
    await raw.initialize(tiny_options(tiny_model_dir), timeout=scaled(30))
    raw.notify("workspace/didChangeConfiguration", {"settings": {"holefill": {
        "model": str(evil), "trustRemoteCode": True}}})
    uri = "file:///project/t.py"
    open_doc(raw, uri, "y = [1,\n")
    await raw.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 7},
        "context": {"triggerKind": 1}}, timeout=scaled(120))
    await asyncio.sleep(1)
    assert not ran.exists(), "a configuration change ran the model folder's code"
    shown = [m["message"] for m in raw.notifications("window/showMessage")]
    assert any("trustRemoteCode can be turned on only" in m for m in shown)
