"""The model side of the server: load the model once, run fills off the event loop.

The model runs on the `Worker` thread of `holefill.lsp.jobs`, one job at a time. Cancellation
is cooperative: a job gets a `CancelToken` that the engine polls (between tokens and inside
the checks); a cancelled request sets it. Loading a model is urgent: it goes to the front of
the queue, and the fills queued or running for the old model are cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from holefill.lsp.jobs import CancelToken, Worker
from holefill.lsp.settings import Settings

if TYPE_CHECKING:
    from holefill.decode.completer import Completer

log = logging.getLogger(__name__)
T = TypeVar("T")

# progress(fraction 0..1 or None, message), called from the model thread
Report = Callable[[float | None, str], None]
# the backend's loading stages, as the progress item's message
_STAGES = {"resolve": "finding it", "tokenizer": "tokenizer", "weights": "weights",
           "device": "moving it to the device", "ready": "ready"}


class Engine:
    def __init__(self) -> None:
        self.worker = Worker()
        self._completer: Completer | None = None
        self._key: tuple | None = None
        self._loading: asyncio.Future[Any] | None = None
        self._loading_key: tuple | None = None

    @property
    def loaded(self) -> Completer | None:
        return self._completer

    def is_loaded(self, settings: Settings) -> bool:
        return self._completer is not None and self._key == settings.model_key()

    async def completer(self, settings: Settings, report: Report | None = None) -> Completer:
        """The model of ``settings``, loading it (once, however many requests wait) when it
        is not the one loaded."""
        key = settings.model_key()
        if self._completer is not None and self._key == key:
            return self._completer
        if self._loading is None or self._loading_key != key:
            self.worker.cancel_all("the model is being replaced")
            self._loading_key = key
            self._loading = self.worker.submit(lambda: self._load(settings, report),
                                               CancelToken(), urgent=True, name="load")
        loading = self._loading
        try:
            comp = await asyncio.shield(loading)
        finally:
            if loading.done() and self._loading is loading:
                self._loading = None
        return comp

    def _load(self, settings: Settings, report: Report | None) -> Completer:
        from holefill.decode.completer import Completer

        def progress(stage: str, frac: float | None) -> None:
            # the progress item's title already says "loading model" (the editor shows
            # "title: message"; "loading model: loading model: weights" before)
            if report is not None:
                report(frac, _STAGES.get(stage, stage))

        # the old model goes first: two large models may not fit in memory together
        self._completer, self._key = None, None
        comp = Completer(model=settings.model, device=settings.device, dtype=settings.dtype,
                         trust_remote_code=settings.trust_remote_code, progress=progress,
                         template=settings.template, fim_format=settings.fim_format,
                         decoder=settings.decoder, timeout_s=settings.remote_timeout)
        self._completer, self._key = comp, settings.model_key()
        return comp

    async def run(self, job: Callable[[], T], token: CancelToken, name: str = "fill") -> T:
        """Run ``job`` on the model thread; a caller that is cancelled sets ``token``, which
        the job polls. The caller waits no longer than the token's deadline, also while the
        job is still queued behind other work (it is then dropped when its turn comes):
        Cancelled, with the token's reason "deadline"."""
        from holefill.decode.loop import Cancelled

        future = self.worker.submit(job, token, name=name)
        wait = None if token.deadline is None else max(0.0, token.deadline - time.monotonic())
        try:
            return await asyncio.wait_for(asyncio.shield(future), wait)
        except TimeoutError:
            token.set("deadline")
            raise Cancelled(f"{name}: past its deadline") from None
        except asyncio.CancelledError:
            token.set("cancelled")
            raise

    def shutdown(self) -> None:
        self.worker.close()
