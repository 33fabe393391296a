"""Masked-diffusion checkpoints on disk: which family a folder holds, its config as a
`BidirectionalConfig`, and its weights under our names.

Three families, recognised from `config.json` alone (no remote code runs, whatever the folder
ships):

- ``holefill``: our own (`python -m holefill.train --objective diffusion`), `model_type`
  "holefill-mdm", weights named as `BidirectionalLM` names them;
- ``llada``: LLaDA checkpoints (`model_type` "llada", OLMo-style config keys `d_model`,
  `n_layers`, ..., weights under `model.transformer.`);
- ``dream``: Dream, Dream-Coder, DiffuCoder, DreamOn (`model_type` "Dream", Qwen2-style config
  keys and weight names, logits offset by one position).

Options of those configs that change the network beyond what `BidirectionalLM` implements are
refused by name (a wrong architecture would run and write nonsense, silently).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from holefill.errors import ModelError

FORMATS = ("holefill", "llada", "dream")
HOLEFILL_MODEL_TYPE = "holefill-mdm"
# Dream's config inherits Qwen2's 131,072 positions; the model was trained on 2,048
DREAM_CONTEXT = 2048
LLADA_MASK_ID = 126336
DREAM_MASK_ID = 151666


def read_config_json(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def detect_format(folder: Path) -> str | None:
    """The diffusion family of the model in ``folder``, or None when it is not one."""
    cfg = read_config_json(folder)
    if cfg is None:
        return None
    kind = str(cfg.get("model_type", "")).lower()
    archs = " ".join(str(a) for a in cfg.get("architectures") or []).lower()
    if kind == HOLEFILL_MODEL_TYPE:
        return "holefill"
    if kind == "llada" or "llada" in archs:
        return "llada"
    if kind == "dream" or "dreammodel" in archs:
        return "dream"
    return None


# ------------------------------------------------------------------------------- configs

def _refuse(cfg: dict[str, Any], checks: dict[str, Callable[[Any], bool]], family: str) -> None:
    bad = [f"{k}={cfg.get(k)!r}" for k, ok in checks.items() if not ok(cfg.get(k))]
    if bad:
        raise ModelError(f"this {family} checkpoint uses options holefill does not implement: "
                         + ", ".join(bad))


def config_from(fmt: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The `BidirectionalConfig` fields of a checkpoint's config.json (qkv_bias is decided
    later, from the weights)."""
    if fmt == "holefill":
        inner = raw.get("holefill")
        if not isinstance(inner, dict):
            raise ModelError("config.json of a holefill diffusion model lacks its 'holefill' "
                             "section")
        return dict(inner)
    if fmt == "llada":
        return _llada_config(raw)
    if fmt == "dream":
        return _dream_config(raw)
    raise ModelError(f"unknown diffusion format {fmt!r}")


def _llada_config(c: dict[str, Any]) -> dict[str, Any]:
    _refuse(c, {
        "block_type": lambda v: v in (None, "llama"),
        "activation_type": lambda v: v in (None, "silu"),
        "layer_norm_type": lambda v: v in (None, "rms"),
        "rope": lambda v: v in (None, True),
        "alibi": lambda v: not v,
        "attention_layer_norm": lambda v: not v,
        "include_bias": lambda v: not v,
        "bias_for_layer_norm": lambda v: not v,
        "layer_norm_with_affine": lambda v: v in (None, True),
        "block_group_size": lambda v: v in (None, 1),
    }, "LLaDA")
    d, heads = int(c["d_model"]), int(c["n_heads"])
    kv = 1 if c.get("multi_query_attention") else int(c.get("n_kv_heads") or heads)
    ffn = c.get("mlp_hidden_size") or int(c.get("mlp_ratio", 4)) * d
    return {
        "vocab_size": int(c.get("embedding_size") or c["vocab_size"]),
        "hidden_size": d, "num_layers": int(c["n_layers"]), "num_heads": heads,
        "num_kv_heads": kv, "intermediate_size": int(ffn),
        "rope_theta": float(c.get("rope_theta", 10000.0)),
        "rms_norm_eps": float(c.get("rms_norm_eps", 1e-5)),
        "max_positions": int(c.get("max_sequence_length", 4096)),
        "tie_embeddings": bool(c.get("weight_tying", False)),
        "mask_token_id": int(c.get("mask_token_id", LLADA_MASK_ID)),
        "shift_logits": False,
        "input_scale": math.sqrt(d) if c.get("input_emb_norm") else 1.0,
        "logit_scale": 1 / math.sqrt(d) if c.get("scale_logits") else 1.0,
    }


