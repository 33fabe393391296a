"""The framing reader (holefill.lsp.framing) on byte streams built here: every malformed frame
the fuzz-and-soak of issue 16 sent, each followed by a valid message that must still come
through (pygls' reader went deaf for good after the first of them)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from holefill.lsp.framing import MessageReader, Problem, encode, frame, value_end

pytestmark = pytest.mark.asyncio

NEXT = {"jsonrpc": "2.0", "id": 99, "method": "shutdown"}
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
                   "params": {"x": "Content-Length: 5\r\n\r\n{"}}).encode()


class Stream:
    """Chunks handed out one per read; then the end of the stream, or (open=True) a stream
    that stays open and silent, like a client waiting for an answer."""

    def __init__(self, *chunks: bytes, open: bool = False) -> None:
        self.chunks = list(chunks)
        self.open = open

    async def read(self) -> bytes:
        if self.chunks:
            return self.chunks.pop(0)
        if self.open:
            await asyncio.sleep(3600)
        return b""


async def read_all(stream: Stream, limit: int = 20, stall_s: float = 0.05) -> list:
    reader = MessageReader(stream.read, stall_s=stall_s)
    out = []
    for _ in range(limit):
        msg = await asyncio.wait_for(reader.next(), 5)
        if msg is None:
            break
        out.append(msg)
    return out


def kept(items: list) -> list:
    """The messages, whether their frame was right or recovered."""
    return [m.message if isinstance(m, Problem) else m for m in items
            if not isinstance(m, Problem) or m.recovered]


async def test_well_framed_messages_in_one_chunk_and_byte_by_byte():
    data = frame(BODY) + encode(NEXT)
    assert kept(await read_all(Stream(data))) == [json.loads(BODY), NEXT]
    one_by_one = [data[i:i + 1] for i in range(len(data))]
    assert await read_all(Stream(*one_by_one)) == [json.loads(BODY), NEXT]


@pytest.mark.parametrize("header", [
    b"content-length: %d\r\n\r\n",  # lower-case name
    b"CONTENT-LENGTH:%d\r\n\r\n",
    b"Content-Length: %d\n\n",  # LF only
    b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
])
async def test_tolerated_headers_are_read_as_usual(header):
    data = header % len(BODY) + BODY + encode(NEXT)
    assert await read_all(Stream(data)) == [json.loads(BODY), NEXT]


@pytest.mark.parametrize("length", [
    b"%d" % (len(BODY) - 7),  # too short
    b"%d" % (len(BODY) + 40),  # too long, the next message follows at once
    b"-5", b"abc", b"", b"99999999999999999999", b"0",
])
async def test_a_wrong_length_keeps_the_message_and_the_next_one(length):
    data = b"Content-Length: " + length + b"\r\n\r\n" + BODY + encode(NEXT)
    items = await read_all(Stream(data))
    assert kept(items) == [json.loads(BODY), NEXT]
    assert isinstance(items[0], Problem) and items[0].recovered


async def test_a_missing_length_header_keeps_the_message():
    data = b"Content-Type: x\r\n\r\n" + BODY + encode(NEXT)
    assert kept(await read_all(Stream(data))) == [json.loads(BODY), NEXT]


async def test_a_too_long_length_with_nothing_after_is_answered_after_a_stall():
    data = b"Content-Length: %d\r\n\r\n" % (len(BODY) + 100) + BODY
    t0 = time.monotonic()
    items = await read_all(Stream(data, open=True), limit=1, stall_s=0.05)
    assert kept(items) == [json.loads(BODY)]
    assert time.monotonic() - t0 < 2


@pytest.mark.parametrize("junk", [
    b"hello world\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"Content-Length: 12\r\n\r\nnot json at!",  # right length, not JSON
    b"Content-Length: 30\r\n\r\n{\"unterminated: 1}\r\n",  # a string with a raw line break
    b"Content-Length: 3\r\n\r\n{{{",
    b"\x00\xff\xfe garbage",
    b"{\"jsonrpc\": \"2.0\", \"id\": ",  # a body cut off, the next frame inside it
])
async def test_junk_is_dropped_and_the_next_message_comes_through(junk):
    items = await read_all(Stream(junk + encode(NEXT)))
    assert kept(items) == [NEXT]
    assert any(isinstance(m, Problem) and not m.recovered for m in items)


async def test_the_end_of_the_stream_mid_message_ends_cleanly():
    items = await read_all(Stream(encode(NEXT)[:-3]))
    assert len(items) == 1 and isinstance(items[0], Problem)
    assert await read_all(Stream(b"Content-Len")) != [NEXT]


async def test_a_large_message_in_chunks_is_one_loads():
    big = encode({"jsonrpc": "2.0", "method": "x", "params": {"text": "y" * 2_000_000}})
    chunks = [big[i:i + 65536] for i in range(0, len(big), 65536)]
    t0 = time.perf_counter()
    items = await read_all(Stream(*chunks, *[encode(NEXT)]))
    assert [type(m) for m in items] == [dict, dict] and items[1] == NEXT
    assert time.perf_counter() - t0 < 2


async def test_value_end_skips_strings_and_stops_at_a_foreign_header():
    assert value_end(b'  {"a": "}{\\""}  x', 0) == 15
    assert value_end(b'{"a": [1, {"b": 2}]', 0) is None
    with pytest.raises(ValueError):
        value_end(b'{"a": 1, Content-Length: 5', 0)
    with pytest.raises(ValueError):
        value_end(b"x{}", 0)
