"""The inference-server HTTP client: a server that is down, slow, failing or talking garbage
gives a clear error within its deadline, and a cancelled request stops at once.

The servers here are small stdlib HTTP servers on 127.0.0.1 that misbehave on purpose; the
real inference server is in test_remote_llama.py."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator

import pytest

from holefill.decode.http import HttpClient, HttpOptions, RemoteError, RemoteTimeout
from holefill.decode.llama_server import free_port
from holefill.decode.loop import Cancelled


class _Handler(http.server.BaseHTTPRequestHandler):
    behaviour = "ok"
    seen_auth: list[str | None] = []

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        _Handler.seen_auth.append(self.headers.get("Authorization"))
        kind = _Handler.behaviour
        if kind == "slow":
            time.sleep(3)
        if kind == "error":
            self._send(500, json.dumps({"error": {"message": "model exploded"}}).encode())
        elif kind == "garbage":
            self._send(200, b"<html>not json</html>")
        else:
            self._send(200, b'{"ok": true}')

    do_GET = do_POST  # noqa: N815

    def _send(self, status: int, body: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/v1"
    httpd.shutdown()
    httpd.server_close()


def _client(url: str, **kw: float) -> HttpClient:
    return HttpClient(url, None, HttpOptions(**{"retries": 0, **kw}))


def test_a_server_that_is_down_is_named_with_a_hint(server: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    t0 = time.monotonic()
    with pytest.raises(RemoteError, match=r"cannot reach the inference server at "
                       r"http://127\.0\.0\.1:\d+/v1/completions: connection refused "
                       r"\(is it running\?\)"):
        HttpClient(url, None, HttpOptions(retries=2, retry_wait_s=0.05)).post(
            "/completions", {})
    assert time.monotonic() - t0 < 2


def test_a_slow_server_times_out_within_the_deadline(server: str) -> None:
    _Handler.behaviour = "slow"
    t0 = time.monotonic()
    with pytest.raises(RemoteTimeout, match="did not answer within 0.5 s"):
        _client(server, timeout_s=0.5).post("/completions", {})
    assert time.monotonic() - t0 < 1.5


def test_cancelling_aborts_a_request_in_flight(server: str) -> None:
    _Handler.behaviour = "slow"
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        _client(server).post("/completions", {}, cancel.is_set)
    assert time.monotonic() - t0 < 1.0


def test_an_error_status_carries_the_servers_message(server: str) -> None:
    _Handler.behaviour = "error"
    with pytest.raises(RemoteError, match="answered 500: model exploded"):
        _client(server).post("/completions", {})


def test_garbage_is_reported_as_not_json(server: str) -> None:
    _Handler.behaviour = "garbage"
    with pytest.raises(RemoteError, match="answered something that is not JSON: '<html>"):
        _client(server).post("/completions", {})


def test_the_api_key_goes_to_loopback_and_never_into_messages(server: str) -> None:
    _Handler.behaviour = "error"
    _Handler.seen_auth.clear()
    client = HttpClient(server, "sk-secret-123", HttpOptions(retries=0))
    with pytest.raises(RemoteError) as err:
        client.post("/completions", {})
    assert _Handler.seen_auth == ["Bearer sk-secret-123"]
    assert "sk-secret" not in str(err.value)


def test_the_api_key_is_not_sent_in_clear_text_to_another_host() -> None:
    client = HttpClient("http://192.0.2.1:8000/v1", "sk-secret-123")
    assert client._key is None
    assert HttpClient("https://192.0.2.1/v1", "sk-secret-123")._key == "sk-secret-123"
