"""Fills through a real inference server: llama.cpp's server (llama-cpp-python) serving the
bundled model exported to GGUF, on 127.0.0.1. The fills must parse (`ast.parse`,
`json.loads`), match the in-process greedy fills of the same weights and template, and a
server killed in the middle of a request must give a clear error, after which the same
Completer fills again once the server is back.

Data: the fixed samples of `holefill bench --quick` (standard-library cuts, JSON)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from holefill.decode.llama_server import LlamaServer, free_port, llama_cpp_available

if not llama_cpp_available():
    pytest.skip("llama-cpp-python[server] is not installed (pip install "
                "'llama-cpp-python[server]': it builds llama.cpp from source: "
                "about 8 CPU-minutes; .ci/run does not install it)",
                allow_module_level=True)
pytest.importorskip("gguf", reason="the GGUF export needs the gguf package")
pytest.importorskip("torch")

MAX_TOKENS = 16


@pytest.fixture(scope="module")
def gguf_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from holefill.decode.gguf_export import export_gguf

    return export_gguf(None, tmp_path_factory.mktemp("remote") / "default.gguf")


@pytest.fixture(scope="module")
def server(gguf_file: Path) -> Iterator[LlamaServer]:
    srv = LlamaServer(gguf_file, free_port(), log=gguf_file.with_suffix(".log")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def remote(server: LlamaServer):
    from holefill.decode import Completer

    # llama-cpp-python does not tell its context length: the server runs with n_ctx 512
    return Completer(model=server.url, fim_format="spm", context_length=512)


@pytest.fixture(scope="module")
def local():
    from holefill.decode import Completer

    return Completer(model=None, device="cpu")


def _samples():
    """The first sample of each Python and JSON group of the quick bench that can be
    completed as cut (some cuts leave text no filling repairs)."""
    from holefill.bench.config import BenchConfig
    from holefill.bench.datasets import build_samples
    from holefill.check.checker import Checker, Verdict
    from holefill.check.window import find_window

    picked = []
    for s in build_samples(BenchConfig()):
        if s.language not in ("python", "json") or any(p.group == s.group for p in picked):
            continue
        chunks = list(s.cut.chunks)
        checker = Checker.for_language(s.language)
        window = find_window(s.language, chunks)
        anchors = checker.anchors(window.apply(chunks))
        if checker.check(window.apply(chunks), anchors=anchors).verdict is Verdict.YES:
            picked.append(s)
    return picked


def test_remote_backend_learns_the_template_and_context_from_the_server(remote) -> None:
    backend = remote.backend
    assert backend.template.family == "starcoder" and backend.template.fim_format == "spm"
    assert backend.stop_ids == {0} and backend.banned_ids == {1, 2, 3, 4}
    assert backend.name.endswith("#holefill-default")


def test_remote_fills_parse_and_equal_in_process_greedy_fills(remote, local) -> None:
    """llama-cpp-python takes prompts only as text, so after the loop takes a token the
    server did not generate, the next request's prompt is tokenized again and may not be the
    token sequence in process; and a generated token may be a near tie that the server and
    torch break differently (stats["inexact"] counts both): those fills need not
    be identical. Every other fill must be, and every fill must parse."""
    from holefill.bench.oracles import fast_judge

    samples = _samples()
    exact = 0
    for s in samples:
        r = remote.fill(list(s.cut.chunks), s.language, max_new_tokens=MAX_TOKENS)
        assert fast_judge(s.language)(s.cut.filled(r.fills)), (s.group, r.fills)
        assert r.stats["requests"] >= len(r.fills)
        want = local.fill(list(s.cut.chunks), s.language, max_new_tokens=MAX_TOKENS)
        if r.stats["inexact"] == 0:
            exact += 1
            assert r.fills == want.fills, (s.group, s.name)
    assert exact >= len(samples) // 2, f"only {exact} of {len(samples)} fills exact"


def test_a_killed_server_gives_a_clear_error_and_the_next_fill_works_when_it_is_back(
        gguf_file: Path) -> None:
    from holefill.decode import Completer
    from holefill.decode.http import RemoteError

    srv = LlamaServer(gguf_file, free_port(), log=gguf_file.with_suffix(".kill.log")).start()
    try:
        comp = Completer(model=srv.url, fim_format="spm", context_length=512)
        chunks = ["def f(x):\n    return ", "\n"]
        errors: list[BaseException] = []
        started = threading.Event()

        def progress(frac: float, message: str) -> None:
            started.set()

        def fill() -> None:
            try:
                comp.fill(chunks, "python", max_new_tokens=400, progress=progress,
                          on_stuck="stop", repetition_guard=False)
            except BaseException as exc:  # noqa: BLE001 - the test inspects it
                errors.append(exc)

        worker = threading.Thread(target=fill)
        worker.start()
        assert started.wait(60)
        time.sleep(0.3)
        srv.kill()
        worker.join(60)
        assert not worker.is_alive()
        assert errors and isinstance(errors[0], RemoteError), errors
        assert "cannot reach the inference server" in str(errors[0])
        srv.start()  # the same port
        res = comp.fill(chunks, "python", max_new_tokens=MAX_TOKENS)
        import ast

        ast.parse(res.text(chunks))
    finally:
        srv.stop()
