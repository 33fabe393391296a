"""Training of holefill's bundled default FIM model (``python -m holefill.train --help``).

Needs the ``model`` and ``train`` extras (torch, transformers, tokenizers, safetensors,
matplotlib); nothing here is imported by the language server itself.
"""
