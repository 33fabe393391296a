"""Stopping a thread that does not poll its cancel token: an asynchronous exception, raised
only while the thread runs code where that is safe.

The model's worker polls its job's token between tokens and in the checker's core, but until
every stage of the engine does (the lexer with holes and the Python layout product did not:
the soak measured cancelled jobs running on for up to 14 s, and fills past their 300 s deadline),
`Worker` uses this as a backstop: when a job is still running a grace period after its token
was set, and the innermost frame of the holefill package on the worker's stack lies in code
`safe` accepts (the server passes the lexing package: pure computation whose caches are
written with single assignments), CPython's `PyThreadState_SetAsyncExc` raises the exception
in that thread. The exception comes at the thread's next check of the interpreter's eval
breaker, within the same few calls of pure-Python lexing code, and unwinds the job like a
cancel the engine noticed itself (`finally` and `with` blocks run; the Completer's lock is
released). It is never raised in the model's forward pass, whose KV-cache bookkeeping must
not be cut in half.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from types import FrameType


def stack_files(thread_id: int) -> list[str]:
    """The files of the frames of thread ``thread_id``, innermost first."""
    frame: FrameType | None = sys._current_frames().get(thread_id)
    files = []
    while frame is not None:
        files.append(frame.f_code.co_filename.replace("\\", "/"))
        frame = frame.f_back
    return files


def interrupt(thread_id: int, exc_type: type[BaseException],
              safe: Callable[[list[str]], bool]) -> bool:
    """Raise ``exc_type`` in thread ``thread_id`` when ``safe`` accepts its stack (files,
    innermost first); whether it was raised."""
    if not safe(stack_files(thread_id)):
        return False
    done = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                                      ctypes.py_object(exc_type))
    return int(done) == 1


def in_lexing(files: list[str]) -> bool:
    """The server's choice of safe code: the innermost frame is in holefill's lexing package
    (not a library function it called, nor a finalizer the garbage collector runs there,
    where the exception would be dropped as unraisable)."""
    return bool(files) and "/holefill/lexing/" in files[0]


def quiet_unraisable(exc_type: type[BaseException]) -> None:
    """Report an ``exc_type`` that landed in a finalizer (where Python can only drop it) as
    one line on stderr, not as a traceback; other unraisable exceptions go to the hook that
    was in place. The backstop raises again when the job runs on (holefill.lsp.jobs)."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, exc_type):
            sys.stderr.write(f"holefill: a {exc_type.__name__} landed in a finalizer "
                             "and was dropped; the cancel is raised again\n")
            return
        previous(unraisable)

    sys.unraisablehook = hook
