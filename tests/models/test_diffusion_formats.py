"""LLaDA- and Dream-style checkpoints, built here at toy size with random weights under the
published tensor names and configs (`diffusion_checkpoints.py`), read by holefill's own loader:
the logits equal those of transformers' Llama / Qwen2 with the same weights and bidirectional
attention, the tokenizers load without remote code, and the diffusion loop fills holes with
them end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from holefill.bench.oracles import python_valid  # noqa: E402
from holefill.decode import Completer  # noqa: E402
from holefill.decode.backend import ModelSpec  # noqa: E402
from holefill.decode.completer import resolve_decoder  # noqa: E402
from holefill.decode.diffusion_backend import DiffusionBackend  # noqa: E402
from holefill.errors import ModelError  # noqa: E402

from .diffusion_checkpoints import (  # noqa: E402
    DREAM_MASK,
    LLADA_MASK,
    reference_logits,
    write_dream,
    write_llada,
)

WRITERS = {"llada": write_llada, "dream": write_dream}
MASKS = {"llada": LLADA_MASK, "dream": DREAM_MASK}


@pytest.fixture(scope="module", params=["llada", "dream"])
def checkpoint(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[str, Path, dict]:
    torch.set_num_threads(1)
    family = request.param
    folder = tmp_path_factory.mktemp(family) / "model"
    tensors = WRITERS[family](folder)
    return family, folder, tensors


def _backend(folder: Path) -> DiffusionBackend:
    return DiffusionBackend(ModelSpec(model=str(folder), device="cpu", dtype="float32",
                                      threads=1))


def test_the_folder_is_read_by_our_code_and_its_logits_match_the_reference(
        checkpoint: tuple[str, Path, dict]) -> None:
    family, folder, tensors = checkpoint
    assert "auto_map" in json.loads((folder / "config.json").read_text())  # remote code named
    backend = _backend(folder)
    assert backend.format == family
    assert backend.mask_id == backend.tokenizer.convert_tokens_to_ids(MASKS[family])
    ids = backend.lead_ids + backend.encode("def f(x):\n    return x + 1\n")
    ids[len(ids) // 2] = backend.mask_id
    ours = backend.model(torch.tensor([ids]))[0].float()
    ref = reference_logits(family, folder, tensors, ids)
    assert ours.shape == ref.shape
    assert torch.allclose(ours, ref, atol=1e-4, rtol=1e-4), (ours - ref).abs().max()


def test_the_tokenizer_round_trips_code_without_remote_code(
        checkpoint: tuple[str, Path, dict]) -> None:
    _, folder, _ = checkpoint
    backend = _backend(folder)
    text = "for (int i = 0; i < n; ++i) {\n\tx += 'a';  // é\n}\n"
    assert backend.decode(backend.encode(text)) == text


def test_the_loop_fills_holes_with_the_published_layouts(
        checkpoint: tuple[str, Path, dict]) -> None:
    _, folder, _ = checkpoint
    assert resolve_decoder("auto", str(folder)) == "diffusion"
    completer = Completer(model=folder, device="cpu", threads=1)
    chunks = ["def f(x):\n    return (", ")\n\ny = [", "]\n"]
    res = completer.fill(chunks, "python", max_new_tokens=8, hole_tokens=4, top_k=4,
                         max_rejections=30)
    assert res.verified and len(res.fills) == 2
    assert python_valid(res.text(chunks))


def test_unsupported_options_are_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "llada"
    write_llada(folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["alibi"] = True
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelError, match="alibi"):
        _backend(folder)
