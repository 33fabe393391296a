"""A small JSON-over-HTTP client for inference servers that can be cancelled and never hangs.

Why not a client library: the language server runs fills on a model thread and cancels them
from the event loop by setting an event; a blocking read in httpx or urllib cannot be woken
from another thread. Here the request is sent, then the socket is polled in short slices
(``POLL_S``) until the answer starts, the deadline passes or the fill is cancelled; a cancelled
or timed-out request closes its connection, which aborts it. The answer is read with a socket
timeout, so a server that stalls mid-answer cannot hang us either. Only the standard library is
used, so a remote model needs neither torch nor an HTTP package.

Errors are `RemoteError` with a sentence for the user (which server, what happened, what to
try). The API key goes in the Authorization header only, is never part of a message or a log
line, and is sent only over HTTPS or to a loopback address (a key in clear text over a network
is a key given away).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import logging
import select
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from holefill.decode.loop import Cancelled
from holefill.errors import ModelError

log = logging.getLogger(__name__)

POLL_S = 0.05  # how often a waiting request looks at the cancel signal
MAX_ANSWER_BYTES = 64 << 20  # more than any completion: past it the answer is garbage
RETRY_STATUS = (502, 503, 504)  # a server starting up or a proxy without its backend


class RemoteError(ModelError):
    """The inference server could not be reached, answered an error, or answered garbage."""


class RemoteTimeout(RemoteError):
    """The inference server did not answer in time."""


@dataclass(frozen=True)
class HttpOptions:
    timeout_s: float = 60.0  # the longest wait for one answer
    connect_timeout_s: float = 5.0
    retries: int = 2  # more tries after a refused connection or a 502/503/504
    retry_wait_s: float = 0.5  # doubled after each try


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class HttpClient:
    """JSON requests to one server (``base``: scheme, host, port and path prefix)."""

    def __init__(self, base: str, api_key: str | None = None,
                 options: HttpOptions | None = None) -> None:
        parts = urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RemoteError(f"not an http(s) URL of a server: {base!r}")
        self.base = base.rstrip("/")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.options = options or HttpOptions()
        self._key = api_key
        if api_key and self.scheme != "https" and not is_loopback(self.host):
            log.warning("not sending the API key to %s: it would travel unencrypted "
                        "(use https)", self.base)
            self._key = None

    def get(self, path: str, cancel: Callable[[], bool] | None = None) -> Any:
        return self.request("GET", path, None, cancel)

    def post(self, path: str, body: Any, cancel: Callable[[], bool] | None = None) -> Any:
        return self.request("POST", path, body, cancel)

    def request(self, method: str, path: str, body: Any,
                cancel: Callable[[], bool] | None = None) -> Any:
        """The JSON answer of one request, after retries where the server is not up yet.
        Raises RemoteError (HTTPError for an error status), Cancelled."""
        url = self.url(path)
        wait = self.options.retry_wait_s
        for attempt in range(self.options.retries + 1):
            last = attempt == self.options.retries
            try:
                status, data = self._once(method, path, body, cancel)
            except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError,
                    http.client.RemoteDisconnected) as exc:
                if last and isinstance(exc, ConnectionRefusedError):
                    raise RemoteError(f"cannot reach the inference server at {url}: "
                                      f"{_describe(exc)} (is it running?)") from exc
                if last:  # it took the connection: it runs, and failed on the request
                    raise RemoteError(f"the inference server at {url} closed the connection "
                                      "without answering (did it crash or restart? its log "
                                      "may say why)") from exc
                log.info("%s %s: %s; trying again in %.1f s", method, url, _describe(exc), wait)
            else:
                if status < 300:
                    return _json(data, url)
                if status not in RETRY_STATUS or last:
                    raise HTTPError(status, url, _error_body(data))
                log.info("%s %s: status %d; trying again in %.1f s", method, url, status, wait)
            _sleep(wait, cancel)
            wait *= 2
        raise AssertionError("unreachable")

    def url(self, path: str) -> str:
        return self.base + path if path.startswith("/") else f"{self.base}/{path}"

    def _connection(self) -> http.client.HTTPConnection:
        timeout = self.options.connect_timeout_s
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _once(self, method: str, path: str, body: Any,
              cancel: Callable[[], bool] | None) -> tuple[int, bytes]:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        conn = self._connection()
        url = self.url(path)
        deadline = time.monotonic() + self.options.timeout_s
        try:
            try:
                conn.connect()
            except TimeoutError as exc:
                raise RemoteTimeout(f"cannot reach the inference server at {url}: no answer "
                                    f"to connect within {self.options.connect_timeout_s:g} s"
                                    ) from exc
            except socket.gaierror as exc:
                raise RemoteError(f"cannot reach the inference server at {url}: unknown host "
                                  f"{self.host!r}") from exc
            conn.request(method, self.prefix + path, body=data, headers=headers)
            self._wait(conn, deadline, cancel, url)
            assert conn.sock is not None
            conn.sock.settimeout(max(1.0, deadline - time.monotonic()))
            try:
                resp = conn.getresponse()
                answer = resp.read(MAX_ANSWER_BYTES + 1)
            except TimeoutError as exc:
                raise RemoteTimeout(f"the inference server at {url} stopped in the middle of "
                                    "its answer") from exc
            if len(answer) > MAX_ANSWER_BYTES:
                raise RemoteError(f"the inference server at {url} sent more than "
                                  f"{MAX_ANSWER_BYTES >> 20} MiB: not a completion")
            return resp.status, answer
        finally:
            conn.close()

    def _wait(self, conn: http.client.HTTPConnection, deadline: float,
              cancel: Callable[[], bool] | None, url: str) -> None:
        """Until the answer starts: a cancelled or late request closes its connection (the
        caller's `finally`), which is what aborts it."""
        sock = conn.sock
        assert sock is not None
        while True:
            if cancel is not None and cancel():
                raise Cancelled("the fill was cancelled")
            left = deadline - time.monotonic()
            if left <= 0:
                raise RemoteTimeout(f"the inference server at {url} did not answer within "
                                    f"{self.options.timeout_s:g} s (busy, or the request is "
                                    "too large for it)")
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                return
            ready, _, _ = select.select([sock], [], [], min(POLL_S, left))
            if ready:
                return


class HTTPError(RemoteError):
    """The server answered with an error status."""

    def __init__(self, status: int, url: str, detail: str) -> None:
        self.status, self.detail = status, detail
        hint = {401: " (set HOLEFILL_API_KEY to the server's key)",
                403: " (the API key is not accepted)",
                404: " (wrong URL, or the server does not offer this endpoint)"}.get(status, "")
        super().__init__(f"the inference server at {url} answered {status}{hint}"
                         + (f": {detail}" if detail else ""))


def _json(data: bytes, url: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        head = data[:80].decode("utf-8", "replace")
        raise RemoteError(f"the inference server at {url} answered something that is not "
                          f"JSON: {head!r}") from exc


def _error_body(data: bytes) -> str:
    """The error message in an error answer, short (servers put it in different places)."""
    text = data.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return text.splitlines()[0][:200] if text else ""
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj.get("message", obj)))
        if isinstance(err, dict):
            err = err.get("message", err)
        return str(err)[:300]
    return str(obj)[:300]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError | http.client.RemoteDisconnected | BrokenPipeError):
        return "the connection was closed before the answer came"
    return type(exc).__name__


def _sleep(seconds: float, cancel: Callable[[], bool] | None) -> None:
    end = time.monotonic() + seconds
    while True:
        if cancel is not None and cancel():
            raise Cancelled("the fill was cancelled")
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(POLL_S, left))
