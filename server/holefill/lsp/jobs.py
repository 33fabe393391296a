"""The model's work queue: one thread, jobs in order, cancelled work never waits in line.

A `Completer` runs one fill at a time (it shares its KV cache), so the model has one worker
thread. Each job carries a `CancelToken`, which the engine polls (between tokens, in the
checks: `Completer.fill(..., cancel=token)`) and which is set by the client's
`$/cancelRequest`, by a newer request on the same document (the server's policy: the newest
request per document wins), by its deadline, or at shutdown.

- A job whose token is set before it starts is not run: it is answered `Cancelled` at once,
  so a queue of superseded requests drains in microseconds instead of each one starting up.
- `urgent` jobs (loading a model) go to the front of the queue: a reload is not stuck behind
  fills, which would use the old model anyway (the server cancels them).
- For every job that was running when its token was set, the time from the set to the job's
  return is recorded (`stop_ms`): how fast cancelled work really stops.
- A job still running `grace_s` after its token was set is stopped with an asynchronous
  `Cancelled` where that is safe (`holefill.lsp.interrupt`, the lexing code by default): a
  backstop for the stages of the engine that do not poll the token yet.
- After each job the C heap's free memory goes back to the system (`malloc_trim`, where the C
  library has it): a check allocates in bursts of up to hundreds of MB, and without this the
  server kept its largest burst for good (measured by the soak: 377 MB at the start, 605 MB
  after 20 s, flat when trimmed).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from holefill.decode.loop import Cancelled
from holefill.lsp.interrupt import in_lexing, interrupt

log = logging.getLogger(__name__)
T = TypeVar("T")


class CancelToken:
    """Set once, with a reason ("cancelled", "superseded", "deadline", "shutdown"); a
    deadline sets it when it is polled after the deadline passed. Callable: the engine's
    `cancel=` accepts it as it is."""

    def __init__(self, deadline_s: float | None = None) -> None:
        self._event = threading.Event()
        self.deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self.reason: str | None = None
        self.set_at: float | None = None

    def set(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self.reason, self.set_at = reason, time.monotonic()
            self._event.set()

    def is_set(self) -> bool:
        if self._event.is_set():
            return True
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.set("deadline")
            return True
        return False

    __call__ = is_set

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


def _malloc_trim() -> Callable[[], object] | None:
    try:
        import ctypes
        import ctypes.util

        name = ctypes.util.find_library("c")
        libc = ctypes.CDLL(name) if name else None
        trim = getattr(libc, "malloc_trim", None)
    except (OSError, AttributeError):
        return None
    return None if trim is None else (lambda: trim(0))


_TRIM = _malloc_trim()


# Growth of native memory since the last full collection past which a job's end runs the
# garbage collector: what the core holds for Python objects in reference cycles (a
# request's layout sessions, parsers) is invisible to the collector's own trigger, which
# counts Python objects (the LSP soak: 15-20 MB held after a full collection, up to 200 MB
# before). A full collection with a model loaded takes about 200 ms.
GC_NATIVE_GROWTH = 128 << 20
_collected_at = [0]  # native bytes after the last collection this module ran


def release_memory() -> None:
    """Give the C heap's free memory back to the system (glibc; elsewhere a no-op), after
    collecting the cycles that hold native memory when it grew much."""
    from holefill.check.core import live_bytes

    if live_bytes() > _collected_at[0] + GC_NATIVE_GROWTH:
        gc.collect()
        _collected_at[0] = live_bytes()
    if _TRIM is not None:
        _TRIM()


def _seen(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


# How long the backstop waits for a raised Cancelled to end the job before raising again.
RETRY_S = 1.0


@dataclass
class _Job(Generic[T]):
    fn: Callable[[], T]
    token: CancelToken
    future: asyncio.Future[T]
    loop: asyncio.AbstractEventLoop
    name: str
    interrupted: bool = False
    interrupted_at: float | None = None  # when the backstop last raised in it


class Worker:
    """Runs jobs on one daemon thread (a daemon, so a job that is still running never holds
    the process at exit)."""

    def __init__(self, name: str = "holefill-model", history: int = 1000, *,
                 interruptible: Callable[[list[str]], bool] | None = in_lexing,
                 grace_s: float = 0.25) -> None:
        self.name = name
        self.interruptible = interruptible
        self.grace_s = grace_s
        self._jobs: deque[_Job[Any]] = deque()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.running: _Job[Any] | None = None
        self.stop_ms: deque[float] = deque(maxlen=history)
        self.dropped = 0
        # called on the worker thread: (job name, why it was cancelled, ms from the cancel
        # to the job's return) for each job that was running when it was cancelled
        self.on_stop: Callable[[str, str, float], None] | None = None

    def submit(self, fn: Callable[[], T], token: CancelToken, *, urgent: bool = False,
               name: str = "job") -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        job = _Job(fn, token, loop.create_future(), loop, name)
        # a caller that was cancelled stops waiting (it awaits through asyncio.shield): mark
        # the job's outcome as seen, or asyncio logs "exception was never retrieved"
        job.future.add_done_callback(_seen)
        with self._cv:
            if self._closed:
                raise Cancelled("the server is shutting down")
            if urgent:
                self._jobs.appendleft(job)
            else:
                self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
                if self.interruptible is not None:
                    threading.Thread(target=self._watch, name=f"{self.name}-watch",
                                     daemon=True).start()
            self._cv.notify()
        return job.future

    def cancel_all(self, reason: str) -> None:
        """Set the token of every queued and running job."""
        with self._cv:
            jobs = list(self._jobs) + ([self.running] if self.running else [])
        for job in jobs:
            job.token.set(reason)

    def close(self) -> None:
        self.cancel_all("shutdown")
        with self._cv:
            self._closed = True
            self._cv.notify()

    def queued(self) -> int:
        with self._cv:
            return len(self._jobs)

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._jobs and not self._closed:
                    self._cv.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
                if job.token.is_set():
                    self.dropped += 1
                    self._settle(job, None, Cancelled(f"{job.name}: {job.token.reason}"))
                    continue
                self.running = job
            result: Any = None
            error: BaseException | None = None
            try:
                result = job.fn()
            except BaseException as exc:  # handed to the awaiting request, which answers it
                error = exc
                # the frames' locals (the request's engines, their native memory) go now,
                # not when the error is dropped; its traceback still prints
                traceback.clear_frames(exc.__traceback__)
            finally:
                with self._cv:
                    self.running = None
                release_memory()
            if job.token.set_at is not None:
                ms = 1e3 * (time.monotonic() - job.token.set_at)
                self.stop_ms.append(ms)
                if self.on_stop is not None:
                    why = job.token.reason or "cancelled"
                    self.on_stop(job.name, f"{why}, interrupted" if job.interrupted else why,
                                 ms)
            self._settle(job, result, error)

    def _watch(self) -> None:
        """Stop a job that did not notice its token within `grace_s` (module docstring)."""
        assert self._thread is not None and self._thread.ident is not None
        assert self.interruptible is not None
        while not self._closed:
            time.sleep(min(0.05, self.grace_s / 2))
            job = self.running
            if job is None or not job.token.is_set():
                continue
            now = time.monotonic()
            if job.token.set_at is None or now - job.token.set_at < self.grace_s:
                continue
            # raised before and still running: the exception landed where it was dropped (a
            # finalizer run by the garbage collector reports it as unraisable): raise again
            if job.interrupted_at is not None and now - job.interrupted_at < RETRY_S:
                continue
            with self._cv:  # the worker cannot leave the job while this holds the lock
                if self.running is job and interrupt(self._thread.ident, Cancelled,
                                                     self.interruptible):
                    job.interrupted, job.interrupted_at = True, now

    @staticmethod
    def _settle(job: _Job[Any], result: Any, error: BaseException | None) -> None:
        def settle() -> None:
            if job.future.done():
                return
            if error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(result)

        with contextlib.suppress(RuntimeError):  # a closed event loop: nobody waits any more
            job.loop.call_soon_threadsafe(settle)
