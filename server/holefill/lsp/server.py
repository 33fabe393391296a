"""`holefill serve`: the language server (pygls 2, lsprotocol types).

Features: incremental text sync into our document store (tree-sitter trees, edit sites),
`textDocument/inlineCompletion` at the cursor with the file's other unfinished places as
further holes, the code action "Fill holes" (`source.fillHoles`) and a quick fix per hole,
resolved lazily, the command `holefill.fillHoles` for explicit positions, settings, progress,
and cancellation (latest request per document wins).

The handlers are thin: the protocol's rules (lifecycle, errors, cancellation) live in
`protocol.py`, the transports (stdio, TCP with a token) in `transport.py`, the model's work
queue in `jobs.py`. Every model job has a `CancelToken` with a deadline; a newer request on
the same document, the client's `$/cancelRequest`, closing the document, a model reload or
shutdown set it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder
from pygls.lsp.server import LanguageServer

from holefill import __version__
from holefill.errors import HolefillError, LanguageError, ModelError
from holefill.lsp.documents import Document, DocumentStore, engine_text
from holefill.lsp.engine import Engine, LoadCancelled, Report
from holefill.lsp.errors import (
    ContentModified,
    InvalidParams,
    RequestCancelled,
    RequestError,
    RequestFailed,
)
from holefill.lsp.holes import Hole, HoleChunks, chunks_for, find_holes
from holefill.lsp.inline import Suggestion, SuggestionCache, decode_options
from holefill.lsp.jobs import CancelToken
from holefill.lsp.outage import Outages, back_message
from holefill.lsp.protocol import HolefillProtocol
from holefill.lsp.settings import Settings, updated

log = logging.getLogger(__name__)

FILL_HOLES_KIND = "source.fillHoles"
FILL_HOLES_COMMAND = "holefill.fillHoles"
REPORT_EVERY_S = 0.1
# Wall-clock bounds of one request's model work; past them the work stops like a cancelled
# one and the request says so.
INLINE_DEADLINE_S = 30.0
FILL_DEADLINE_S = 300.0


class HolefillServer(LanguageServer):
    protocol: HolefillProtocol

    def __init__(self) -> None:
        super().__init__("holefill", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=HolefillProtocol)
        self.settings = Settings()
        self.store = DocumentStore()
        self.engine = Engine()
        self.cache = SuggestionCache()
        self._latest: dict[str, tuple[int, CancelToken]] = {}
        self._seq = 0
        self._init_problems: list[str] = []
        # the progress items shown now, by token: a cancellable one stops its work when the
        # user cancels it in the editor (window/workDoneProgress/cancel)
        self.bars: dict[str, ProgressBar] = {}
        self._load_task: asyncio.Task | None = None
        self._load_task_key: tuple | None = None
        self.outages = Outages()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A notification that failed (a change to a document that is not open, a stale
        version): logged for the client, no pop-up, no traceback."""
        log.warning("%s", error)
        self.note(f"holefill: {error}", types.MessageType.Warning)

    # ------------------------------------------------------------------- messages, progress

    def tell(self, kind: types.MessageType, text: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"holefill: {text}"))

    def note(self, text: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=text))

    def model_failed(self, text: str) -> None:
        """The model failed a request or its load: shown once per outage, then logged
        (`holefill.lsp.outage`: a pop-up per keystroke while an inference server is down)."""
        outage = self.outages.current
        if self.outages.failed(self.settings.model_key(), text):
            self.tell(types.MessageType.Error, text)
        else:
            assert outage is not None
            self.note(f"holefill: {text} (failure {outage.failures} since {outage.first!r} "
                      "was shown; shown once until the model answers)",
                      types.MessageType.Error)

    def model_answered(self) -> None:
        """The model loaded or filled: an outage it ends is over, and the editor is told."""
        ended = self.outages.succeeded(self.settings.model_key())
        if ended is not None:
            from holefill.decode.remote import is_remote

            model = self.settings.model
            self.tell(types.MessageType.Info, back_message(ended, model, is_remote(model)))

    async def progress_bar(self, title: str, cancel: CancelToken | None = None,
                           on_cancel: Callable[[], object] | None = None) -> ProgressBar:
        """A progress item in the editor; with ``cancel`` or ``on_cancel``, the user can cancel
        it there, which sets that token or calls that function."""
        bar = ProgressBar(self, title, cancel, on_cancel)
        await bar.begin()
        return bar

    # ------------------------------------------------------------------- latest request wins

    def claim(self, uri: str, deadline_s: float) -> tuple[int, CancelToken]:
        """A new request for ``uri``: the one before it is cancelled."""
        old = self._latest.get(uri)
        if old is not None:
            old[1].set("superseded")
        self._seq += 1
        mine = (self._seq, CancelToken(deadline_s))
        self._latest[uri] = mine
        return mine

    def is_latest(self, uri: str, seq: int) -> bool:
        cur = self._latest.get(uri)
        return cur is not None and cur[0] == seq

    # ------------------------------------------------------------------------- the model

    async def completer(self, automatic: bool = False):
        """The model of the settings now. While it loads, one progress item says so, however
        many requests wait for it (each request showed its own before, so one Fill holes
        right after the start showed three). The load is a task of its own: a request that is
        cancelled (`$/cancelRequest`) is answered at once and the load goes on, since the next
        request wants the same model. The user can cancel the load from its progress item
        (`Engine.cancel_load`); ``automatic`` requests do not start it again after that."""
        if self.engine.is_loaded(self.settings):
            return self.engine.loaded
        key = self.settings.model_key()
        task = self._load_task
        if task is None or task.done() or self._load_task_key != key:
            if automatic and key == self.engine.cancelled_key:
                raise LoadCancelled("the model load was cancelled; ask for a suggestion "
                                    "or Fill holes to load it")
            task = asyncio.create_task(self._load(self.settings))
            task.add_done_callback(_retrieved)
            self._load_task, self._load_task_key = task, key
        return await asyncio.shield(task)

    async def _load(self, settings: Settings):
        bar = await self.progress_bar("holefill: loading model",
                                      on_cancel=self.engine.cancel_load)
        t0 = time.perf_counter()
        try:
            comp = await self.engine.completer(settings, bar.report)
        except LoadCancelled as exc:
            bar.end("cancelled")
            self.note(f"model load: {exc}")
            raise
        except BaseException:
            bar.end("failed")
            raise
        bar.end()
        self.note(f"model loaded: {comp.name} ({time.perf_counter() - t0:.1f} s)")
        self.model_answered()
        return comp

    def language_of(self, doc: Document) -> str | None:
        """The language holefill serves ``doc`` in, or None: the client's language id, and
        for a `.h` file its text (C unless it is evidently C++)."""
        from pygls.uris import to_fs_path

        from holefill.languages import language_for_document

        try:
            name = language_for_document(to_fs_path(doc.uri), doc.language_id, doc.text).name
        except LanguageError:
            return None
        return name if name in self.settings.languages else None


