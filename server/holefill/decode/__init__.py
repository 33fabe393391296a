"""Decoding: model backends, FIM prompt templates and the constrained loop.

Importing this package does not import torch; ``Completer`` and friends load on first use.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "Completer": "holefill.decode.completer",
    "FillResult": "holefill.decode.completer",
    "DecodeSettings": "holefill.decode.loop",
    "DiffusionSettings": "holefill.decode.diffusion",
    "Cancelled": "holefill.decode.loop",
    "NotCompletable": "holefill.decode.loop",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'holefill.decode' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
