"""Where the server's bytes come from and go to: stdio, or one authenticated TCP client.

Both run the same loop: `MessageReader` turns bytes into messages (or `Problem`s, answered
with ParseError), `HolefillProtocol.receive` handles them, and the loop ends at `exit`, at the
end of the input or when the client is gone; the exit status is the protocol's (0 after
`shutdown`, else 1).

stdio: stdin is read by a thread of its own (pygls read it through the thread pool that also
ran handlers); stdout is taken over for the protocol and file descriptor 1 is pointed at
stderr, so a stray print (ours, a library's, C code's) cannot corrupt the stream.

TCP (`run_tcp`): listens on 127.0.0.1 only. A connection is served only once its `initialize`
carries the server's token (`holefill.lsp.auth`); before that it gets ServerNotInitialized for
other requests, and a wrong or missing token ends it. The first authenticated connection is
the server's one client: every later connection is refused with a JSON-RPC error saying so,
and when that client leaves, the server exits. A connection that does not authenticate
within `AUTH_TIMEOUT_S` is closed, so nobody can hold the server by connecting and waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from lsprotocol import types

from holefill.lsp.auth import take_token, token_matches
from holefill.lsp.errors import INVALID_REQUEST, SERVER_NOT_INITIALIZED, error_message
from holefill.lsp.framing import READ_SIZE, MessageReader, Problem, encode
from holefill.lsp.protocol import HolefillProtocol

log = logging.getLogger(__name__)

AUTH_TIMEOUT_S = 10.0


async def serve_messages(protocol: HolefillProtocol, reader: MessageReader) -> int:
    """Feed messages to ``protocol`` until exit, the end of the input or a lost client."""
    stopped = asyncio.Event()
    protocol.on_exit = lambda code: stopped.set()
    stop = asyncio.ensure_future(stopped.wait())
    try:
        while protocol.exit_code is None:
            item = asyncio.ensure_future(reader.next())
            await asyncio.wait({item, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not item.done():
                item.cancel()
                break
            message = item.result()
            if message is None:
                log.info("the client closed the connection")
                break
            deliver(protocol, message)
    finally:
        stop.cancel()
    if protocol.exit_code is None:  # the input ended without exit
        protocol.exit_code = 0 if protocol._shutdown else 1
    return protocol.exit_code


def deliver(protocol: HolefillProtocol, message: Any) -> None:
    """Hand one item of the reader to the protocol. A bug of ours while handling it is
    logged; it never ends the loop (the client would wait forever for every later answer)."""
    try:
        _deliver(protocol, message)
    except Exception:
        log.exception("internal error while handling a message")


def _deliver(protocol: HolefillProtocol, message: Any) -> None:
    if isinstance(message, Problem):
        if message.recovered:
            log.warning("a malformed frame: %s (the message was read anyway)", message.reason)
            protocol.receive(message.message)
        else:
            protocol.receive_problem(message.reason)
    else:
        protocol.receive(message)


# ---------------------------------------------------------------------------------- stdio

class StdinSource:
    """Chunks of a file descriptor, read by a daemon thread, handed to the event loop."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.eof = False
        threading.Thread(target=self._pump, name="holefill-stdin", daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, READ_SIZE)
            except OSError as exc:
                log.info("stdin: %s", exc)
                chunk = b""
            try:
                self.loop.call_soon_threadsafe(self.queue.put_nowait, chunk)
            except RuntimeError:  # the event loop is closed: the server is exiting
                return
            if not chunk:
                return

    async def read(self) -> bytes:
        if self.eof:
            return b""
        chunk = await self.queue.get()
        self.eof = not chunk
        return chunk


class StreamWriter:
    """The protocol's writer on a binary file (stdout)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data)
        self.stream.flush()

    def close(self) -> None:
        self.stream.close()


def claim_stdout() -> BinaryIO:
    """The real stdout for the protocol; file descriptor 1 and sys.stdout go to stderr."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def run_stdio(protocol: HolefillProtocol, stdin_fd: int = 0,
              stdout: BinaryIO | None = None) -> int:
    out = stdout if stdout is not None else claim_stdout()
    protocol.set_writer(StreamWriter(out))

    async def main() -> int:
        source = StdinSource(stdin_fd)
        _on_terminate(lambda: source.queue.put_nowait(b""))
        return await serve_messages(protocol, MessageReader(source.read))

    return asyncio.run(main())


