"""The tiny GGUF model the llama-server tests run: deterministic per seed, with its hand-set wiring."""

from __future__ import annotations

import pytest

from tests.support.llama_backend.model import (
    CHAT_TEMPLATE,
    N_EMBD,
    N_LAYERS,
    TOOL_CALL_START,
    TOOLS_MARKER,
    write_tiny_model,
)

gguf = pytest.importorskip("gguf")

LAYER_TENSORS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")


def test_a_seed_always_writes_the_same_file(tmp_path):
    first = write_tiny_model(tmp_path / "a.gguf", seed=3).read_bytes()
    again = write_tiny_model(tmp_path / "b.gguf", seed=3).read_bytes()
    other = write_tiny_model(tmp_path / "c.gguf", seed=4).read_bytes()
    assert first == again != other
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_file_holds_the_tokenizer_template_and_tensors_in_order(tmp_path):
    reader = gguf.GGUFReader(write_tiny_model(tmp_path / "m.gguf"))
    names = [tensor.name for tensor in reader.tensors]
    layers = [f"blk.{index}.{name}.weight" for index in range(N_LAYERS) for name in LAYER_TENSORS]
    assert names == ["token_embd.weight", *layers, "output_norm.weight", "output.weight"]
    template = reader.fields["tokenizer.chat_template"]
    assert bytes(template.parts[template.data[0]]).decode() == CHAT_TEMPLATE
    tokens = reader.fields["tokenizer.ggml.tokens"]
    vocabulary = [bytes(tokens.parts[index]).decode() for index in tokens.data]
    assert {TOOLS_MARKER, TOOL_CALL_START, "<|im_end|>"} <= set(vocabulary)


def test_the_tool_call_token_is_banned_unless_tools_are_offered(tmp_path):
    reader = gguf.GGUFReader(write_tiny_model(tmp_path / "m.gguf"))
    tokens = reader.fields["tokenizer.ggml.tokens"]
    vocabulary = [bytes(tokens.parts[index]).decode() for index in tokens.data]
    output = next(tensor for tensor in reader.tensors if tensor.name == "output.weight").data
    embeddings = next(tensor for tensor in reader.tensors if tensor.name == "token_embd.weight").data
    assert output.shape == embeddings.shape == (len(vocabulary), N_EMBD)
    call = vocabulary.index(TOOL_CALL_START)
    assert output[call, 0] == -20.0 and output[call, 2] > 0 > output[call, 4]
    assert embeddings[vocabulary.index(TOOLS_MARKER), 1] == 3.0
