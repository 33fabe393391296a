"""Model backend: load a causal LM and its tokenizer offline, run it with a reusable KV cache.

Any model transformers can load works, from a local folder or the local Hugging Face cache.
Nothing is downloaded here: a hub id that is not in the cache is an error that says how to get
it. Remote code runs only when the caller enables it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from holefill.decode.templates import FimTemplate, template_for_tokenizer
from holefill.errors import ModelError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

SMALL_MODEL_PARAMS = 50_000_000
# progress(stage, fraction or None): stages "resolve", "tokenizer", "weights", "device", "ready"
LoadProgress = Callable[[str, float | None], None]

_DTYPES = {
    "float32": "float32", "fp32": "float32", "float": "float32",
    "float16": "float16", "fp16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
}


def choose_device(device: str = "auto") -> str:
    """``auto`` picks CUDA, then Apple MPS, then the CPU; anything else is passed to torch."""
    import torch

    if device != "auto":
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ModelError(f"device {device!r} was asked for but torch sees no CUDA GPU")
        return device
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def choose_dtype(dtype: str, device: str) -> torch.dtype:
    """``auto``: bf16 on GPUs that support it, else fp16 on GPU; fp32 on the CPU (fp16 matmuls
    there are slow and some kernels are missing)."""
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float16 if device == "mps" else torch.float32
    name = _DTYPES.get(dtype.lower())
    if name is None:
        raise ModelError(f"unknown dtype {dtype!r}; use auto, float32, float16 or bfloat16")
    return getattr(torch, name)


def default_threads() -> int:
    """The cores this process may run on (not the machine's: containers and taskset limit it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def resolve_model(model: str | os.PathLike[str] | None) -> tuple[Path, str]:
    """The folder of ``model`` and its source: the bundled default when None, a local folder,
    or a snapshot in the local Hugging Face cache (never downloaded)."""
    from holefill.models import default_model_path

    if model is None:
        path = default_model_path()
        if not (path / "config.json").is_file():
            raise ModelError(f"the bundled default model is missing from {path}; "
                             "train it with `python -m holefill.train` or pass a model")
        return path, "bundled"
    text = os.fspath(model)
    path = Path(text).expanduser()
    if path.is_dir():
        return path, "local"
    if path.exists() or text.startswith((".", "/", "~")) or text.count("/") != 1:
        raise ModelError(f"model folder {text!r} does not exist (and it is not a Hugging Face "
                         "id of the form owner/name)")
    return _from_hf_cache(text), "hf-cache"


def _from_hf_cache(repo_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # transformers depends on it, so this is a broken install
        raise ModelError("huggingface_hub is not installed: pip install 'holefill[model]'") from exc
    from holefill.models import hf_cache_dir

    try:
        return Path(snapshot_download(repo_id, local_files_only=True,
                                      cache_dir=str(hf_cache_dir())))
    except Exception as exc:  # LocalEntryNotFoundError, or a malformed id
        raise ModelError(
            f"model {repo_id!r} is not a local folder and is not in the local Hugging Face cache; "
            f"on a machine with network run `hf download {repo_id}` (or pass the folder of a "
            f"downloaded model); `holefill models` lists what is available here"
        ) from exc


@dataclass(frozen=True)
class ModelSpec:
    """What to load and how; the defaults suit a laptop with or without a GPU."""

    model: str | None = None  # None: the bundled default model
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    threads: int | None = None
    template: FimTemplate | str | None = None  # override detection: family name or template
    fim_format: str | None = None  # "psm" / "spm"; None: what the model folder suggests


class ModelBackend:
    """A loaded model and tokenizer, with the facts the decoding loop needs about them."""

    def __init__(self, spec: ModelSpec, progress: LoadProgress | None = None) -> None:
        report = progress or (lambda stage, frac: None)
        self.spec = spec
        report("resolve", None)
        self.path, self.source = resolve_model(spec.model)
        self.name = spec.model or "holefill-default"
        self.device = choose_device(spec.device)
        self.dtype = choose_dtype(spec.dtype, self.device)
        t0 = time.perf_counter()
        report("tokenizer", 0.1)
        self.tokenizer = self._load_tokenizer()
        self.template = template_for_tokenizer(
            self.tokenizer, name=self.name, fim_format=spec.fim_format or self._fim_hint(),
            override=spec.template,
        )
        report("weights", 0.3)
        self.model = self._load_weights()
        self._set_threads(spec.threads)
        report("device", 0.9)
        self.load_s = time.perf_counter() - t0
        self.stop_ids = frozenset(self._stop_ids())
        import torch

        # an index tensor, built once: every step masks these logits
        self.banned_ids = torch.tensor(sorted(self._special_ids() - self.stop_ids),
                                       dtype=torch.long)
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        self.context_length = self._context_length()
        # prompts are cut to the context here; the tokenizer need not warn about long texts
        self.tokenizer.model_max_length = 1 << 60
        report("ready", 1.0)
        log.info("loaded %s (%s) on %s/%s in %.1f s, template %s", self.name, self.source,
                 self.device, self.dtype, self.load_s, self.template.family)

    # ---------------------------------------------------------------------------- loading

    def _set_threads(self, threads: int | None) -> None:
        """All the cores for a real model; one for a tiny one, where thread hand-offs cost
        more than they save (the bundled 6M model: 4.5 ms/token on 1 thread, 31 ms on 2)."""
        import torch

        if threads is None:
            params = sum(p.numel() for p in self.model.parameters())
            threads = 1 if params < SMALL_MODEL_PARAMS else default_threads()
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    def _load_tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        try:
            return AutoTokenizer.from_pretrained(
                str(self.path), trust_remote_code=self.spec.trust_remote_code)
        except Exception as exc:
            raise ModelError(f"cannot load the tokenizer of {self.name!r} from {self.path}: "
                             f"{_first_line(exc)}") from exc

    def _load_weights(self) -> Any:
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # the caller shows our own progress
        try:
            model: Any = AutoModelForCausalLM.from_pretrained(
                str(self.path), dtype=self.dtype, trust_remote_code=self.spec.trust_remote_code)
        except Exception as exc:
            hint = ("; it may need remote code (enable trust_remote_code only for models you "
                    "trust)" if "trust_remote_code" in str(exc) else "")
            raise ModelError(f"cannot load the model {self.name!r} from {self.path}: "
                             f"{_first_line(exc)}{hint}") from exc
        try:
            return model.to(self.device).eval()
        except RuntimeError as exc:  # out of memory on the device
            raise ModelError(f"cannot move {self.name!r} to {self.device}: "
                             f"{_first_line(exc)}") from exc

    def _fim_hint(self) -> str | None:
        from holefill.models import inspect_model_dir

        info = inspect_model_dir(self.path)
        return info.fim_format if info is not None else None

    def _stop_ids(self) -> set[int]:
        ids = {self._token_id(t) for t in self.template.stops}
        eos = self.tokenizer.eos_token_id
        if eos is not None:
            ids.add(int(eos))
        return {i for i in ids if i is not None}

    def _special_ids(self) -> set[int]:
        """Every id that is not plain text: special and added control tokens never become
        part of a filling."""
        ids = {int(i) for i in self.tokenizer.all_special_ids}
        for tid, added in self.tokenizer.added_tokens_decoder.items():
            if getattr(added, "special", True):
                ids.add(int(tid))
        return ids

    def _token_id(self, token: str) -> int | None:
        tid = self.tokenizer.convert_tokens_to_ids(token)
        return int(tid) if isinstance(tid, int) and tid != self.tokenizer.unk_token_id else None

    def _context_length(self) -> int:
        cfg = self.model.config
        for key in ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len"):
            value = getattr(cfg, key, None)
            if isinstance(value, int) and value > 0:
                return value
        tok_max = getattr(self.tokenizer, "model_max_length", None)
        return tok_max if isinstance(tok_max, int) and 0 < tok_max < 10**7 else 2048

    # ------------------------------------------------------------------------------- text

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False,
                                         clean_up_tokenization_spaces=False))

    def session(self) -> KVSession:
        return KVSession(self)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


