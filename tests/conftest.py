"""Fixtures shared by the decoding and server tests: a tiny random-weight FIM model built here.

A random model is the worst proposer there is, which is what the constrained loop must survive.
It is built from scratch (tokenizer trained in a second, Llama weights at random), saved to a
folder and loaded back through the same code path users take; nothing comes from a hub.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HAVE_MODEL_LIBS = all(importlib.util.find_spec(m) is not None
                      for m in ("torch", "transformers", "tokenizers"))

needs_model_libs = pytest.mark.skipif(
    not HAVE_MODEL_LIBS, reason="torch/transformers not installed (pip install -e '.[model]')")


def build_tiny_model(out: Path, *, seed: int = 0, vocab_size: int = 600,
                     context: int = 1024) -> Path:
    """A random Llama with a byte-level BPE tokenizer carrying the StarCoder FIM tokens."""
    import sysconfig

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from holefill.train.tokenizer import train_tokenizer

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [p.read_text(encoding="utf-8") for p in sorted(stdlib.glob("*.py"))[:40]]
    tok = train_tokenizer(texts, out, vocab_size=vocab_size, sample_chars=300_000, seed=seed,
                          model_max_length=context)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=context,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, tie_word_embeddings=True,
    )
    LlamaForCausalLM(config).save_pretrained(str(out))
    return out


@pytest.fixture(scope="session")
def token_ends():
    """Token ends of a text under the bundled model's tokenizer (where a replay of real text
    checks its prefixes, as decoding would)."""
    tokenizers = pytest.importorskip("tokenizers")
    from holefill.models import default_model_path

    tok = tokenizers.Tokenizer.from_file(str(default_model_path() / "tokenizer.json"))
    return lambda text: sorted({0, *(e for _, e in tok.encode(
        text, add_special_tokens=False).offsets)})


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HAVE_MODEL_LIBS:
        pytest.skip("torch/transformers not installed (pip install -e '.[model]')")
    import torch

    torch.set_num_threads(1)
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


def build_tiny_diffusion_model(out: Path, *, seed: int = 0, vocab_size: int = 600,
                               context: int = 512) -> Path:
    """A random masked-diffusion model in holefill's own format (seconds to build): the tiny
    byte-level BPE tokenizer above plus the `<|mask|>` token, a two-layer bidirectional
    transformer at random, saved to a folder that tests load through the code path users
    take."""
    import sysconfig

    import torch

    from holefill.decode.diffusion_models import BidirectionalConfig, BidirectionalLM
    from holefill.train.diffusion_loop import extended_tokenizer, mdm_ids, save_model
    from holefill.train.tokenizer import train_tokenizer

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [p.read_text(encoding="utf-8") for p in sorted(stdlib.glob("*.py"))[:40]]
    base = out / "base-tokenizer"
    train_tokenizer(texts, base, vocab_size=vocab_size, sample_chars=300_000, seed=seed,
                    model_max_length=context)
    tok = extended_tokenizer(base, out / "tokenizer")
    torch.manual_seed(seed)
    cfg = BidirectionalConfig(vocab_size=len(tok), hidden_size=32, num_layers=2, num_heads=2,
                              intermediate_size=64, max_positions=context,
                              tie_embeddings=True, mask_token_id=mdm_ids(tok).mask)
    net = BidirectionalLM(cfg)
    # weights larger than a trained model's: small ones give every masked position the same
    # near-uniform guess; these spread the proposals over the vocabulary
    net.init_weights(std=0.3)
    model_dir = out / "model"
    save_model(net, out / "tokenizer", model_dir)
    return model_dir


@pytest.fixture(scope="session")
def tiny_diffusion_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not HAVE_MODEL_LIBS:
        pytest.skip("torch/transformers not installed (pip install -e '.[model]')")
    import torch

    torch.set_num_threads(1)
    return build_tiny_diffusion_model(tmp_path_factory.mktemp("tiny-diffusion"))
