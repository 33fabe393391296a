"""JSON-RPC framing on a byte stream (LSP base protocol) that never goes deaf.

A message is a header block (`Content-Length: N`, optionally `Content-Type: ...`, each line
ending in CRLF, then an empty line) and a body of N bytes holding one JSON value. Editors
follow that; broken clients, proxies and people typing into a socket do not, and one bad
frame must not cost the rest of the session (pygls' reader stays deaf for good after a
Content-Length it cannot read). So `MessageReader`:

- accepts header names in any case and lines ending in LF alone (the header block ends at the
  first empty line), and ignores headers other than Content-Length;
- takes the body's own end when the declared length is wrong. A body is one JSON object or
  array, and no proper prefix of one is itself complete, so where N bytes do not parse, the
  first complete JSON value at the body's start is the message (N too short or too long);
  when N bytes never arrive but the bytes that did already hold a complete value (N too
  long, nothing sent after it), the value is taken once the stream stalls for `stall_s`;
- reads a body without a usable length (missing, negative, not a number, absurdly large) the
  same way, by the end of its JSON value;
- drops what is not a message (junk, a body that is not JSON) up to the next
  `Content-Length` header and reports it as a `Problem`, so the caller can answer
  ParseError and carry on with the next message.

The scanner that finds where a JSON value ends skips whole strings with one regular
expression (a string cannot hold a raw control character, so an unterminated string never
runs into the next frame's header) and counts brackets; a `Content-Length` header outside a
string ends a value that never closed. It runs only on the recovery paths; a well-framed
message costs one `json.loads`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

# The header every message starts with; found again to resynchronize after junk.
_HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_WORD = b"content-length:"
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_HEADER_NAME = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:")
_HEADER_NAME_PREFIX = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*")
_HEADER_LINE = re.compile(rb"([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*([^\r\n]*?)[ \t]*")
_DIGITS = re.compile(rb"[0-9]{1,12}")
_SPACE = b" \t\r\n"
# JSON scanning tokens: a whole string, a string cut off by the end of the data, a quote
# that opens an invalid string (a raw control character inside), brackets, and the header
# of a following frame.
_SCAN = re.compile(
    rb'"(?:[^"\\\x00-\x1f]|\\.)*"'
    rb'|(?P<open_string>"(?:[^"\\\x00-\x1f]|\\.)*\\?\Z)'
    rb'|(?P<bad_string>")'
    rb"|(?P<open>[\[{])|(?P<close>[\]}])"
    rb"|(?P<header>content-length[ \t]*:)",
    re.IGNORECASE | re.DOTALL,
)

MAX_HEADER_BYTES = 8 * 1024
MAX_BODY_BYTES = 256 * 1024 * 1024
STALL_S = 0.25
READ_SIZE = 64 * 1024

Read = Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class Problem:
    """Bytes that were not a message (dropped), or a message whose frame was wrong (kept:
    `message` is set). `reason` says which, for the log and the ParseError answer."""

    reason: str
    dropped: int = 0
    message: Any = None

    @property
    def recovered(self) -> bool:
        return self.message is not None


def frame(body: bytes) -> bytes:
    """One message on the wire."""
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def encode(message: Any) -> bytes:
    """A JSON-RPC message (a dict) framed for the wire (ASCII: a lone surrogate travels as
    its JSON escape)."""
    return frame(json.dumps(message).encode("ascii"))


class _Incomplete(Exception):
    pass


def value_end(data: bytes | bytearray, start: int) -> int | None:
    """The end of the JSON object or array that begins at `start` (after white space).
    None when the data ends before it does; ValueError when it is not one."""
    i = start
    n = len(data)
    while i < n and data[i] in _SPACE:
        i += 1
    if i == n:
        return None
    if data[i] not in b"[{":
        raise ValueError("the body does not start with a JSON object or array")
    depth = 0
    for m in _SCAN.finditer(data, i):
        kind = m.lastgroup
        if kind == "open_string":
            return None
        if kind in ("bad_string", "header"):
            raise ValueError("the body is not valid JSON" if kind == "bad_string"
                             else "a new message begins inside the body")
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth == 0:
                return m.end()
    return None


def _loads(body: bytes | bytearray) -> Any:
    return json.loads(bytes(body))


class MessageReader:
    """Messages from a byte stream: `await next()` gives a decoded JSON value, a `Problem`,
    or None at the end of the stream. `read()` returns the next bytes (b"" at the end)."""

    def __init__(self, read: Read, *, stall_s: float = STALL_S,
                 max_body: int = MAX_BODY_BYTES) -> None:
        self._read = read
        self._buf = bytearray()
        self._eof = False
        self.stall_s = stall_s
        self.max_body = max_body

    async def _more(self, timeout: float | None = None) -> bool:
        """Read more bytes; False at the end of the stream or when `timeout` passed."""
        if self._eof:
            return False
        try:
            chunk = await (asyncio.wait_for(self._read(), timeout) if timeout is not None
                           else self._read())
        except TimeoutError:
            return False
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _drop(self, n: int) -> None:
        del self._buf[:n]

    def _skip_space(self) -> None:
        i = 0
        while i < len(self._buf) and self._buf[i] in _SPACE:
            i += 1
        self._drop(i)

    async def next(self) -> Any:
        while True:
            self._skip_space()
            if not self._buf:
                if not await self._more():
                    return None
                continue
            found = await self._header_block()
            if found is None:
                return None
            if isinstance(found, Problem):
                return found
            header_end, length = found
            return await self._body(header_end, length)

    async def _header_block(self) -> tuple[int, int | None] | Problem | None:
        """(where the body starts, the declared length or None when unusable), a Problem
        for dropped junk, or None at the end of the stream."""
        while True:
            buf = self._buf
            if buf[:1] in (b"{", b"["):
                return 0, None  # a body without a header
            if _HEADER_NAME.match(buf):
                end = _HEADER_END.search(buf)
                if end is not None:
                    lines = re.split(rb"\r?\n", bytes(buf[: end.start()]))
                    if all(_HEADER_LINE.fullmatch(line) for line in lines):
                        return end.end(), self._length(lines)
                    n = self._resync(1)
                    return Problem("a header block with a line that is not a header", n)
                if len(buf) > MAX_HEADER_BYTES:
                    n = self._resync(1)
                    return Problem("a header block without an end", n)
            elif not _HEADER_NAME_PREFIX.fullmatch(buf):
                return self._junk()
            if not await self._more():
                n = len(self._buf)
                self._drop(n)
                return Problem("a header cut off by the end of the stream", n)

    def _junk(self) -> Problem:
        """Drop bytes up to the next header; without one in sight, keep only a tail that may
        be the first bytes of one."""
        m = _HEADER_START.search(self._buf, 1)
        if m is not None:
            n = m.start()
        else:
            tail = bytes(self._buf[-len(_HEADER_WORD):]).lower()
            keep = next((k for k in range(len(tail), 0, -1)
                         if _HEADER_WORD.startswith(tail[-k:])), 0)
            n = max(1, len(self._buf) - keep)
        self._drop(n)
        return Problem("bytes that are not a message", n)

    def _length(self, lines: list[bytes]) -> int | None:
        length = None
        for line in lines:
            m = _HEADER_LINE.fullmatch(line)
            if m and m.group(1).lower() == b"content-length":
                value = m.group(2)
                length = int(value) if _DIGITS.fullmatch(value) else None
        if length is not None and length > self.max_body:
            return None
        return length

    def _resync(self, after: int) -> int:
        """Drop up to the next header that starts at or after `after`; the count dropped."""
        m = _HEADER_START.search(self._buf, after)
        n = m.start() if m else len(self._buf)
        self._drop(n)
        return n

    async def _body(self, start: int, length: int | None) -> Any:
        if length is not None:
            while len(self._buf) < start + length:
                if not await self._more(self.stall_s):
                    # stalled (or ended) short of the declared length: the declared length
                    # may be too long for a body that is all there
                    taken = self._complete_value(start)
                    if taken is not None:
                        return taken
                    if self._eof:
                        n = len(self._buf)
                        self._drop(n)
                        return Problem("a body cut off by the end of the stream", n)
            try:
                message = _loads(self._buf[start:start + length])
            except ValueError:
                pass  # a wrong length, or not JSON: find out below
            else:
                self._drop(start + length)
                return message
        return await self._body_by_value(start, length)

    def _complete_value(self, start: int) -> Any:
        try:
            end = value_end(self._buf, start)
        except ValueError:
            return None
        if end is None:
            return None
        try:
            message = _loads(self._buf[start:end])
        except ValueError:
            return None
        self._drop(end)
        return Problem("Content-Length larger than the body", 0, message)

    async def _body_by_value(self, start: int, declared: int | None) -> Any:
        """The body is the JSON value at `start`, whatever the header said."""
        why = ("no usable Content-Length" if declared is None
               else "Content-Length does not match the body")
        while True:
            try:
                end = value_end(self._buf, start)
            except ValueError as exc:
                n = self._resync(start)
                return Problem(f"{why}; {exc}", n)
            if end is not None:
                try:
                    message = _loads(self._buf[start:end])
                except ValueError as exc:
                    self._drop(end)
                    return Problem(f"{why}; the body is not valid JSON ({exc})", end)
                self._drop(end)
                return Problem(why, 0, message)
            if len(self._buf) - start > self.max_body:
                n = self._resync(start)
                return Problem(f"{why}; the body is larger than {self.max_body} bytes", n)
            if not await self._more():
                n = len(self._buf)
                self._drop(n)
                return Problem(f"{why}; the body was cut off by the end of the stream", n)
