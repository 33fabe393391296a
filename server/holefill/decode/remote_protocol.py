"""Reading an OpenAI-compatible `/v1/completions` answer into what the loop needs.

Servers disagree on how they spell the tokens of a completion, and the constrained loop needs
each generated token's text and, at every position, the alternatives with their log
probabilities, best first. The shapes read here:

- the legacy OpenAI shape (llama-cpp-python, vLLM, TGI): ``logprobs.tokens``,
  ``token_logprobs``, ``top_logprobs`` (one object per position, token string -> log
  probability) and ``text_offset``. Token strings are lossy: a token that ends inside a UTF-8
  character decodes to "" (llama-cpp-python) or ``bytes:\\xe2\\x80`` (vLLM), and special tokens
  decode to "" too, so a generated token's text is taken from the completion's text between
  two offsets where those agree. vLLM's ``return_tokens_as_token_ids`` spells tokens
  ``token_id:123``, which gives the ids.
- the content shape (llama.cpp's own server, newer OpenAI): ``logprobs.content``, a list of
  ``{token, logprob, bytes, id?, top_logprobs: [{token, logprob, bytes, id?}]}``; the bytes
  give exact text and the ids (where present) exact identity.

Anything else raises `ProtocolError` with what was wrong, so the user sees "the server answered
something that is not a completion" rather than a KeyError.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from holefill.errors import HolefillError


class ProtocolError(HolefillError):
    """An answer that is not the completion (or tokenizer) response it should be."""


@dataclass(frozen=True)
class Candidate:
    """One token at one position: its log probability and whatever the server told of it.
    ``text`` is None when only the id is known; ``raw`` holds its bytes where sent."""

    logprob: float
    id: int | None = None
    text: str | None = None
    raw: bytes | None = None

    def same_token(self, other: Candidate) -> bool:
        if self.id is not None and other.id is not None:
            return self.id == other.id
        if self.raw is not None and other.raw is not None:
            return self.raw == other.raw
        return self.text is not None and self.text == other.text


@dataclass(frozen=True)
class Position:
    """A generated token and the best tokens at its position (best first; the generated
    one may be among them)."""

    chosen: Candidate
    top: tuple[Candidate, ...]


@dataclass(frozen=True)
class Completion:
    positions: tuple[Position, ...]
    finish: str  # "stop" (the model ended: an end-of-text token), "length", or the server's word
    text: str

    @property
    def has_ids(self) -> bool:
        """Every generated token came with its id (prompts can then continue as ids)."""
        return all(p.chosen.id is not None for p in self.positions)


_TOKEN_ID = re.compile(r"token_id:(-?\d+)\Z")
_BYTES = re.compile(r"bytes:((?:\\x[0-9a-fA-F]{2})+)\Z")


def parse_completion(body: Any) -> Completion:
    """The first choice of a completions answer. Raises ProtocolError."""
    if not isinstance(body, Mapping):
        raise ProtocolError(f"expected a JSON object, got {type(body).__name__}")
    if "error" in body and "choices" not in body:
        raise ProtocolError(f"the server reported an error: {_error_text(body['error'])}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ProtocolError("the answer has no choices")
    choice = choices[0]
    text = choice.get("text")
    if not isinstance(text, str):
        raise ProtocolError("the answer's choice has no text")
    finish = str(choice.get("finish_reason") or "length")
    logprobs = choice.get("logprobs")
    if logprobs is None:
        if text:
            raise ProtocolError("the answer has no logprobs (the server ignored `logprobs`; "
                                "llama-cpp-python needs logits_all, which its server sets by "
                                "default)")
        return Completion((), finish, text)
    if not isinstance(logprobs, Mapping):
        raise ProtocolError("logprobs is not an object")
    if isinstance(logprobs.get("content"), list):
        positions = _content_positions(logprobs["content"])
    else:
        positions = _legacy_positions(logprobs, text)
    return Completion(tuple(positions), finish, text)


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        return str(error.get("message") or error)[:300]
    return str(error)[:300]


def _float(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"{what} is not a number: {value!r}"[:200])
    return float(value)


def _token(token: Any, logprob: float) -> Candidate:
    """A token spelled as a string (legacy shape)."""
    if not isinstance(token, str):
        raise ProtocolError(f"a token is not a string: {token!r}"[:200])
    m = _TOKEN_ID.match(token)
    if m is not None:
        return Candidate(logprob, id=int(m.group(1)))
    m = _BYTES.match(token)
    if m is not None:
        raw = bytes(int(h, 16) for h in m.group(1).split("\\x")[1:])
        return Candidate(logprob, raw=raw)
    return Candidate(logprob, text=token)


def _legacy_positions(logprobs: Mapping[str, Any], text: str) -> list[Position]:
    tokens = logprobs.get("tokens")
    lps = logprobs.get("token_logprobs")
    tops = logprobs.get("top_logprobs")
    if not isinstance(tokens, list) or not isinstance(lps, list) or len(lps) != len(tokens):
        raise ProtocolError("logprobs.tokens and logprobs.token_logprobs do not match")
    if tops is None:
        tops = [None] * len(tokens)
    if not isinstance(tops, list) or len(tops) != len(tokens):
        raise ProtocolError("logprobs.top_logprobs does not match logprobs.tokens")
    texts = _texts_from_offsets(logprobs.get("text_offset"), text, len(tokens))
    out = []
    for i, (token, lp, top) in enumerate(zip(tokens, lps, tops, strict=True)):
        chosen = _token(token, _float(lp, "a token's logprob") if lp is not None else 0.0)
        if texts is not None and chosen.raw is None:
            chosen = Candidate(chosen.logprob, chosen.id, texts[i])
        alts: list[Candidate] = []
        if top is not None:
            if not isinstance(top, Mapping):
                raise ProtocolError("a top_logprobs entry is not an object")
            # servers list them best first; the order is kept (equal strings of different
            # tokens share one key, so values cannot be trusted to sort them)
            alts = [_token(k, _float(v, "a top logprob")) for k, v in top.items()]
        out.append(Position(chosen, tuple(alts)))
    return out


def _texts_from_offsets(offsets: Any, text: str, n: int) -> list[str] | None:
    """Each generated token's text as the completion's text between offsets: exact where the
    per-token strings are not (characters split between tokens). None when the offsets do
    not fit the text."""
    if not isinstance(offsets, list) or len(offsets) != n or n == 0:
        return None
    if not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets):
        return None
    rel = [o - offsets[0] for o in offsets]
    if any(b < a for a, b in zip(rel, rel[1:], strict=False)) or rel[-1] > len(text):
        return None
    return [text[rel[i]: rel[i + 1] if i + 1 < n else len(text)] for i in range(n)]


def _content_entry(entry: Any) -> Candidate:
    if not isinstance(entry, Mapping):
        raise ProtocolError("a logprobs.content entry is not an object")
    lp = _float(entry.get("logprob"), "a token's logprob")
    tid = entry.get("id")
    tid = int(tid) if isinstance(tid, int) and not isinstance(tid, bool) else None
    raw = entry.get("bytes")
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return Candidate(lp, tid, None, bytes(raw))
    token = entry.get("token")
    if isinstance(token, str):
        got = _token(token, lp)
        return Candidate(lp, tid if tid is not None else got.id, got.text, got.raw)
    if tid is None:
        raise ProtocolError("a logprobs.content entry has neither token, bytes nor id")
    return Candidate(lp, tid)


def _content_positions(content: Sequence[Any]) -> list[Position]:
    out = []
    for entry in content:
        chosen = _content_entry(entry)
        top = entry.get("top_logprobs") or []
        if not isinstance(top, list):
            raise ProtocolError("top_logprobs of a content entry is not a list")
        alts = [_content_entry(t) for t in top]
        alts.sort(key=lambda c: -c.logprob)
        out.append(Position(chosen, tuple(alts)))
    return out


def parse_tokens(body: Any) -> list[int]:
    """The ids of a tokenize answer: ``{"tokens": [...]}`` (llama.cpp, vLLM,
    llama-cpp-python); llama.cpp's ``with_pieces`` shape ``[{id, piece}]`` too."""
    tokens = body.get("tokens") if isinstance(body, Mapping) else None
    if not isinstance(tokens, list):
        raise ProtocolError("the tokenize answer has no list of tokens")
    out = []
    for t in tokens:
        if isinstance(t, Mapping):
            t = t.get("id")
        if isinstance(t, bool) or not isinstance(t, int):
            raise ProtocolError(f"a token id is not an integer: {t!r}"[:200])
        out.append(t)
    return out


