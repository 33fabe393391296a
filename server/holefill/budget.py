"""The work one check may do: steps, a wall-clock deadline and cancellation, in every stage.

The native core has had a step budget from the start; lexing with holes and the Python layout
product had none, so 100 adjacent holes took 41 s and 2.3 GB whatever the budget. A `Budget`
travels through every stage that can run long (the lexer's runs and graph, the layout
product, the incremental engine's right contexts) and is spent per edge or state built; the
native core gets what is left. Running out, the deadline passing or the cancel callback
firing raises `BudgetExhausted`, which the checker turns into UNKNOWN (never NO) with the
reason in its statistics.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from holefill.errors import HolefillError

# How often (in spends) the clock and the cancel callback are looked at: a spend is a few
# hundred nanoseconds of Python work, so this keeps the reaction within about a millisecond.
POLL_EVERY = 512
# Items a linear scan of the text or of a raw graph handles between two polls (`blocks`):
# a few milliseconds of Python at most.
SCAN_BLOCK = 8192


class BudgetExhausted(HolefillError):
    """A check's work budget, deadline or cancellation stopped it (the answer is UNKNOWN)."""


class Budget:
    """Steps left (None: no limit), a deadline (time.monotonic() value) and a cancel
    callback, spent by the stages of one check."""

    def __init__(self, steps: int | None = None, seconds: float | None = None,
                 cancel: Callable[[], bool] | None = None) -> None:
        self.left = steps
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.cancel = cancel
        self.spent = 0
        self._poll = POLL_EVERY

    def sharing_time(self, steps: int | None) -> Budget:
        """A budget of `steps` with this one's deadline and cancel callback (a check run
        inside a check, as the witness's re-check)."""
        out = Budget(steps, None, self.cancel)
        out.deadline = self.deadline
        return out

    def spend(self, n: int = 1) -> None:
        """Counts n steps; raises BudgetExhausted when the budget is gone."""
        self.spent += n
        if self.left is not None:
            self.left -= n
            if self.left < 0:
                raise BudgetExhausted(f"the work budget ran out after {self.spent} steps")
        self._poll -= n
        if self._poll <= 0:
            self._poll = POLL_EVERY
            self.poll()

    def poll(self) -> None:
        """Raises BudgetExhausted when the deadline has passed or the caller cancelled."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetExhausted("the check's time ran out")
        if self.cancel is not None and self.cancel():
            raise BudgetExhausted("the check was cancelled")

    def stopped(self) -> bool:
        """For a native run's cancel callback: False, or BudgetExhausted (which the binding
        re-raises after the run stops)."""
        self.poll()
        return False

    def steps_left(self, default: int) -> int:
        """What the native core may still spend (at least 1, so that it answers UNKNOWN
        itself rather than take 0 for its default)."""
        if self.left is None:
            return default
        return max(1, min(default, self.left))


def poll(budget: Budget | None) -> None:
    """`budget.poll()` when there is a budget: the stages that read the whole text or
    graph once (limits, closers ahead, spans) poll between blocks of SCAN_BLOCK items
    without spending steps, so that the step budget keeps meaning the search's work."""
    if budget is not None:
        budget.poll()


def blocks(n: int, budget: Budget | None, size: int = SCAN_BLOCK) -> Iterator[range]:
    """range(n) in consecutive blocks of `size`, polling `budget` before each."""
    for lo in range(0, n, size):
        poll(budget)
        yield range(lo, min(n, lo + size))


def stopped_native(budget: Budget | None, poll: Any, spent: int) -> BudgetExhausted:
    """The error of a native stage that its poll stopped after `spent` steps: what the
    deadline or the cancel callback raised (the steps are counted first)."""
    if budget is not None:
        with contextlib.suppress(BudgetExhausted):  # the stop below says why
            budget.spend(spent)
    try:
        poll.raise_pending()
    except BudgetExhausted as exc:
        return exc
    return BudgetExhausted("the check was cancelled")


def native_poll(budget: Budget | None) -> Any:
    """The HfCancelFn a native stage polls for `budget`'s deadline and cancel callback
    (holefill.check.core.NativeCancel); it never fires without either."""
    from holefill.check.core import NativeCancel

    watched = budget is not None and (budget.deadline is not None or budget.cancel is not None)
    return NativeCancel(budget.stopped if watched and budget is not None else None)