class ProgressBar:
    """`$/progress` created by the server (clients send no token with inline completion);
    reports from the model thread are handed to the event loop."""

    def __init__(self, server: HolefillServer, title: str, cancel: CancelToken | None = None,
                 on_cancel: Callable[[], object] | None = None) -> None:
        self.server, self.title, self.cancel, self.on_cancel = server, title, cancel, on_cancel
        self.token = f"holefill-{uuid.uuid4().hex[:12]}"
        self.loop = asyncio.get_running_loop()
        self.active = False
        self._last: int | None = -1
        self._last_time = 0.0

    def _supported(self) -> bool:
        caps = self.server.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    async def begin(self) -> None:
        if not self._supported():
            return
        try:
            await asyncio.wait_for(
                self.server.work_done_progress.create_async(self.token), timeout=5)
        except Exception as exc:  # the client refused or did not answer: no progress
            log.info("no progress: %s", exc)
            return
        self.active = True
        self.server.bars[self.token] = self
        self.server.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(
            title=self.title, percentage=0,
            cancellable=self.cancel is not None or self.on_cancel is not None))

    def report(self, fraction: float | None, message: str) -> None:
        if not self.active:
            return
        pct = None if fraction is None else int(100 * fraction)
        now = time.monotonic()
        if pct == self._last and now - self._last_time < REPORT_EVERY_S:
            return  # a token per report would flood the client
        self._last, self._last_time = pct, now
        value = types.WorkDoneProgressReport(message=message, percentage=pct)
        self.loop.call_soon_threadsafe(self.server.work_done_progress.report, self.token, value)

    def end(self, message: str = "done") -> None:
        if self.active:
            self.active = False
            self.server.bars.pop(self.token, None)
            # pygls keeps a future per token it was told of
            self.server.work_done_progress.tokens.pop(self.token, None)
            self.loop.call_soon_threadsafe(self.server.work_done_progress.end, self.token,
                                           types.WorkDoneProgressEnd(message=message))


