"""The FIM prompt of one hole: the text around it, cut to the model's context, token-healed.

The cut keeps the hole's neighbourhood: the prefix loses its far start, the suffix its far end,
each at a line boundary. Later holes appear in the suffix as a placeholder, the way the
diffusion paper emulates multi-region infilling with FIM models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from holefill.decode.templates import encode_prompt

if TYPE_CHECKING:
    from holefill.decode.backend import ModelBackend

# A byte-level tokenizer spends at least one token per 12 characters of code; cutting the text to
# this many characters per token of budget first keeps encoding a huge file cheap.
_CHARS_PER_TOKEN_MAX = 12
_WORD_END = re.compile(r"\w$")
_HEALABLE = re.compile(r"[^\S\n]?\w+")


@dataclass(frozen=True)
class Prompt:
    ids: list[int]
    heal: str  # characters at the end of the prefix removed from the prompt, to be regenerated
    prefix_chars: int  # how much of the text before the hole the model sees
    suffix_chars: int
    truncated: bool


def shown(chunks: list[str], placeholder: str) -> str:
    """Chunks as the model sees them: the other holes between them become ``placeholder``."""
    return placeholder.join(chunks)


def build_prompt(
    backend: ModelBackend, before: str, suffix: str, *, budget: int, heal: bool
) -> Prompt:
    """The prompt ids for a hole between ``before`` and ``suffix`` within ``budget`` tokens."""
    if budget < 16:
        raise ValueError(f"the model's context leaves only {budget} tokens for the prompt")
    prefix, suffix, cut = _cut_to_budget(backend, before, suffix, budget)
    ids, (ps, pe), _ = encode_prompt(backend.tokenizer, backend.template, prefix, suffix)
    healed = ""
    if heal and pe > ps and _WORD_END.search(prefix):
        healed = _last_token_text(backend, ids[ps:pe])
        if healed and prefix.endswith(healed) and _HEALABLE.fullmatch(healed):
            del ids[pe - 1]
        else:
            healed = ""
    return Prompt(ids, healed, len(prefix), len(suffix), cut)


def _last_token_text(backend: ModelBackend, prefix_ids: list[int]) -> str:
    whole = backend.decode(prefix_ids)
    rest = backend.decode(prefix_ids[:-1])
    return whole[len(rest):] if whole.startswith(rest) else ""


def _cut_to_budget(
    backend: ModelBackend, prefix: str, suffix: str, budget: int
) -> tuple[str, str, bool]:
    limit = budget * _CHARS_PER_TOKEN_MAX
    cut = len(prefix) > limit or len(suffix) > limit
    prefix, suffix = _cut_prefix(prefix, limit), _cut_suffix(suffix, limit)
    reserve = len(backend.template.render("", "")) // 2 + 8  # special tokens, generously
    room = budget - reserve
    pre_ids, suf_ids = backend.encode(prefix), backend.encode(suffix)
    if len(pre_ids) + len(suf_ids) <= room:
        return prefix, suffix, cut
    # the prefix matters most: it gets three quarters, or more when the suffix is short
    keep_pre = min(len(pre_ids), max(room - len(suf_ids), room * 3 // 4))
    keep_suf = max(0, min(len(suf_ids), room - keep_pre))
    if keep_pre < len(pre_ids):
        prefix = _cut_prefix(backend.decode(pre_ids[len(pre_ids) - keep_pre:]), None)
    if keep_suf < len(suf_ids):
        suffix = _cut_suffix(backend.decode(suf_ids[:keep_suf]), None) if keep_suf else ""
    return prefix, suffix, True


def _cut_prefix(text: str, limit: int | None) -> str:
    """Keep the end of ``text`` (at most ``limit`` chars), starting at a line start."""
    if limit is not None and len(text) <= limit:
        return text
    start = len(text) - limit if limit is not None else 0
    nl = text.find("\n", start)
    return text[nl + 1:] if 0 <= nl < len(text) - 1 else text[start:]


def _cut_suffix(text: str, limit: int | None) -> str:
    """Keep the start of ``text`` (at most ``limit`` chars), ending at a line end."""
    if limit is not None and len(text) <= limit:
        return text
    end = limit if limit is not None else len(text)
    nl = text.rfind("\n", 0, end)
    return text[:nl + 1] if nl > 0 else text[:end]
