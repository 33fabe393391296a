"""Fill-in-the-middle prompt templates, one per model family, recognised from the tokenizer.

A FIM model is prompted with the text before and after the hole between its own special tokens
and generates the middle. Each family spells those tokens differently, and some put the suffix
first; ``FAMILIES`` is the one table of them (``holefill.models`` derives its table from it).

Nothing here imports torch or transformers: tokenizers are used through their methods only, so
``holefill models`` stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from holefill.errors import ModelError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

Piece = tuple[str, str]  # (kind, value); the value of a "prefix" or "suffix" piece is ""
PIECE_KINDS = ("special", "literal", "prefix", "suffix")
FIM_FORMATS = ("psm", "spm")
SPACE = "▁"  # SentencePiece's word-start mark, part of CodeLlama's FIM tokens


@dataclass(frozen=True)
class FimFamily:
    """The FIM special tokens of one model family and the shape of its prompt."""

    name: str
    prefix: str  # the token before the prefix text (DeepSeek: the begin token)
    suffix: str  # the token before the suffix text (DeepSeek: the hole token)
    middle: str | None  # the token after which the middle is generated; None: after the prefix
    stops: tuple[str, ...]  # tokens that end the middle, where the tokenizer has them
    bos: bool = False  # the model was trained with BOS at the start of FIM prompts
    requires: tuple[str, ...] = ()  # more tokens the vocabulary must hold to tell families apart
    spaced: bool = False  # CodeLlama: a space before the prefix text, before <SUF> and <MID>
    spm: bool = True  # the family has a suffix-first layout

    @property
    def tokens(self) -> tuple[str, ...]:
        """The tokens whose presence identifies the family."""
        fim = (self.prefix, self.suffix) + ((self.middle,) if self.middle else ())
        return fim + self.requires


# First match wins: CodeGemma uses Qwen's three FIM tokens and differs by <|file_separator|>.
FAMILIES: tuple[FimFamily, ...] = (
    FimFamily("starcoder", "<fim_prefix>", "<fim_suffix>", "<fim_middle>",
              stops=("<|endoftext|>", "<file_sep>")),
    FimFamily("santacoder", "<fim-prefix>", "<fim-suffix>", "<fim-middle>",
              stops=("<|endoftext|>",)),
    # Gemma models expect <bos> first; CodeGemma's own examples get it from tokenizer.encode
    FimFamily("codegemma", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
              stops=("<|file_separator|>", "<eos>"), bos=True, requires=("<|file_separator|>",)),
    FimFamily("qwen2.5-coder", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>",
              stops=("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>",
                     "<|im_end|>")),
    # DeepSeek-Coder was trained on PSM prompts only, so it has no SPM layout
    FimFamily("deepseek-coder", "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>",
              stops=("<｜end▁of▁sentence｜>", "<|EOT|>"), bos=True, spm=False),
    FimFamily("codellama", "▁<PRE>", "▁<SUF>", "▁<MID>", stops=("▁<EOT>", "<EOT>", "</s>"),
              bos=True, spaced=True),
    FimFamily("codellama", "<PRE>", "<SUF>", "<MID>", stops=("▁<EOT>", "<EOT>", "</s>"),
              bos=True, spaced=True),
    FimFamily("codestral", "[PREFIX]", "[SUFFIX]", None, stops=("</s>",), bos=True),
)
FAMILY_NAMES: tuple[str, ...] = tuple(dict.fromkeys(f.name for f in FAMILIES))
EXAMPLE_TEMPLATE = "<PRE> {prefix} <SUF>{suffix} <MID>"


@dataclass(frozen=True)
class FimTemplate:
    """A FIM prompt: pieces in order, the tokens that end the middle, and whether BOS leads."""

    family: str
    pieces: tuple[Piece, ...]
    stops: tuple[str, ...]
    bos: bool = False
    fim_format: str = "psm"

    def __post_init__(self) -> None:
        kinds = [kind for kind, _ in self.pieces]
        if any(kind not in PIECE_KINDS for kind in kinds):
            raise ValueError(f"FIM template pieces must be of the kinds {PIECE_KINDS}: {kinds}")
        if kinds.count("prefix") != 1 or kinds.count("suffix") != 1:
            raise ValueError(f"a FIM template needs one prefix and one suffix piece: {kinds}")
        if self.fim_format not in FIM_FORMATS:
            raise ValueError(f"fim_format must be one of {FIM_FORMATS}, not {self.fim_format!r}")

    def render(self, prefix: str, suffix: str, *, bos_token: str | None = None) -> str:
        """The prompt as one string (for logs and tests); ``bos_token`` leads when ``bos``."""
        texts = {"prefix": prefix, "suffix": suffix}
        head = bos_token if self.bos and bos_token else ""
        return head + "".join(texts.get(kind, value) for kind, value in self.pieces)

    @property
    def prefix_is_last(self) -> bool:
        """True when generation continues the prefix text directly (SPM, Codestral)."""
        return self.pieces[-1][0] == "prefix"


# ------------------------------------------------------------------------------------ detection


def match_family(tokens: Container[str]) -> FimFamily | None:
    """The first family whose identifying tokens are all in ``tokens``."""
    for family in FAMILIES:
        if all(token in tokens for token in family.tokens):
            return family
    return None


def detect_template(tokens: Iterable[str], *, fim_format: str = "psm") -> FimTemplate | None:
    """The template of the first family whose FIM tokens are all in ``tokens``, or None.

    ``tokens``: every token string of the tokenizer. Raises ModelError when the family has no
    layout for ``fim_format`` (DeepSeek-Coder and SPM) rather than quietly using another one.
    """
    present = set(tokens)
    family = match_family(present)
    if family is None:
        return None
    return _family_template(family, present, fim_format)


def _family_template(family: FimFamily, present: Container[str], fim_format: str) -> FimTemplate:
    if fim_format not in FIM_FORMATS:
        raise ModelError(f"unknown FIM format {fim_format!r}; use one of {', '.join(FIM_FORMATS)}")
    stops = tuple(stop for stop in family.stops if stop in present)
    if family.middle is None:
        # Codestral has one layout: [SUFFIX] s [PREFIX] p, and the middle follows the prefix
        pieces: tuple[Piece, ...] = (
            ("special", family.suffix), ("suffix", ""), ("special", family.prefix), ("prefix", ""))
        return FimTemplate(family.name, pieces, stops, family.bos, "spm")
    if fim_format == "spm" and not family.spm:
        raise ModelError(f"{family.name} models have no suffix-first (SPM) prompt; use psm")
    layout = _spm_pieces if fim_format == "spm" else _psm_pieces
    return FimTemplate(family.name, layout(family), stops, family.bos, fim_format)


def _psm_pieces(family: FimFamily) -> tuple[Piece, ...]:
    """<PRE> prefix <SUF> suffix <MID>."""
    assert family.middle is not None
    return ((("special", family.prefix),) + _space(family) + (("prefix", ""),)
            + _spaced_token(family, family.suffix) + (("suffix", ""),)
            + _spaced_token(family, family.middle))


def _spm_pieces(family: FimFamily) -> tuple[Piece, ...]:
    """<PRE> <SUF> suffix <MID> prefix: the FIM paper's SPM variant that StarCoder and CodeLlama
    were trained on, which keeps the prefix text right before the generated middle."""
    assert family.middle is not None
    return ((("special", family.prefix),) + _spaced_token(family, family.suffix)
            + (("suffix", ""),) + _spaced_token(family, family.middle) + _space(family)
            + (("prefix", ""),))


def _space(family: FimFamily) -> tuple[Piece, ...]:
    return (("literal", " "),) if family.spaced else ()


def _spaced_token(family: FimFamily, token: str) -> tuple[Piece, ...]:
    # CodeLlama's ▁<SUF> and ▁<MID> carry their leading space; the plain spellings need it as text
    if family.spaced and not token.startswith(SPACE):
        return (("literal", " "), ("special", token))
    return (("special", token),)


# ------------------------------------------------------------------------------ custom templates

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def parse_template(spec: str, *, stops: Sequence[str] = ()) -> FimTemplate:
    """A "custom" template from a string with one ``{prefix}`` and one ``{suffix}``.

    The text around the placeholders becomes literal pieces (the tokenizer maps special tokens
    written in it), e.g. ``"<PRE> {prefix} <SUF>{suffix} <MID>"``.
    """
    parts = _PLACEHOLDER.split(spec)  # text, name, text, name, ..., text
    names = parts[1::2]
    unknown = sorted({name for name in names if name not in ("prefix", "suffix")})
    if unknown:
        raise ModelError(f"unknown placeholder {{{unknown[0]}}} in the FIM template {spec!r}; "
                         "it may only use {prefix} and {suffix}")
    if names.count("prefix") != 1 or names.count("suffix") != 1:
        raise ModelError(f"the FIM template {spec!r} needs exactly one {{prefix}} and one "
                         f"{{suffix}} placeholder, e.g. {EXAMPLE_TEMPLATE!r}")
    pieces: list[Piece] = []
    for i, part in enumerate(parts):
        if i % 2:
            pieces.append((part, ""))
        elif part:
            pieces.append(("literal", part))
    fim_format = "spm" if names.index("suffix") < names.index("prefix") else "psm"
    return FimTemplate("custom", tuple(pieces), tuple(stops), fim_format=fim_format)


# ------------------------------------------------------------------------------------ tokenizer


def template_for_tokenizer(
    tokenizer: PreTrainedTokenizerBase,
    *,
    name: str = "model",
    fim_format: str | None = None,
    override: FimTemplate | str | None = None,
) -> FimTemplate:
    """The FIM template for ``tokenizer``: detected from its tokens, or ``override``.

    ``override``: a FimTemplate, a family name ("starcoder", ...), or a custom template string
    (see ``parse_template``). Raises ModelError when the model has no FIM tokens (there is no
    prefix-only fallback: it would ignore the code after the hole) or when a special token or
    stop of the template is not one token of this tokenizer.
    """
    present = token_strings(tokenizer)
    fmt = fim_format or "psm"
    if isinstance(override, FimTemplate):
        template = override
    elif override is not None:
        template = _template_from_text(override, present, fmt)
    else:
        detected = detect_template(present, fim_format=fmt)
        if detected is None:
            raise ModelError(no_fim_message(name))
        template = detected
    if not template.stops and tokenizer.eos_token:
        # custom templates name no stops: the end of the text ends the middle too
        template = replace(template, stops=(tokenizer.eos_token,))
    _check_single_tokens(tokenizer, template, name)
    return template


def template_for_vocabulary(
    present: Container[str],
    *,
    name: str = "model",
    fim_format: str | None = None,
    override: FimTemplate | str | None = None,
) -> FimTemplate:
    """The FIM template for a tokenizer known only by which token strings it holds as one
    token (``present``: an inference server asked through its tokenize endpoint), or
    ``override`` as in `template_for_tokenizer`. Raises ModelError when no family matches."""
    fmt = fim_format or "psm"
    if isinstance(override, FimTemplate):
        return override
    if override is not None:
        return _template_from_text(override, present, fmt)
    family = match_family(present)
    if family is None:
        raise ModelError(no_fim_message(name))
    return _family_template(family, present, fmt)


def _template_from_text(text: str, present: Container[str], fim_format: str) -> FimTemplate:
    if text in FAMILY_NAMES:
        rows = [f for f in FAMILIES if f.name == text]
        # a family may be spelled two ways (CodeLlama); take the one this tokenizer has
        family = next((f for f in rows if all(t in present for t in f.tokens)), rows[0])
        return _family_template(family, present, fim_format)
    if "{" not in text:
        raise ModelError(f"unknown FIM family {text!r}; known families: "
                         f"{', '.join(FAMILY_NAMES)}; or give a template with {{prefix}} and "
                         f"{{suffix}}, e.g. {EXAMPLE_TEMPLATE!r}")
    return parse_template(text)


def no_fim_message(name: str) -> str:
    """Why a model without FIM tokens cannot be used, and what to do instead."""
    return (f"{name} has no fill-in-the-middle special tokens, so holefill cannot show it the "
            f"code after the hole. holefill knows these FIM families: {', '.join(FAMILY_NAMES)}. "
            "For another model, pass its FIM template (template=... / override=...): a family "
            "name, or a string with one {prefix} and one {suffix} placeholder written in the "
            f"model's own tokens, e.g. {EXAMPLE_TEMPLATE!r}.")


def token_strings(tokenizer: PreTrainedTokenizerBase) -> set[str]:
    """Every token string of ``tokenizer``: its vocabulary, added and special tokens."""
    tokens = set(tokenizer.get_vocab())
    tokens.update(str(t) for t in getattr(tokenizer, "added_tokens_decoder", {}).values())
    tokens.update(tokenizer.all_special_tokens)
    return tokens


def _check_single_tokens(tokenizer: PreTrainedTokenizerBase, template: FimTemplate,
                         name: str) -> None:
    specials = [value for kind, value in template.pieces if kind == "special"]
    for token in specials + list(template.stops):
        if _token_id(tokenizer, token) is None:
            raise ModelError(f"{name}: the {template.family} FIM template needs {token!r} as one "
                             "token, and this tokenizer has no such token")


def _token_id(tokenizer: PreTrainedTokenizerBase, token: str) -> int | None:
    """The id of ``token`` as one token, or None (unknown tokens map to unk or to None)."""
    tid = tokenizer.convert_tokens_to_ids(token)
    if not isinstance(tid, int) or (tid == tokenizer.unk_token_id and token != tokenizer.unk_token):
        return None
    return tid


# ------------------------------------------------------------------------------------- encoding


def encode_prompt(
    tokenizer: PreTrainedTokenizerBase, template: FimTemplate, prefix: str, suffix: str
) -> tuple[list[int], tuple[int, int], tuple[int, int]]:
    """The prompt ids, and the [start, end) spans of the prefix and the suffix text in them.

    Special pieces become their one id, text pieces are encoded one by one (so the spans are
    exact), and BOS leads when the template wants it and the tokenizer has one.
    """
    encoder = _TextEncoder(tokenizer)
    bos = tokenizer.bos_token_id
    ids: list[int] = [bos] if template.bos and bos is not None else []
    spans = {"prefix": (0, 0), "suffix": (0, 0)}
    pieces = template.pieces
    for i, (kind, value) in enumerate(pieces):
        start = len(ids)
        if kind == "special":
            ids.append(_special_id(tokenizer, value))
        elif kind == "prefix":
            ids += encoder.prefix(prefix)
        elif kind == "suffix":
            ids += encoder.text(suffix)
        else:
            before_prefix = i + 1 < len(pieces) and pieces[i + 1][0] == "prefix"
            ids += encoder.literal(value, before_prefix=before_prefix)
        if kind in spans:
            spans[kind] = (start, len(ids))
    return ids, spans["prefix"], spans["suffix"]


def _special_id(tokenizer: PreTrainedTokenizerBase, token: str) -> int:
    tid = _token_id(tokenizer, token)
    if tid is None:
        raise ModelError(f"the FIM token {token!r} is not one token of this tokenizer")
    return tid


class _TextEncoder:
    """Encodes the text pieces of a prompt as the reference FIM implementations do.

    Byte-level tokenizers (StarCoder, Qwen, DeepSeek) encode each piece as it is. SentencePiece
    tokenizers (Llama, Mistral) prepend a space to every encoded text (the "dummy prefix"). The
    reference CodeLlama and Codestral code keeps it on the prefix (it is the space after <PRE>)
    and strips it from the suffix, so pieces other than the prefix are encoded behind a sentinel
    that takes the dummy space, and the sentinel's ids are dropped.
    """

    # mistral_common's sentinel first: a character that merges with nothing after it. One that
    # encodes to <unk> is no use: a fused <unk> could swallow the start of the text.
    SENTINELS = ("☺", "\n")

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self._tokenizer = tokenizer
        self._sentinel, self._sentinel_ids = "", []
        for sentinel in self.SENTINELS:
            ids = self._plain(sentinel)
            if ids and tokenizer.unk_token_id not in ids:
                self._sentinel, self._sentinel_ids = sentinel, ids
                break
        self.dummy_prefix = self._stripped("a") != self._plain("a")

    def prefix(self, text: str) -> list[int]:
        return self._plain(text)

    def text(self, text: str) -> list[int]:
        return self._stripped(text) if self.dummy_prefix else self._plain(text)

    def literal(self, text: str, *, before_prefix: bool) -> list[int]:
        if self.dummy_prefix and before_prefix and text.endswith(" "):
            text = text[:-1]  # the prefix's dummy space stands for this one
        return self.text(text)

    def _plain(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False)) if text else []

    def _stripped(self, text: str) -> list[int]:
        if not text or not self._sentinel:
            return self._plain(text)
        ids = self._plain(self._sentinel + text)
        n = len(self._sentinel_ids)
        if ids[:n] == self._sentinel_ids:
            return ids[n:]
        return self._plain(text)  # the sentinel merged with the text: keep the plain encoding


__all__ = [
    "FAMILIES",
    "FAMILY_NAMES",
    "FimFamily",
    "FimTemplate",
    "Piece",
    "detect_template",
    "encode_prompt",
    "match_family",
    "no_fim_message",
    "parse_template",
    "template_for_tokenizer",
    "template_for_vocabulary",
    "token_strings",
]
