"""A clone is the whole project: dependencies are ranges with a constraints file for CI, the
data ships inside the package, and no file reads anything outside the clone.

Data: pyproject.toml, .ci/constraints.txt, MANIFEST.in and the tracked source files.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
needs_git = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")


def requirements() -> list[tuple[str, Requirement]]:
    """(group, requirement) for the dependencies ("") and every extra, without holefill's
    references to its own extras."""
    out = [("", Requirement(r)) for r in PROJECT["dependencies"]]
    for extra, reqs in PROJECT["optional-dependencies"].items():
        out += [(extra, Requirement(r)) for r in reqs]
    return [(g, r) for g, r in out if canonicalize_name(r.name) != "holefill"]


def constraints() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / ".ci" / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_dependencies_are_ranges_never_exact_pins():
    """An exact pin (torch==2.13.0 was one) fights every user's environment."""
    pinned = [f"{g or 'dependencies'}: {r}" for g, r in requirements()
              if any(s.operator in ("==", "===") for s in r.specifier)]
    assert not pinned


def test_ci_constraints_pin_every_dependency_inside_its_range():
    pins = constraints()
    missing = [str(r) for _, r in requirements() if canonicalize_name(r.name) not in pins]
    assert not missing, "add to .ci/constraints.txt: " + ", ".join(missing)
    outside = [f"{r} vs {pins[canonicalize_name(r.name)]}" for _, r in requirements()
               if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)]
    assert not outside


def test_ci_pins_torch_to_a_version_whose_cpu_build_it_can_take():
    """`torch==2.13.0` (no local label) matches the CPU wheel 2.13.0+cpu too, which pip prefers."""
    from packaging.specifiers import SpecifierSet

    torch = constraints()["torch"]
    assert not torch.local
    assert Version(f"{torch}+cpu") in SpecifierSet(f"=={torch}")


@needs_git
def test_extras_match_the_commands_and_lark_is_for_tests_only():
    extras = PROJECT["optional-dependencies"]
    assert {"model", "bench", "train", "test"} <= set(extras)

    def names(group: str) -> set[str]:
        return {canonicalize_name(Requirement(r).name) for r in extras[group]}

    assert {"torch", "transformers"} <= names("model")
    assert "matplotlib" in names("bench") and "matplotlib" in names("train")
    assert "lark" in names("test")
    assert "lark" not in {canonicalize_name(Requirement(r).name)
                          for r in PROJECT["dependencies"]}
    used = subprocess.run(["git", "grep", "-lE", r"^\s*(import|from) lark\b", "--", "server"],
                          cwd=ROOT, capture_output=True, text=True)
    assert used.stdout == ""


def test_the_data_ships_in_the_package_and_in_the_sdist():
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["holefill"]
    data = ROOT / "server" / "holefill"
    shipped = {p.relative_to(data) for pat in patterns for p in data.glob(pat)}
    for folder in ("humaneval-x", "humaneval-infilling"):
        files = {p.relative_to(data) for p in (data / "data" / folder).iterdir()}
        assert files and files <= shipped, files - shipped
        assert {"SOURCE.md", "LICENSE"} <= {f.name for f in files}
    assert "recursive-include server/holefill/data" in (ROOT / "MANIFEST.in").read_text()


# Places outside a clone that the project once read (CI had them, users never do).
OUTSIDE = re.compile(r"/work/shared|\.\./shared|[\"']shared/data")


@needs_git
def test_no_file_reads_a_path_outside_the_clone():
    files = subprocess.run(["git", "ls-files", "server", "tests", "benchmarks", ".ci",
                            "examples", "pyproject.toml", "setup.py"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    me = Path(__file__).relative_to(ROOT).as_posix()
    hits = []
    for name in files:
        if name == me or not name.endswith((".py", ".toml", ".txt", ".cfg", ".sh", "run")):
            continue
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        hits += [f"{name}: {m.group()}" for m in OUTSIDE.finditer(text)]
    assert not hits


@needs_git
def test_the_data_is_tracked_by_git():
    """Data that is only on one machine is the failure this file guards against."""
    tracked = subprocess.run(["git", "ls-files", "server/holefill/data"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert "server/holefill/data/humaneval-x/humaneval_cpp.jsonl.gz" in tracked
    assert len(tracked) == 14, tracked
