"""FIM prompt templates: family detection, prompt ids and spans, custom templates, errors.

Every family gets a real ``PreTrainedTokenizerFast`` built here: a tiny byte-level BPE trained in
milliseconds on a few code snippets, plus that family's special tokens. Nothing comes from a hub.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from holefill.decode.templates import (
    FAMILIES,
    FAMILY_NAMES,
    FimTemplate,
    detect_template,
    encode_prompt,
    parse_template,
    template_for_tokenizer,
)
from holefill.errors import ModelError
from holefill.models import FIM_FAMILIES, detect_fim_tokens

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

needs_tokenizers = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("transformers", "tokenizers")),
    reason="transformers/tokenizers not installed (pip install -e '.[model]')",
)

CODE = [
    "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n",
    "for i in range(10):\n    if i % 2 == 0:\n        print(i, 'even')\n",
    "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n",
    "int main(void) {\n    int total = 0;\n    for (int i = 0; i < 10; i++) total += i;\n"
    "    return total;\n}\n",
    '{"name": "holefill", "values": [1, 2, 3], "nested": {"ok": true, "none": null}}\n',
]
PREFIX = "def add(a, b):\n    return "
SUFFIX = "\n\nprint(add(1, 2))\n"


@dataclass(frozen=True)
class Vocab:
    """A family's special tokens as its real tokenizer has them."""

    specials: tuple[str, ...]
    bos: str | None = None
    eos: str | None = None


VOCABS: dict[str, Vocab] = {
    "starcoder": Vocab(("<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>",
                        "<fim_pad>", "<file_sep>"), eos="<|endoftext|>"),
    "santacoder": Vocab(("<|endoftext|>", "<fim-prefix>", "<fim-middle>", "<fim-suffix>",
                         "<fim-pad>"), eos="<|endoftext|>"),
    "qwen2.5-coder": Vocab(("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|fim_prefix|>",
                            "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>",
                            "<|file_sep|>"), eos="<|endoftext|>"),
    "codegemma": Vocab(("<pad>", "<eos>", "<bos>", "<|fim_prefix|>", "<|fim_middle|>",
                        "<|fim_suffix|>", "<|file_separator|>"), bos="<bos>", eos="<eos>"),
    "deepseek-coder": Vocab(("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜fim▁hole｜>",
                             "<｜fim▁begin｜>", "<｜fim▁end｜>", "<|EOT|>"),
                            bos="<｜begin▁of▁sentence｜>", eos="<｜end▁of▁sentence｜>"),
    "codellama": Vocab(("<unk>", "<s>", "</s>", "▁<PRE>", "▁<MID>", "▁<SUF>", "▁<EOT>"),
                       bos="<s>", eos="</s>"),
    "codellama-plain": Vocab(("<unk>", "<s>", "</s>", "<PRE>", "<SUF>", "<MID>", "<EOT>"),
                             bos="<s>", eos="</s>"),
    "codestral": Vocab(("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[PREFIX]", "[MIDDLE]",
                        "[SUFFIX]"), bos="<s>", eos="</s>"),
    "no-fim": Vocab(("<|endoftext|>",), eos="<|endoftext|>"),
}


@dataclass(frozen=True)
class Expected:
    """What the template of a family must be: its special tokens in prompt order, stops, BOS."""

    family: str
    order: tuple[str, ...]
    stops: tuple[str, ...]
    bos: bool


