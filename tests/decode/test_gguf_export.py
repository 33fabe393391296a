"""`holefill models --export-gguf`: the bundled model as a GGUF file llama.cpp can load, with
the same tokenizer and the same weights (q/k permuted to llama.cpp's RoPE layout); models it
does not cover are refused, not written half right."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from holefill.cli import main
from holefill.errors import ModelError
from holefill.models import default_model_path

gguf = pytest.importorskip("gguf", reason="the GGUF export needs the gguf package")
np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gguf") / "default.gguf"
    assert main(["models", "--export-gguf", str(out)]) == 0
    return out


def _field(reader, key: str):
    f = reader.fields[key]
    return f.contents() if hasattr(f, "contents") else f.parts[f.data[0]]


def test_export_writes_the_tokenizer_as_llama_cpp_reads_it(exported: Path) -> None:
    reader = gguf.GGUFReader(str(exported))
    tok = json.loads((default_model_path() / "tokenizer.json").read_text("utf-8"))
    vocab = {**tok["model"]["vocab"], **{a["content"]: a["id"] for a in tok["added_tokens"]}}
    tokens = _field(reader, "tokenizer.ggml.tokens")
    assert len(tokens) == 4096
    assert all(tokens[i] == text for text, i in vocab.items())
    assert _field(reader, "tokenizer.ggml.model") == "gpt2"
    assert _field(reader, "tokenizer.ggml.pre") == "gpt-2"
    types = _field(reader, "tokenizer.ggml.token_type")
    assert [types[i] for i in range(5)] == [3] * 5  # the special tokens are CONTROL
    assert _field(reader, "tokenizer.ggml.fim_pre_token_id") == vocab["<fim_prefix>"]
    assert _field(reader, "tokenizer.ggml.add_bos_token") is False


def test_export_keeps_the_weights_with_q_and_k_in_llama_cpp_rope_order(exported: Path) -> None:
    from safetensors.numpy import load_file

    src = load_file(str(default_model_path() / "model.safetensors"))
    reader = gguf.GGUFReader(str(exported))
    got = {t.name: np.asarray(t.data) for t in reader.tensors}
    assert "output.weight" not in got  # tied to token_embd, as in the model
    np.testing.assert_array_equal(got["blk.0.ffn_up.weight"],
                                  src["model.layers.0.mlp.up_proj.weight"].astype(np.float32))
    q = src["model.layers.0.self_attn.q_proj.weight"].astype(np.float32)
    heads = 4
    back = (got["blk.0.attn_q.weight"].reshape(heads, q.shape[0] // heads // 2, 2, -1)
            .swapaxes(1, 2).reshape(q.shape))
    np.testing.assert_array_equal(back, q)
    assert not np.array_equal(got["blk.0.attn_q.weight"], q)


def test_export_refuses_other_architectures(tmp_path: Path) -> None:
    folder = tmp_path / "gpt2"
    shutil.copytree(default_model_path(), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    from holefill.decode.gguf_export import export_gguf

    with pytest.raises(ModelError, match="only Llama-architecture models.*convert_hf_to_gguf"):
        export_gguf(str(folder), tmp_path / "x.gguf")
