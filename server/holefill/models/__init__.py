"""Models holefill can use without a network: the bundled default and the local Hugging Face cache.

Nothing here imports torch or transformers: models are recognised from their tokenizer files alone
(``tokenizer_config.json``, ``special_tokens_map.json``, ``tokenizer.json``), so ``holefill models``
stays fast and works where the model extras are not installed.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from holefill.decode.templates import FAMILIES, match_family

DEFAULT_MODEL_NAME = "holefill-default"
DIFFUSION_MODEL_NAME = "holefill-diffusion"

# (family, prefix, suffix, middle): the FIM special tokens of each model family, from the one table
# in holefill.decode.templates. The middle token is None for families whose prompt ends right
# after the prefix (Codestral: [SUFFIX] s [PREFIX] p).
FIM_FAMILIES: tuple[tuple[str, str, str, str | None], ...] = tuple(
    (f.name, f.prefix, f.suffix, f.middle) for f in FAMILIES
)

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
TOKENIZER_FILES = ("tokenizer_config.json", "special_tokens_map.json", "tokenizer.json")


@dataclass(frozen=True)
class ModelInfo:
    """A model folder whose tokenizer carries FIM special tokens."""

    name: str
    path: Path
    source: str  # "bundled", "hf-cache" or "local"
    family: str
    fim_tokens: dict[str, str | None] = field(default_factory=dict)  # prefix / suffix / middle
    has_weights: bool = True
    weights_bytes: int = 0
    # "psm" (the usual) or "spm"; a model folder may say which suits it in holefill.json
    fim_format: str = "psm"


def default_model_path() -> Path:
    """The folder of the bundled default model (``holefill/models/default``)."""
    return Path(__file__).resolve().parent / "default"


def diffusion_model_path() -> Path:
    """The folder of the bundled masked-diffusion model (``holefill/models/diffusion``), the
    default of ``--decoder diffusion``."""
    return Path(__file__).resolve().parent / "diffusion"


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache, as ``huggingface_hub`` resolves it (without importing it)."""
    env = os.environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HUGGINGFACE_HUB_CACHE"):
        return Path(env["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _strings(obj, out: set[str], depth: int = 0) -> None:
    """Every string in a (small) JSON value: token contents wherever a config keeps them."""
    if depth > 6:
        return
    if isinstance(obj, str):
        if len(obj) < 64:
            out.add(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(k, str) and len(k) < 64 and k.startswith(("<", "▁<", "[")):
                out.add(k)
            _strings(v, out, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out, depth + 1)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _match_family(tokens: set[str]) -> tuple[str, dict[str, str | None]] | None:
    # the templates' rule, so that a folder and its loaded tokenizer agree (CodeGemma vs Qwen)
    family = match_family(tokens)
    if family is None:
        return None
    return family.name, {"prefix": family.prefix, "suffix": family.suffix, "middle": family.middle}


def detect_fim_tokens(folder: Path) -> tuple[str, dict[str, str | None]] | None:
    """The FIM family and tokens of the tokenizer in ``folder``, or None when it has none.

    Reads the small config files first; ``tokenizer.json`` only when they did not tell (its
    ``added_tokens``, then the vocabulary keys).
    """
    tokens: set[str] = set()
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        data = _read_json(folder / name)
        if data is not None:
            _strings(data, tokens)
    found = _match_family(tokens)
    if found:
        return found
    tj = folder / "tokenizer.json"
    if tj.is_file():
        data = _read_json(tj)
        if isinstance(data, dict):
            for t in data.get("added_tokens") or []:
                if isinstance(t, dict) and isinstance(t.get("content"), str):
                    tokens.add(t["content"])
            found = _match_family(tokens)
            if found:
                return found
            vocab = (data.get("model") or {}).get("vocab")
            if isinstance(vocab, dict):
                tokens.update(t for f in FAMILIES for t in f.tokens if t in vocab)
                found = _match_family(tokens)
    return found


def _weights(folder: Path) -> tuple[bool, int]:
    total, any_w = 0, False
    try:
        entries = list(folder.iterdir())
    except OSError:
        return False, 0
    for p in entries:
        if p.name.endswith(WEIGHT_SUFFIXES):
            any_w = True
            with contextlib.suppress(OSError):
                total += p.stat().st_size  # follows the cache's symlinks into blobs/
    return any_w, total


def inspect_model_dir(folder: Path, *, name: str | None = None, source: str = "local"):
    """A ``ModelInfo`` for a model folder with FIM tokens, or None when its tokenizer has none."""
    folder = Path(folder)
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        return None
    found = detect_fim_tokens(folder)
    if found is None:
        return None
    family, toks = found
    has_w, size = _weights(folder)
    hint = _read_json(folder / "holefill.json")
    fmt = hint.get("fim_format") if isinstance(hint, dict) else None
    return ModelInfo(
        name=name or folder.name, path=folder, source=source, family=family,
        fim_tokens=toks, has_weights=has_w, weights_bytes=size,
        fim_format=fmt if fmt in ("psm", "spm") else "psm",
    )


def _snapshot(repo_dir: Path) -> Path | None:
    snaps = repo_dir / "snapshots"
    if not snaps.is_dir():
        return None
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        try:
            rev = ref.read_text().strip()
        except OSError:
            rev = ""
        if rev and (snaps / rev).is_dir():
            return snaps / rev
    cands = sorted((p for p in snaps.iterdir() if p.is_dir()),
                   key=lambda p: (p.stat().st_mtime, p.name))
    return cands[-1] if cands else None


def find_local_fim_models(cache_dir: Path | str | None = None) -> list[ModelInfo]:
    """Models in the local Hugging Face hub cache whose tokenizer has FIM special tokens."""
    root = Path(cache_dir) if cache_dir is not None else hf_cache_dir()
    if not root.is_dir():
        return []
    out: list[ModelInfo] = []
    for repo_dir in sorted(root.glob("models--*")):
        snap = _snapshot(repo_dir)
        if snap is None:
            continue
        repo_id = repo_dir.name[len("models--"):].replace("--", "/")
        info = inspect_model_dir(snap, name=repo_id, source="hf-cache")
        if info is not None:
            out.append(info)
    return out


def default_model_info() -> ModelInfo | None:
    path = default_model_path()
    info = inspect_model_dir(path, name=DEFAULT_MODEL_NAME, source="bundled")
    return info


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n else "-"


def format_models(cache_dir: Path | str | None = None) -> str:
    """The text of ``holefill models``: the bundled default, then FIM models in the HF cache."""
    lines: list[str] = []
    d = default_model_info()
    if d is not None and d.has_weights:
        lines.append(f"* {d.name:<40} {d.family:<15} {_mb(d.weights_bytes):>10}  {d.path}"
                     "  (bundled default)")
    else:
        lines.append(f"* {DEFAULT_MODEL_NAME:<40} missing: {default_model_path()} has no model"
                     " (train it with `python -m holefill.train`)")
    diffusion = diffusion_model_path()
    if (diffusion / "model.safetensors").is_file():
        weights = (diffusion / "model.safetensors").stat().st_size
        lines.append(f"* {DIFFUSION_MODEL_NAME:<40} {'diffusion':<15} {_mb(weights):>10}  "
                     f"{diffusion}  (bundled, --decoder diffusion)")
    root = Path(cache_dir) if cache_dir is not None else hf_cache_dir()
    found = find_local_fim_models(root)
    if found:
        for m in found:
            note = "" if m.has_weights else "  (tokenizer only: weights not downloaded)"
            size = _mb(m.weights_bytes)
            lines.append(f"  {m.name:<40} {m.family:<15} {size:>10}  {m.path}{note}")
    else:
        lines.append(f"  (no models with FIM tokens in the Hugging Face cache {root})")
    return "\n".join(lines)


__all__ = [
    "DEFAULT_MODEL_NAME",
    "DIFFUSION_MODEL_NAME",
    "FIM_FAMILIES",
    "ModelInfo",
    "default_model_info",
    "default_model_path",
    "detect_fim_tokens",
    "diffusion_model_path",
    "find_local_fim_models",
    "format_models",
    "hf_cache_dir",
    "inspect_model_dir",
]
