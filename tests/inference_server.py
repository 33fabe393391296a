"""A small OpenAI-compatible inference server for tests: a real transformers model behind the
HTTP endpoints holefill's remote backend uses, in its own process, so a test can kill it.

Why it exists: the remote backend must be tested end to end against a server that really
generates (the language server's answer to a killed, slow or cancelled inference server is
the point), and CI cannot install llama-cpp-python (it builds llama.cpp from source, about 25
minutes). This server runs the tiny random model the tests build (tests/conftest.py) with
torch and transformers, which CI has. `tests/decode/test_remote_llama.py` runs the same
backend against llama.cpp's server where llama-cpp-python is installed.

What it implements, in the shapes of llama.cpp's own server (`llama-server`):

- ``GET /v1/models``: the one model, its context length as ``meta.n_ctx``; ``GET /props``.
- ``POST /tokenize`` (``content``, ``add_special``; special tokens in the text are parsed)
  and ``POST /detokenize`` (``tokens`` -> ``content``).
- ``POST /v1/completions``: the prompt as text or as token ids; ``max_tokens``,
  ``temperature`` (0: greedy; else sampling with ``seed``, ``top_k``), ``logit_bias``,
  ``logprobs`` (top-k per position). The answer carries ``logprobs.content``: per generated
  token its id, bytes and log probability and the top ``logprobs`` alternatives (log
  probabilities after the logit bias). Generation stops at an end-of-generation token
  (finish reason "stop"; that token is the last position and not part of the text) or after
  ``max_tokens`` ("length"). One request generates at a time (one slot, as llama.cpp by
  default); a request whose client closed its connection stops generating (as llama.cpp
  does), which the event log records.

For tests only:

- ``--token-delay-s``: time per generated token, as a larger model or a busy server takes
  (the tiny model makes 16 tokens in milliseconds: too fast to kill or cancel mid-request).
- ``POST /control`` ``{"fault": MODE, "paths": [...], "token_delay_s": S}`` makes requests to
  ``paths`` (default ``["/v1/completions"]``) fail as a broken server does: ``"500"`` and
  ``"503"`` (an error status with an error object), ``"garbage"`` (200 with an HTML page: the
  URL is some other web server), ``"no-logprobs"`` (a completion without log probabilities),
  ``"drop"`` (the connection closed without an answer), ``"hang"`` (no answer until the
  client goes away). ``"fault": null`` heals it.
- Every request is an event line on stderr: ``<unix time> <event> <details>``
  (`InferenceServer.events` reads them back).

Run: ``python tests/inference_server.py --model DIR --port N`` (127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from holefill.decode.llama_server import kill_server, start_server, stop_server

FAULTS = ("500", "503", "garbage", "no-logprobs", "drop", "hang")
HANG_MAX_S = 120.0  # a hanging answer gives up by itself: no thread outlives a test by long
END_TOKENS = ("<|endoftext|>", "<file_sep>", "<|file_sep|>", "<|im_end|>")


# ----------------------------------------------------------------------------- the test side

@dataclass
class InferenceServer:
    """One server process serving the model folder ``model`` on 127.0.0.1:``port``."""

    model: Path
    port: int
    log: Path
    alias: str = "tiny"
    context: int = 1024
    token_delay_s: float = 0.0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> InferenceServer:
        cmd = [sys.executable, __file__, "--model", str(self.model), "--port", str(self.port),
               "--alias", self.alias, "--context", str(self.context),
               "--token-delay-s", str(self.token_delay_s)]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
               "PYTHONUNBUFFERED": "1"}
        self.process = start_server(cmd, env, self.log, self.url + "/models",
                                    "the inference server")
        return self

    def kill(self) -> None:
        """SIGKILL, as a crash or an out-of-memory kill ends a server."""
        kill_server(self.process)

    def stop(self) -> None:
        stop_server(self.process)

    def control(self, fault: str | None = None, *, paths: list[str] | None = None,
                token_delay_s: float | None = None) -> None:
        body: dict[str, Any] = {"fault": fault}
        if paths is not None:
            body["paths"] = paths
        if token_delay_s is not None:
            body["token_delay_s"] = token_delay_s
        req = urllib.request.Request(self.root + "/control", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            json.load(resp)

    def events(self, name: str | None = None) -> list[tuple[float, str, str]]:
        """(unix time, event, details) of the log's event lines, oldest first."""
        out = []
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split(" ", 2)
            if (len(parts) >= 2 and parts[0].replace(".", "", 1).isdigit()
                    and (name is None or parts[1] == name)):
                out.append((float(parts[0]), parts[1], parts[2] if len(parts) > 2 else ""))
        return out


# ----------------------------------------------------------------------------- the server side

def event(name: str, details: str = "") -> None:
    sys.stderr.write(f"{time.time():.6f} {name} {details}\n")
    sys.stderr.flush()


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, character -> byte (what byte-level BPE tokens spell)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


