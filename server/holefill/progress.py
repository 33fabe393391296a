"""Progress of long command-line work on stderr, for a person or for a log.

On a terminal one line is redrawn in place. Anywhere else (CI, a pipe, an editor running the
command) a redrawn line is noise and a silent one looks hung, so plain lines are printed: one
when a stage begins, then at every tenth of the work and at least every `every_s` seconds.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


class Progress:
    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool = True,
                 every_s: float = 5.0) -> None:
        self.label, self.enabled, self.every_s = label, enabled, every_s
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream)
        self._stage: str | None = None
        self._tenth = -1
        self._last = 0.0
        self._drawn = 0

    def update(self, frac: float | None, message: str = "", *, stage: str | None = None) -> None:
        """`frac` of the work is done (None: unknown); `stage` names a phase (a new stage
        always prints a line)."""
        if not self.enabled:
            return
        pct = "" if frac is None else f"{round(100 * min(1.0, max(0.0, frac))):3d}% "
        line = f"{self.label}: {pct}{message}".rstrip()
        if self.tty:
            self.stream.write("\r" + line.ljust(self._drawn))
            self._drawn = len(line)
            self.stream.flush()
            return
        now = time.monotonic()
        tenth = -1 if frac is None else int(10 * min(1.0, frac))
        if stage != self._stage or tenth > self._tenth or now - self._last >= self.every_s:
            self._stage, self._tenth, self._last = stage, max(tenth, self._tenth), now
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.enabled and self.tty and self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
