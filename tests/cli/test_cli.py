"""`holefill check` and `holefill grammar` as a user runs them: real files, exit codes, messages;
and `fill` / `complete` on text that cannot be completed, which must answer before any model.

Data: examples/holes.cpp and examples/holes.json (shipped), and files written to tmp_path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "holefill", *args], capture_output=True, text=True, timeout=120
    )


def test_check_fills_the_shipped_json_example_into_valid_json():
    proc = run("check", str(ROOT / "examples" / "holes.json"))
    assert proc.returncode == 0, proc.stderr
    assert "completable: yes" in proc.stderr
    json.loads(proc.stdout)


def test_check_fills_the_shipped_cpp_example_with_every_fixed_character_kept():
    proc = run("check", str(ROOT / "examples" / "holes.cpp"))
    assert proc.returncode == 0, proc.stderr
    original = (ROOT / "examples" / "holes.cpp").read_text()
    # Filling only inserts: the fixed text appears in order in the output.
    pos = 0
    for chunk in original.split("<|hole|>"):
        found = proc.stdout.find(chunk, pos)
        assert found >= 0, chunk
        pos = found + len(chunk)


def test_check_says_no_with_exit_status_1(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text("]<|hole|>")
    proc = run("check", str(f))
    assert proc.returncode == 1
    assert "completable: no" in proc.stderr
    assert proc.stdout == ""


def test_check_says_where_no_filling_can_repair(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("def f(x):\n    y = = 1\n    return <|hole|>\n")
    proc = run("check", str(f))
    assert proc.returncode == 1
    assert f"{f}:2:9: no filling of the holes can repair" in proc.stderr
    assert "        y = = 1\n            ^" in proc.stderr  # the line, a caret under column 9


@pytest.mark.parametrize(("name", "before", "after"), [
    ("crlf.py", b"x = 1\r\nif x:\r\n    y = ", b"\r\n\r\nprint(y)"),
    ("latin1.py", b"# coding: latin-1\ns = '\xe9'\nt = [", b" / 2]\n"),
], ids=["crlf", "latin1"])
def test_check_prints_the_file_with_its_own_bytes_outside_the_holes(tmp_path, name, before,
                                                                   after):
    f = tmp_path / name
    f.write_bytes(before + b"<|hole|>" + after)
    proc = subprocess.run([sys.executable, "-m", "holefill", "check", str(f)],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(before) and out.endswith(after) and len(out) > len(before + after)


NOT_LOADED = """
import sys
from holefill.cli import main
rc = main(sys.argv[1:])
print("rc", rc, "torch imported:", "torch" in sys.modules,
      "transformers imported:", "transformers" in sys.modules)
"""


@pytest.mark.parametrize("how", ["fill", "complete"])
def test_unrepairable_text_is_named_before_any_model_loads(tmp_path, how):
    """A syntax error outside the holes: line and column, exit 1, and neither torch nor the
    (missing) model was touched; a model load would have failed with exit 2 first."""
    f = tmp_path / "bad.py"
    f.write_text("import os\nx = (1,, 2)\ny = <|hole|>\n")
    target = str(f) if how == "fill" else f"{f}:3:5"
    proc = subprocess.run([sys.executable, "-c", NOT_LOADED, how, target, "--model",
                           str(tmp_path / "no-such-model")],
                          capture_output=True, text=True, timeout=120)
    assert "rc 1 torch imported: False transformers imported: False" in proc.stdout, proc
    assert f"{f}:2:8: no filling of the holes can repair" in proc.stderr
    assert "does not exist" not in proc.stderr


def test_version_and_help_name_what_is_installed():
    from holefill import __version__
    from holefill.languages import LANGUAGES

    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"holefill {__version__}"
    for command in ("check", "fill", "complete"):
        text = " ".join(run(command, "--help").stdout.split())
        assert ", ".join(sorted(LANGUAGES)) in text, command


def test_unknown_language_is_a_clear_error(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("hello")
    proc = run("check", str(f), "--language", "cobol")
    assert proc.returncode == 2
    assert "unknown language 'cobol'" in proc.stderr and "json" in proc.stderr


def test_unknown_extension_asks_for_a_language(tmp_path):
    f = tmp_path / "x.weird"
    f.write_text("{}")
    proc = run("check", str(f))
    assert proc.returncode == 2
    assert "--language" in proc.stderr


def test_custom_hole_marker(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"a": ??? }')
    proc = run("check", str(f), "--hole-marker", "???")
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)


def test_exhausted_budget_answers_unknown_with_exit_status_3(tmp_path):
    f = tmp_path / "x.cpp"
    f.write_text("int main() { return <|hole|> }\n" * 20)
    proc = run("check", str(f), "--max-steps", "50")
    assert proc.returncode == 3
    assert "unknown" in proc.stderr


@pytest.mark.parametrize("language", ["json", "cpp"])
def test_grammar_prints_the_normalized_size(language):
    proc = run("grammar", language)
    assert proc.returncode == 0, proc.stderr
    assert "nonterminals" in proc.stdout and "productions" in proc.stdout


def test_models_lists_the_bundled_default_model():
    proc = run("models")
    assert proc.returncode == 0, proc.stderr
    assert "default" in proc.stdout.lower()
