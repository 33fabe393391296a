"""The JSON-RPC/LSP protocol of the server: pygls' LanguageServerProtocol with the gaps closed
that left requests unanswered or answered with tracebacks.

- `receive` takes one decoded JSON value from the framing reader. A value that is not a
  JSON-RPC message gets InvalidRequest; params that do not fit lsprotocol's types get
  InvalidParams naming the field (pygls structured messages inside `json.loads` and dropped
  the request when that failed, so the client waited forever).
- Lifecycle: requests before `initialize` get ServerNotInitialized (-32002) and notifications
  are dropped; a second `initialize` and every request after `shutdown` get InvalidRequest;
  `exit` sets `exit_code` (0 after `shutdown`, else 1) for the transport to return.
- Every failure is one plain line (`holefill.lsp.errors.response_error`); tracebacks of our
  own bugs go to the log, never into an answer.
- `$/cancelRequest` also cancels the handler a built-in request runs for us: pygls runs
  `workspace/executeCommand` as a generator that starts the command handler under an id of
  its own, so cancelling the request answered it but left the command running, and a
  cancelled `holefill.fillHoles` still sent its `workspace/applyEdit`.
- Text synchronization is ours alone (`DocumentStore`): pygls' workspace copy of every
  document is not kept.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Generator
from functools import partial
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

from holefill.lsp.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
    describe_validation,
    error_message,
    response_error,
)

log = logging.getLogger(__name__)

MsgId = int | str


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class HolefillProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialized = False
        self.exit_code: int | None = None
        self.on_exit: Callable[[int], None] | None = None
        self._methods: dict[MsgId, str] = {}
        self._children: dict[MsgId, list[Any]] = {}

    # ------------------------------------------------------------------ from the wire

    def receive(self, obj: Any) -> None:
        """Handle one decoded JSON value from the client."""
        if not isinstance(obj, dict):
            self.send_raw(error_message(None, INVALID_REQUEST,
                                        "holefill: a message must be a JSON object "
                                        "(batches are not supported)"))
            return
        has_id, msg_id, method = "id" in obj, obj.get("id"), obj.get("method")
        problem = None
        if obj.get("jsonrpc") != "2.0":
            problem = 'not a JSON-RPC 2.0 message ("jsonrpc": "2.0" is missing)'
        elif has_id and not _valid_id(msg_id):
            problem = f"the id must be a number or a string, got {msg_id!r}"
        elif "method" in obj and not isinstance(method, str):
            problem = f"the method must be a string, got {method!r}"
        elif method is None and not has_id:
            problem = "neither a request, a notification nor a response"
        if problem is not None:
            if has_id or method is not None:
                self.send_raw(error_message(msg_id if _valid_id(msg_id) else None,
                                            INVALID_REQUEST, f"holefill: {problem}"))
            else:
                log.warning("ignored a message: %s", problem)
            return
        try:
            message = self._structure(obj)
        except Exception as exc:
            what = describe_validation(exc, method or "a response")
            if method is not None and has_id:
                self.send_raw(error_message(msg_id, INVALID_PARAMS, f"holefill: {what}"))
            else:
                log.warning("ignored %s", what)
            return
        self.handle_message(message)

    def receive_problem(self, reason: str) -> None:
        """Bytes that were not a message: ParseError, then carry on."""
        log.warning("dropped input that is not a message: %s", reason)
        self.send_raw(error_message(None, PARSE_ERROR, f"holefill: parse error: {reason}"))

    def _structure(self, data: dict[str, Any]) -> Any:
        if "method" in data:
            method = data["method"]
            if "id" in data:
                kind = self.get_message_type(method) or JsonRPCRequestMessage
            else:
                kind = self.get_message_type(method) or JsonRPCNotification
            return self._converter.structure(data, kind)
        if "error" in data:
            return self._converter.structure(data, types.ResponseErrorMessage)
        kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
        return self._converter.structure(data, kind)

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls' object hook (kept for callers that use it): structure without logging a
        traceback for a client's bad params."""
        if "jsonrpc" not in data:
            return data
        return self._structure(data)

    # ------------------------------------------------------------------ lifecycle

    def handle_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method is None:  # a response to one of our requests
            super().handle_message(message)
            return
        is_request = hasattr(message, "id")
        if method == types.EXIT:
            self._exit()
            return
        refusal = None
        if not self.initialized:
            if is_request and method == types.INITIALIZE:
                self.initialized = True
            elif is_request:
                refusal = (SERVER_NOT_INITIALIZED,
                           f"holefill: {method} before initialize; send initialize first")
            else:
                log.info("dropped %s: it came before initialize", method)
                return
        elif is_request and method == types.INITIALIZE:
            refusal = (INVALID_REQUEST, "holefill: initialize was already sent")
        elif self._shutdown:
            if not is_request:
                log.info("dropped %s: it came after shutdown", method)
                return
            refusal = (INVALID_REQUEST,
                       f"holefill: {method} after shutdown; only exit is accepted now")
        if refusal is not None:
            self.send_raw(error_message(message.id, *refusal))
            return
        super().handle_message(message)

    def _exit(self) -> None:
        self.exit_code = 0 if self._shutdown else 1
        if self.exit_code:
            log.warning("exit without shutdown: exit status 1")
        if self.on_exit is not None:
            self.on_exit(self.exit_code)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """`handle_message` takes `exit` before pygls' handler (which called sys.exit inside
        the event loop, where the exit status got lost) could run; kept for direct calls."""
        self._exit()
        yield from ()

    # Text synchronization: the server's DocumentStore is the one copy of each document.

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: Any) -> Generator[Any, Any, None]:
        yield from self._user(types.TEXT_DOCUMENT_DID_CLOSE, params)

    def _user(self, method: str, params: Any) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    # ------------------------------------------------------------------ requests, answers

    def _handle_request(self, msg_id: MsgId, method_name: str, params: Any) -> None:
        self._methods[msg_id] = method_name
        try:
            handler = self._get_handler(method_name)
            self._ctx_msg_id.set(msg_id)
            self._execute_handler(msg_id=msg_id, handler=handler, args=(params,),
                                  callback=partial(self._send_handler_result, msg_id=msg_id))
        except Exception as exc:
            self._methods.pop(msg_id, None)
            self._send_response(msg_id, None, response_error(exc, method_name))

    def _execute_handler(self, msg_id: MsgId, handler: Any, callback: Any,
                         args: tuple[Any, ...] | None = None,
                         kwargs: dict[str, Any] | None = None) -> None:
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is None:
            return
        # pygls registers the future of every coroutine and generator handler, notifications
        # included, and forgot those of notifications and of the handlers its generators
        # start: two per didOpen/didClose pair, each holding its handler's result, for good
        future.add_done_callback(partial(self._forget, msg_id))
        parent = self.msg_id
        if parent is not None and parent != msg_id:
            # a handler a built-in generator started for request `parent`: cancelled with it
            self._children.setdefault(parent, []).append(future)

    def _forget(self, msg_id: MsgId, future: Any) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        future = self._request_futures.pop(msg_id, None)
        children = self._children.pop(msg_id, [])
        for child in children:
            child.cancel()
        if future is None:
            if not children:
                log.debug("cancel for a request that is not running: %s", msg_id)
            return
        future.cancel()

    def _handle_response(self, msg_id: MsgId, result: Any | None = None,
                         error: Any | None = None) -> None:
        """An answer to one of our requests. Its future may be done already: `shutdown`
        cancels every future pygls tracks, ours included, and a progress request we stopped
        waiting for is cancelled; pygls then raised InvalidStateError out of the read loop."""
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self._request_futures.pop(msg_id, None)
            log.debug("an answer to %s came after we stopped waiting for it", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _send_handler_result(self, future: Any, *, msg_id: MsgId) -> None:
        self._request_futures.pop(msg_id, None)
        self._children.pop(msg_id, None)
        method = self._methods.pop(msg_id, None)
        if future.cancelled():
            error = JsonRpcRequestCancelled(f"holefill: {method or 'the request'} was "
                                            "cancelled").to_response_error()
            self._send_response(msg_id, error=error)
            return
        exc = future.exception()
        if exc is not None:
            self._send_response(msg_id, error=response_error(exc, method))
        else:
            self._send_response(msg_id, result=future.result())

    def _send_response(self, msg_id: MsgId, result: Any | None = None,
                       error: types.ResponseError | None = None) -> None:
        try:
            super()._send_response(msg_id, result, error)
        except _Unserializable as exc:
            self.send_raw(error_message(msg_id, -32603, f"holefill: internal error: the "
                                        f"answer could not be written ({exc})"))

    # ------------------------------------------------------------------ to the wire

    def send_raw(self, message: dict[str, Any]) -> None:
        """A message that is already plain JSON (answers made before any structuring)."""
        self._write(json.dumps(message))

    def _send_data(self, data: Any) -> None:
        if not data:
            return
        try:
            body = json.dumps(data, default=self._serialize_message)
        except Exception as exc:
            log.error("cannot serialize a message", exc_info=exc)
            if getattr(data, "id", None) is not None and hasattr(data, "result"):
                raise _Unserializable(f"{type(exc).__name__}: {exc}") from exc
            return
        self._write(body)

    def _write(self, body: str) -> None:
        if self.writer is None:
            log.error("no transport to send a message on")
            return
        data = body.encode("utf-8")
        try:
            self.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))
        except (BrokenPipeError, ConnectionError) as exc:
            log.info("the client is gone: %s", exc)
            if self.on_exit is not None and self.exit_code is None:
                self.exit_code = 0 if self._shutdown else 1
                self.on_exit(self.exit_code)


class _Unserializable(Exception):
    pass