def _dream_config(c: dict[str, Any]) -> dict[str, Any]:
    d, heads = int(c["hidden_size"]), int(c["num_attention_heads"])
    _refuse(c, {
        "hidden_act": lambda v: v in (None, "silu"),
        "use_sliding_window": lambda v: not v,
        "rope_scaling": lambda v: v is None or (isinstance(v, dict) and v.get(
            "rope_type", v.get("type")) == "default"),
        "head_dim": lambda v: v in (None, d // heads),
    }, "Dream")
    return {
        "vocab_size": int(c["vocab_size"]), "hidden_size": d,
        "num_layers": int(c["num_hidden_layers"]), "num_heads": heads,
        "num_kv_heads": int(c.get("num_key_value_heads") or heads),
        "intermediate_size": int(c["intermediate_size"]),
        "rope_theta": float(c.get("rope_theta", 10000.0)),
        "rms_norm_eps": float(c.get("rms_norm_eps", 1e-6)),
        "max_positions": min(int(c.get("max_position_embeddings", DREAM_CONTEXT)),
                             DREAM_CONTEXT),
        "tie_embeddings": bool(c.get("tie_word_embeddings", False)),
        "mask_token_id": int(c.get("mask_token_id", DREAM_MASK_ID)),
        "shift_logits": True,
    }


# ------------------------------------------------------------------------------- weights

_LLADA_BLOCK = {
    "attn_norm.weight": "attn_norm.weight", "ff_norm.weight": "mlp_norm.weight",
    "q_proj.weight": "q.weight", "q_proj.bias": "q.bias",
    "k_proj.weight": "k.weight", "k_proj.bias": "k.bias",
    "v_proj.weight": "v.weight", "v_proj.bias": "v.bias",
    "attn_out.weight": "o.weight", "ff_proj.weight": "gate.weight",
    "up_proj.weight": "up.weight", "ff_out.weight": "down.weight",
}
_LLADA_TOP = {"model.transformer.wte.weight": "embed.weight",
              "model.transformer.ln_f.weight": "norm.weight",
              "model.transformer.ff_out.weight": "head.weight"}
_DREAM_BLOCK = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "mlp_norm.weight",
    "self_attn.q_proj.weight": "q.weight", "self_attn.q_proj.bias": "q.bias",
    "self_attn.k_proj.weight": "k.weight", "self_attn.k_proj.bias": "k.bias",
    "self_attn.v_proj.weight": "v.weight", "self_attn.v_proj.bias": "v.bias",
    "self_attn.o_proj.weight": "o.weight", "mlp.gate_proj.weight": "gate.weight",
    "mlp.up_proj.weight": "up.weight", "mlp.down_proj.weight": "down.weight",
}
_DREAM_TOP = {"model.embed_tokens.weight": "embed.weight", "model.norm.weight": "norm.weight",
              "lm_head.weight": "head.weight"}
_BLOCK_NAME = {"llada": re.compile(r"model\.transformer\.blocks\.(\d+)\.(.+)"),
               "dream": re.compile(r"model\.layers\.(\d+)\.(.+)")}


def canonical_name(fmt: str, name: str) -> str | None:
    """Our name for a checkpoint's weight, or None for one we do not use (rotary caches)."""
    if fmt == "holefill":
        return name
    top, block = (_LLADA_TOP, _LLADA_BLOCK) if fmt == "llada" else (_DREAM_TOP, _DREAM_BLOCK)
    if name in top:
        return top[name]
    m = _BLOCK_NAME[fmt].fullmatch(name)
    if m is not None and m.group(2) in block:
        return f"layers.{m.group(1)}.{block[m.group(2)]}"
    return None


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files of a checkpoint: one file, or the shards its index names."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError) as exc:
            raise ModelError(f"cannot read {index}: {exc}") from exc
        return [folder / s for s in shards]
    single = folder / "model.safetensors"
    if single.is_file():
        return [single]
    raise ModelError(f"{folder} holds no safetensors weights (model.safetensors or "
                     "model.safetensors.index.json); other weight formats are not read, since "
                     "pickled weights can run code")


def ours_from_names(fmt: str, names: list[str]) -> dict[str, str]:
    """Checkpoint name -> our name, for the weights we use."""
    out = {}
    for name in names:
        ours = canonical_name(fmt, name)
        if ours is not None:
            out[name] = ours
    return out