def parse_detokenized(body: Any) -> str:
    """The text of a detokenize answer: ``text`` (llama-cpp-python), ``content``
    (llama.cpp) or ``prompt`` (vLLM)."""
    if isinstance(body, Mapping):
        for key in ("text", "content", "prompt"):
            if isinstance(body.get(key), str):
                return str(body[key])
    raise ProtocolError("the detokenize answer has no text")


def model_names(body: Any) -> list[str]:
    """The ids listed by ``/v1/models``."""
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, list):
        raise ProtocolError("the /models answer has no data list")
    return [str(m["id"]) for m in data if isinstance(m, Mapping) and "id" in m]


def context_length(models: Any, props: Any, name: str | None) -> int | None:
    """The served context length where the server tells it: vLLM's ``max_model_len`` in
    ``/v1/models``, llama.cpp's ``n_ctx`` in ``/props``."""
    data = models.get("data") if isinstance(models, Mapping) else None
    for m in data if isinstance(data, list) else []:
        if isinstance(m, Mapping) and (name is None or m.get("id") == name):
            for key in ("max_model_len", "context_length", "n_ctx"):
                if isinstance(m.get(key), int) and m[key] > 0:
                    return int(m[key])
            meta = m.get("meta")
            if isinstance(meta, Mapping) and isinstance(meta.get("n_ctx"), int):
                return int(meta["n_ctx"])
    if isinstance(props, Mapping):
        gen = props.get("default_generation_settings")
        for src in (gen, props):
            if isinstance(src, Mapping) and isinstance(src.get("n_ctx"), int) and src["n_ctx"] > 0:
                return int(src["n_ctx"])
    return None