EXPECTED: dict[str, Expected] = {
    "starcoder": Expected("starcoder", ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
                          ("<|endoftext|>", "<file_sep>"), bos=False),
    "santacoder": Expected("santacoder", ("<fim-prefix>", "<fim-suffix>", "<fim-middle>"),
                           ("<|endoftext|>",), bos=False),
    "qwen2.5-coder": Expected("qwen2.5-coder", ("<|fim_prefix|>", "<|fim_suffix|>",
                                                "<|fim_middle|>"),
                              ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|repo_name|>",
                               "<|im_end|>"), bos=False),
    "codegemma": Expected("codegemma", ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),
                          ("<|file_separator|>", "<eos>"), bos=True),
    "deepseek-coder": Expected("deepseek-coder", ("<｜fim▁begin｜>", "<｜fim▁hole｜>",
                                                  "<｜fim▁end｜>"),
                               ("<｜end▁of▁sentence｜>", "<|EOT|>"), bos=True),
    "codellama": Expected("codellama", ("▁<PRE>", "▁<SUF>", "▁<MID>"), ("▁<EOT>", "</s>"),
                          bos=True),
    "codellama-plain": Expected("codellama", ("<PRE>", "<SUF>", "<MID>"), ("<EOT>", "</s>"),
                                bos=True),
    "codestral": Expected("codestral", ("[SUFFIX]", "[PREFIX]"), ("</s>",), bos=True),
}
TOKENIZERS = sorted(EXPECTED)


@functools.cache
def build_tokenizer(vocab_name: str) -> PreTrainedTokenizerBase:
    """A byte-level BPE trained on CODE with the special tokens of ``VOCABS[vocab_name]``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    vocab = VOCABS[vocab_name]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=list(vocab.specials),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    bpe.train_from_iterator(CODE * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token=vocab.bos,
                                   eos_token=vocab.eos, clean_up_tokenization_spaces=False)


@functools.cache
def build_sentencepiece_codellama() -> PreTrainedTokenizerBase:
    """transformers' own CodeLlamaTokenizer (Metaspace, so every encode adds a leading space)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import CodeLlamaTokenizer

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                 split=False)
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]  # Llama's byte fallback
    trainer = trainers.BpeTrainer(vocab_size=700,
                                  special_tokens=["<unk>", "<s>", "</s>", *byte_tokens],
                                  show_progress=False)
    bpe.train_from_iterator(CODE * 4, trainer)
    model = json.loads(bpe.to_str())["model"]
    merges: Any = [tuple(m) for m in model["merges"]]  # pairs, though typed as strings
    return CodeLlamaTokenizer(vocab=model["vocab"], merges=merges)


def decode(tokenizer: Any, ids: list[int]) -> str:
    return str(tokenizer.decode(ids, skip_special_tokens=False,
                                clean_up_tokenization_spaces=False))


def special_tokens(tokenizer: Any) -> dict[int, str]:
    return {i: t.content for i, t in tokenizer.added_tokens_decoder.items() if t.special}


def special_tokens_in(tokenizer: Any, ids: list[int]) -> list[str]:
    specials = special_tokens(tokenizer)
    return [specials[i] for i in ids if i in specials]


# ----------------------------------------------------------------------------- family detection


@needs_tokenizers
@pytest.mark.parametrize("vocab_name", TOKENIZERS)
def test_each_family_is_detected_from_its_tokenizer(vocab_name: str) -> None:
    template = template_for_tokenizer(build_tokenizer(vocab_name))
    assert template.family == EXPECTED[vocab_name].family


def test_codegemma_is_told_from_qwen_by_its_file_separator() -> None:
    fim = ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<eos>", "<|endoftext|>"]
    qwen = detect_template(iter(fim))
    gemma = detect_template(iter(fim + ["<|file_separator|>"]))
    assert qwen is not None and qwen.family == "qwen2.5-coder"
    assert gemma is not None and gemma.family == "codegemma"
    assert gemma.stops == ("<|file_separator|>", "<eos>")


def test_detection_finds_nothing_without_fim_tokens() -> None:
    assert detect_template(["<|endoftext|>", "<s>", "</s>", "def", "<PRE>"]) is None


@needs_tokenizers
@pytest.mark.parametrize("vocab_name", TOKENIZERS)
def test_stops_are_the_family_end_tokens_the_tokenizer_has(vocab_name: str) -> None:
    tok = build_tokenizer(vocab_name)
    template = template_for_tokenizer(tok)
    assert template.stops == EXPECTED[vocab_name].stops
    assert set(template.stops) <= set(special_tokens(tok).values())


# ------------------------------------------------------------------------------- prompt encoding


