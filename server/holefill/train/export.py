"""Export a trained model to the shipped folder: fp16 safetensors, config, tokenizer files."""

from __future__ import annotations

import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def export_model(model, tokenizer, tok_dir: Path, out: Path) -> None:
    import copy

    import torch
    from transformers import GenerationConfig

    out.mkdir(parents=True, exist_ok=True)
    half = copy.deepcopy(model).to(torch.float16).eval()
    half.save_pretrained(str(out), safe_serialization=True)
    ids = tokenizer.convert_tokens_to_ids(["<|endoftext|>", "<fim_pad>"])
    GenerationConfig(
        bos_token_id=ids[0], eos_token_id=ids[0], pad_token_id=ids[1], do_sample=False,
        max_new_tokens=64,
    ).save_pretrained(str(out))
    for name in TOKENIZER_FILES:
        src = tok_dir / name
        if src.exists():
            shutil.copyfile(src, out / name)
    for p in out.iterdir():
        if p.is_file():
            p.chmod(0o644)  # safetensors writes 0600; installed packages must be world-readable


def shipped_bytes(out: Path) -> int:
    return sum(p.stat().st_size for p in out.iterdir() if p.is_file())
