"""The README's set-up commands are the ones CI runs, and the project is lint- and type-clean."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_readme_has_exactly_two_setup_commands():
    cmds = readme_commands()
    assert len(cmds) == 2, cmds
    assert cmds[0].startswith("pip install '.[model]' && holefill fill examples/")


def test_ci_runs_the_readme_test_command():
    test_cmd = readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # CI spells `pip` as `python3 -m pip` and adds -q; the rest must match word for word.
    normalized = test_cmd.replace("pip install", "python3 -m pip install -q")
    assert normalized in ci, (normalized, ci)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is installed by the test extra")
def test_ruff_is_clean():
    proc = subprocess.run(
        ["ruff", "check", "server", "tests", "benchmarks"], cwd=ROOT, capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean():
    pytest.importorskip("mypy")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
