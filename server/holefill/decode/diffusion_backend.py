"""Load a masked-diffusion model and its tokenizer offline, and run it on a whole sequence.

The model is read by our own code (`diffusion_models`, `diffusion_formats`), never by a
checkpoint's remote code, so LLaDA- and Dream-style folders load with `trust_remote_code` off.
A diffusion model has no KV cache to keep: every step runs the whole sequence, since any
position may change what every other position predicts.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from holefill.decode.backend import (
    LoadProgress,
    ModelSpec,
    choose_device,
    choose_dtype,
    default_threads,
    resolve_model,
)
from holefill.decode.diffusion_formats import (
    config_from,
    detect_format,
    ours_from_names,
    read_config_json,
    weight_files,
)
from holefill.errors import ModelError

if TYPE_CHECKING:
    import torch

    from holefill.decode.diffusion_models import BidirectionalLM

log = logging.getLogger(__name__)

SMALL_MODEL_PARAMS = 50_000_000
# The pre-tokenizer of Qwen2's byte-level BPE, which Dream's tokenizer (remote code) is.
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# Tokens that mean "nothing here" when a model writes them into a masked position: LLaDA
# pads answers with <|eot_id|> / <|endoftext|>, Dream and ours with their pad / end tokens.
EMPTY_TOKEN_NAMES = ("<|eot_id|>", "<|endoftext|>", "<fim_pad>")


def is_diffusion_model(model: str | None) -> bool:
    """Whether ``model`` (a folder or a cached hub id; None is the bundled FIM model) is a
    masked-diffusion model; False for anything that cannot be resolved (loading says why)."""
    if model is None:
        return False
    try:
        path, _ = resolve_model(model)
    except ModelError:
        return False
    return detect_format(path) is not None


def resolve_diffusion_model(model: str | None) -> tuple[Path, str]:
    """The folder of a diffusion model: the bundled one when None."""
    from holefill.models import diffusion_model_path

    if model is None:
        path = diffusion_model_path()
        if not (path / "config.json").is_file():
            raise ModelError(f"the bundled diffusion model is missing from {path}; train it "
                             "with `python -m holefill.train --objective diffusion` or pass a "
                             "diffusion model")
        return path, "bundled"
    return resolve_model(model)


def load_network(path: Path, fmt: str, device: str, dtype: torch.dtype) -> BidirectionalLM:
    """The network of a checkpoint folder, its weights renamed to ours; built on the meta
    device and filled by assignment, so a large model is never held twice in memory."""
    import torch
    from safetensors import safe_open

    from holefill.decode.diffusion_models import BidirectionalConfig, BidirectionalLM

    raw = read_config_json(path)
    if raw is None:
        raise ModelError(f"cannot read {path / 'config.json'}")
    state: dict[str, torch.Tensor] = {}
    for file in weight_files(path):
        with safe_open(str(file), framework="pt", device="cpu") as fh:
            names = ours_from_names(fmt, list(fh.keys()))
            for name, ours in names.items():
                state[ours] = fh.get_tensor(name).to(dtype)
    fields = config_from(fmt, raw)
    fields["qkv_bias"] = "layers.0.q.bias" in state
    if "head.weight" not in state:
        fields["tie_embeddings"] = True  # Dream-style configs may omit the flag
    try:
        cfg = BidirectionalConfig.from_dict(fields)
        with torch.device("meta"):
            net = BidirectionalLM(cfg)
        missing, unexpected = net.load_state_dict(state, strict=False, assign=True)
    except (ValueError, RuntimeError, KeyError, TypeError) as exc:
        raise ModelError(f"cannot build the {fmt} model in {path}: {exc}") from exc
    if missing or unexpected:
        raise ModelError(f"the {fmt} checkpoint in {path} does not match its config: "
                         f"missing {sorted(missing)[:6]}, unexpected {sorted(unexpected)[:6]}")
    try:
        return net.to(device).eval()
    except RuntimeError as exc:
        raise ModelError(f"cannot move the model to {device}: {exc}") from exc


def load_tokenizer(path: Path) -> Any:
    """The tokenizer of a checkpoint folder without its remote code: transformers' own class
    when the folder names one it knows, else a fast tokenizer built from tokenizer.json, else
    Qwen2's byte-level BPE from vocab.json and merges.txt (Dream's tokenizer is that)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    cfg = _json(path / "tokenizer_config.json")
    if cfg.get("tokenizer_class") == "PreTrainedTokenizerFast":
        # directly: AutoTokenizer would read config.json and warn about a model type it
        # does not know (ours, LLaDA's)
        try:
            return PreTrainedTokenizerFast.from_pretrained(str(path))
        except Exception as exc:
            log.info("cannot read the tokenizer of %s as given (%s); building it", path, exc)
    elif "auto_map" not in cfg:
        try:
            return AutoTokenizer.from_pretrained(str(path), trust_remote_code=False)
        except Exception as exc:  # fall through to our own construction
            log.info("AutoTokenizer cannot read %s (%s); building it", path, exc)
    specials = _special_tokens(path, cfg)
    if (path / "tokenizer.json").is_file():
        tok = PreTrainedTokenizerFast(tokenizer_file=str(path / "tokenizer.json"), **specials)
    elif (path / "vocab.json").is_file() and (path / "merges.txt").is_file():
        tok = _byte_bpe(path, specials)
    else:
        raise ModelError(f"{path} has no tokenizer holefill can read (tokenizer.json, or "
                         "vocab.json with merges.txt)")
    _add_declared_tokens(tok, cfg)
    return tok


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _special_tokens(path: Path, cfg: dict[str, Any]) -> dict[str, str]:
    out = {}
    stm = _json(path / "special_tokens_map.json")
    for key in ("bos_token", "eos_token", "pad_token", "unk_token", "mask_token"):
        value = cfg.get(key, stm.get(key))
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            out[key] = value
    return out