server = HolefillServer()


# ------------------------------------------------------------------------------ lifecycle

@server.feature(types.INITIALIZE)
def on_initialize(params: types.InitializeParams) -> None:
    encoding = ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities)
    # an enum member (PositionEncodingKind.Utf16) when the client offered none: take its value
    server.store.encoding = str(getattr(encoding, "value", encoding))
    # the one place settings that can run code (model, trustRemoteCode) are taken from: the
    # initialization of the client the transport let in
    server.settings, server._init_problems = updated(server.settings,
                                                     params.initialization_options,
                                                     initial=True)
    loop = asyncio.get_running_loop()

    def stopped(name: str, reason: str, ms: float) -> None:
        loop.call_soon_threadsafe(server.note, f"{name}: stopped {ms:.0f} ms after its "
                                               f"cancel ({reason})")

    server.engine.worker.on_stop = stopped


@server.feature(types.INITIALIZED)
async def on_initialized(params: types.InitializedParams) -> None:
    for problem in server._init_problems:
        server.tell(types.MessageType.Warning, problem)
    server.note(f"holefill {__version__}: positions in {server.store.encoding}, "
                f"model {server.settings.model or 'bundled default'}")
    _background(_preload())


_TASKS: set[asyncio.Task] = set()


def _retrieved(task: asyncio.Task) -> None:
    """A task whose waiters may all have gone (cancelled): its failure is theirs to report,
    not asyncio's ("Task exception was never retrieved")."""
    if not task.cancelled():
        task.exception()


def _background(coro: Any) -> None:
    task = asyncio.create_task(coro)
    _TASKS.add(task)  # the loop keeps only weak references to tasks
    task.add_done_callback(_TASKS.discard)


