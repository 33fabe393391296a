"""The classic answers kept across requests (holefill.decode.loop.VerdictMemo): definite
answers only, bounded in answers and in characters, and a typing-along request that finds
the answers of the pieces it did not change."""

from __future__ import annotations

from holefill import Checker, Verdict
from holefill.decode.completer import EngineCache, request_checks
from holefill.decode.loop import DecodeSettings, VerdictMemo


def key(*texts: str) -> tuple:
    return ("checker", tuple(texts), ())


def test_only_definite_answers_are_kept():
    memo = VerdictMemo()
    memo.put(key("a"), Verdict.UNKNOWN)
    memo.put(key("b"), Verdict.NO)
    assert memo.get(key("a")) is None
    assert memo.get(key("b")) is Verdict.NO


def test_the_least_recently_used_answer_goes_first_past_the_number_of_answers():
    memo = VerdictMemo(size=2)
    memo.put(key("a"), Verdict.YES)
    memo.put(key("b"), Verdict.YES)
    assert memo.get(key("a")) is Verdict.YES  # now the most recent
    memo.put(key("c"), Verdict.NO)
    assert memo.get(key("b")) is None and len(memo) == 2
    assert memo.get(key("a")) is Verdict.YES and memo.get(key("c")) is Verdict.NO


def test_old_answers_go_until_their_texts_fit_the_bound_in_characters():
    memo = VerdictMemo(chars=10)
    memo.put(key("aaaa"), Verdict.YES)
    memo.put(key("bb", "bb"), Verdict.YES)
    memo.put(key("cccccc"), Verdict.NO)  # 4 + 4 + 6 > 10: aaaa goes, 10 are left
    assert memo.get(key("aaaa")) is None and len(memo) == 2
    memo.put(key("x" * 11), Verdict.YES)  # larger than the bound: not kept
    assert memo.get(key("x" * 11)) is None and len(memo) == 2


# three holes in one function: one segment, whose later pieces the classic check answers
PIECES = ["int f(int x) {\n  int a = ", ";\n  int b = ", ";\n  int c = ", ";\n  return a;\n}\n"]


def test_typing_in_the_first_hole_finds_the_later_pieces_answers(monkeypatch):
    checker = Checker.for_language("cpp")
    cache = EngineCache()
    classic: list[int] = []
    check = checker.check

    def counted(*args, **kwargs):  # the real check, counted
        classic.append(1)
        return check(*args, **kwargs)

    monkeypatch.setattr(checker, "check", counted)

    def prepare(chunks: list[str]) -> list[Verdict]:
        parts = request_checks(checker, chunks, DecodeSettings(), engine_for=cache.engine_for,
                               memo=cache.verdicts)
        return [con.verdict(list(seg.chunks), list(seg.sites)) for seg, con in parts]

    assert set(prepare(list(PIECES))) == {Verdict.YES}
    first = len(classic)
    assert len(cache.verdicts) > 0  # the later pieces, answered by the classic check
    assert set(prepare([PIECES[0] + "x", *PIECES[1:]])) == {Verdict.YES}
    assert len(classic) == first  # their answers came from the memo