def _byte_bpe(path: Path, specials: dict[str, str]) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    bpe = models.BPE.from_file(str(path / "vocab.json"), str(path / "merges.txt"))
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, **specials)


def _add_declared_tokens(tok: Any, cfg: dict[str, Any]) -> None:
    """Add the special tokens tokenizer_config.json declares, in id order, and check that each
    lands on its declared id (a shifted id would make the model read other tokens)."""
    from tokenizers import AddedToken

    declared = cfg.get("added_tokens_decoder") or {}
    items = sorted(((int(i), t) for i, t in declared.items() if isinstance(t, dict)),
                   key=lambda x: x[0])
    for tid, info in items:
        content = info.get("content")
        if not isinstance(content, str):
            continue
        if tok.convert_tokens_to_ids(content) != tid:
            tok.add_tokens([AddedToken(content, special=bool(info.get("special", True)),
                                       normalized=False)], special_tokens=True)
        if tok.convert_tokens_to_ids(content) != tid:
            raise ModelError(f"the tokenizer puts {content!r} at id "
                             f"{tok.convert_tokens_to_ids(content)}, its config says {tid}")


class DiffusionBackend:
    """A loaded diffusion model and tokenizer, with the facts the diffusion loop needs."""

    def __init__(self, spec: ModelSpec, progress: LoadProgress | None = None) -> None:
        report = progress or (lambda stage, frac: None)
        report("resolve", None)
        self.spec = spec
        self.path, self.source = resolve_diffusion_model(spec.model)
        fmt = detect_format(self.path)
        if fmt is None:
            raise ModelError(f"{spec.model or self.path} is not a masked-diffusion model "
                             "holefill can read (LLaDA, Dream or holefill's own); use the "
                             "autoregressive decoder for it")
        self.format = fmt
        self.name = spec.model or "holefill-diffusion"
        self.device = choose_device(spec.device)
        self.dtype = choose_dtype(spec.dtype, self.device)
        t0 = time.perf_counter()
        report("tokenizer", 0.1)
        self.tokenizer = load_tokenizer(self.path)
        report("weights", 0.3)
        self.model = load_network(self.path, fmt, self.device, self.dtype)
        self._set_threads(spec.threads)
        cfg = self.model.config
        self.mask_id = cfg.mask_token_id
        self.context_length = cfg.max_positions
        self.vocab_size = cfg.vocab_size
        self.empty_ids = frozenset(self._empty_ids())
        # special tokens, the mask, and ids past the tokenizer (embedding rows padded to a
        # round size) never become text
        unused = set(range(len(self.tokenizer), self.vocab_size))
        self.banned_ids = frozenset(self._special_ids() - self.empty_ids | {self.mask_id}
                                    | unused)
        # Dream reads position 0 as the context of position 1: it needs a token there
        bos = self.tokenizer.bos_token_id
        self.lead_ids: list[int] = [int(bos)] if cfg.shift_logits and bos is not None else []
        self.tokenizer.model_max_length = 1 << 60
        self.model_s = 0.0
        self.forwards = 0
        self.load_s = time.perf_counter() - t0
        report("ready", 1.0)
        log.info("loaded diffusion model %s (%s, %s) on %s/%s in %.1f s", self.name, fmt,
                 self.source, self.device, self.dtype, self.load_s)

    def _set_threads(self, threads: int | None) -> None:
        import torch

        if threads is None:
            threads = 1 if self.model.n_params() < SMALL_MODEL_PARAMS else default_threads()
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    def _special_ids(self) -> set[int]:
        tok = self.tokenizer
        ids = {int(i) for i in tok.all_special_ids}
        for tid, added in tok.added_tokens_decoder.items():
            if getattr(added, "special", True):
                ids.add(int(tid))
        return {i for i in ids if i < self.vocab_size}

    def _empty_ids(self) -> set[int]:
        tok = self.tokenizer
        raw = read_config_json(self.path) or {}
        ids = {tok.eos_token_id, tok.pad_token_id, raw.get("eos_token_id"),
               raw.get("pad_token_id")}
        for name in EMPTY_TOKEN_NAMES:
            tid = tok.convert_tokens_to_ids(name)
            if isinstance(tid, int) and tid != tok.unk_token_id:
                ids.add(tid)
        return {int(i) for i in ids if isinstance(i, int) and 0 <= i < self.vocab_size
                and i != self.mask_id}

    # ------------------------------------------------------------------------------ text

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False,
                                         clean_up_tokenization_spaces=False))

    # ----------------------------------------------------------------------------- model

    def log_probs(self, ids: Sequence[int]) -> torch.Tensor:
        """Log-probabilities (length, vocab) of the token at every position of ``ids``, in
        float32 on the CPU."""
        import torch

        t0 = time.perf_counter()
        with torch.no_grad():
            x = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
            logits = self.model(x)[0].float()
            out = torch.log_softmax(logits, dim=-1).cpu()
        self.model_s += time.perf_counter() - t0
        self.forwards += 1
        return out
