"""The model's work queue (holefill.lsp.jobs) with plain Python jobs standing in for fills:
jobs that poll their token the way `Completer.fill` does between tokens."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from holefill.decode.loop import Cancelled
from holefill.lsp.jobs import CancelToken, Worker

pytestmark = pytest.mark.asyncio


def polling_job(token: CancelToken, seconds: float, started: threading.Event | None = None):
    """Work for ``seconds`` in 1 ms steps, checking the token between steps like the
    decoding loop does between tokens."""

    def run() -> str:
        if started is not None:
            started.set()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if token.is_set():
                raise Cancelled(f"stopped: {token.reason}")
            time.sleep(0.001)
        return "done"

    return run


async def test_jobs_run_in_order_one_at_a_time():
    worker = Worker()
    order: list[int] = []
    futures = [worker.submit(lambda i=i: order.append(i) or i, CancelToken()) for i in range(5)]
    assert await asyncio.gather(*futures) == [0, 1, 2, 3, 4]
    assert order == [0, 1, 2, 3, 4]
    worker.close()


async def test_a_job_cancelled_while_queued_never_runs_and_is_answered_at_once():
    worker = Worker()
    started = threading.Event()
    first = CancelToken()
    running = worker.submit(polling_job(first, 0.5, started), first)
    queued = [CancelToken() for _ in range(20)]
    ran: list[int] = []
    futures = [worker.submit(lambda i=i: ran.append(i), t) for i, t in enumerate(queued)]
    await asyncio.to_thread(started.wait, 5)
    for t in queued:
        t.set("superseded")
    first.set("cancelled")
    t0 = time.monotonic()
    results = await asyncio.gather(running, *futures, return_exceptions=True)
    assert all(isinstance(r, Cancelled) for r in results)
    assert ran == [] and worker.dropped == 20
    assert time.monotonic() - t0 < 0.5  # not 20 start-ups, not the rest of the first job
    worker.close()


async def test_a_running_job_stops_within_milliseconds_and_the_time_is_recorded():
    worker = Worker()
    started = threading.Event()
    token = CancelToken()
    future = worker.submit(polling_job(token, 10, started), token)
    await asyncio.to_thread(started.wait, 5)
    token.set("cancelled")
    with pytest.raises(Cancelled):
        await future
    assert len(worker.stop_ms) == 1 and worker.stop_ms[0] < 100
    worker.close()


async def test_urgent_jobs_go_before_queued_ones():
    worker = Worker()
    started = threading.Event()
    blocker = CancelToken()
    first = worker.submit(polling_job(blocker, 0.2, started), blocker)
    await asyncio.to_thread(started.wait, 5)
    order: list[str] = []
    normal = worker.submit(lambda: order.append("fill"), CancelToken())
    urgent = worker.submit(lambda: order.append("load"), CancelToken(), urgent=True)
    await asyncio.gather(first, normal, urgent)
    assert order == ["load", "fill"]
    worker.close()


async def test_cancel_all_reaches_queued_and_running_jobs():
    worker = Worker()
    started = threading.Event()
    tokens = [CancelToken() for _ in range(3)]
    futures = [worker.submit(polling_job(tokens[0], 10, started), tokens[0])]
    futures += [worker.submit(polling_job(t, 10), t) for t in tokens[1:]]
    await asyncio.to_thread(started.wait, 5)
    worker.cancel_all("the model is being replaced")
    results = await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 2)
    assert all(isinstance(r, Cancelled) for r in results)
    assert {t.reason for t in tokens} == {"the model is being replaced"}
    worker.close()


async def test_a_deadline_sets_the_token_when_polled():
    token = CancelToken(deadline_s=0.05)
    assert not token.is_set()
    await asyncio.sleep(0.08)
    assert token.is_set() and token.reason == "deadline"
    token.set("cancelled")
    assert token.reason == "deadline"  # set once


async def test_errors_of_a_job_reach_the_caller():
    worker = Worker()

    def boom() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        await worker.submit(boom, CancelToken())
    assert await worker.submit(lambda: 7, CancelToken()) == 7
    worker.close()


def busy_without_polling(seconds: float) -> str:
    """Pure-Python work that never looks at its token (as the layout product did)."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += sum(range(100))
    return "finished"


