"""Replaying known text through the real decoding loop (benchmarks/replay_loop.py).

`ReplayBackend` stands where a model stands in `Completer(backend=...)`: it has the bundled
(or a given) model's tokenizer and FIM template but no weights, and for each hole it proposes
exactly one candidate per step, the next token of the text the hole is to get (the real middle
of a cut, tokenized with the hole's healed characters in front, so token borders are the
tokenizer's), then the end of the middle. Everything else is the user's path: the request's
segments and windows, the incremental engine, the stops and the fallback. A candidate the loop
refuses is recorded (`ReplayProposer.refusals`); the proposer then has nothing more to offer,
so the loop is stuck and completes the hole with its fallback, as it would for a model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from holefill.decode.backend import Detokenizer, resolve_model
from holefill.decode.loop import Proposal

END = "end"  # a refusal of the end of the middle (the hole may not close there)
TOKEN = "token"  # a refusal of a token of the middle


@dataclass(frozen=True)
class Refusal:
    """The loop refused the replayed text of hole `hole`: a token (`kind` TOKEN, whose text is
    `text`) or the end (END), after `at` characters of the hole's text were taken."""

    hole: int
    kind: str
    at: int
    text: str = ""


class ReplayBackend:
    """A tokenizer and a template without a model: the holes' texts are replayed (see the
    module docstring). `replay(middles)` sets the texts of the next fill's holes."""

    def __init__(self, model: str | None = None) -> None:
        from transformers import AutoTokenizer

        from holefill.decode.templates import template_for_tokenizer
        from holefill.models import inspect_model_dir

        self.path, self.source = resolve_model(model)
        self.name = f"replay:{model or 'holefill-default'}"
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path))
        info = inspect_model_dir(self.path)
        self.template = template_for_tokenizer(
            self.tokenizer, name=self.name,
            fim_format=info.fim_format if info is not None else None)
        self.tokenizer.model_max_length = 1 << 60
        self.context_length = _context_length(self.path)
        self.middles: tuple[str, ...] = ()
        self.refusals: list[Refusal] = []

    def replay(self, middles: Sequence[str]) -> None:
        """The texts the holes of the next fill get (one per hole), and no refusals yet."""
        self.middles = tuple(middles)
        self.refusals = []

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False,
                                         clean_up_tokenization_spaces=False))

    def proposer(self, hole: int, heal: str, prompt_ids: Sequence[int]) -> ReplayProposer:
        """The proposer of hole `hole`, whose prompt ends with `prompt_ids` and hands back the
        `heal` characters before the hole."""
        if hole >= len(self.middles):
            raise ValueError(f"no text to replay for hole {hole}: call replay() first")
        return ReplayProposer(self, hole, heal, self.middles[hole], prompt_ids)


def _context_length(path: Any) -> int:
    try:
        cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 2048
    for key in ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len"):
        value = cfg.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return 2048


@dataclass
class ReplayProposer:
    """The candidates of one hole: the next token of `heal + middle`, then the end."""

    backend: ReplayBackend
    hole: int
    heal: str
    middle: str
    prompt_ids: Sequence[int]
    model_s: float = 0.0
    requests: int = 0
    ids: list[int] = field(init=False)
    pos: int = field(init=False, default=0)
    taken: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.ids = self.backend.encode(self.heal + self.middle)
        self.detok = Detokenizer(self.backend, self.prompt_ids)  # type: ignore[arg-type]

    @property
    def held(self) -> int:
        return self.detok.held

    def proposals(self) -> Iterator[Proposal]:
        """One candidate; the loop asks for a second only when it refused the first."""
        at = max(0, len(self.taken) - len(self.heal))
        if self.pos < len(self.ids):
            text, complete = self.detok.peek(self.ids[self.pos])
            yield Proposal(self.ids[self.pos], text, complete)
            self.backend.refusals.append(Refusal(self.hole, TOKEN, at, text))
        else:
            yield Proposal(END, stop=True)
            self.backend.refusals.append(Refusal(self.hole, END, at))

    def take(self, proposal: Proposal) -> None:
        self.taken += self.detok.push(int(proposal.key))  # type: ignore[call-overload]
        self.pos += 1

    def stop_probability(self) -> float | None:
        return 1.0 if self.pos >= len(self.ids) else 0.0