@needs_tokenizers
@pytest.mark.parametrize("vocab_name", TOKENIZERS)
def test_prompt_decodes_to_the_rendered_template(vocab_name: str) -> None:
    tok = build_tokenizer(vocab_name)
    template = template_for_tokenizer(tok)
    ids, _, _ = encode_prompt(tok, template, PREFIX, SUFFIX)
    assert decode(tok, ids) == template.render(PREFIX, SUFFIX, bos_token=tok.bos_token)


@needs_tokenizers
@pytest.mark.parametrize("vocab_name", TOKENIZERS)
def test_special_ids_come_in_the_family_order(vocab_name: str) -> None:
    tok = build_tokenizer(vocab_name)
    expected = EXPECTED[vocab_name]
    ids, _, _ = encode_prompt(tok, template_for_tokenizer(tok), PREFIX, SUFFIX)
    bos = [tok.bos_token] if expected.bos else []
    assert special_tokens_in(tok, ids) == bos + list(expected.order)


@needs_tokenizers
@pytest.mark.parametrize("vocab_name", TOKENIZERS)
def test_bos_leads_exactly_where_the_family_wants_it(vocab_name: str) -> None:
    tok = build_tokenizer(vocab_name)
    template = template_for_tokenizer(tok)
    ids, _, _ = encode_prompt(tok, template, PREFIX, SUFFIX)
    assert template.bos == EXPECTED[vocab_name].bos
    assert (ids[0] == tok.bos_token_id) == EXPECTED[vocab_name].bos


@needs_tokenizers
@pytest.mark.parametrize("fim_format", ["psm", "spm"])
@pytest.mark.parametrize("vocab_name", [n for n in TOKENIZERS if n != "deepseek-coder"])
def test_prefix_and_suffix_spans_decode_to_their_text(vocab_name: str, fim_format: str) -> None:
    tok = build_tokenizer(vocab_name)
    template = template_for_tokenizer(tok, fim_format=fim_format)
    ids, (ps, pe), (ss, se) = encode_prompt(tok, template, PREFIX, SUFFIX)
    assert decode(tok, ids[ps:pe]) == PREFIX
    assert decode(tok, ids[ss:se]) == SUFFIX
    assert (pe == len(ids)) == template.prefix_is_last


@needs_tokenizers
def test_empty_prefix_and_suffix_encode_to_no_ids() -> None:
    tok = build_tokenizer("starcoder")
    ids, (ps, pe), (ss, se) = encode_prompt(tok, template_for_tokenizer(tok), "", "")
    assert ps == pe and ss == se
    assert special_tokens_in(tok, ids) == ["<fim_prefix>", "<fim_suffix>", "<fim_middle>"]


# --------------------------------------------------------------------------------- the layouts


@needs_tokenizers
def test_starcoder_spm_puts_the_prefix_right_before_generation() -> None:
    tok = build_tokenizer("starcoder")
    template = template_for_tokenizer(tok, fim_format="spm")
    assert template.fim_format == "spm" and template.prefix_is_last
    assert template.render("P", "S") == "<fim_prefix><fim_suffix>S<fim_middle>P"
    ids, (ps, pe), _ = encode_prompt(tok, template, PREFIX, SUFFIX)
    assert special_tokens_in(tok, ids) == ["<fim_prefix>", "<fim_suffix>", "<fim_middle>"]
    assert tok.convert_ids_to_tokens(ids[ps - 1]) == "<fim_middle>" and pe == len(ids)


def test_psm_ends_with_the_middle_token() -> None:
    template = detect_template(["<fim_prefix>", "<fim_suffix>", "<fim_middle>"])
    assert template is not None and not template.prefix_is_last
    assert template.render("P", "S") == "<fim_prefix>P<fim_suffix>S<fim_middle>"


