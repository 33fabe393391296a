"""One message per outage of the model, not one per request.

An inference server that is down fails every request, and inline completion asks on every
pause in typing: with a message per failure, a user typing while the server is down got a
pop-up per keystroke. The same for a local model that fails to load (each request tries the
load again). So the server shows the first failure of an outage (window/showMessage), writes
the ones after it to the log only (window/logMessage, type Error: VS Code's output channel
and the client's status bar see them), and says so once when the model answers again.

An outage belongs to one model (`Settings.model_key`): a failure of another model (the
settings changed) starts a new outage, shown again; a success ends it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Outage:
    key: tuple
    first: str  # the first failure's message, as shown
    started: float = field(default_factory=time.monotonic)
    failures: int = 1


class Outages:
    """The model's failures since its last success."""

    def __init__(self) -> None:
        self.current: Outage | None = None

    def failed(self, key: tuple, message: str) -> bool:
        """A request to the model of ``key`` failed with ``message``: True when it is the
        first failure of an outage (show it), False for a repeat (log it)."""
        cur = self.current
        if cur is not None and cur.key == key:
            cur.failures += 1
            return False
        self.current = Outage(key, message)
        return True

    def succeeded(self, key: tuple) -> Outage | None:
        """The model of ``key`` answered: the outage this ends, if there was one."""
        cur = self.current
        if cur is None or cur.key != key:
            return None
        self.current = None
        return cur


def back_message(outage: Outage, model: str | None, remote: bool) -> str:
    """What the editor is told when the model works again after ``outage``."""
    took = time.monotonic() - outage.started
    failed = f"{outage.failures} request(s) failed meanwhile, over {took:.0f} s"
    if remote:
        return f"the inference server at {model} answers again ({failed})"
    return f"the model {model or 'bundled default'} works again ({failed})"


__all__ = ["Outage", "Outages", "back_message"]
