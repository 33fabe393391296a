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


MATCH_HOLE = ("def f(x):\n    match x:\n        case 1:\n            return 1\n"
              "        <|hole|>:\n            return 2\n    return 3\n")


def test_a_fill_where_a_case_belongs_writes_a_case(tmp_path, tiny_model_dir):
    """The report's repro: `if 0:` was written there, marked verified; CPython refused it."""
    target = tmp_path / "match.py"
    target.write_text(MATCH_HOLE)
    proc = run("fill", str(target), "--write", "--max-new-tokens", "8", model=tiny_model_dir)
    assert proc.returncode == 0, proc.stderr
    tree = ast.parse(target.read_text())
    assert len(tree.body[0].body[0].cases) == 2


def test_an_unverified_fill_is_neither_written_nor_printed(tmp_path, tiny_model_dir):
    """An unconstrained empty filling leaves `x = ` (the final whole-file check refuses it):
    exit 1 with the reason, the file as it was, stdout empty; --allow-unverified shows it and
    still exits 1."""
    target = tmp_path / "f.py"
    target.write_text("x = <|hole|>\ny = 2\n")
    for args in (["fill", str(target), "--write"], ["fill", str(target)],
                 ["complete", f"{target}:1:5"]):
        proc = run(*args, "--no-constraint", "--max-new-tokens", "0", model=tiny_model_dir)
        assert proc.returncode == 1, proc.stderr
        assert "would not be valid" in proc.stderr and "nothing was written" in proc.stderr
        assert "CPython refuses line 1" in proc.stderr
        assert proc.stdout == "" and target.read_text() == "x = <|hole|>\ny = 2\n"
    proc = run("fill", str(target), "--no-constraint", "--max-new-tokens", "0",
               "--allow-unverified", model=tiny_model_dir)
    assert proc.returncode == 1 and "+x = \n" in proc.stdout


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


def test_fill_and_complete_with_a_diffusion_model(tmp_path, tiny_diffusion_dir):
    """`--decoder diffusion` (and auto-detection from the folder) runs the diffusion loop:
    every hole at once, only insertions, the file parses; progress names its steps."""
    target = tmp_path / "holes.py"
    original = "def f(a):\n    return (a + <|hole|>)\n\nx = [<|hole|>\ny = 1\n"
    target.write_text(original)
    proc = run("fill", str(target), "--write", "--decoder", "diffusion", "--max-new-tokens",
               "8", "--hole-tokens", "4", model=tiny_diffusion_dir, quiet=False)
    assert proc.returncode == 0, proc.stderr
    assert "diffusion step" in proc.stderr
    filled = target.read_text()
    ast.parse(filled)
    pos = 0
    for chunk in original.split("<|hole|>"):
        found = filled.find(chunk, pos)
        assert found >= 0, chunk
        pos = found + len(chunk)
    target.write_text("def f(a):\n    return a +\n\nprint(f(1))\n")
    proc = run("complete", f"{target}:2:15", "--max-new-tokens", "6",
               model=tiny_diffusion_dir)  # decoder auto: detected from the folder
    assert proc.returncode == 0, proc.stderr
    ast.parse("def f(a):\n    return a +" + proc.stdout + "\n\nprint(f(1))\n")
