"""The model side of the server: load the model once, run fills off the event loop.

The model runs on the `Worker` thread of `holefill.lsp.jobs`, one job at a time. Cancellation
is cooperative: a job gets a `CancelToken` that the engine polls (between tokens and inside
the checks); a cancelled request sets it. Loading a model is urgent: it goes to the front of
the queue, and the fills queued or running for the old model are cancelled.

A load can be cancelled (`cancel_load`: the user cancelled its progress item; or another
model's load replaces it). Its waiters are answered `LoadCancelled` at once; the load itself
stops at its next step (the backends report "resolve", "tokenizer", "weights", "device";
transformers' `from_pretrained`, one step, cannot be stopped inside; a remote model's set-up
request to a server that does not answer is closed at once) and keeps nothing, also
when it finished before it noticed: the user asked for no model, and a large one would hold
its memory. The old model is gone by then (a load drops it first: two may not fit together).
A load the user cancelled is not started again by automatic requests (`cancelled_key`):
typing would start it again at the next pause.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from holefill.decode.loop import Cancelled
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


class LoadCancelled(Cancelled):
    """The model's load was cancelled (by the user, or replaced by another model's)."""


class Engine:
    def __init__(self) -> None:
        self.worker = Worker()
        self._completer: Completer | None = None
        self._key: tuple | None = None
        self._loading: asyncio.Future[Any] | None = None
        self._loading_key: tuple | None = None
        self._load_token: CancelToken | None = None
        # the model whose load the user cancelled: automatic requests do not load it again
        self.cancelled_key: tuple | None = None

    @property
    def loaded(self) -> Completer | None:
        return self._completer

    def is_loaded(self, settings: Settings) -> bool:
        return self._completer is not None and self._key == settings.model_key()

    async def completer(self, settings: Settings, report: Report | None = None, *,
                        automatic: bool = False) -> Completer:
        """The model of ``settings``, loading it (once, however many requests wait) when it
        is not the one loaded. ``automatic``: a request the user did not ask for (inline
        completion while typing) does not start a load the user cancelled."""
        key = settings.model_key()
        if self._completer is not None and self._key == key:
            return self._completer
        if self._loading is None or self._loading_key != key:
            if automatic and key == self.cancelled_key:
                raise LoadCancelled("the model load was cancelled; ask for a suggestion or "
                                    "Fill holes to load it")
            self.worker.cancel_all("the model is being replaced")
            token = CancelToken()
            self.cancelled_key = None
            self._loading_key, self._load_token = key, token
            self._loading = self.worker.submit(lambda: self._load(settings, report, token),
                                               token, urgent=True, name="load")
        loading = self._loading
        try:
            comp = await asyncio.shield(loading)
        finally:
            if loading.done() and self._loading is loading:
                self._loading = None
        return comp

    def cancel_load(self) -> bool:
        """Cancel the load under way (the user cancelled its progress item): its waiters get
        LoadCancelled now, the load stops at its next step (module docstring). Called on the
        event loop. False when no load was under way."""
        loading, token = self._loading, self._load_token
        if loading is None or loading.done() or token is None:
            return False
        token.set("cancelled")
        self.cancelled_key = self._loading_key
        self._loading = None
        # answered here, not when the model thread gets to its next step (seconds inside
        # from_pretrained); the worker then finds the future done and leaves it
        loading.set_exception(LoadCancelled("the model load was cancelled"))
        return True

    def _load(self, settings: Settings, report: Report | None,
              token: CancelToken) -> Completer:
        from holefill.decode.completer import Completer

        def progress(stage: str, frac: float | None) -> None:
            if token.is_set():  # a step boundary: where a cancelled load stops
                raise LoadCancelled(f"the model load stopped before its {stage!r} step "
                                    f"({token.reason})")
            # the progress item's title already says "loading model" (the editor shows
            # "title: message"; "loading model: loading model: weights" before)
            if report is not None:
                report(frac, _STAGES.get(stage, stage))

        # the old model goes first: two large models may not fit in memory together
        self._completer, self._key = None, None
        comp = Completer(model=settings.model, device=settings.device, dtype=settings.dtype,
                         trust_remote_code=settings.trust_remote_code, progress=progress,
                         template=settings.template, fim_format=settings.fim_format,
                         decoder=settings.decoder, timeout_s=settings.remote_timeout,
                         load_cancel=token.is_set)
        if token.is_set():  # cancelled in its last step: the user asked for no model
            raise LoadCancelled(f"the model load finished after its cancel ({token.reason}); "
                                "not kept")
        self._completer, self._key = comp, settings.model_key()
        return comp

    async def run(self, job: Callable[[], T], token: CancelToken, name: str = "fill") -> T:
        """Run ``job`` on the model thread; a caller that is cancelled sets ``token``, which
        the job polls. The caller waits no longer than the token's deadline, also while the
        job is still queued behind other work (it is then dropped when its turn comes):
        Cancelled, with the token's reason "deadline"."""
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
