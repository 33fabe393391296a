"""Progress on stderr: plain lines for logs and pipes, one redrawn line on a terminal.

Data: updates fed to holefill.progress.Progress over an in-memory stream.
"""

from __future__ import annotations

import io

from holefill.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_pipe_gets_a_line_per_stage_and_per_tenth_not_per_update() -> None:
    out = io.StringIO()
    with Progress("filling", stream=out) as bar:
        bar.update(None, "resolve", stage="resolve")
        bar.update(None, "weights", stage="weights")
        for i in range(101):
            bar.update(i / 100, f"{i} tokens")
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["filling: resolve", "filling: weights", "filling:   0% 0 tokens"]
    assert lines[-1] == "filling: 100% 100 tokens"
    assert len(lines) == 13 and "\r" not in out.getvalue()


def test_a_terminal_gets_one_line_redrawn_and_cleared() -> None:
    out = Terminal()
    with Progress("loading model", stream=out) as bar:
        bar.update(0.5, "weights")
        bar.update(1.0, "ready")
    text = out.getvalue()
    assert "\n" not in text and text.endswith("\r") and "loading model: 100% ready" in text


def test_disabled_progress_prints_nothing() -> None:
    out = io.StringIO()
    with Progress("filling", stream=out, enabled=False) as bar:
        bar.update(0.5, "x", stage="s")
    assert out.getvalue() == ""
