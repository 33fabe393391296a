"""The README's set-up commands are the ones CI runs, and the project is lint- and type-clean."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_readme_has_exactly_two_setup_commands():
    """One installs and runs the main job on the bundled model, one installs and runs the tests;
    both install with the CI constraints, so that what a user runs is what CI tested."""
    cmds = readme_commands()
    assert len(cmds) == 2, cmds
    install, run = cmds[0].split(" && ")
    assert install.startswith("pip install '.[model]'")
    assert run.startswith("holefill fill examples/")
    assert (ROOT / run.split()[-1]).is_file()
    for cmd in cmds:
        assert "-c .ci/constraints.txt" in cmd
    assert cmds[1].endswith("&& python3 -m pytest -q -p no:cacheprovider")


def test_setup_commands_name_extras_that_exist():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])
    for cmd in readme_commands():
        for group in re.findall(r"\.\[([a-z,]+)\]", cmd):
            assert set(group.split(",")) <= extras, (cmd, extras)


def test_ci_runs_the_readme_test_command_in_a_fresh_clone_with_nothing_beside_it():
    test_cmd = readme_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # CI spells `pip` as `python3 -m pip` and adds -q; the rest must match word for word.
    normalized = test_cmd.replace("pip install", "python3 -m pip install -q")
    assert normalized in ci, (normalized, ci)
    # ... and runs it in a clone inside an empty temporary folder, in a new environment.
    lines = [line.strip() for line in ci.splitlines() if not line.lstrip().startswith("#")]
    script = "\n".join(lines)
    order = ['work="$(mktemp -d)"', 'git clone', 'cd "$work/holefill"', "python3 -m venv",
             normalized]
    at = [script.find(step) for step in order]
    assert -1 not in at and at == sorted(at), dict(zip(order, at, strict=True))
    assert "set -euo pipefail" in script  # a failing test fails CI


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
