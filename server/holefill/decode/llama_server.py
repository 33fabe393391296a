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
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        self.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        if out is not subprocess.DEVNULL:
            out.close()  # type: ignore[union-attr]
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode}"
                                   + (f"; see {self.log}" if self.log else ""))
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as resp:
                    json.load(resp)
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {START_TIMEOUT_S:g} s")

    def kill(self) -> None:
        """SIGKILL, as a crash or an out-of-memory kill would end it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


@contextlib.contextmanager
def serving(model: Path, **kwargs: object) -> Iterator[LlamaServer]:
    server = LlamaServer(model, free_port(), **kwargs).start()  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()
