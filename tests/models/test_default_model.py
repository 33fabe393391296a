"""The bundled default model (shipped files, offline load, FIM generation); model discovery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from holefill.models import (
    default_model_info,
    default_model_path,
    detect_fim_tokens,
    find_local_fim_models,
    format_models,
)

FIM_TOKENS = ["<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>"]
MAX_BYTES = 25 * 1000 * 1000
DEFAULT = default_model_path()


def _has(mod: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(mod) is not None


needs_model_libs = pytest.mark.skipif(
    not (_has("torch") and _has("transformers")),
    reason="torch/transformers not installed (pip install -e '.[model]')",
)


# ------------------------------------------------------------------------------- shipped files


def test_shipped_files_present_and_small() -> None:
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "MODEL_CARD.md"):
        assert (DEFAULT / name).is_file(), name
    total = sum(p.stat().st_size for p in DEFAULT.iterdir() if p.is_file())
    assert total <= MAX_BYTES, f"{total} bytes"
    config = json.loads((DEFAULT / "config.json").read_text())
    assert config["model_type"] == "llama"
    assert config.get("torch_dtype", config.get("dtype")) == "float16"


def test_default_model_is_detected_as_fim_without_torch() -> None:
    info = default_model_info()
    assert info is not None and info.source == "bundled" and info.has_weights
    assert info.family == "starcoder"
    assert info.fim_tokens == {"prefix": "<fim_prefix>", "suffix": "<fim_suffix>",
                               "middle": "<fim_middle>"}
    assert info.fim_format in ("psm", "spm")  # from holefill.json, written with the card


def test_model_card_has_the_required_parts() -> None:
    card = (DEFAULT / "MODEL_CARD.md").read_text()
    for part in ("validation loss", "## Data", "## Samples", "## Reproduce", "## Limits",
                 "python -m holefill.train", "Qwen2.5-Coder-1.5B", "loss.png"):
        assert part in card, part
    assert (DEFAULT / "loss.png").is_file()


# ------------------------------------------------------------------ offline load and generation

_OFFLINE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM, AutoTokenizer
    path = sys.argv[1]
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    specials = {t: tok.encode(t, add_special_tokens=False) for t in %r}
    prompt = "<fim_prefix>def add(a, b):\\n    <fim_suffix>\\n\\nprint(add(1, 2))\\n<fim_middle>"
    enc = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=6, do_sample=False,
                             eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    new = out[0, enc["input_ids"].shape[1]:].tolist()
    print(json.dumps({
        "specials": specials, "eos": tok.eos_token_id, "prompt_ids": enc["input_ids"][0].tolist(),
        "new": new, "text": tok.decode(new, skip_special_tokens=True),
        "vocab": len(tok), "model_vocab": model.config.vocab_size,
        "dtype": str(next(model.parameters()).dtype),
    }))
    """
) % (FIM_TOKENS,)


@pytest.fixture(scope="module")
def offline_run() -> dict:
    if not (_has("torch") and _has("transformers")):
        pytest.skip("torch/transformers not installed (pip install -e '.[model]')")
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1",
               OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
               HF_HOME=str(Path("/nonexistent-holefill-hf-home")))
    proc = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT, str(DEFAULT)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_model_libs
def test_tokenizer_has_the_five_special_tokens_as_single_ids(offline_run: dict) -> None:
    ids = offline_run["specials"]
    assert all(len(v) == 1 for v in ids.values()), ids
    assert [ids[t][0] for t in FIM_TOKENS] == [0, 1, 2, 3, 4]
    assert offline_run["eos"] == 0
    assert offline_run["vocab"] == offline_run["model_vocab"]


@needs_model_libs
def test_fim_prompt_generates_offline(offline_run: dict) -> None:
    assert offline_run["prompt_ids"][0] == 1  # <fim_prefix> as one id, nothing prepended
    assert offline_run["prompt_ids"][-1] == 2  # <fim_middle>
    assert 1 <= len(offline_run["new"]) <= 6
    assert isinstance(offline_run["text"], str)


