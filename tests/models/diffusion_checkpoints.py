"""Random-weight checkpoints laid out as the published LLaDA and Dream models are on the hub,
scaled down: their config.json keys, their weight names (from the public modeling code:
LLaDA's OLMo-style `model.transformer.blocks.N.q_proj`, ..., Dream's Qwen2-style
`model.layers.N.self_attn.q_proj`, ...), their tokenizer files (LLaDA: tokenizer.json;
Dream: vocab.json + merges.txt with a tokenizer_config.json that names remote code), and an
`auto_map` pointing at modeling files that are not there, so that nothing but holefill's own
loader can read them.

The weights are drawn here, per published tensor name, with the shapes the published code
gives them; the same tensors are handed to transformers' Llama / Qwen2 (the architectures
the two families are built on) as the reference the tests compare logits with.
"""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path

import torch

LLADA_MASK = "<|mdm_mask|>"
DREAM_MASK = "<|mask|>"
DREAM_BOS = "<|beginoftext|>"


def _texts() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return [p.read_text(encoding="utf-8") for p in sorted(stdlib.glob("*.py"))[:40]]


def _tokenizer(out: Path, extra: list[str]):
    """The tiny byte-level BPE of the tests with `extra` special tokens appended."""
    from transformers import AutoTokenizer

    from holefill.train.tokenizer import train_tokenizer

    base = out.parent / (out.name + "-base-tokenizer")
    train_tokenizer(_texts(), base, vocab_size=600, sample_chars=300_000, seed=0)
    tok = AutoTokenizer.from_pretrained(str(base))
    tok.add_special_tokens({"additional_special_tokens": extra})
    return tok


def _save(tensors: dict[str, torch.Tensor], out: Path) -> None:
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / "model.safetensors"),
              metadata={"format": "pt"})


