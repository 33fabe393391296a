"""A bare JSON-RPC client for testing the server from outside: it writes exactly the bytes it
is given (also malformed ones), keeps every request until its answer comes, and records what
the server sends unasked. Used by the soak fuzzer (`holefill.lsp.soak`) and the protocol tests;
editors are the real clients.

`RawClient.spawn(argv)` starts `holefill serve` (or anything) with pipes; `RawClient.connect`
opens a TCP connection. Requests the server sends are answered by `handlers[method]` (default:
null), which is how `window/workDoneProgress/create` and `workspace/applyEdit` are answered; a
handler that returns `NO_ANSWER` leaves the request open (the test answers it later).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from holefill.lsp.framing import MessageReader, Problem, encode

NO_ANSWER = object()  # a handler's result that means: do not answer (yet)


class ResponseError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message", "")


@dataclass
class Sent:
    method: str
    at: float
    future: asyncio.Future[dict[str, Any]]
    answered_at: float | None = None


@dataclass
class Received:
    requests: list[dict[str, Any]] = field(default_factory=list)  # the server asked us
    notifications: list[dict[str, Any]] = field(default_factory=list)
    orphans: list[dict[str, Any]] = field(default_factory=list)  # answers to no request
    bad_frames: list[str] = field(default_factory=list)  # the server's own framing errors


class RawClient:
    def __init__(self, reader: Callable[[], Any], write: Callable[[bytes], None],
                 process: asyncio.subprocess.Process | None = None) -> None:
        self._write = write
        self.process = process
        self.received = Received()
        self.sent: dict[Any, Sent] = {}
        self.handlers: dict[str, Callable[[Any], Any]] = {}
        self.stderr: list[str] = []
        self._ids = itertools.count(1)
        self._reader = MessageReader(reader)
        self._tasks = [asyncio.ensure_future(self._read_loop())]
        self.closed = asyncio.get_running_loop().create_future()

    # ------------------------------------------------------------------ start, stop

    @classmethod
    async def spawn(cls, argv: Sequence[str], env: dict[str, str] | None = None,
                    cwd: str | None = None) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={**os.environ, **(env or {})}, cwd=cwd,
            limit=2**20)
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        def write(data: bytes) -> None:
            if not stdin.is_closing():
                stdin.write(data)

        client = cls(lambda: stdout.read(65536), write, proc)
        client._tasks.append(asyncio.ensure_future(client._read_stderr()))
        return client

    @classmethod
    async def connect(cls, host: str, port: int) -> RawClient:
        reader, writer = await asyncio.open_connection(host, port)

        def write(data: bytes) -> None:
            if not writer.is_closing():
                writer.write(data)

        client = cls(lambda: reader.read(65536), write)
        client._socket = writer  # type: ignore[attr-defined]
        return client

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.stderr.append(line.decode("utf-8", "replace"))

    def close_input(self) -> None:
        """End the server's input (stdin, or the socket's write side)."""
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
        sock = getattr(self, "_socket", None)
        if sock is not None and sock.can_write_eof():
            sock.write_eof()

    async def wait_exit(self, timeout: float) -> int | None:
        """The process' exit status, or None when it did not exit in time."""
        assert self.process is not None
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            return None

    async def stop(self, timeout: float = 10) -> int | None:
        """shutdown + exit, then the exit status (the process is killed if it hangs)."""
        code = None
        running = self.process is None or self.process.returncode is None
        if running and not self.closed.done():
            with contextlib.suppress(Exception):  # e.g. InvalidRequest: shut down already
                await self.request("shutdown", None, timeout=timeout)
            self.notify("exit")
        if self.process is not None:
            code = await self.wait_exit(timeout)
            if code is None:
                self.process.kill()
                await self.process.wait()
        sock = getattr(self, "_socket", None)
        if sock is not None:
            sock.close()
        await asyncio.sleep(0)
        for task in self._tasks:
            task.cancel()
        return code

    def rss_kb(self) -> int | None:
        """The server process' resident set size, from /proc."""
        if self.process is None:
            return None
        try:
            with open(f"/proc/{self.process.pid}/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    # ------------------------------------------------------------------ sending

    def send_bytes(self, data: bytes) -> None:
        self._write(data)

    def send(self, message: dict[str, Any]) -> None:
        self._write(encode(message))

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def new_id(self) -> int:
        return next(self._ids)

    def expect(self, msg_id: Any, method: str) -> asyncio.Future[dict[str, Any]]:
        """Track an answer to a request written by other means (`send_bytes`)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if self.closed.done():
            future.set_exception(ConnectionError("the server closed the stream"))
        self.sent[msg_id] = Sent(method, time.monotonic(), future)
        return future

    def request_nowait(self, method: str, params: Any = None,
                       msg_id: Any = None) -> asyncio.Future[dict[str, Any]]:
        """Send a request; the future holds the whole answer (with "result" or "error")."""
        msg_id = self.new_id() if msg_id is None else msg_id
        future = self.expect(msg_id, method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return future

    async def request(self, method: str, params: Any = None, *, timeout: float = 60,
                      msg_id: Any = None) -> Any:
        """The result; ResponseError for an error answer; TimeoutError when none came."""
        answer = await asyncio.wait_for(self.request_nowait(method, params, msg_id), timeout)
        if "error" in answer:
            raise ResponseError(answer["error"])
        return answer.get("result")

    def cancel(self, msg_id: Any) -> None:
        self.notify("$/cancelRequest", {"id": msg_id})

    async def initialize(self, options: dict[str, Any] | None = None, *,
                         capabilities: dict[str, Any] | None = None,
                         timeout: float = 60) -> Any:
        caps = capabilities if capabilities is not None else {
            "general": {"positionEncodings": ["utf-16"]},
            "window": {"workDoneProgress": True},
            "workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}},
        }
        result = await self.request("initialize", {
            "processId": os.getpid(), "rootUri": None, "capabilities": caps,
            "initializationOptions": options or {}}, timeout=timeout)
        self.notify("initialized", {})
        return result

    # ------------------------------------------------------------------ receiving

    def notifications(self, method: str) -> list[Any]:
        return [n.get("params") for n in self.received.notifications if n.get("method") == method]

    async def _read_loop(self) -> None:
        try:
            while (item := await self._reader.next()) is not None:
                if isinstance(item, Problem):
                    self.received.bad_frames.append(item.reason)
                    if not item.recovered:
                        continue
                    item = item.message
                if isinstance(item, dict):
                    self._dispatch(item)
        finally:
            for sent in self.sent.values():
                if not sent.future.done():
                    sent.future.set_exception(ConnectionError("the server closed the stream"))
            if not self.closed.done():
                self.closed.set_result(None)

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            msg_id = message.get("id")
            sent = self.sent.get(msg_id) if isinstance(msg_id, str | int) else None
            if sent is None or sent.future.done():
                self.received.orphans.append(message)
                return
            sent.answered_at = time.monotonic()
            sent.future.set_result(message)
        elif "id" in message:
            self.received.requests.append(message)
            handler = self.handlers.get(method)
            try:
                result = handler(message.get("params")) if handler else None
            except Exception as exc:
                self.send({"jsonrpc": "2.0", "id": message["id"],
                           "error": {"code": -32603, "message": str(exc)}})
                return
            if result is not NO_ANSWER:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        else:
            self.received.notifications.append(message)
