"""What the server answers when a request fails: a JSON-RPC error code and one plain line.

Client mistakes (a position outside the document, a URI that is not open, arguments of the
wrong shape) are InvalidParams; an action for a document that changed since is
ContentModified (also a fill stopped because the document changed under it, or a newer
request on it); a fill the user cancelled from its progress item is RequestCancelled; work
that stopped at its deadline is RequestFailed; anything else is a bug of
ours: InternalError, whose traceback goes to the server's log and never into the answer.
"""

from __future__ import annotations

import logging
from typing import Any

from cattrs.errors import BaseValidationError
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from holefill.errors import HolefillError
from holefill.lsp.documents import PositionError, UnknownDocumentError

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803
CONTENT_MODIFIED = -32801
REQUEST_CANCELLED = -32800


class RequestError(HolefillError):
    """A request the server answers with an error; subclasses pick the code."""

    code = REQUEST_FAILED


class InvalidParams(RequestError):
    code = INVALID_PARAMS


class ContentModified(RequestError):
    """The request was about a document version that is gone."""

    code = CONTENT_MODIFIED


class RequestCancelled(RequestError):
    """The user stopped the work (from the editor's progress item)."""

    code = REQUEST_CANCELLED


class RequestFailed(RequestError):
    """The request was valid but could not be done (a deadline, a refusal)."""

    code = REQUEST_FAILED


def describe_validation(exc: BaseException, method: str) -> str:
    """One line naming what did not fit the protocol types, e.g. `invalid params for
    textDocument/inlineCompletion: params.position: Position.character should be in range
    [0:2147483647], but was -3.`"""
    found = [f"{path or 'the message'}: {why}" for path, why in _leaves(exc, "")]
    return f"invalid params for {method}: " + "; ".join(found[:3])


def _leaves(exc: BaseException, path: str) -> list[tuple[str, str]]:
    """(where, what) for each innermost error of a cattrs validation error."""
    if not isinstance(exc, BaseValidationError):
        if isinstance(exc, KeyError):
            return [(path, "required, but missing")]
        return [(path, str(exc) or type(exc).__name__)]
    out = []
    for sub in exc.exceptions:
        where = path
        for note in getattr(sub, "__notes__", ()):
            if getattr(note, "name", None) is not None:
                where = f"{path}.{note.name}".lstrip(".")
            elif getattr(note, "index", None) is not None:
                where = f"{path}[{note.index}]"
        out += _leaves(sub, where)
    return out


def response_error(exc: BaseException, method: str | None) -> types.ResponseError:
    """The answer to a request that raised ``exc``."""
    what = method or "the request"
    if isinstance(exc, JsonRpcException):
        return types.ResponseError(code=exc.code, message=exc.message)
    if isinstance(exc, RequestError):
        return types.ResponseError(code=exc.code, message=f"holefill: {exc}")
    if isinstance(exc, PositionError | UnknownDocumentError):
        return types.ResponseError(code=INVALID_PARAMS, message=f"holefill: {exc}")
    if isinstance(exc, BaseValidationError):
        return types.ResponseError(code=INVALID_PARAMS, message=describe_validation(exc, what))
    if isinstance(exc, HolefillError):
        return types.ResponseError(code=REQUEST_FAILED, message=f"holefill: {exc}")
    log.error("internal error in %s", what, exc_info=exc)
    return types.ResponseError(
        code=INTERNAL_ERROR,
        message=f"holefill: internal error in {what}: {type(exc).__name__}: {exc} "
                "(the server's log has the details)")


def error_message(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response as a plain dict (for answers sent before any structure)."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
