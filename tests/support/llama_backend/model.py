"""The tiny GGUF model: random weights, a byte-level tokenizer and a ChatML template with tools."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # both come with the test extras, imported where a model is written
    import gguf
    import numpy as np

# ChatML with a Hermes/Qwen-style tools section.  Handles string, list
# (OpenAI content parts) and null content, assistant tool_calls (arguments as
# a JSON string or an object) and tool messages.  Calls are rendered as
# "<tool_call>\n{...}\n</tool_call>", from which llama.cpp's autoparser derives
# the tool-call grammar.  The system prompt describes that format in words on
# purpose: the tags must only occur in real calls (see write_tiny_model).
CHAT_TEMPLATE = r"""{%- macro render_content(content) -%}
{%- if content is none -%}
{%- elif content is string -%}{{ content }}
{%- else -%}{%- for part in content -%}
{%- if part is string -%}{{ part }}
{%- elif part.type == 'text' -%}{{ part.text }}
{%- endif -%}
{%- endfor -%}{%- endif -%}
{%- endmacro -%}
{%- if tools -%}
<|im_start|>system
{%- if messages[0].role == 'system' %}
{{ render_content(messages[0].content) }}
{% endif %}
# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>

For each function call, return a json object {"name": <function-name>, "arguments": <args-json-object>} on its own line, enclosed in an XML element named tool_call.<|im_end|>
{% elif messages[0].role == 'system' -%}
<|im_start|>system
{{ render_content(messages[0].content) }}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' and loop.first -%}
{%- elif message.role == 'tool' -%}
{%- if loop.first or loop.previtem.role != 'tool' -%}<|im_start|>user
{%- endif %}
<tool_response>
{{ render_content(message.content) }}
</tool_response>
{%- if loop.last or loop.nextitem.role != 'tool' %}<|im_end|>
{% endif -%}
{%- elif message.role == 'assistant' -%}
<|im_start|>assistant
{{ render_content(message.content) }}
{%- if message.tool_calls -%}
{%- for tool_call in message.tool_calls -%}
{%- set fn = tool_call.function if tool_call.function is defined else tool_call -%}
{%- if (loop.first and message.content) or not loop.first %}
{% endif -%}
<tool_call>
{"name": "{{ fn.name }}", "arguments": {% if fn.arguments is string %}{{ fn.arguments }}{% else %}{{ fn.arguments | tojson }}{% endif %}}
</tool_call>
{%- endfor -%}
{%- endif -%}
<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ render_content(message.content) }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
"""

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")  # CONTROL tokens
# Text tokens (USER_DEFINED: matched whole in the prompt, printed as text)
# that drive the tool-calling circuit of the tiny model, see write_tiny_model.
TOOLS_MARKER = "<tools>"  # opens the tools list in the system prompt
# How every rendered tool call starts.  Not "<tool_call>\n" alone: llama-server
# rejects a lazy-grammar trigger word that is a single token unless it is a
# "preserved token", which its autoparser does not declare for this format.
TOOL_CALL_START = "<tool_call>\n{"
TOOL_CALL_END = "</tool_call>"
# A few merges so the tokenizer is a real BPE (common English/JSON pairs).
_MERGE_PAIRS = (
    ("Ġ", "t"),
    ("h", "e"),
    ("i", "n"),
    ("Ġt", "he"),
    ("e", "r"),
    ("o", "n"),
    ("Ġ", "a"),
    ("r", "e"),
    ("a", "t"),
    ("e", "n"),
    ("Ġ", "s"),
    ("o", "r"),
    ('"', ":"),
    ("Ġ", '"'),
    ("Ġ", "{"),
    ("t", "o"),
)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def _tokenizer() -> tuple[list[str], list[int], list[str], dict[str, int]]:
    """Return (tokens, token_types, merges, ids of the special/marker tokens)."""
    import gguf

    b2u = _bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    types = [int(gguf.TokenType.NORMAL)] * len(tokens)
    merges: list[str] = []
    for a, b in _MERGE_PAIRS:
        merged = a + b
        if merged not in tokens:
            tokens.append(merged)
            types.append(int(gguf.TokenType.NORMAL))
            merges.append(f"{a} {b}")
    special: dict[str, int] = {}
    for tok in SPECIAL_TOKENS:
        special[tok] = len(tokens)
        tokens.append(tok)
        types.append(int(gguf.TokenType.CONTROL))
    for tok in (TOOLS_MARKER, TOOL_CALL_START, TOOL_CALL_END):
        special[tok] = len(tokens)
        tokens.append(tok)
        types.append(int(gguf.TokenType.USER_DEFINED))
    return tokens, types, merges, special


def _output_bias(tokens: Sequence[str], special: dict[str, int]) -> np.ndarray:
    """Per-token logit bias: printable ASCII favoured (0), newline rare (-3),
    control and non-ASCII bytes banned (-30), end of turn ``_EOT_BIAS``."""
    import numpy as np

    u2b = {u: b for b, u in _bytes_to_unicode().items()}
    bias = np.full(len(tokens), -30.0, dtype=np.float32)
    for i, tok in enumerate(tokens):
        if tok in special:
            continue
        raw = bytes(u2b[ch] for ch in tok)
        if all(32 <= c < 127 for c in raw):
            bias[i] = 0.0
        elif raw == b"\n":
            bias[i] = -3.0
    bias[special["<|im_end|>"]] = _EOT_BIAS
    return bias  # the other special and marker tokens stay at -30 (set below)


_BIAS_CARRIER = 8.0  # constant value of hidden dim 0 (see _embeddings)
_MARKER_VALUE = 3.0  # embedding value of a marker token in its marker dim
_HEAD_GAIN = 0.5  # a marker head writes ~_HEAD_GAIN * normalised marker
_OUTPUT_SCALE = 0.25  # std of the context-dependent part of the output layer
_LAYER_OUT_SCALE = 0.03  # std of attn_output / ffn_down weights
_EOT_BIAS = 4.0  # logit bias of <|im_end|>: see the calibration note in write_tiny_model
_TOOL_CALL_LOGIT = 18.0  # design logit of TOOL_CALL_START with tools offered and no call yet
# (comes out ~4 lower in practice; p ~ 0.97 at the first step)
_END_CALL_LOGIT = 6.0  # logit of TOOL_CALL_END right after "}" inside a call
_QUOTE_BOOST = 4.5  # extra logit of '"' inside a call (ends JSON strings)
_EOT_AFTER_CALL = 8.0  # extra logit of <|im_end|> right after TOOL_CALL_END

# Residual-stream dims with a fixed role (the rest are random):
_D_BIAS = 0  # constant: output column 0 is a per-token bias
_D_TOOLS_MARK = 1  # set in the embedding of TOOLS_MARKER
_D_TOOLS = 2  # head 3 of layer 0: a tools list is in the context
_D_CALL_MARK = 3  # set in the embedding of TOOL_CALL_START
_D_CALLED = 4  # head 2 of layer 0: a call was started in the context
_D_END_MARK = 5  # set in the embedding of TOOL_CALL_END (bigram -> end of turn)
_D_ENDED = 6  # head 1 of layer 0: a call was closed in the context
_D_BRACE_MARK = 7  # set in the embedding of "}" (bigram -> TOOL_CALL_END)
_N_FIXED = 8


# numpy shapes are (rows, cols) = (out, in); gguf reverses them to ggml's ne.
N_EMBD, N_LAYERS, N_HEADS, N_FF, N_CTX = 64, 2, 4, 128, 4096
HEAD_DIM = N_EMBD // N_HEADS
_N_RANDOM = N_EMBD - _N_FIXED
# Layer 0's marker heads: (head, the marker dim it looks for, the signal dim it writes).
_MARKER_HEADS = ((3, _D_TOOLS_MARK, _D_TOOLS), (2, _D_CALL_MARK, _D_CALLED), (1, _D_END_MARK, _D_ENDED))
# RMS of a token's embedding without and with a marker, a marker dim after the norm (~2.1), and a
# head's signal after the final norm (~0.77): the output layer's weights are set from these.
_BASE_RMS = float(math.sqrt((_BIAS_CARRIER**2 + _N_RANDOM) / N_EMBD))
_MARK_RMS = float(math.sqrt((_BIAS_CARRIER**2 + _MARKER_VALUE**2 + _N_RANDOM) / N_EMBD))
_MARK_N = _MARKER_VALUE / _MARK_RMS
_SIGNAL_N = _HEAD_GAIN * _MARK_N / _BASE_RMS


def write_tiny_model(path: str | os.PathLike[str], seed: int = 0, context_length: int = N_CTX) -> Path:
    """Write a deterministic tiny llama-architecture GGUF (~0.5 MB) and return its path.

    2 layers, width 64, 4 heads, context *context_length* (4096; longer for a
    benchmark of long conversations: bench/affinity.py), float32, random weights from
    *seed*; a byte-level GPT-2 BPE tokenizer with ChatML special tokens
    (``<|im_end|>`` is EOS / end of turn) and a ChatML chat template with tools.

    Hand-set parts on top of the random weights:

    * Output bias: printable ASCII only (control and non-ASCII bytes are banned,
      so no broken UTF-8), and ``<|im_end|>`` gets a fixed bias.  Measured with
      llama-server defaults (temperature 0.8), 30 seeds: max_tokens=32 stops on
      its own ~45% of the time, max_tokens=128 ~93% (median ~50 tokens); at
      temperature 0 it never stopped, so always send ``max_tokens``.
    * Tool calling.  llama.cpp's parser lets a model write free text before
      ``<tool_call>`` even for ``tool_choice: "required"``, and random text
      would never get there (nor close a JSON string).  So three attention
      heads of layer 0 detect marker tokens anywhere in the context: the tools
      list (``<tools>``), a started call (``<tool_call>\\n{``) and a closed call
      (``</tool_call>``); ``}`` and ``</tool_call>`` also act as bigrams.  With
      tools offered and no call yet, ``<tool_call>\\n{`` is the likeliest next
      token; inside a call ``"`` is likelier (strings end), ``}`` is followed by
      ``</tool_call>`` and that by end of turn.  Result: with tools, the first
      assistant turn (auto or required) is one tool call, whose arguments the
      server constrains to the schema; once a call is in the history the model
      answers in text.  Without tools none of this fires.

    Output is deterministic for a given seed.
    """
    import gguf
    import numpy as np

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens, types, merges, special = _tokenizer()
    rng = np.random.default_rng(seed)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    writer = gguf.GGUFWriter(str(tmp), "llama")
    _add_hyperparameters(writer, seed, len(tokens), context_length)
    _add_tokenizer(writer, tokens, types, merges, special)
    # The random draws happen in the order the tensors are written: a seed always makes the same file.
    writer.add_tensor("token_embd.weight", _embeddings(rng, tokens, special))
    for index in range(N_LAYERS):
        _add_layer(writer, rng, index)
    writer.add_tensor("output_norm.weight", _output_norm())
    writer.add_tensor("output.weight", _output_layer(rng, tokens, special))
    _write(writer)
    os.replace(tmp, path)
    return path


def _random(rng: np.random.Generator, *shape: int, scale: float = 0.08) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype("float32")


def _add_hyperparameters(writer: gguf.GGUFWriter, seed: int, n_vocab: int, context_length: int) -> None:
    import gguf

    writer.add_name(f"horde-tiny-llama-seed{seed}")
    writer.add_context_length(context_length)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYERS)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEADS)
    writer.add_head_count_kv(N_HEADS)
    writer.add_rope_dimension_count(HEAD_DIM)
    # high base: the lowest-frequency rope pair, used by the marker heads, stays
    # (nearly) position independent over the whole context
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))


def _add_tokenizer(
    writer: gguf.GGUFWriter,
    tokens: list[str],
    types: list[int],
    merges: list[str],
    special: dict[str, int],
) -> None:
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(special["<|endoftext|>"])
    writer.add_eos_token_id(special["<|im_end|>"])
    writer.add_eot_token_id(special["<|im_end|>"])
    writer.add_pad_token_id(special["<|endoftext|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)


def _embeddings(rng: np.random.Generator, tokens: list[str], special: dict[str, int]) -> np.ndarray:
    """Random dims normalised per token, fixed-role dims zero but for the markers, dim 0 constant.

    Dim 0 carries a large constant from every token embedding and nothing writes to it, so after
    the final RMS norm it is ~constant and output column 0 acts as a per-token logit bias (llama has
    no output bias). The random dims are normalised per token and the fixed-role dims stay small, so
    the RMS norm, and with it the bias scale, is about the same everywhere.
    """
    import numpy as np

    emb = _random(rng, len(tokens), N_EMBD, scale=1.0)
    emb[:, _N_FIXED:] /= np.sqrt((emb[:, _N_FIXED:] ** 2).mean(axis=1, keepdims=True))
    emb[:, 1:_N_FIXED] = 0.0
    emb[:, _D_BIAS] = _BIAS_CARRIER
    marks = {
        _D_TOOLS_MARK: special[TOOLS_MARKER],
        _D_CALL_MARK: special[TOOL_CALL_START],
        _D_END_MARK: special[TOOL_CALL_END],
        _D_BRACE_MARK: tokens.index("}"),
    }
    for dim, tok in marks.items():
        emb[tok, dim] = _MARKER_VALUE
    return emb


def _add_layer(writer: gguf.GGUFWriter, rng: np.random.Generator, index: int) -> None:
    import numpy as np

    prefix = f"blk.{index}."
    wq = _random(rng, N_EMBD, N_EMBD, scale=0.3)
    wk = _random(rng, N_EMBD, N_EMBD, scale=0.3)
    wv = _random(rng, N_EMBD, N_EMBD, scale=0.3)
    # small writes into the residual stream: the context matters, but the
    # stream stays dominated by the embedding (keeps the bias calibrated)
    wo = _random(rng, N_EMBD, N_EMBD, scale=_LAYER_OUT_SCALE)
    ffn_down = _random(rng, N_EMBD, N_FF, scale=_LAYER_OUT_SCALE)
    wo[:_N_FIXED, :] = 0.0
    ffn_down[:_N_FIXED, :] = 0.0
    if index == 0:
        _wire_marker_heads(wq, wk, wv, wo)
    writer.add_tensor(prefix + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor(prefix + "attn_q.weight", wq)
    writer.add_tensor(prefix + "attn_k.weight", wk)
    writer.add_tensor(prefix + "attn_v.weight", wv)
    writer.add_tensor(prefix + "attn_output.weight", wo)
    writer.add_tensor(prefix + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    writer.add_tensor(prefix + "ffn_gate.weight", _random(rng, N_FF, N_EMBD, scale=0.3))
    writer.add_tensor(prefix + "ffn_up.weight", _random(rng, N_FF, N_EMBD, scale=0.3))
    writer.add_tensor(prefix + "ffn_down.weight", ffn_down)


def _wire_marker_heads(wq: np.ndarray, wk: np.ndarray, wv: np.ndarray, wo: np.ndarray) -> None:
    """Every query (via the constant dim) looks for the marker token and copies its marker value into a signal dim."""
    for head, mark_dim, out_dim in _MARKER_HEADS:
        h0 = head * HEAD_DIM
        for m in (wq, wk, wv):
            m[h0 : h0 + HEAD_DIM, :] = 0.0
        wo[:, h0 : h0 + HEAD_DIM] = 0.0
        j = h0 + HEAD_DIM - 2  # lowest-frequency rope pair
        wq[j, _D_BIAS] = 1.0  # q ~ 5.8 at every position
        wk[j, mark_dim] = 9.0  # k ~ 19 at the marker, 0 elsewhere
        wv[h0, mark_dim] = 1.0  # v ~ 2.1 at the marker, 0 elsewhere
        wo[out_dim, h0] = _HEAD_GAIN  # score ~28: attention ~1 on the marker(s)


def _output_norm() -> np.ndarray:
    """Dim 0 scaled so that it is ~1 after the norm (column 0 of the output matrix is then the bias in logits)."""
    import numpy as np

    out_norm = np.ones(N_EMBD, dtype=np.float32)
    out_norm[_D_BIAS] = _BASE_RMS / _BIAS_CARRIER
    return out_norm


def _output_layer(rng: np.random.Generator, tokens: list[str], special: dict[str, int]) -> np.ndarray:
    out = _random(rng, len(tokens), N_EMBD, scale=_OUTPUT_SCALE)
    out[:, 1:_N_FIXED] = 0.0
    for sid in special.values():
        out[sid, :] = 0.0  # special tokens: no random context dependence
    out[:, _D_BIAS] = _output_bias(tokens, special)
    _wire_tool_calling(out, tokens, special)
    return out


def _wire_tool_calling(out: np.ndarray, tokens: list[str], special: dict[str, int]) -> None:
    """logit(token) = bias + sum(weight * normalised fixed dim), per design."""
    tc, end, eot = special[TOOL_CALL_START], special[TOOL_CALL_END], special["<|im_end|>"]
    quote = tokens.index('"')
    # "<tool_call>\n{": tools and no call yet -> _TOOL_CALL_LOGIT; else banned
    out[tc, _D_BIAS] = -20.0
    out[tc, _D_TOOLS] = (_TOOL_CALL_LOGIT + 20.0) / _SIGNAL_N
    out[tc, _D_CALLED] = -(_TOOL_CALL_LOGIT + 40.0) / _SIGNAL_N
    # "</tool_call>": AND(call started, previous token "}", call not closed)
    out[end, _D_BIAS] = -20.0
    out[end, _D_CALLED] = (_END_CALL_LOGIT + 20.0) / 2 / _SIGNAL_N
    out[end, _D_BRACE_MARK] = (_END_CALL_LOGIT + 20.0) / 2 / _MARK_N
    out[end, _D_ENDED] = -(_END_CALL_LOGIT + 20.0) / _SIGNAL_N
    # '"' likelier inside a call (started and not closed)
    out[quote, _D_CALLED] = _QUOTE_BOOST / _SIGNAL_N
    out[quote, _D_ENDED] = -_QUOTE_BOOST / _SIGNAL_N
    # end of turn right after "</tool_call>"
    out[eot, _D_END_MARK] = _EOT_AFTER_CALL / _MARK_N


def _write(writer: gguf.GGUFWriter) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