async def _preload() -> None:
    """Load the model before the first request needs it."""
    from holefill.decode.loop import Cancelled

    try:
        await server.completer()
    except Cancelled:
        pass  # replaced by the load of another model
    except HolefillError as exc:
        server.model_failed(str(exc))
    except Exception as exc:  # out of memory, a broken install: say so, stay up
        server.model_failed(f"cannot load the model: {exc}")


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_configuration(params: types.DidChangeConfigurationParams) -> None:
    old = server.settings
    server.settings, problems = updated(old, params.settings, initial=False)
    for problem in problems:
        server.tell(types.MessageType.Warning, problem)
    if dataclasses.replace(server.settings, debounce_ms=0) != dataclasses.replace(
            old, debounce_ms=0):
        server.cache = SuggestionCache()  # suggestions made under other settings
    if server.settings.model_key() != old.model_key():
        _background(_preload())


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(params: types.DidOpenTextDocumentParams) -> None:
    d = params.text_document
    server.store.open(d.uri, d.language_id, d.version, d.text)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_change(params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    server.store.change(uri, params.text_document.version, params.content_changes)
    # work on the old text is wasted: a running fill stops and says why (typing during a fill)
    latest = server._latest.get(uri)
    if latest is not None:
        latest[1].set("changed")


@server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def on_progress_cancel(params: types.WorkDoneProgressCancelParams) -> None:
    """The user cancelled a progress item in the editor (Fill holes and the model's load show
    cancellable ones)."""
    bar = server.bars.get(str(params.token))
    if bar is not None and bar.cancel is not None:
        bar.cancel.set("cancelled")
    if bar is not None and bar.on_cancel is not None:
        bar.on_cancel()


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    latest = server._latest.pop(uri, None)
    if latest is not None:
        latest[1].set("closed")
    server.cache.forget(uri)
    server.store.close(uri)


@server.feature(types.SHUTDOWN)
def on_shutdown(params: Any) -> None:
    for _, token in server._latest.values():
        token.set("shutdown")
    server.engine.shutdown()


# ----------------------------------------------------------------------- inline completion

@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def on_inline_completion(
    params: types.InlineCompletionParams,
) -> types.InlineCompletionList | None:
    uri = params.text_document.uri
    doc = server.store.get(uri)  # UnknownDocumentError -> an error answer naming the URI
    language = server.language_of(doc)
    if language is None:
        return None
    cursor = doc.offset_at(params.position, strict=True)  # PositionError -> InvalidParams
    seq, token = server.claim(uri, INLINE_DEADLINE_S)
    automatic = (params.context is not None and params.context.trigger_kind
                 == types.InlineCompletionTriggerKind.Automatic)
    if automatic and server.settings.debounce_ms:
        await asyncio.sleep(server.settings.debounce_ms / 1000)
        if not server.is_latest(uri, seq):
            return None
    text, version = doc.text, doc.version
    cached = server.cache.get(uri, text[:cursor], text[cursor:])
    if cached is None:
        cached = await _suggest(doc, language, cursor, token, automatic)
        if cached is None or doc.version != version or not server.is_latest(uri, seq):
            return None
        server.cache.put(uri, text[:cursor], text[cursor:], cached)
    if not cached.text:
        return types.InlineCompletionList(items=[])
    end = doc.position_at(cursor + cached.replaced)
    item = types.InlineCompletionItem(insert_text=cached.text,
                                      range=types.Range(params.position, end))
    return types.InlineCompletionList(items=[item])


async def _suggest(doc: Document, language: str, cursor: int, token: CancelToken,
                   automatic: bool) -> Suggestion | None:
    holes = find_holes(doc, cursor=cursor, marker=server.settings.hole_marker)
    hc = chunks_for(doc.text, holes)
    index = next(i for i, h in enumerate(hc.holes) if h.reason == "cursor")
    options = decode_options(doc.text, cursor, server.settings)
    chunks = [engine_text(c) for c in hc.chunks]
    try:
        comp = await server.completer(automatic)
        t0 = time.perf_counter()
        res = await server.engine.run(
            lambda: comp.fill(chunks, language, only=[index], cancel=token, **options),
            token, name="inline completion")
    except HolefillError as exc:
        _failed(exc, token)
        return None
    if token.is_set():
        return None
    server.model_answered()
    _log_speed("inline completion", res.stats, time.perf_counter() - t0, len(hc.holes))
    if res.refused:  # the exact check of the filled file says no: never shown
        server.note(f"inline completion: no suggestion, {res.reason}", types.MessageType.Warning)
        return Suggestion("", 0)
    if not res.verified:
        server.note(f"the suggestion is unverified ({res.reason}); raise "
                    "holefill.maxCheckSteps", types.MessageType.Warning)
    hole = res.holes[0]
    if hole.completed_by == "witness":
        if not server.settings.inline_witness:
            server.note("inline completion: not shown, the model did not finish it and its "
                        "end would come from the grammar's witness (holefill.inlineWitness "
                        "is off)")
            return Suggestion("", 0)
        server.note(f"inline completion: the end of {res.fills[0]!r} was completed by the "
                    "grammar's witness, not written by the model (holefill.inlineWitness)")
    return Suggestion(res.fills[0], hole.replaced)


def _failed(exc: HolefillError, token: CancelToken) -> None:
    from holefill.decode.loop import Cancelled, NotCompletable

    if isinstance(exc, LoadCancelled):
        server.note(f"inline completion: no suggestion, {exc}", types.MessageType.Info)
        return None
    if isinstance(exc, Cancelled) or token.is_set():
        if token.reason == "deadline":
            server.note(f"stopped at the deadline: {exc}", types.MessageType.Warning)
        return None
    if isinstance(exc, NotCompletable):
        server.note(f"no suggestion: {exc}", types.MessageType.Info)
        return None
    if isinstance(exc, ModelError):  # the model is down or cannot load: once per outage
        server.model_failed(str(exc))
    else:
        server.tell(types.MessageType.Error, str(exc))
    return None


def _log_speed(what: str, stats: dict[str, float], seconds: float, holes: int) -> None:
    server.note(
        f"{what}: {1e3 * seconds:.0f} ms, {holes} hole(s), {int(stats.get('tokens', 0))} "
        f"tokens, {int(stats.get('rejected', 0))} rejected, model "
        f"{stats.get('model_ms_per_token', 0):.1f} ms/token, checks "
        f"{stats.get('check_ms_median', 0):.1f} ms median")


# ---------------------------------------------------------------------------- fill holes

@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[FILL_HOLES_KIND, types.CodeActionKind.QuickFix],
    resolve_provider=True))