def write_llada(out: Path, *, seed: int = 0, d: int = 32, layers: int = 2, heads: int = 4,
                ffn: int = 64) -> dict[str, torch.Tensor]:
    """A LLaDA-8B-shaped folder at toy size; returns the tensors under their LLaDA names."""
    out.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(out, [LLADA_MASK])
    vocab = 640  # padded past the tokenizer, as LLaDA's embedding_size is
    mask = tok.convert_tokens_to_ids(LLADA_MASK)
    tok.save_pretrained(str(out))
    cfg = json.loads((out / "tokenizer_config.json").read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    (out / "tokenizer_config.json").write_text(json.dumps(cfg))
    config = {
        "activation_type": "silu", "alibi": False, "architectures": ["LLaDAModelLM"],
        "attention_layer_norm": False, "auto_map": {
            "AutoConfig": "configuration_llada.LLaDAConfig",
            "AutoModel": "modeling_llada.LLaDAModelLM",
            "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM"},
        "bias_for_layer_norm": False, "block_group_size": 1, "block_type": "llama",
        "d_model": d, "embedding_size": vocab, "eos_token_id": tok.eos_token_id,
        "include_bias": False, "include_qkv_bias": False, "input_emb_norm": False,
        "layer_norm_type": "rms", "layer_norm_with_affine": True, "mask_token_id": mask,
        "max_sequence_length": 512, "mlp_hidden_size": ffn, "mlp_ratio": 4,
        "model_type": "llada", "n_heads": heads, "n_kv_heads": heads, "n_layers": layers,
        "pad_token_id": tok.eos_token_id, "rms_norm_eps": 1e-5, "rope": True,
        "rope_full_precision": True, "rope_theta": 500000.0, "scale_logits": False,
        "vocab_size": vocab, "weight_tying": False,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    g = torch.Generator().manual_seed(seed)

    def w(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.3

    t = {"model.transformer.wte.weight": w(vocab, d),
         "model.transformer.ln_f.weight": 1 + 0.1 * w(d),
         "model.transformer.ff_out.weight": w(vocab, d)}
    for i in range(layers):
        b = f"model.transformer.blocks.{i}."
        t |= {b + "attn_norm.weight": 1 + 0.1 * w(d), b + "ff_norm.weight": 1 + 0.1 * w(d),
              b + "q_proj.weight": w(d, d), b + "k_proj.weight": w(d, d),
              b + "v_proj.weight": w(d, d), b + "attn_out.weight": w(d, d),
              b + "ff_proj.weight": w(ffn, d), b + "up_proj.weight": w(ffn, d),
              b + "ff_out.weight": w(d, ffn)}
    _save(t, out)
    return t


def write_dream(out: Path, *, seed: int = 0, d: int = 32, layers: int = 2, heads: int = 4,
                kv_heads: int = 2, ffn: int = 64) -> dict[str, torch.Tensor]:
    """A Dream-7B-shaped folder at toy size (grouped-query attention, q/k/v biases, logits
    offset by one); returns the tensors under their Dream (= Qwen2) names."""
    out.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(out, [DREAM_BOS, DREAM_MASK])
    tok.backend_tokenizer.model.save(str(out))  # vocab.json + merges.txt
    n_vocab = len(json.loads((out / "vocab.json").read_text()))
    added = {str(n_vocab): DREAM_BOS, str(n_vocab + 1): DREAM_MASK}
    eos = tok.eos_token
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "DreamTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]},
        "bos_token": DREAM_BOS, "eos_token": eos, "pad_token": eos, "mask_token": DREAM_MASK,
        "added_tokens_decoder": {i: {"content": c, "special": True, "lstrip": False,
                                     "rstrip": False, "normalized": False,
                                     "single_word": False} for i, c in added.items()},
    }))
    vocab = n_vocab + 2
    config = {
        "architectures": ["DreamModel"], "auto_map": {
            "AutoConfig": "configuration_dream.DreamConfig",
            "AutoModel": "modeling_dream.DreamModel"},
        "model_type": "Dream", "hidden_act": "silu", "hidden_size": d,
        "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": None,
        "tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": None,
        "vocab_size": vocab, "mask_token_id": n_vocab + 1, "bos_token_id": n_vocab,
        "eos_token_id": tok.eos_token_id, "pad_token_id": tok.eos_token_id,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    g = torch.Generator().manual_seed(seed)

    def w(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.3

    hd = d // heads
    t = {"model.embed_tokens.weight": w(vocab, d), "model.norm.weight": 1 + 0.1 * w(d),
         "lm_head.weight": w(vocab, d)}
    for i in range(layers):
        b = f"model.layers.{i}."
        t |= {b + "input_layernorm.weight": 1 + 0.1 * w(d),
              b + "post_attention_layernorm.weight": 1 + 0.1 * w(d),
              b + "self_attn.q_proj.weight": w(heads * hd, d),
              b + "self_attn.q_proj.bias": w(heads * hd),
              b + "self_attn.k_proj.weight": w(kv_heads * hd, d),
              b + "self_attn.k_proj.bias": w(kv_heads * hd),
              b + "self_attn.v_proj.weight": w(kv_heads * hd, d),
              b + "self_attn.v_proj.bias": w(kv_heads * hd),
              b + "self_attn.o_proj.weight": w(d, heads * hd),
              b + "mlp.gate_proj.weight": w(ffn, d), b + "mlp.up_proj.weight": w(ffn, d),
              b + "mlp.down_proj.weight": w(d, ffn)}
    _save(t, out)
    return t


# LLaDA's names -> transformers' Llama names (the same network, run causally there)
LLADA_TO_LLAMA = {
    "attn_norm": "input_layernorm", "ff_norm": "post_attention_layernorm",
    "q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj", "v_proj": "self_attn.v_proj",
    "attn_out": "self_attn.o_proj", "ff_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj",
    "ff_out": "mlp.down_proj",
}


def llada_as_llama(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {"model.embed_tokens.weight": tensors["model.transformer.wte.weight"],
           "model.norm.weight": tensors["model.transformer.ln_f.weight"],
           "lm_head.weight": tensors["model.transformer.ff_out.weight"]}
    for name, value in tensors.items():
        parts = name.split(".")
        if parts[:3] == ["model", "transformer", "blocks"]:
            module = LLADA_TO_LLAMA[parts[4]]
            out[f"model.layers.{parts[3]}.{module}.{parts[5]}"] = value
    return out


def reference_logits(family: str, folder: Path, tensors: dict[str, torch.Tensor],
                     ids: list[int]) -> torch.Tensor:
    """transformers' Llama (LLaDA) or Qwen2 (Dream) with these weights, attention made
    bidirectional by an all-zero additive 4-D mask; Dream's offset applied as its published
    sampler applies it."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    cfg = json.loads((folder / "config.json").read_text())
    model: torch.nn.Module
    if family == "llada":
        config = LlamaConfig(
            vocab_size=cfg["vocab_size"], hidden_size=cfg["d_model"],
            intermediate_size=cfg["mlp_hidden_size"], num_hidden_layers=cfg["n_layers"],
            num_attention_heads=cfg["n_heads"], num_key_value_heads=cfg["n_kv_heads"],
            rms_norm_eps=cfg["rms_norm_eps"], rope_theta=cfg["rope_theta"],
            max_position_embeddings=cfg["max_sequence_length"], tie_word_embeddings=False)
        model = LlamaForCausalLM(config)
        state = llada_as_llama(tensors)
    else:
        config = Qwen2Config(
            vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
            intermediate_size=cfg["intermediate_size"],
            num_hidden_layers=cfg["num_hidden_layers"],
            num_attention_heads=cfg["num_attention_heads"],
            num_key_value_heads=cfg["num_key_value_heads"], rms_norm_eps=cfg["rms_norm_eps"],
            rope_theta=cfg["rope_theta"], max_position_embeddings=4096,
            tie_word_embeddings=False)
        model = Qwen2ForCausalLM(config)
        state = tensors
    config._attn_implementation = "eager"
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not [m for m in missing if "rotary" not in m] and not unexpected, (missing,
                                                                               unexpected)
    model.eval()
    x = torch.tensor([ids])
    full = torch.zeros(1, 1, len(ids), len(ids))  # additive: nothing masked, both directions
    with torch.no_grad():
        logits = model(input_ids=x, attention_mask=full).logits[0]
    if family == "dream":
        logits = torch.cat([logits[:1], logits[:-1]], dim=0)
    return logits