def here(files: list[str]) -> bool:
    return bool(files) and files[0].endswith("test_jobs.py")


async def test_a_job_that_never_polls_is_stopped_after_the_grace_period():
    worker = Worker(interruptible=here, grace_s=0.2)
    token = CancelToken()
    stops: list[str] = []
    worker.on_stop = lambda name, why, ms: stops.append(why)
    future = worker.submit(lambda: busy_without_polling(30), token)
    await asyncio.sleep(0.3)
    token.set("cancelled")
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        await asyncio.wait_for(future, 5)
    assert time.monotonic() - t0 < 2
    assert stops == ["cancelled, interrupted"]
    assert await worker.submit(lambda: "next", CancelToken()) == "next"  # the worker lives
    worker.close()


async def test_a_job_outside_the_safe_code_is_left_to_finish():
    worker = Worker(interruptible=lambda files: False, grace_s=0.05)
    token = CancelToken()
    future = worker.submit(lambda: busy_without_polling(0.6), token)
    await asyncio.sleep(0.1)
    token.set("cancelled")
    assert await asyncio.wait_for(future, 5) == "finished"
    worker.close()


async def test_a_deadline_stops_a_job_that_never_polls():
    worker = Worker(interruptible=here, grace_s=0.1)
    future = worker.submit(lambda: busy_without_polling(30), CancelToken(deadline_s=0.3))
    with pytest.raises(Cancelled):
        await asyncio.wait_for(future, 5)
    worker.close()


async def test_a_request_waits_no_longer_than_its_deadline_even_behind_other_work():
    """An inline completion queued behind a long fill of another document is answered at
    its deadline (the soak saw them wait 215 s behind a 300 s fill), and dropped later."""
    from holefill.lsp.engine import Engine

    engine = Engine()
    engine.worker.interruptible = None  # the long job below is never interrupted
    long_token = CancelToken()
    started = threading.Event()
    long_job = asyncio.ensure_future(engine.run(polling_job(long_token, 3, started),
                                                long_token))
    await asyncio.to_thread(started.wait, 5)
    ran: list[int] = []
    token = CancelToken(deadline_s=0.2)
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        await engine.run(lambda: ran.append(1), token, name="inline completion")
    assert time.monotonic() - t0 < 1 and token.reason == "deadline"
    long_token.set("cancelled")
    with pytest.raises(Cancelled):
        await long_job
    await asyncio.sleep(0.1)
    assert ran == [] and engine.worker.dropped == 1
    engine.shutdown()


async def test_a_cancel_that_lands_in_a_finalizer_is_one_line_not_a_traceback(capsys) -> None:
    """The backstop's asynchronous Cancelled can arrive while the garbage collector runs a
    finalizer, where Python can only drop it: the soak saw its traceback on stderr."""
    import gc
    import sys

    from holefill.decode.loop import Cancelled
    from holefill.lsp.interrupt import in_lexing, quiet_unraisable

    class Dropping:
        def __del__(self) -> None:
            raise Cancelled("landed here")

    before = sys.unraisablehook
    try:
        quiet_unraisable(Cancelled)
        Dropping()
        gc.collect()
    finally:
        sys.unraisablehook = before
    err = capsys.readouterr().err
    assert "Traceback" not in err and "landed in a finalizer" in err
    # and the backstop raises only when the innermost frame itself is lexing code
    assert in_lexing(["/x/holefill/lexing/holes.py", "/x/holefill/check/checker.py"])
    assert not in_lexing(["/usr/lib/python3/_weakrefset.py", "/x/holefill/lexing/holes.py"])
