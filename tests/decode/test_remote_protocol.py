"""Reading completions answers: each server's way of spelling tokens and their alternatives
becomes the same positions (tests/data/remote holds answers recorded from llama-cpp-python's
server serving the bundled model; the vLLM and llama.cpp shapes follow their documented
formats), and anything else is a ProtocolError that says what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from holefill.decode.remote_protocol import (
    ProtocolError,
    context_length,
    parse_completion,
    parse_detokenized,
    parse_tokens,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "remote"


def _recorded(name: str) -> dict:
    return json.loads((DATA / name).read_text("utf-8"))


def test_llama_cpp_python_answer_gives_texts_from_offsets_and_ordered_alternatives() -> None:
    """Recorded: a greedy run of 8 tokens with logprobs=4 after `def add(a, b):\\n    return`
    (SPM prompt of the bundled model)."""
    got = parse_completion(_recorded("llama_cpp_python_completion.json"))
    assert len(got.positions) == 8 and got.finish == "length"
    assert "".join(p.chosen.text or "" for p in got.positions) == got.text
    for p in got.positions:
        assert p.chosen.id is None and p.top
        assert p.top[0].same_token(p.chosen)  # greedy: the generated token is the best
        lps = [c.logprob for c in p.top if c.text]
        assert lps == sorted(lps, reverse=True)


def test_llama_cpp_python_end_of_text_is_finish_stop() -> None:
    """Recorded: the model's first token is <|endoftext|> (a "python span 1h" cut of the
    quick bench): no tokens, finish_reason "stop"."""
    got = parse_completion(_recorded("llama_cpp_python_stop.json"))
    assert got.finish == "stop"


def test_split_characters_take_their_text_from_the_offsets() -> None:
    body = {"choices": [{"text": "é!", "finish_reason": "length", "logprobs": {
        "tokens": ["", "é", "!"], "token_logprobs": [-0.1, -0.2, -0.3],
        "top_logprobs": [{"": -0.1}, {"é": -0.2}, {"!": -0.3, "?": -2.0}],
        "text_offset": [10, 10, 11]}}]}
    got = parse_completion(body)
    assert [p.chosen.text for p in got.positions] == ["", "é", "!"]


def test_vllm_token_ids_and_bytes_spellings() -> None:
    body = {"choices": [{"text": "x = 1", "finish_reason": "stop", "logprobs": {
        "tokens": ["token_id:87", "token_id:284", "token_id:16"],
        "token_logprobs": [-0.5, -0.1, -0.2], "text_offset": [0, 1, 3],
        "top_logprobs": [{"token_id:87": -0.5, "token_id:88": -1.5},
                         {"token_id:284": -0.1},
                         {"token_id:16": -0.2, "bytes:\\xe2\\x80": -3.0}]}}]}
    got = parse_completion(body)
    assert got.has_ids
    assert [(p.chosen.id, p.chosen.text) for p in got.positions] == [
        (87, "x"), (284, " ="), (16, " 1")]
    assert got.positions[0].top[1].id == 88 and got.positions[0].top[1].text is None
    assert got.positions[2].top[1].raw == b"\xe2\x80"


def test_llama_cpp_content_shape_with_ids_and_bytes() -> None:
    body = {"choices": [{"text": "ab", "finish_reason": "length", "logprobs": {"content": [
        {"id": 64, "token": "a", "bytes": [97], "logprob": -0.2,
         "top_logprobs": [{"id": 65, "token": "b", "bytes": [98], "logprob": -2.5},
                          {"id": 64, "token": "a", "bytes": [97], "logprob": -0.2}]},
        {"id": 65, "token": "b", "bytes": [98], "logprob": -0.3, "top_logprobs": []}]}}]}
    got = parse_completion(body)
    assert got.has_ids and got.positions[0].chosen.raw == b"a"
    assert [c.id for c in got.positions[0].top] == [64, 65]  # sorted best first


@pytest.mark.parametrize("body, message", [
    ([], "expected a JSON object"),
    ({"error": {"message": "no such model"}}, "reported an error: no such model"),
    ({"choices": []}, "no choices"),
    ({"choices": [{"finish_reason": "stop"}]}, "no text"),
    ({"choices": [{"text": "abc", "logprobs": None}]}, "no logprobs"),
    ({"choices": [{"text": "a", "logprobs": {"tokens": ["a"], "token_logprobs": []}}]},
     "do not match"),
    ({"choices": [{"text": "a", "logprobs": {"tokens": ["a"], "token_logprobs": ["x"]}}]},
     "not a number"),
])
def test_malformed_answers_say_what_is_wrong(body: object, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        parse_completion(body)


def test_tokenizer_answers_of_each_server() -> None:
    assert parse_tokens({"tokens": [1, 2]}) == [1, 2]
    assert parse_tokens({"tokens": [{"id": 5, "piece": "x"}]}) == [5]
    assert parse_detokenized({"text": "a"}) == "a"  # llama-cpp-python
    assert parse_detokenized({"content": "b"}) == "b"  # llama.cpp
    assert parse_detokenized({"prompt": "c"}) == "c"  # vLLM
    with pytest.raises(ProtocolError):
        parse_tokens({"tokens": ["a"]})


def test_context_length_where_the_server_tells_it() -> None:
    assert context_length({"data": [{"id": "m", "max_model_len": 4096}]}, None, "m") == 4096
    assert context_length({"data": []}, {"default_generation_settings": {"n_ctx": 512}},
                          None) == 512
    assert context_length({"data": [{"id": "m"}]}, None, "m") is None
