"""`holefill fill` and `holefill complete` as a user runs them, with a tiny model built here.

Data: examples/holes.py, and files written to tmp_path byte by byte (CRLF line breaks, a
latin-1 coding line, a UTF-8 byte-order mark, no final line break).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
pytest.importorskip("torch")
pytest.importorskip("transformers")


def run(*args: str, model: Path | None = None,
        quiet: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    extra = ["--model", str(model)] if model is not None else []
    extra += ["--quiet"] if quiet else []
    return subprocess.run([sys.executable, "-m", "holefill", *args, *extra],
                          capture_output=True, text=True, timeout=300, env=env)


# (file name, bytes before the hole, bytes after it, the file's encoding)
ODD_FILES = [
    ("crlf.py", b"x = 1\r\ndef g(a):\r\n    return a + ", b"\r\n\r\nprint(g(2))", "utf-8"),
    ("latin1.py", b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\nx = [1, ",
     b"]\ns = 'gar\xe7on'\n", "latin-1"),
    ("bom.py", b"\xef\xbb\xbfx = (", b")\r\ny = '\xc3\xa9'\r\n", "utf-8-sig"),
]


@pytest.mark.parametrize(("name", "before", "after", "encoding"), ODD_FILES,
                         ids=[f[0] for f in ODD_FILES])
def test_fill_write_keeps_every_byte_outside_the_hole(tmp_path, tiny_model_dir, name, before,
                                                      after, encoding):
    """CRLF stays CRLF (also inside the filling), latin-1 stays latin-1, the BOM and the
    missing final line break stay; `-q -w` prints nothing on success."""
    target = tmp_path / name
    target.write_bytes(before + b"<|hole|>" + after)
    proc = run("fill", str(target), "-w", "--max-new-tokens", "12", model=tiny_model_dir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    out = target.read_bytes()
    assert out[: len(before)] == before and out[len(out) - len(after):] == after
    middle = out[len(before): len(out) - len(after)].decode(encoding)
    if b"\r\n" in before:
        assert "\n" not in middle.replace("\r\n", "")
    ast.parse(out)  # bytes: ast reads the coding line and the BOM as Python does


def test_fill_writes_only_insertions_and_the_file_parses(tmp_path, tiny_model_dir):
    target = tmp_path / "holes.py"
    original = (ROOT / "examples" / "holes.py").read_text()
    target.write_text(original)
    proc = run("fill", str(target), "--write", "--max-new-tokens", "8", model=tiny_model_dir)
    assert proc.returncode == 0, proc.stderr
    filled = target.read_text()
    ast.parse(filled)
    pos = 0
    for chunk in original.split("<|hole|>"):  # every fixed character kept, in order
        found = filled.find(chunk, pos)
        assert found >= 0, chunk
        pos = found + len(chunk)


def test_fill_without_write_prints_a_diff_and_leaves_the_file(tmp_path, tiny_model_dir):
    target = tmp_path / "holes.py"
    target.write_text("x = [1, <|hole|>]\n")
    proc = run("fill", str(target), "--max-new-tokens", "4", model=tiny_model_dir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("---") and "+x = [1, " in proc.stdout
    assert target.read_text() == "x = [1, <|hole|>]\n"


def test_complete_prints_the_filling_at_line_and_column(tmp_path, tiny_model_dir):
    target = tmp_path / "f.py"
    text = "def f(a):\n    return a +\n\nprint(f(1))\n"
    target.write_text(text)
    proc = run("complete", f"{target}:2:15", "--max-new-tokens", "6", model=tiny_model_dir)
    assert proc.returncode == 0, proc.stderr
    lines = text.splitlines(keepends=True)
    ast.parse("".join(lines[:1]) + lines[1].rstrip("\n") + proc.stdout + "\n" + "".join(lines[2:]))


def test_positions_outside_the_file_and_missing_models_are_clear_errors(tmp_path):
    target = tmp_path / "f.py"
    target.write_text("x = 1\n")
    proc = run("complete", f"{target}:9:1")
    assert proc.returncode == 2 and "line 9 is outside the file (it has 1 lines)" in proc.stderr
    proc = run("complete", f"{target}:1:40")
    assert proc.returncode == 2 and "column 40 is outside line 1" in proc.stderr
    proc = run("fill", str(target), model=tmp_path / "no-model", quiet=False)
    assert proc.returncode == 0 and "no hole markers" in proc.stderr
    proc = run("fill", str(target), model=tmp_path / "no-model")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")  # -q: nothing
    target.write_text("x = <|hole|>\n")
    proc = run("fill", str(target), model=tmp_path / "no-model")
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_progress_is_shown_as_plain_lines_when_stderr_is_not_a_terminal(tmp_path,
                                                                         tiny_model_dir):
    target = tmp_path / "holes.py"
    target.write_text("x = [1, <|hole|>]\n")
    proc = run("fill", str(target), "--max-new-tokens", "4", model=tiny_model_dir, quiet=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert any(line.startswith("loading model: ") for line in lines), proc.stderr
    assert any(line.startswith("filling: ") for line in lines), proc.stderr
    assert "\r" not in proc.stderr  # no redrawn terminal line in a log