@needs_model_libs
def test_constrained_fill_with_default_model() -> None:
    """One constrained fill through holefill's decoding API, when that API is present."""
    import holefill

    completer_cls = getattr(holefill, "Completer", None)
    if completer_cls is None:
        pytest.skip("holefill.Completer (constrained decoding) is not available yet")
    import torch

    torch.set_num_threads(1)
    comp = completer_cls(model=str(DEFAULT), device="cpu")
    res = comp.fill(["def add(a, b):\n    return ", "\n"], language="python", constrained=True,
                    max_new_tokens=8, seed=0)
    assert len(res.fills) == 1
    import ast

    ast.parse("def add(a, b):\n    return " + res.fills[0] + "\n")


# -------------------------------------------------------------------------- local model discovery


def _cache_model(hub: Path, repo_id: str, files: dict[str, object], weights: bool = True) -> Path:
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    for name, content in files.items():
        (snap / name).write_text(json.dumps(content))
    if weights:
        (snap / "model.safetensors").write_bytes(b"\0" * 1000)
    return snap


def _added(tokens: list[str]) -> dict:
    return {str(i): {"content": t, "special": True} for i, t in enumerate(tokens)}


def test_find_local_fim_models_in_a_fake_cache(tmp_path: Path, monkeypatch) -> None:
    hub = tmp_path / "hub"
    _cache_model(hub, "bigcode/starcoder2-3b", {
        "tokenizer_config.json": {"added_tokens_decoder": _added(FIM_TOKENS)},
        "holefill.json": {"fim_format": "spm"},
    })
    _cache_model(hub, "Qwen/Qwen2.5-Coder-1.5B", {
        "tokenizer_config.json": {"model_max_length": 32768},
        "tokenizer.json": {"added_tokens": [{"id": 151659 + i, "content": t} for i, t in enumerate(
            ["<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>"])],
            "model": {"vocab": {}}},
    })
    _cache_model(hub, "deepseek-ai/deepseek-coder-1.3b-base", {
        "special_tokens_map.json": {"additional_special_tokens": [
            "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"]},
    }, weights=False)
    _cache_model(hub, "gpt2/plain", {
        "tokenizer_config.json": {"added_tokens_decoder": _added(["<|endoftext|>"])},
        "tokenizer.json": {"added_tokens": [{"id": 0, "content": "<|endoftext|>"}],
                           "model": {"vocab": {"a": 1}}},
    })
    (hub / "models--broken--nosnap").mkdir()
    (hub / "datasets--x--y").mkdir()

    found = find_local_fim_models(hub)
    by_name = {m.name: m for m in found}
    assert set(by_name) == {"bigcode/starcoder2-3b", "Qwen/Qwen2.5-Coder-1.5B",
                            "deepseek-ai/deepseek-coder-1.3b-base"}
    assert by_name["bigcode/starcoder2-3b"].family == "starcoder"
    assert by_name["bigcode/starcoder2-3b"].weights_bytes == 1000
    assert by_name["bigcode/starcoder2-3b"].fim_format == "spm"
    assert by_name["Qwen/Qwen2.5-Coder-1.5B"].fim_format == "psm"
    assert by_name["Qwen/Qwen2.5-Coder-1.5B"].fim_tokens["middle"] == "<|fim_middle|>"
    ds = by_name["deepseek-ai/deepseek-coder-1.3b-base"]
    assert ds.family == "deepseek-coder" and not ds.has_weights
    assert all(m.source == "hf-cache" for m in found)

    # the cache location comes from the environment like huggingface_hub's
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert [m.name for m in find_local_fim_models()] == [m.name for m in found]
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert len(find_local_fim_models()) == 3

    text = format_models()
    assert "holefill-default" in text and "bigcode/starcoder2-3b" in text
    assert "gpt2/plain" not in text
    assert "weights not downloaded" in text


def test_empty_or_missing_cache(tmp_path: Path) -> None:
    assert find_local_fim_models(tmp_path / "nope") == []
    assert find_local_fim_models(tmp_path) == []
    assert "no models with FIM tokens" in format_models(tmp_path)


def test_detect_fim_tokens_codellama_vocab(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text(json.dumps(
        {"added_tokens": [], "model": {"vocab": {"▁<PRE>": 32007, "▁<SUF>": 32008,
                                                 "▁<MID>": 32009, "▁<EOT>": 32010}}}))
    assert detect_fim_tokens(tmp_path) == (
        "codellama", {"prefix": "▁<PRE>", "suffix": "▁<SUF>", "middle": "▁<MID>"})
