"""Export a Llama-architecture model folder to one GGUF file, so llama.cpp can serve it.

Why here and not llama.cpp's own converter: that script is not on PyPI, and the test that
compares fills through a llama.cpp server with in-process fills needs the *same* weights and
the *same* tokenizer on both sides. This module covers what holefill ships and tests with:
`LlamaForCausalLM` with a byte-level BPE tokenizer (GPT-2 pre-tokenizer, as the bundled model
has). Anything else is refused with a pointer to llama.cpp's converter rather than written
half right.

What the file holds, and why each piece matters to the comparison:

- weights as F32 by default (the CPU path of the in-process backend runs fp32, so the served
  model computes with the same numbers; `f16` halves the file for larger models);
- q and k projections permuted to llama.cpp's RoPE layout: Hugging Face Llama rotates the two
  halves of each head (`rotate_half`), llama.cpp rotates neighbouring pairs, and its own
  converter permutes these two weights for the same reason;
- the tokenizer as llama.cpp's "gpt2" model with the "gpt-2" pre-tokenizer (the regex of
  `ByteLevel(use_regex=True)`), every token string and merge as the tokenizer.json has them,
  special tokens typed CONTROL (they never become text and `parse_special` finds them), no
  BOS added (holefill's FIM prompts carry their own tokens), and the FIM token ids.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from holefill.errors import ModelError

log = logging.getLogger(__name__)

OUT_TYPES = ("f32", "f16")
# the FIM token ids llama.cpp reads, by the token strings holefill's families use
_FIM_KEYS = {
    "fim_pre": ("<fim_prefix>", "<|fim_prefix|>", "<fim-prefix>"),
    "fim_suf": ("<fim_suffix>", "<|fim_suffix|>", "<fim-suffix>"),
    "fim_mid": ("<fim_middle>", "<|fim_middle|>", "<fim-middle>"),
    "fim_pad": ("<fim_pad>", "<|fim_pad|>", "<fim-pad>"),
}
_CONVERTER_HINT = ("for other models use llama.cpp's convert_hf_to_gguf.py (in the llama.cpp "
                   "repository)")


def export_gguf(model: str | None, out: str | Path, *, outtype: str = "f32") -> Path:
    """Write the model folder ``model`` (None: the bundled model) to the GGUF file ``out``.

    Raises ModelError for a model this exporter does not cover (another architecture, a
    tokenizer that is not byte-level BPE) and when the `gguf` package is missing.
    """
    from holefill.decode.backend import resolve_model

    if outtype not in OUT_TYPES:
        raise ModelError(f"unknown GGUF output type {outtype!r}; use one of {OUT_TYPES}")
    try:
        import gguf
        import numpy as np
    except ImportError as exc:
        raise ModelError("the GGUF export needs the gguf package: "
                         "pip install 'holefill[gguf]'") from exc
    path, _ = resolve_model(model)
    config = _read_json(path / "config.json")
    if config.get("model_type") != "llama":
        raise ModelError(f"{path}: only Llama-architecture models can be exported here "
                         f"(this one is {config.get('model_type')!r}); {_CONVERTER_HINT}")
    vocab = _byte_level_vocab(path)
    tensors = _load_tensors(path)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(out), "llama")
    _write_header(writer, gguf, config, path, outtype)
    _write_vocab(writer, gguf, vocab, config)
    n_head, n_kv = int(config["num_attention_heads"]), int(
        config.get("num_key_value_heads") or config["num_attention_heads"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, int(config["num_hidden_layers"]))
    for name, array in tensors.items():
        if name == "lm_head.weight" and config.get("tie_word_embeddings"):
            continue  # llama.cpp reuses token_embd when output.weight is absent
        if name.endswith("rotary_emb.inv_freq"):
            continue
        target = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if target is None:
            raise ModelError(f"{path}: no GGUF name for the tensor {name!r}; {_CONVERTER_HINT}")
        data = array.astype(np.float32)
        if name.endswith("q_proj.weight"):
            data = _permute(data, n_head)
        elif name.endswith("k_proj.weight"):
            data = _permute(data, n_kv)
        if outtype == "f16" and data.ndim > 1:
            data = data.astype(np.float16)
        writer.add_tensor(target, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    log.info("wrote %s (%d tensors, %s)", out, len(tensors), outtype)
    return out


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ModelError(f"{path} does not hold a JSON object")
    return data


def _permute(w: Any, heads: int) -> Any:
    """Hugging Face's half-split RoPE rows -> llama.cpp's interleaved pairs (per head)."""
    rows = w.shape[0]
    return (w.reshape(heads, 2, rows // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def _load_tensors(path: Path) -> dict[str, Any]:
    from safetensors.numpy import load_file

    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise ModelError(f"{path}: no .safetensors weights to export; {_CONVERTER_HINT}")
    out: dict[str, Any] = {}
    for file in files:
        out.update(load_file(str(file)))
    return out


class _Vocab:
    def __init__(self, tokens: list[str], types: list[int], merges: list[str],
                 special: dict[str, int]) -> None:
        self.tokens, self.types, self.merges, self.special = tokens, types, merges, special


def _byte_level_vocab(path: Path) -> _Vocab:
    """Tokens in id order, their types, the merges, and the special tokens by string."""
    data = _read_json(path / "tokenizer.json")
    model = data.get("model") or {}
    pre = data.get("pre_tokenizer") or {}
    pre_types = {p.get("type") for p in pre.get("pretokenizers", [pre])}
    if model.get("type") != "BPE" or "ByteLevel" not in pre_types:
        raise ModelError(f"{path}: only byte-level BPE tokenizers (GPT-2 style) can be "
                         f"exported here; {_CONVERTER_HINT}")
    vocab: dict[str, int] = dict(model["vocab"])
    special: dict[str, int] = {}
    for added in data.get("added_tokens", []):
        vocab[added["content"]] = int(added["id"])
        if added.get("special", True):
            special[added["content"]] = int(added["id"])
    size = max(vocab.values()) + 1
    config = _read_json(path / "config.json")
    size = max(size, int(config.get("vocab_size", size)))
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [5] * size  # UNUSED until a string claims the id
    for text, tid in vocab.items():
        tokens[tid] = text
        types[tid] = 3 if text in special else 1  # CONTROL, NORMAL
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return _Vocab(tokens, types, merges, special)


def _write_header(writer: Any, gguf: Any, config: dict[str, Any], path: Path,
                  outtype: str) -> None:
    heads = int(config["num_attention_heads"])
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // heads)
    rope = config.get("rope_parameters") or {}
    theta = float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))
    if (rope.get("rope_type") or "default") != "default" or config.get("rope_scaling"):
        raise ModelError(f"{path}: RoPE scaling is not covered by this exporter; "
                         f"{_CONVERTER_HINT}")
    writer.add_name(path.name)
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(hidden)
    writer.add_block_count(int(config["num_hidden_layers"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(heads)
    writer.add_head_count_kv(int(config.get("num_key_value_heads") or heads))
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(theta)
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    writer.add_vocab_size(int(config["vocab_size"]))
    ftype = gguf.LlamaFileType.ALL_F32 if outtype == "f32" else gguf.LlamaFileType.MOSTLY_F16
    writer.add_file_type(int(ftype))


def _write_vocab(writer: Any, gguf: Any, vocab: _Vocab, config: dict[str, Any]) -> None:
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    writer.add_token_merges(vocab.merges)
    for key, setter in (("bos_token_id", writer.add_bos_token_id),
                        ("eos_token_id", writer.add_eos_token_id),
                        ("pad_token_id", writer.add_pad_token_id)):
        if isinstance(config.get(key), int):
            setter(int(config[key]))
    writer.add_add_bos_token(False)
    for key, spellings in _FIM_KEYS.items():
        tid = next((vocab.special[s] for s in spellings if s in vocab.special), None)
        if tid is not None:
            writer.add_uint32(getattr(gguf.Keys.Tokenizer, f"{key.upper()}_ID"), tid)
