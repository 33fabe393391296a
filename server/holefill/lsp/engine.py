"""The model side of the server: load the model once, run fills off the event loop.

The model runs in an executor of its own (pygls' thread pool also reads stdin), one job at a
time. Cancellation is cooperative: a job gets a `threading.Event` that the decoding loop
checks between tokens; a cancelled request sets it, so the model stops within one token.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from holefill.lsp.settings import Settings

if TYPE_CHECKING:
    from holefill.decode.completer import Completer

log = logging.getLogger(__name__)
T = TypeVar("T")

# progress(fraction 0..1 or None, message), called from the model thread
Report = Callable[[float | None, str], None]


class Engine:
    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holefill-model")
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
            loop = asyncio.get_running_loop()
            self._loading_key = key
            self._loading = loop.run_in_executor(self.executor, self._load, settings, report)
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
            if report is not None:
                report(frac, f"loading model: {stage}")

        # the old model goes first: two large models may not fit in memory together
        self._completer, self._key = None, None
        comp = Completer(model=settings.model, device=settings.device, dtype=settings.dtype,
                         trust_remote_code=settings.trust_remote_code, progress=progress,
                         template=settings.template, fim_format=settings.fim_format)
        self._completer, self._key = comp, settings.model_key()
        return comp

    async def run(self, job: Callable[[], T], cancel: threading.Event) -> T:
        """Run ``job`` on the model thread; a cancelled caller stops it within one token."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor, job)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.set()
            raise

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