def on_code_action(params: types.CodeActionParams) -> list[types.CodeAction] | None:
    doc = server.store.get(params.text_document.uri)
    if server.language_of(doc) is None:
        return None
    holes = find_holes(doc, marker=server.settings.hole_marker)
    if not holes:
        return []
    start, end = doc.offsets_of(params.range)
    only = params.context.only
    actions: list[types.CodeAction] = []
    selected = [h for h in holes if start <= h.offset <= end] if end > start else holes
    if selected and (not only or any(FILL_HOLES_KIND.startswith(k) for k in only)):
        where = "in the selection" if end > start else "in the file"
        actions.append(_action(f"Fill {len(selected)} hole(s) {where}", FILL_HOLES_KIND, doc,
                               selected))
    if not only or types.CodeActionKind.QuickFix in only:
        lines = (doc.position_at(start).line, doc.position_at(end).line)
        for h in holes:
            line = doc.position_at(h.offset).line
            if lines[0] <= line <= lines[1]:
                actions.append(_action(f"Fill the hole at line {line + 1}",
                                       types.CodeActionKind.QuickFix, doc, [h]))
    return actions


def _action(title: str, kind: str, doc: Document, holes: Sequence[Hole]) -> types.CodeAction:
    return types.CodeAction(title=title, kind=kind, data={
        "uri": doc.uri, "version": doc.version,
        "holes": [[h.offset, h.end, h.reason] for h in holes]})


@server.feature(types.CODE_ACTION_RESOLVE)
async def on_code_action_resolve(action: types.CodeAction) -> types.CodeAction:
    uri, version, asked = _action_data(action.data)
    doc = server.store.get(uri)
    if doc.version != version:
        raise ContentModified(f"the document changed since this action was offered (version "
                              f"{version}, now {doc.version}); ask for the code action again")
    seq, token = server.claim(uri, FILL_DEADLINE_S)
    edit = await _fill_edit(doc, asked, token)
    if edit is not None:
        action.edit = edit
    return action


def _action_data(data: Any) -> tuple[str, int, list[Hole]]:
    """What `_action` put in a code action's data, checked: the client sends it back."""
    bad = InvalidParams("this code action carries no holes to fill (its data is missing or "
                        "was not made by holefill)")
    if not isinstance(data, dict):
        raise bad
    uri, version, holes = data.get("uri"), data.get("version"), data.get("holes")
    if not isinstance(uri, str) or not isinstance(version, int) or not isinstance(holes, list):
        raise bad
    asked = []
    for h in holes:
        if not (isinstance(h, list) and len(h) == 3 and all(isinstance(x, int) for x in h[:2])
                and h[2] in ("cursor", "marker", "position", "edit")):
            raise bad
        asked.append(Hole(h[0], h[1], h[2]))
    return uri, version, asked