@needs_tokenizers
def test_codestral_puts_the_suffix_first_and_generation_follows_the_prefix() -> None:
    tok = build_tokenizer("codestral")
    template = template_for_tokenizer(tok)
    assert template.prefix_is_last and template.bos
    assert template.render("P", "S", bos_token="<s>") == "<s>[SUFFIX]S[PREFIX]P"
    ids, (ps, pe), (ss, se) = encode_prompt(tok, template, PREFIX, SUFFIX)
    assert ids[:2] == tok.convert_tokens_to_ids(["<s>", "[SUFFIX]"])
    assert ss == 2 and tok.convert_ids_to_tokens(ids[se]) == "[PREFIX]" and pe == len(ids)


def test_codellama_prompt_has_spaces_before_prefix_suf_and_mid() -> None:
    plain = detect_template(["<PRE>", "<SUF>", "<MID>", "<EOT>", "</s>"])
    marked = detect_template(["▁<PRE>", "▁<SUF>", "▁<MID>", "▁<EOT>", "</s>"])
    assert plain is not None and marked is not None
    assert plain.render("p", "s", bos_token="<s>") == "<s><PRE> p <SUF>s <MID>"
    # the ▁ of ▁<SUF> and ▁<MID> is their space
    assert marked.render("p", "s", bos_token="<s>") == "<s>▁<PRE> p▁<SUF>s▁<MID>"
    spm = detect_template(["<PRE>", "<SUF>", "<MID>"], fim_format="spm")
    assert spm is not None and spm.render("p", "s") == "<PRE> <SUF>s <MID> p"


@needs_tokenizers
@pytest.mark.parametrize(("fim_format", "layout"), [
    ("psm", "<s> <PRE> {prefix} <SUF>{suffix} <MID>"),
    ("spm", "<s> <PRE> <SUF>{suffix} <MID> {prefix}"),
])
def test_sentencepiece_codellama_prompt_matches_the_reference_layout(
    fim_format: str, layout: str
) -> None:
    # SentencePiece adds a space to every encode; CodeLlama's reference code keeps it on the
    # prefix only, so the suffix must not start with a stray space
    tok = build_sentencepiece_codellama()
    template = template_for_tokenizer(tok, fim_format=fim_format)
    prefix, suffix = "def add(a, b):\n    return", "    print(add(1, 2))\n"
    ids, (ps, pe), (ss, se) = encode_prompt(tok, template, prefix, suffix)

    def text(ids: list[int]) -> str:  # exact, unlike decode, which drops one leading space
        return "".join(tok.convert_ids_to_tokens(ids)).replace("▁", " ")

    assert text(ids) == layout.format(prefix=prefix, suffix=suffix)
    assert decode(tok, ids[ps:pe]) == prefix and text(ids[ss:se]) == suffix


def test_deepseek_has_no_spm_layout() -> None:
    tokens = ["<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"]
    with pytest.raises(ModelError, match="psm"):
        detect_template(tokens, fim_format="spm")


def test_unknown_fim_format_is_refused() -> None:
    with pytest.raises(ModelError, match="psm, spm"):
        detect_template(["<fim_prefix>", "<fim_suffix>", "<fim_middle>"], fim_format="pms")


# -------------------------------------------------------------------------------------- errors


@needs_tokenizers
def test_model_without_fim_tokens_raises_a_helpful_error() -> None:
    with pytest.raises(ModelError) as err:
        template_for_tokenizer(build_tokenizer("no-fim"), name="gpt2-tiny")
    message = str(err.value)
    assert "gpt2-tiny" in message and "fill-in-the-middle" in message
    assert all(family in message for family in FAMILY_NAMES)
    assert "{prefix}" in message and "{suffix}" in message


@needs_tokenizers
def test_family_override_needing_tokens_the_tokenizer_lacks_is_refused() -> None:
    with pytest.raises(ModelError, match="<fim_prefix>"):
        template_for_tokenizer(build_tokenizer("qwen2.5-coder"), override="starcoder")


@needs_tokenizers
def test_unknown_family_override_lists_the_known_ones() -> None:
    with pytest.raises(ModelError, match="unknown FIM family 'starcodr'.*santacoder"):
        template_for_tokenizer(build_tokenizer("starcoder"), override="starcodr")


# ------------------------------------------------------------------------------------ overrides


