"""Start llama.cpp's server (llama-cpp-python's `llama_cpp.server`) on a GGUF file, on
127.0.0.1, for tests and benchmarks that need a real inference server.

Only the loopback address is used, the process is ours (started here, stopped here, by its
id), and every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 120.0


def llama_cpp_available() -> bool:
    """llama-cpp-python with its server extra is importable (checked without loading it)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    """One `python -m llama_cpp.server` process serving ``model`` at ``url``."""

    model: Path
    port: int
    alias: str = "holefill-default"
    n_ctx: int = 512
    threads: int = 1
    log: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model),
               "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
               "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
               "--n_threads_batch", str(self.threads), "--logits_all", "true",
               "--verbose", "false"]
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        self.process = start_server(cmd, env, self.log, self.url + "/models", "llama_cpp.server")
        return self

    def kill(self) -> None:
        """SIGKILL, as a crash or an out-of-memory kill would end it."""
        kill_server(self.process)

    def stop(self) -> None:
        stop_server(self.process)


def start_server(cmd: list[str], env: dict[str, str], log: Path | None, ready_url: str,
                 name: str) -> subprocess.Popen[bytes]:
    """Start a local server process (output appended to `log`) and wait, bounded, until
    `ready_url` answers with JSON; stop it and raise when it exits or does not answer."""
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    if out is not subprocess.DEVNULL:
        out.close()  # type: ignore[union-attr]
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}"
                               + (f"; see {log}" if log else ""))
        try:
            with urllib.request.urlopen(ready_url, timeout=2) as resp:
                json.load(resp)
                return process
        except OSError:
            time.sleep(0.1)
    stop_server(process)
    raise RuntimeError(f"{name} did not answer within {START_TIMEOUT_S:g} s")


def kill_server(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
        process.wait(timeout=30)


def stop_server(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL after 15 s."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@contextlib.contextmanager
def serving(model: Path, **kwargs: object) -> Iterator[LlamaServer]:
    server = LlamaServer(model, free_port(), **kwargs).start()  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