@server.command(FILL_HOLES_COMMAND)
async def on_fill_holes_command(args: Any) -> dict:
    """Arguments: ``{"uri": ..., "positions": [{"line": l, "character": c}, ...]}`` (or the
    same as two positional arguments); fills the holes there and applies the edit."""
    uri, positions = _command_arguments(args)
    doc = server.store.get(uri)
    offsets = [doc.offset_at(p, strict=True) for p in positions]
    asked = [Hole(o, o, "position") for o in offsets] or find_holes(
        doc, marker=server.settings.hole_marker)
    seq, token = server.claim(uri, FILL_DEADLINE_S)
    try:
        edit = await _fill_edit(doc, asked, token)
    except RequestError as exc:
        if not token.is_set():
            raise
        return {"applied": False, "reason": str(exc)}  # stopped: says why
    # Nothing awaits between here and the request below: a cancel that came in while the
    # holes were filled has set the token (or cancelled this task at its last await), so a
    # cancelled command never edits the document.
    if edit is None or token.is_set():
        return {"applied": False}
    result = await server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
        edit=edit, label="Fill holes"))
    return {"applied": bool(getattr(result, "applied", False))}


def _command_arguments(args: Any) -> tuple[str, list[types.Position]]:
    usage = InvalidParams(f"{FILL_HOLES_COMMAND} takes {{uri, positions: [Position]}}")
    if isinstance(args, list) and len(args) == 1 and isinstance(args[0], dict):
        args = args[0]
    if isinstance(args, dict):
        uri, positions = args.get("uri"), args.get("positions") or []
    elif isinstance(args, list) and len(args) == 2:
        uri, positions = args
    else:
        raise usage
    if not isinstance(uri, str) or not isinstance(positions, list):
        raise usage
    return uri, [_position(p) for p in positions]


def _position(p: Any) -> types.Position:
    values: list[Any] = [p.get("line"), p.get("character")] if isinstance(p, dict) else []
    if not (len(values) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                     and 0 <= v < 2**31 for v in values)):
        raise InvalidParams(f"{FILL_HOLES_COMMAND}: a position is {{line, character}} with "
                            f"integers in 0..2^31-1, got {p!r}")
    return types.Position(line=int(values[0]), character=int(values[1]))


async def _fill_edit(doc: Document, asked: Sequence[Hole],
                     token: CancelToken) -> types.WorkspaceEdit | None:
    """Fill the asked holes (the file's other unfinished places stay holes in every check);
    the edit carries the version it was computed for; except markers, it only inserts.
    None when the work was cancelled or superseded."""
    language = server.language_of(doc)
    if language is None:
        raise InvalidParams(f"holefill does not serve {doc.language_id!r} documents")
    version = doc.version
    holes = find_holes(doc, marker=server.settings.hole_marker,
                       positions=[h.offset for h in asked if h.reason == "position"])
    hc = chunks_for(doc.text, holes)
    # an asked place is the hole that holds it: a position at a marker's end has joined the
    # marker's hole
    only = [i for i, h in enumerate(hc.holes)
            if any(h.offset <= a.offset <= h.end for a in asked)]
    if not only:
        raise ContentModified("none of the holes of this action is still in the document")
    chunks = [engine_text(c) for c in hc.chunks]
    options = decode_options(doc.text, hc.holes[only[0]].offset, server.settings)
    # each hole keeps to its own block (the first hole's indentation says nothing of the others)
    options.update(multiline=True, block_indent=None, replaceable="",
                   keep_to_place=server.settings.stay_in_block)
    bar = None
    try:
        # the model first: while it loads, its own progress item is the only one shown
        comp = await server.completer()
        if token.is_set():
            raise _stopped(token)
        bar = await server.progress_bar(f"holefill: filling {len(only)} hole(s)", token)
        t0 = time.perf_counter()
        res = await server.engine.run(lambda: comp.fill(
            chunks, language, only=only, cancel=token,
            progress=lambda f, m: bar.report(f, m), **options), token, name="fill holes")
    except RequestError:
        raise
    except HolefillError as exc:
        from holefill.decode.loop import Cancelled

        if isinstance(exc, LoadCancelled):
            raise RequestCancelled(f"Fill holes stopped: {exc}") from exc
        if isinstance(exc, Cancelled) or token.is_set():
            raise _stopped(token) from exc
        raise RequestFailed(str(exc)) from exc
    finally:
        if bar is not None:
            bar.end("stopped" if token.is_set() else "done")
    server.model_answered()
    _log_speed("fill holes", res.stats, time.perf_counter() - t0, len(hc.holes))
    if not res.verified:  # holefill.check.final judged the filled file: not applied
        hint = ("; checks ran out of their work budget: raise holefill.maxCheckSteps"
                if not all(getattr(h, "verified", True) for h in res.holes) else "")
        raise RequestFailed(f"Fill holes found no filling it could verify ({res.reason}"
                            f"{hint}); nothing was applied")
    for n, (i, hole) in enumerate(zip(only, res.holes, strict=True)):
        if hole.completed_by == "witness":
            line = doc.position_at(hc.holes[i].offset).line + 1
            server.note(f"fill holes: the end of hole {n + 1} (line {line}) was completed by "
                        "the grammar's witness, not written by the model")
    if doc.version != version:
        raise ContentModified("the document changed while its holes were being filled; "
                              "try again")
    return _workspace_edit(doc, version, hc, only, res.fills)


