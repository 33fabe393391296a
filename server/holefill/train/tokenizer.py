"""Byte-level BPE tokenizer with the StarCoder FIM special tokens."""

from __future__ import annotations

import json
import random
from pathlib import Path

EOT = "<|endoftext|>"
FIM_PREFIX = "<fim_prefix>"
FIM_MIDDLE = "<fim_middle>"
FIM_SUFFIX = "<fim_suffix>"
FIM_PAD = "<fim_pad>"
# Same order as StarCoder's vocabulary: ids 0..4.
SPECIAL_TOKENS = [EOT, FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX, FIM_PAD]


def train_tokenizer(
    texts: list[str],
    out_dir: Path,
    *,
    vocab_size: int = 4096,
    sample_chars: int = 20_000_000,
    seed: int = 0,
    model_max_length: int = 1024,
):
    """Train on a seeded sample of ``texts``; save a ``PreTrainedTokenizerFast`` to ``out_dir``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(seed)
    order = list(range(len(texts)))
    rng.shuffle(order)
    sample: list[str] = []
    n = 0
    for i in order:
        sample.append(texts[i])
        n += len(texts[i])
        if n >= sample_chars:
            break

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(sample, trainer=trainer, length=len(sample))

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOT,
        eos_token=EOT,
        unk_token=EOT,
        pad_token=FIM_PAD,
        additional_special_tokens=[FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX, FIM_PAD],
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out_dir))
    _portable_config(out_dir / "tokenizer_config.json")
    return fast


def _portable_config(path: Path) -> None:
    """Write the tokenizer config in the form both transformers 4.x and 5.x read."""
    cfg = json.loads(path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    extra = cfg.pop("extra_special_tokens", None)
    if isinstance(extra, list):
        cfg["additional_special_tokens"] = extra
    cfg["added_tokens_decoder"] = {
        str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                 "single_word": False, "special": True}
        for i, t in enumerate(SPECIAL_TOKENS)
    }
    path.write_text(json.dumps(cfg, indent=2) + "\n")


def load_tokenizer(path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def special_ids(tokenizer) -> dict[str, int]:
    ids = {}
    for t in SPECIAL_TOKENS:
        enc = tokenizer.encode(t, add_special_tokens=False)
        if len(enc) != 1:
            raise ValueError(f"special token {t!r} is not a single id: {enc}")
        ids[t] = enc[0]
    return ids