# ------------------------------------------------------------------------------------ TCP

def run_tcp(protocol: HolefillProtocol, port: int, token: str,
            on_listening: Callable[[int], None], host: str = "127.0.0.1") -> int:
    return asyncio.run(_tcp(protocol, host, port, token, on_listening))


async def _tcp(protocol: HolefillProtocol, host: str, port: int, token: str,
               on_listening: Callable[[int], None]) -> int:
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    taken = False

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal taken
        peer = writer.get_extra_info("peername")
        try:
            if taken:
                log.warning("refused a second client %s: this server has its client", peer)
                _refuse(writer, "holefill: this server already has its client (one client "
                                "per server); start another `holefill serve --tcp`")
                return
            messages = MessageReader(lambda: reader.read(READ_SIZE))
            try:
                first = await asyncio.wait_for(_authenticate(messages, writer, token),
                                               AUTH_TIMEOUT_S)
            except TimeoutError:
                log.warning("closed %s: no initialize with the token in %.0f s", peer,
                            AUTH_TIMEOUT_S)
                return
            if first is None:
                return
            if taken:  # another connection authenticated while this one did
                _refuse(writer, "holefill: this server already has its client")
                return
            taken = True
            log.info("serving the client at %s", peer)
            protocol.set_writer(writer)
            protocol.receive(first)
            if protocol.exit_code is None:
                await serve_messages(protocol, messages)
            if not done.done():
                done.set_result(protocol.exit_code if protocol.exit_code is not None else 1)
        except (ConnectionError, OSError) as exc:
            log.info("connection %s: %s", peer, exc)
            if taken and not done.done():
                done.set_result(protocol.exit_code if protocol.exit_code is not None else 1)
        finally:
            writer.close()

    def terminate() -> None:
        if not done.done():
            done.set_result(protocol.exit_code if protocol.exit_code is not None else 0)

    _on_terminate(terminate)
    server = await asyncio.start_server(connection, host, port)
    on_listening(server.sockets[0].getsockname()[1])
    async with server:
        code = await done
    return code


def _on_terminate(stop: Callable[[], object]) -> None:
    """SIGTERM and SIGINT end the server like the end of its input (cleanly: the token file
    is removed, the model's work cancelled)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop)


async def _authenticate(messages: MessageReader, writer: asyncio.StreamWriter,
                        token: str) -> dict[str, Any] | None:
    """The connection's initialize request, with the token taken out, once it carries the
    right token; None when the connection ends or presents a wrong one."""
    while True:
        item = await messages.next()
        if item is None:
            return None
        if isinstance(item, Problem):
            if not item.recovered:
                continue
            item = item.message
        if not isinstance(item, dict):
            continue
        method, msg_id = item.get("method"), item.get("id")
        if method == types.EXIT:
            return None
        if method != types.INITIALIZE or "id" not in item:
            if "id" in item and isinstance(method, str):
                writer.write(encode(error_message(
                    msg_id, SERVER_NOT_INITIALIZED,
                    f"holefill: {method} before initialize; send initialize with the token "
                    "first")))
            continue
        given = take_token(item.get("params"))
        if not token_matches(given, token):
            log.warning("refused a client: %s token", "a wrong" if given else "no")
            reply = error_message(msg_id, INVALID_REQUEST,
                                  "holefill: this server needs its token as "
                                  "initializationOptions.token (the path of the token file "
                                  "is printed when the server starts)")
            reply["error"]["data"] = {"retry": False}
            writer.write(encode(reply))
            await writer.drain()
            return None
        return item


def _refuse(writer: asyncio.StreamWriter, message: str) -> None:
    writer.write(encode(error_message(None, INVALID_REQUEST, message)))