def _stopped(token: CancelToken) -> RequestError:
    """Why a fill stopped before its end, as the answer says it (never "could not be
    filled")."""
    why = token.reason or "cancelled"
    if why == "deadline":
        return RequestFailed(f"Fill holes stopped after {FILL_DEADLINE_S:.0f} s (its "
                             "deadline); fill fewer holes at a time")
    if why == "changed":
        return ContentModified("Fill holes stopped: the document changed while its holes were "
                               "being filled (typing stops a fill); run it again")
    if why == "superseded":
        return ContentModified("Fill holes stopped: a newer request on this document (an "
                               "inline suggestion or another fill) replaced it; run it again")
    if why == "cancelled":
        return RequestCancelled("Fill holes was cancelled")
    if why == "closed":
        return RequestFailed("Fill holes stopped: the document was closed")
    if why == "shutdown":
        return RequestFailed("Fill holes stopped: the server is shutting down")
    return RequestFailed(f"Fill holes stopped: {why}")


def _workspace_edit(doc: Document, version: int, hc: HoleChunks, only: list[int],
                    fills: list[str]) -> types.WorkspaceEdit:
    edits = [types.TextEdit(range=doc.range_of(hc.holes[i].offset, hc.holes[i].end),
                            new_text=fill) for i, fill in zip(only, fills, strict=True)]
    ident = types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=version)
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(text_document=ident, edits=edits)])


def serve(tcp_port: int | None = None, token_file: Path | None = None,
          announce: Callable[[str], None] = log.warning) -> int:
    """Run the server on stdio, or on 127.0.0.1:``tcp_port`` (0: any free port) for one
    client that presents the token (`holefill.lsp.auth`). ``token_file``: use the token in
    that file when it exists (it must be private), else write a new one there. Returns the
    exit status: 0 after shutdown and exit, else 1."""
    from holefill.decode.loop import Cancelled
    from holefill.lsp import auth, transport
    from holefill.lsp.interrupt import quiet_unraisable

    quiet_unraisable(Cancelled)
    try:
        if tcp_port is None:
            return transport.run_stdio(server.protocol)
        keep = token_file is not None and token_file.exists()
        token = auth.read_token_file(token_file) if keep and token_file else auth.new_token()
        written: list[Path] = []

        def listening(port: int) -> None:
            path = token_file if token_file is not None else auth.default_token_path(port)
            if not keep:
                auth.write_token_file(path, token)
                written.append(path)
            announce(f"listening on 127.0.0.1:{port}; the client must send the token in "
                     f"{path} as initializationOptions.token")

        try:
            return transport.run_tcp(server.protocol, tcp_port, token, listening)
        finally:
            for path in written:
                path.unlink(missing_ok=True)
    finally:
        server.engine.shutdown()


__all__ = ["HolefillServer", "ProgressBar", "Report", "serve", "server"]
