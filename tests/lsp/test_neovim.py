"""The language server driven by a real editor: headless Neovim (Debian's 0.7.2) runs a Lua
script that starts `holefill serve`, fills the hole markers of a file through the lazy
"Fill holes" code action, and asks for an inline completion with a raw request.

Neovim 0.7 negotiates no position encoding (UTF-16 only) and has no inline completion UI, so
this checks what such a client sees: the server must answer in UTF-16 (both files put a
character outside the BMP before the holes on their lines) and its edits must apply through
Neovim's own `apply_workspace_edit`. The test is skipped where `nvim` is not installed
(`apt-get install -y neovim`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from holefill.bench.oracles import python_valid as parses

pytest.importorskip("torch")
pytest.importorskip("transformers")

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="nvim is not on PATH (install Neovim >= 0.7: apt-get install -y neovim)")

MARKER = "<|hole|>"
# Two markers; the second sits after a character outside the BMP (two UTF-16 code units), so
# an edit computed in code points would land one column off and leave the file broken.
HOLES_TEXT = f'''import math


def norm(x, y):
    label = "norm"
    return math.sqrt(x * x + {MARKER})


def scale(v, k):
    tag = "\U0001f600"; out = [{MARKER} for e in v]
    return out, tag
'''
# The cursor goes right after `a +`: the file parses only once something closes the call.
COMPLETE_TEXT = '''def pair(a, b):
    return ("\U0001f600", a +


x = 1
'''
COMPLETE_AFTER = "a +"

# Every wait has a limit, and every failure lands in the error file with a traceback and the
# server's messages, so that a failing run says why instead of hanging until the timeout.
INIT_LUA = r"""
local cfg = vim.fn.json_decode(table.concat(vim.fn.readfile(vim.env.HOLEFILL_NVIM_CONFIG), "\n"))
local messages = {}
local client, exit_code, rpc_error

local function note(_, result)
  if result and result.message then table.insert(messages, result.message) end
end

local function open(path)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = "python"  -- -u NONE: no filetype detection; this is the languageId
  return buf
end

-- client methods are plain functions up to 0.10 and methods (client:f()) from 0.11 on
local NEW = vim.fn.has("nvim-0.11") == 1
local function call(name, ...)
  if NEW then return client[name](client, ...) end
  return client[name](...)
end

local function request(method, params, buf, timeout_ms)
  local res, err = call("request_sync", method, params, timeout_ms, buf)
  if not res then error(method .. ": no answer (" .. tostring(err) .. ")") end
  if res.err then error(method .. ": " .. vim.inspect(res.err)) end
  return res.result
end

