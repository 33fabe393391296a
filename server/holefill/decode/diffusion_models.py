"""The transformer behind masked-diffusion language models: a Llama-shaped stack whose
attention sees the whole sequence (no causal mask), so every position is predicted from both
sides.

LLaDA, Dream (and Dream-Coder, DiffuCoder, DreamOn, which share Dream's code) and holefill's
own diffusion model are all this one network; they differ only in how their checkpoints name
the weights, which options their configs switch on (biases on q/k/v, tied embeddings), and
whether the logits at position i predict token i (LLaDA, ours) or token i + 1 (Dream: it was
initialised from an autoregressive model and keeps that offset). `holefill.decode.
diffusion_formats` reads each checkpoint into this module; nothing here knows any format.

Written from the published architecture descriptions (RMSNorm, rotary embeddings with the
half-split rotation, SwiGLU feed-forward, grouped-query attention), so that no model's remote
code ever runs. The tests compare its logits with transformers' own Llama and Qwen2 run with
a full (non-causal) attention mask.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class BidirectionalConfig:
    """The shape of the network and the facts decoding needs about its tokens."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    num_kv_heads: int = 0  # 0: as many as num_heads
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    max_positions: int = 2048  # the context the model was trained for
    tie_embeddings: bool = False
    qkv_bias: bool = False
    mask_token_id: int = 0
    # logits at position i predict token i + 1 (Dream's offset from its AR initialisation)
    shift_logits: bool = False
    input_scale: float = 1.0  # LLaDA's input_emb_norm multiplies embeddings by sqrt(d)
    logit_scale: float = 1.0  # LLaDA's scale_logits multiplies logits by 1/sqrt(d)

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    def validate(self) -> None:
        if self.hidden_size % self.num_heads or self.num_heads % self.kv_heads:
            raise ValueError(f"hidden size {self.hidden_size}, {self.num_heads} heads and "
                             f"{self.kv_heads} key/value heads do not divide evenly")
        if self.head_dim % 2:
            raise ValueError("rotary embeddings need an even head dimension")
        if not 0 <= self.mask_token_id < self.vocab_size:
            raise ValueError(f"mask token id {self.mask_token_id} is outside the vocabulary")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BidirectionalConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rotary_tables(length: int, dim: int, theta: float, device: torch.device,
                  dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (length, dim), frequencies repeated for the two halves."""
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim))
    angles = torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + turned * sin


class Block(nn.Module):
    def __init__(self, cfg: BidirectionalConfig) -> None:
        super().__init__()
        d, hd = cfg.hidden_size, cfg.head_dim
        self.heads, self.kv_heads, self.head_dim = cfg.num_heads, cfg.kv_heads, hd
        self.attn_norm = RMSNorm(d, cfg.rms_norm_eps)
        self.q = nn.Linear(d, cfg.num_heads * hd, bias=cfg.qkv_bias)
        self.k = nn.Linear(d, cfg.kv_heads * hd, bias=cfg.qkv_bias)
        self.v = nn.Linear(d, cfg.kv_heads * hd, bias=cfg.qkv_bias)
        self.o = nn.Linear(cfg.num_heads * hd, d, bias=False)
        self.mlp_norm = RMSNorm(d, cfg.rms_norm_eps)
        self.gate = nn.Linear(d, cfg.intermediate_size, bias=False)
        self.up = nn.Linear(d, cfg.intermediate_size, bias=False)
        self.down = nn.Linear(cfg.intermediate_size, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                keep: torch.Tensor | None) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=False)
        x = x + self.o(att.transpose(1, 2).reshape(b, t, -1))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class BidirectionalLM(nn.Module):
    """Token ids in, logits out at every position; every position attends to every other."""

    def __init__(self, cfg: BidirectionalConfig) -> None:
        super().__init__()
        cfg.validate()
        self.config = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.head = None if cfg.tie_embeddings else nn.Linear(cfg.hidden_size, cfg.vocab_size,
                                                              bias=False)

    def init_weights(self, std: float = 0.02) -> None:
        """Small normal weights (the output projections scaled down by depth, as GPT-2 does),
        unit norms: a random model that is neither saturated nor silent."""
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                scale = std / math.sqrt(2 * self.config.num_layers) \
                    if name.endswith(("o.weight", "down.weight")) else std
                nn.init.normal_(p, 0.0, scale)

    def features(self, ids: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """The final normed hidden states (batch, length, hidden). ``keep``: optional
        (batch, length) bool, False for padding that no position may attend to."""
        cfg = self.config
        x = self.embed(ids)
        if cfg.input_scale != 1.0:
            x = x * cfg.input_scale
        cos, sin = rotary_tables(ids.shape[1], cfg.head_dim, cfg.rope_theta, ids.device, x.dtype)
        mask = None if keep is None else keep[:, None, None, :]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.norm(x)

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """Logits of hidden states, position by position (no offset applied)."""
        logits = F.linear(h, self.embed.weight) if self.head is None else self.head(h)
        if self.config.logit_scale != 1.0:
            logits = logits * self.config.logit_scale
        return logits

    def forward(self, ids: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (batch, length, vocab) aligned so that row i is the distribution of token i
        (Dream's offset is undone here)."""
        logits = self.project(self.features(ids, keep))
        if self.config.shift_logits:  # position i predicted token i + 1: move each row right
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        return logits

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
