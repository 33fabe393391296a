"""What the incremental engines keep between checks and requests is bounded in bytes: an
engine's right contexts it is not using (holefill.check.incremental.KEPT_RIGHTS_BYTES) and
the cached engines' contexts after a request (holefill.decode.completer.EngineCache.trim)."""

from __future__ import annotations

from holefill import Checker, Verdict
from holefill.check import incremental
from holefill.check.window import find_window
from holefill.decode.completer import EngineCache, make_engine, request_checks
from holefill.decode.loop import DecodeSettings
from holefill.lsp.soak import PYTHON_BASE

MARKER = "<|hole|>"
# the soak's document with three holes: its right contexts hold about 6 MB
CHUNKS = (PYTHON_BASE.replace("return ", f"return {MARKER}")
          .replace("norm(3, 4)", f"norm(3, {MARKER})").split(MARKER))


def prepare(checker: Checker, cache: EngineCache, chunks: list[str]) -> list[Verdict]:
    parts = request_checks(checker, chunks, DecodeSettings(), engine_for=cache.engine_for,
                           memo=cache.verdicts)
    return [con.verdict(list(seg.chunks), list(seg.sites)) for seg, con in parts]


def test_the_cached_engines_keep_their_right_contexts_under_the_byte_bound():
    checker = Checker.for_language("python")
    bound = 1 << 20
    cache = EngineCache(max_bytes=bound)
    assert set(prepare(checker, cache, list(CHUNKS))) == {Verdict.YES}
    assert cache.native_bytes() > bound  # what a request leaves without the bound
    cache.trim()
    assert len(cache) > 0 and cache.native_bytes() <= bound
    # what was dropped is built again when asked
    assert set(prepare(checker, cache, list(CHUNKS))) == {Verdict.YES}


def test_an_engine_drops_the_right_contexts_it_no_longer_uses_past_its_bound(monkeypatch):
    """Closing the first hole moves the engine to a new right context (the text after the
    second hole); with no room for unused contexts, the old one goes."""
    checker = Checker.for_language("python")
    chunks = list(CHUNKS)
    window = find_window("python", chunks)
    sites = list(checker.anchors(window.apply(chunks)).sites)
    closed = [chunks[0] + "x" + chunks[1], *chunks[2:]]
    closed_sites = list(checker.anchors(window.apply(closed)).sites)

    def contexts(kept: int) -> int:
        monkeypatch.setattr(incremental, "KEPT_RIGHTS_BYTES", kept)
        engine = make_engine(checker, chunks, window)
        assert engine.verdict(chunks, sites) is Verdict.YES
        assert engine.verdict(closed, closed_sites) is Verdict.YES
        return len(engine.rights)

    assert contexts(64 << 20) == 2
    assert contexts(0) == 1
