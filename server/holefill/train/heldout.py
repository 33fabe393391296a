"""The code the bundled models never trained on, cut into holes for evaluation.

The training split is by a hash of each file's key (`data.is_validation`), the same for the
FIM and the diffusion model (both use 2%), so the held-out standard-library files are known
without the corpus: those whose key ``stdlib/<path>`` hashes into the validation share. Cuts
follow the bench's random-span protocol (`holefill.datasets.random_spans`, 1-100
characters, 1-3 holes), seeded, restricted to those files.
"""

from __future__ import annotations

import random
from pathlib import Path

from holefill.datasets import Cut, cut, random_spans, stdlib_files

from .data import is_validation, stdlib_dir

VALID_PERCENT = 2.0


def heldout_stdlib_files(max_lines: int | None = None,
                         valid_percent: float = VALID_PERCENT) -> list[Path]:
    """Standard-library files `ast.parse` accepts that the models' training held out."""
    root = stdlib_dir()
    out = []
    for p in stdlib_files(max_lines):
        try:
            key = "stdlib/" + p.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if is_validation(key, valid_percent):
            out.append(p)
    return out


def heldout_python_cuts(n: int, holes: int, seed: int = 0, max_lines: int = 400,
                        min_len: int = 1, max_len: int = 100) -> list[Cut]:
    """n cuts with `holes` random spans each, from held-out standard-library files."""
    files = heldout_stdlib_files(max_lines)
    if not files:
        return []
    rng = random.Random(f"heldout:{seed}:{holes}")
    out: list[Cut] = []
    for _ in range(100 * n):
        if len(out) >= n:
            break
        path = rng.choice(files)
        text = path.read_text(encoding="utf-8")
        spans = random_spans(text, holes, rng, min_len, max_len)
        if spans is not None:
            out.append(cut(f"{path.name}#heldout{len(out)}", text, spans))
    return out
