"""The VS Code extension (vscode-client/) seen from the Python side.

- Its settings mirror the server's: every setting it contributes (except the two the client
  keeps, `pythonPath` and `inlineSuggestions`) is one settings.py reads, with the same default,
  so a user who changes nothing gets the server's own defaults. No node needed.
- Its unit tests (`npm test`: mocha, strict TypeScript, `vscode` mocked) run when the npm
  workspace is installed (`npm ci` at the repository root, about 20 s); otherwise skipped.
- Its end-to-end test (`npm run test:e2e`: code-server + headless Chromium) runs only when asked
  with HOLEFILL_VSCODE_E2E=1, since it installs code-server (300 MB, native builds) on first use.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from holefill.lsp.settings import FIELDS, Settings

REPO = Path(__file__).resolve().parents[1]
CLIENT = REPO / "vscode-client"
MANIFEST = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
CLIENT_ONLY = {"pythonPath", "inlineSuggestions"}
# Tuning knobs of the checker, not something an editor user sets.
SERVER_ONLY = {"maxCheckSteps"}
NPM = shutil.which("npm")


def _contributed() -> dict[str, dict]:
    props = MANIFEST["contributes"]["configuration"]["properties"]
    return {key.removeprefix("holefill."): spec for key, spec in props.items()}


def test_settings_mirror_the_server() -> None:
    contributed = _contributed()
    assert set(contributed) - CLIENT_ONLY == set(FIELDS) - SERVER_ONLY
    defaults = Settings()
    for key, spec in contributed.items():
        if key in CLIENT_ONLY:
            continue
        field, _ = FIELDS[key]
        expected = getattr(defaults, field)
        if isinstance(expected, tuple):
            expected = list(expected)
        assert spec["default"] == expected, f"holefill.{key}"
    # Every enum the manifest offers is a value the server accepts.
    assert set(contributed["multiline"]["enum"]) == {"auto", "always", "never"}
    assert contributed["languages"]["items"]["enum"] == sorted(defaults.languages)
    assert {f.name for f in dataclasses.fields(Settings)} >= {f for f, _ in FIELDS.values()}


def test_activates_on_the_server_languages() -> None:
    events = {e.removeprefix("onLanguage:") for e in MANIFEST["activationEvents"]}
    assert events == set(Settings().languages)


def _npm(args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    assert NPM is not None
    return subprocess.run([NPM, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.skipif(NPM is None, reason="npm is not on PATH (node >= 20.19 and npm needed)")
@pytest.mark.skipif(not (REPO / "node_modules" / "vscode-languageclient").is_dir(),
                    reason="the npm workspace is not installed: run `npm ci` at the repository "
                           "root (about 20 s), then the extension's unit tests run here")
def test_extension_unit_tests() -> None:
    res = _npm(["test"], timeout=300)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert re.search(r"\d+ passing", res.stdout) and not re.search(r"\d+ failing", res.stdout)


@pytest.mark.skipif(os.environ.get("HOLEFILL_VSCODE_E2E") != "1",
                    reason="the VS Code end-to-end test runs with HOLEFILL_VSCODE_E2E=1 "
                           "(or `npm run test:e2e`); it needs node 20, Chromium and, once, "
                           "the npm registry to install code-server")
@pytest.mark.skipif(NPM is None, reason="npm is not on PATH")
def test_extension_end_to_end() -> None:
    res = _npm(["run", "test:e2e"], timeout=900)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-6000:]
    assert "passed" in res.stdout