local function main()
  local buf = open(cfg.holes_file)
  local id = vim.lsp.start_client({
    name = "holefill", cmd = cfg.cmd, root_dir = cfg.root, init_options = cfg.init_options,
    handlers = { ["window/showMessage"] = note, ["window/logMessage"] = note },
    on_exit = function(code) exit_code = code end,
    -- an error answer to `initialize` surfaces here (not as an exit): stop waiting at once
    on_error = function(code, err) rpc_error = tostring(code) .. ": " .. tostring(err) end,
  })
  if not id then error("vim.lsp.start_client failed") end
  vim.lsp.buf_attach_client(buf, id)  -- didOpen goes out once the client is initialized
  client = vim.lsp.get_client_by_id(id)
  -- a server that fails inside `initialize` may never answer: a shorter limit for this step
  local up = vim.wait(cfg.init_timeout_ms, function()
    return client.initialized or exit_code ~= nil or rpc_error ~= nil
  end, 20)
  if not up or not client.initialized then
    error("the server did not initialize (exit code " .. tostring(exit_code) .. ", "
          .. tostring(rpc_error) .. ")")
  end
  -- Neovim 0.7 offers no positionEncodings: the server must stay in UTF-16
  if client.offset_encoding ~= "utf-16" then
    error("offset encoding " .. tostring(client.offset_encoding))
  end

  local lines = vim.api.nvim_buf_line_count(buf)
  local actions = request("textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = lines, character = 0 } },
    context = { diagnostics = {}, only = { "source.fillHoles" } },
  }, buf, cfg.timeout_ms)
  local action
  for _, a in ipairs(actions or {}) do
    if a.kind == "source.fillHoles" then action = a end
  end
  if not action then error("no source.fillHoles action: " .. vim.inspect(actions)) end
  if action.edit then error("the action should be resolved lazily") end
  local resolved = request("codeAction/resolve", action, buf, cfg.timeout_ms)
  if not resolved.edit then error("resolved without an edit: " .. vim.inspect(resolved)) end
  -- apply_text_document_edit skips an edit for an older version with a mere print
  local version = resolved.edit.documentChanges[1].textDocument.version
  local now = (vim.lsp.util.buf_versions or {})[buf] or vim.b[buf].changedtick
  if version ~= now then
    error("edit for version " .. tostring(version) .. ", buffer at " .. tostring(now))
  end
  vim.lsp.util.apply_workspace_edit(resolved.edit, "utf-16")
  vim.fn.writefile(vim.api.nvim_buf_get_lines(buf, 0, -1, false), cfg.filled_file)

  -- Neovim 0.7 knows nothing of inline completion: a raw request, as a plugin would send it
  local buf2 = open(cfg.complete_file)
  vim.lsp.buf_attach_client(buf2, id)
  local result = request("textDocument/inlineCompletion", {
    textDocument = { uri = vim.uri_from_bufnr(buf2) },
    position = cfg.position,
    context = { triggerKind = 1 },
  }, buf2, cfg.timeout_ms)
  vim.fn.writefile({ result == nil and "null" or vim.fn.json_encode(result) }, cfg.result_file)
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  local out = vim.split(tostring(err), "\n")
  table.insert(out, "--- server messages:")
  vim.list_extend(out, messages)
  -- the server's stderr (a traceback) is only in Neovim's LSP log
  local log = vim.lsp.get_log_path()
  if vim.fn.filereadable(log) == 1 then
    table.insert(out, "--- " .. log .. " (end):")
    local lines = vim.fn.readfile(log)
    vim.list_extend(out, lines, math.max(1, #lines - 30))
  end
  vim.fn.writefile(out, cfg.error_file)
end
if client then  -- shutdown + exit, so that no server process outlives the editor
  call("stop")
  vim.wait(5000, function() return call("is_stopped") end, 20)
end
vim.cmd("qa!")
"""


def utf16_position(text: str, offset: int) -> dict[str, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    units = len(text[line_start:offset].encode("utf-16-le")) // 2
    return {"line": text.count("\n", 0, offset), "character": units}


def utf16_offset(text: str, position: dict[str, int]) -> int:
    lines = text.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: position["line"]])
    line = lines[position["line"]] if position["line"] < len(lines) else ""
    units = 0
    for i, ch in enumerate(line):
        if units >= position["character"]:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)




def run_neovim(tmp_path: Path, model: Path) -> dict[str, Any]:
    """Run the Lua script in headless Neovim; return what it wrote."""
    files = {name: tmp_path / name for name in
             ("holes.py", "complete.py", "filled.py", "result.json", "error.txt", "init.lua")}
    files["holes.py"].write_text(HOLES_TEXT, encoding="utf-8")
    files["complete.py"].write_text(COMPLETE_TEXT, encoding="utf-8")
    files["init.lua"].write_text(INIT_LUA, encoding="utf-8")
    cursor = COMPLETE_TEXT.index(COMPLETE_AFTER) + len(COMPLETE_AFTER)
    config = {
        "cmd": [sys.executable, "-m", "holefill", "serve"],
        "root": str(tmp_path),
        "init_options": {"model": str(model), "maxNewTokens": 8, "topK": 4, "debounceMs": 0},
        "holes_file": str(files["holes.py"]), "complete_file": str(files["complete.py"]),
        "filled_file": str(files["filled.py"]), "result_file": str(files["result.json"]),
        "error_file": str(files["error.txt"]),
        "position": utf16_position(COMPLETE_TEXT, cursor),
        "init_timeout_ms": 30_000,  # no model is loaded before the answer to initialize
        "timeout_ms": 60_000,
    }
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    env = dict(os.environ, HOLEFILL_NVIM_CONFIG=str(tmp_path / "config.json"),
               OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1",
               XDG_STATE_HOME=str(tmp_path / "state"),  # Neovim's LSP log goes there
               XDG_CACHE_HOME=str(tmp_path / "cache"))  # and there in 0.7
    assert NVIM is not None
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n",
         "-c", f"luafile {files['init.lua']}"],
        cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120)
    if files["error.txt"].exists():
        pytest.fail("the Neovim script failed:\n" + files["error.txt"].read_text())
    assert files["result.json"].exists(), (
        f"Neovim exited ({proc.returncode}) without a result:\n{proc.stdout}\n{proc.stderr}")
    return {"filled": files["filled.py"].read_text(encoding="utf-8"),
            "result": json.loads(files["result.json"].read_text(encoding="utf-8")),
            "position": config["position"]}


def test_neovim_fills_holes_and_gets_an_inline_completion(tmp_path: Path, tiny_model_dir: Path):
    out = run_neovim(tmp_path, tiny_model_dir)

    # Fill holes: the markers are gone, the text around them is untouched, and it parses
    filled = out["filled"]
    assert MARKER not in filled
    first, middle, last = HOLES_TEXT.split(MARKER)
    assert filled.startswith(first) and filled.endswith(last)
    assert middle in filled[len(first): len(filled) - len(last)]
    assert parses(filled), filled

    # Inline completion: one-line ranges starting at the cursor, and accepting makes it parse
    result = out["result"]
    assert result and result["items"], f"no suggestion: {result!r}"
    for item in result["items"]:
        assert item["range"]["start"]["line"] == item["range"]["end"]["line"]
        assert item["range"]["start"] == out["position"]
    item = result["items"][0]
    start = utf16_offset(COMPLETE_TEXT, item["range"]["start"])
    end = utf16_offset(COMPLETE_TEXT, item["range"]["end"])
    accepted = COMPLETE_TEXT[:start] + item["insertText"] + COMPLETE_TEXT[end:]
    assert parses(accepted), accepted