@needs_tokenizers
def test_override_by_family_name_skips_detection() -> None:
    # a CodeGemma vocabulary holds Qwen's three FIM tokens, so Qwen's layout can be forced
    template = template_for_tokenizer(build_tokenizer("codegemma"), override="qwen2.5-coder")
    assert template.family == "qwen2.5-coder" and not template.bos
    assert template.stops == ("<eos>",)  # none of Qwen's stops: the tokenizer's EOS


@needs_tokenizers
def test_override_by_family_name_takes_the_spelling_the_tokenizer_has() -> None:
    template = template_for_tokenizer(build_tokenizer("codellama-plain"), override="codellama")
    assert [v for k, v in template.pieces if k == "special"] == ["<PRE>", "<SUF>", "<MID>"]


@needs_tokenizers
def test_override_template_object_is_used_as_given() -> None:
    given = FimTemplate("custom", (("special", "<fim_prefix>"), ("prefix", ""),
                                   ("special", "<fim_suffix>"), ("suffix", "")), ("<file_sep>",))
    assert template_for_tokenizer(build_tokenizer("starcoder"), override=given) is given


@needs_tokenizers
def test_custom_template_string_encodes_like_the_family_template() -> None:
    tok = build_tokenizer("starcoder")
    custom = template_for_tokenizer(
        tok, override="<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>")
    family = template_for_tokenizer(tok)
    assert custom.family == "custom"
    assert custom.stops == ("<|endoftext|>",)  # no stops named: the tokenizer's EOS
    assert encode_prompt(tok, custom, PREFIX, SUFFIX) == encode_prompt(tok, family, PREFIX, SUFFIX)


# ----------------------------------------------------------------------------- custom templates


def test_custom_template_text_around_placeholders_becomes_literal_pieces() -> None:
    template = parse_template("<PRE> {prefix} <SUF>{suffix} <MID>", stops=["<EOT>"])
    assert template.pieces == (("literal", "<PRE> "), ("prefix", ""), ("literal", " <SUF>"),
                               ("suffix", ""), ("literal", " <MID>"))
    assert template.family == "custom" and template.stops == ("<EOT>",)
    assert template.fim_format == "psm" and not template.bos
    assert template.render("p", "s") == "<PRE> p <SUF>s <MID>"


def test_custom_template_with_the_suffix_first_is_spm() -> None:
    template = parse_template("[SUFFIX]{suffix}[PREFIX]{prefix}")
    assert template.fim_format == "spm" and template.prefix_is_last


@pytest.mark.parametrize(("spec", "complaint"), [
    ("<PRE>{prefix}<MID>", "exactly one"),
    ("{prefix}{suffix}{prefix}", "exactly one"),
    ("{prefix}{suffix}{middle}", "unknown placeholder {middle}"),
    ("{prefix}{}{suffix}", "unknown placeholder {}"),
])
def test_custom_template_errors_name_the_problem(spec: str, complaint: str) -> None:
    with pytest.raises(ModelError) as err:
        parse_template(spec)
    assert complaint in str(err.value) and spec in str(err.value)


def test_template_needs_one_prefix_and_one_suffix_piece() -> None:
    with pytest.raises(ValueError, match="one prefix and one suffix"):
        FimTemplate("custom", (("prefix", ""), ("literal", "x")), ())


# ------------------------------------------------------------------------------ one family table


def test_models_table_lists_every_template_family_in_the_same_order() -> None:
    assert [row[0] for row in FIM_FAMILIES] == [family.name for family in FAMILIES]
    assert ("codegemma", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>") in FIM_FAMILIES


def test_model_folder_detection_tells_codegemma_from_qwen(tmp_path: Path) -> None:
    added = ["<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|file_separator|>"]
    decoder = {str(i): {"content": t, "special": True} for i, t in enumerate(added)}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": decoder}))
    found = detect_fim_tokens(tmp_path)
    assert found is not None and found[0] == "codegemma"


def test_templates_import_neither_torch_nor_transformers() -> None:
    code = ("import sys, holefill.decode.templates, holefill.models; "
            "print(sorted({'torch', 'transformers'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"