class Model:
    """The tokenizer and weights, each token's bytes, and greedy or sampled generation."""

    def __init__(self, folder: str, context: int) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(1)
        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(folder)
        self.net = AutoModelForCausalLM.from_pretrained(folder).eval()
        self.context = context
        self.vocab = len(self.tok)
        special = set(self.tok.all_special_ids) | set(self.tok.added_tokens_decoder)
        decoder = _byte_decoder()
        self.bytes: list[bytes] = []
        for i, piece in enumerate(self.tok.convert_ids_to_tokens(list(range(self.vocab)))):
            if i in special or piece is None or any(ch not in decoder for ch in piece):
                self.bytes.append(self.tok.decode([i]).encode("utf-8"))
            else:
                self.bytes.append(bytes(decoder[ch] for ch in piece))
        ends = {self.tok.convert_tokens_to_ids(t) for t in END_TOKENS}
        ends.add(self.tok.eos_token_id)
        self.ends = {i for i in ends if isinstance(i, int) and 0 <= i < self.vocab
                     and i != self.tok.unk_token_id}
        self.lock = threading.Lock()  # one slot: one generation at a time

    def tokenize(self, text: str, add_special: bool) -> list[int]:
        return list(self.tok(text, add_special_tokens=add_special)["input_ids"])

    def detokenize(self, ids: list[int]) -> str:
        return b"".join(self.bytes[i] for i in ids).decode("utf-8", "replace")

    def entry(self, token: int, logprob: float) -> dict[str, Any]:
        raw = self.bytes[token]
        return {"id": token, "token": raw.decode("utf-8", "replace"), "bytes": list(raw),
                "logprob": logprob}

    def generate(self, ids: list[int], body: dict[str, Any], gone: Any,
                 delay: float) -> tuple[list[dict[str, Any]], str] | None:
        """The positions of the content shape and the finish reason; None when the client
        went away (the generation stops there)."""
        torch = self.torch
        max_tokens = max(0, min(int(body.get("max_tokens") or 16), self.context - len(ids)))
        n_probs = int(body.get("logprobs") or body.get("n_probs") or 0)
        temperature = float(body.get("temperature") or 0.0)
        top_k = int(body.get("top_k") or 0)
        bias = torch.zeros(self.vocab)
        for key, value in (body.get("logit_bias") or {}).items():
            if 0 <= int(key) < self.vocab:
                bias[int(key)] = float(value)
        gen = torch.Generator().manual_seed(int(body.get("seed") or 0))
        positions: list[dict[str, Any]] = []
        past, feed = None, ids
        for _ in range(max_tokens):
            end = time.monotonic() + delay
            while True:
                if gone():
                    event("client-gone", f"after {len(positions)} tokens")
                    return None
                if time.monotonic() >= end:
                    break
                time.sleep(min(0.01, max(0.0, end - time.monotonic())))
            with torch.no_grad():
                out = self.net(input_ids=torch.tensor([feed]), past_key_values=past,
                               use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float() + bias
            logp = torch.log_softmax(logits, dim=-1)
            if temperature > 0:
                scaled = logits / temperature
                if top_k > 0:
                    cut = torch.topk(scaled, min(top_k, self.vocab)).values[-1]
                    scaled = torch.where(scaled < cut, torch.tensor(float("-inf")), scaled)
                token = int(torch.multinomial(torch.softmax(scaled, -1), 1, generator=gen))
            else:
                token = int(torch.argmax(logp))
            top = torch.topk(logp, min(n_probs, self.vocab)) if n_probs else None
            entry = self.entry(token, float(logp[token]))
            entry["top_logprobs"] = [] if top is None else [
                self.entry(int(i), float(v)) for v, i in zip(top.values, top.indices,
                                                              strict=True)]
            positions.append(entry)
            if token in self.ends:
                return positions, "stop"
            feed = [token]
        return positions, "length"


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # events are logged by `event`

    # ------------------------------------------------------------------------- plumbing

    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        try:
            return json.loads(data) if data else {}
        except ValueError:
            return None

    def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": {"code": status, "message": message,
                                      "type": "invalid_request_error"}})

    def _gone(self) -> bool:
        """The client closed its connection (it sends nothing more while it waits)."""
        try:
            ready, _, _ = select.select([self.connection], [], [], 0)
            return bool(ready) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _fault(self, path: str) -> bool:
        """Answer as the configured fault does; False when there is none for ``path``."""
        mode, paths = self.server.fault, self.server.fault_paths
        if mode is None or not any(path.startswith(p) for p in paths):
            return False
        event("fault", f"{mode} {path}")
        if mode in ("500", "503"):
            self._send(int(mode), {"error": {"code": int(mode), "type": "server_error",
                                             "message": f"injected {mode} for the test"}})
        elif mode == "garbage":
            self._send(200, b"<html><body><h1>It works!</h1></body></html>", "text/html")
        elif mode == "no-logprobs":
            self._send(200, {"object": "text_completion", "choices": [
                {"index": 0, "text": " pass", "finish_reason": "length"}]})
        elif mode == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif mode == "hang":
            end = time.monotonic() + HANG_MAX_S
            while not self._gone() and time.monotonic() < end:
                time.sleep(0.02)
            event("hang-ended", "client gone" if self._gone() else "gave up")
            self.close_connection = True
        return True

    # ------------------------------------------------------------------------- endpoints

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        path = self.path.split("?", 1)[0]
        event("request", f"GET {path}")
        if self._fault(path):
            return
        srv = self.server
        if path in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [
                {"id": srv.alias, "object": "model", "owned_by": "holefill-tests",
                 "meta": {"n_ctx": srv.model.context, "n_vocab": srv.model.vocab}}]})
        elif path == "/props":
            self._send(200, {"default_generation_settings": {"n_ctx": srv.model.context},
                             "total_slots": 1})
        elif path == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._error(404, f"no endpoint {path}")

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        body = self._body()
        event("request", f"POST {path}")
        if path == "/control":
            self._control(body)
            return
        if self._fault(path):
            return
        if not isinstance(body, dict):
            self._error(400, "the body is not a JSON object")
        elif path == "/tokenize":
            text = body.get("content")
            if not isinstance(text, str):
                self._error(400, '"content" must be a string')
                return
            self._send(200, {"tokens": self.server.model.tokenize(
                text, bool(body.get("add_special", False)))})
        elif path == "/detokenize":
            ids = body.get("tokens")
            if not self._valid_ids(ids):
                return
            self._send(200, {"content": self.server.model.detokenize(ids)})
        elif path in ("/v1/completions", "/completions"):
            self._completions(body)
        else:
            self._error(404, f"no endpoint {path}")

    def _valid_ids(self, ids: Any) -> bool:
        vocab = self.server.model.vocab
        if not isinstance(ids, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocab for i in ids):
            self._error(400, f"tokens must be a list of ids in 0..{vocab - 1}")
            return False
        return True

    def _control(self, body: Any) -> None:
        srv = self.server
        if not isinstance(body, dict) or body.get("fault") not in (None, *FAULTS):
            self._error(400, f"fault is one of {FAULTS} or null")
            return
        srv.fault = body.get("fault")
        srv.fault_paths = list(body.get("paths") or ["/v1/completions"])
        if body.get("token_delay_s") is not None:
            srv.token_delay_s = float(body["token_delay_s"])
        event("control", json.dumps(body))
        self._send(200, {"fault": srv.fault, "paths": srv.fault_paths,
                         "token_delay_s": srv.token_delay_s})

    def _completions(self, body: dict[str, Any]) -> None:
        model = self.server.model
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            ids, kind = model.tokenize(prompt, False), "text"
        elif self._valid_ids(prompt):
            ids, kind = list(prompt), "ids"
        else:
            return
        if not ids:
            self._error(400, "the prompt is empty")
            return
        if len(ids) >= model.context:
            self._error(400, f"the prompt ({len(ids)} tokens) does not fit the context "
                             f"({model.context})")
            return
        with model.lock:
            event("completion-start", f"{kind} prompt, {len(ids)} tokens")
            made = model.generate(ids, body, self._gone, self.server.token_delay_s)
        if made is None:
            self.close_connection = True
            return
        positions, finish = made
        text_ids = [p["id"] for p in positions if p["id"] not in model.ends]
        text = model.detokenize(text_ids)
        event("completion-done", f"{len(positions)} tokens, {finish}")
        self._send(200, {
            "id": f"cmpl-{time.monotonic_ns()}", "object": "text_completion",
            "created": int(time.time()), "model": self.server.alias,
            "choices": [{"index": 0, "text": text, "finish_reason": finish,
                         "logprobs": {"content": positions}}],
            "usage": {"prompt_tokens": len(ids), "completion_tokens": len(positions),
                      "total_tokens": len(ids) + len(positions)}})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restart on the same port must not wait for TIME_WAIT

    def __init__(self, port: int, model: Model, alias: str, token_delay_s: float) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.model, self.alias, self.token_delay_s = model, alias, token_delay_s
        self.fault: str | None = None
        self.fault_paths = ["/v1/completions"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="a transformers model folder")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--alias", default="tiny", help="the served model's name")
    p.add_argument("--context", type=int, default=1024)
    p.add_argument("--token-delay-s", type=float, default=0.0)
    args = p.parse_args(argv)
    model = Model(args.model, args.context)
    server = Server(args.port, model, args.alias, args.token_delay_s)
    event("listening", f"http://127.0.0.1:{args.port}/v1 serving {args.alias}")
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