class KVSession:
    """One sequence with its KV cache. A new prompt reuses the cached prefix it shares with the
    last one (typing along, the next hole of the same file), so only new tokens are computed."""

    def __init__(self, backend: ModelBackend) -> None:
        self.backend = backend
        self.ids: list[int] = []
        self.cache: Any = None
        self.model_s = 0.0
        self.forward_tokens = 0

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        """Log-probabilities of the next token after ``ids``."""
        ids = list(ids)
        if not ids:
            raise ValueError("the prompt is empty")
        keep = _common_prefix(self.ids, ids)
        keep = min(keep, len(ids) - 1)  # the last prompt token must run to give logits
        if self.cache is None or keep == 0:
            self._reset()
            keep = 0
        elif keep < len(self.ids):
            self.cache.crop(keep - len(self.ids))  # negative: drop that many tokens
            self.ids = self.ids[:keep]
        return self._forward(ids[keep:])

    def step(self, token: int) -> torch.Tensor:
        """Append one token; the log-probabilities of the next."""
        return self._forward([token])

    def _reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache()
        self.ids = []

    def _forward(self, new: list[int]) -> torch.Tensor:
        import torch

        backend = self.backend
        t0 = time.perf_counter()
        with torch.no_grad():
            x = torch.tensor([new], dtype=torch.long, device=backend.device)
            out = backend.model(input_ids=x, past_key_values=self.cache, use_cache=True)
            logits = out.logits[0, -1].float()
            logp = torch.log_softmax(logits, dim=-1).cpu()
        self.cache = out.past_key_values
        self.ids.extend(new)
        self.model_s += time.perf_counter() - t0
        self.forward_tokens += len(new)
        return logp


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Detokenizer:
    """Token ids -> text, one token at a time, as the tokenizer itself would decode them.

    Decoding a few tokens of context with each new one keeps SentencePiece's leading-space rules
    and byte-level BPE right. A token that ends inside a UTF-8 character yields no text yet: its
    bytes are held until the character completes.
    """

    CONTEXT = 4

    def __init__(self, backend: ModelBackend, context: Sequence[int]) -> None:
        self.backend = backend
        self.ids: list[int] = list(context[-self.CONTEXT:])
        self.read = len(self.ids)  # ids before this index have produced their text
        self.window = 0  # decoding starts here
        self._window_text = backend.decode(self.ids[self.window:self.read])

    def peek(self, token: int) -> tuple[str, bool]:
        """The text ``token`` would add, and whether that text is complete (no held bytes)."""
        text = self.backend.decode(self.ids[self.window:] + [token])
        if text.endswith("\ufffd"):
            return "", False
        if not text.startswith(self._window_text):
            # normalization changed the context's text; fall back to the token alone
            return self.backend.decode(self.ids[self.read:] + [token]), True
        return text[len(self._window_text):], True

    def push(self, token: int) -> str:
        """Append ``token``; the text it completes (empty while bytes are held)."""
        delta, complete = self.peek(token)
        self.ids.append(token)
        if complete:
            self.window = max(0, len(self.ids) - self.CONTEXT)
            self.read = len(self.ids)
            self._window_text = self.backend.decode(self.ids[self.window:self.read])
        return delta

    @property
    def holding(self) -> bool:
        return self.read < len(self.ids)

    @property
    def held(self) -> int:
        """Tokens whose bytes wait for the rest of a character (a character has <= 4 bytes)."""
        return len(self.ids) - self.read
