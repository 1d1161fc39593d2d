"""A real OpenAI-compatible backend for tests: llama.cpp's ``llama-server``
serving a generated, deterministic tiny model.

No model weights can be downloaded, so the model is written here with the
``gguf`` package (random weights, byte-level tokenizer, ChatML template with
tools).  The server is built once per machine from the llama.cpp copy vendored
in the PyPI source distribution of ``llama-cpp-python`` and cached by version.

Public API::

    build_llama_server(cache_dir=None) -> pathlib.Path
    write_tiny_model(path, seed=0) -> pathlib.Path
    LlamaServer(binary, model_path, ctx=4096, parallel=2, *, port=None, host="127.0.0.1",
                extra_args=(), startup_timeout=60.0, stop_timeout=10.0, log_path=None,
                keep_log=False, kill_on_parent_exit=True)   # context manager
        .url      -> "http://127.0.0.1:PORT"
        .v1_url   -> "http://127.0.0.1:PORT/v1"   (alias: .base_url)
        .props()  -> dict from GET /props; .log_text(); .start(); .stop()

CLI::

    python -m horde_testing.llama_backend build
    python -m horde_testing.llama_backend model [PATH] [--seed N]
    python -m horde_testing.llama_backend serve [--port P] [--ctx N] [--parallel N]

Environment:

* ``HORDE_LLAMA_CACHE``: cache root (default ``~/.cache/horde-llama``); the
  binary lives in ``<root>/<version>/llama-server``.
* ``HORDE_LLAMA_SDIST``: optional path to an already downloaded
  ``llama_cpp_python-<version>.tar.gz`` (skips the pip download).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
BINARY_NAME = "llama-server"

# CMake options, checked against vendor/llama.cpp of llama-cpp-python 0.3.36.
# (LLAMA_CURL is deprecated there and only produces a warning, so it is not
# passed; with LLAMA_USE_PREBUILT_UI=OFF and LLAMA_BUILD_UI=OFF the UI step
# neither runs npm nor downloads anything.)
CMAKE_OPTIONS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",  # the server lives under tools/
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_APP=OFF",
    "-DGGML_BUILD_TESTS=OFF",
    "-DGGML_BUILD_EXAMPLES=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DGGML_CCACHE=OFF",  # deterministic, and no "ccache not found" warning
)
BUILD_JOBS = 2


def _log(msg: str) -> None:
    print(f"[horde-llama] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# 1. Building llama-server
# ---------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``$HORDE_LLAMA_CACHE/<version>`` or ``~/.cache/horde-llama/<version>``."""
    root = os.environ.get("HORDE_LLAMA_CACHE")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "horde-llama"
    return base / LLAMA_CPP_PYTHON_VERSION


def _resolve_cache_dir(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir is None:
        return default_cache_dir()
    p = Path(cache_dir).expanduser()
    # An explicit cache dir is a root too, unless it already names the version.
    return p if p.name == LLAMA_CPP_PYTHON_VERSION else p / LLAMA_CPP_PYTHON_VERSION


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"waiting for another process building in {path.parent} ...")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _run(cmd: Sequence[str], log_path: Path, cwd: Path | None = None,
         progress: bool = False) -> None:
    """Run *cmd*, appending its output to *log_path*; raise with the tail on failure."""
    _log("$ " + " ".join(str(c) for c in cmd))
    last_pct = None
    with open(log_path, "a", encoding="utf-8", errors="replace", buffering=1) as log:
        log.write("\n$ " + " ".join(str(c) for c in cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(
            [str(c) for c in cmd], cwd=cwd, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, errors="replace",
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if progress:
                s = line.strip()
                # ninja: "[12/345] Building ..."; make: "[ 12%] Building ..."
                if s.startswith("[") and "]" in s:
                    tag = s[1:s.index("]")].strip()
                    if "/" in tag:
                        a, _, b = tag.partition("/")
                        try:
                            pct = int(100 * int(a) / max(1, int(b)))
                        except ValueError:
                            continue
                    elif tag.endswith("%"):
                        try:
                            pct = int(tag[:-1])
                        except ValueError:
                            continue
                    else:
                        continue
                    if last_pct is None or pct >= last_pct + 5 or pct == 100:
                        last_pct = pct
                        _log(f"build {pct:3d}%  {s[s.index(']') + 1:].strip()[:100]}")
        rc = proc.wait()
    if rc != 0:
        tail = "".join(log_path.read_text(errors="replace").splitlines(True)[-40:])
        raise RuntimeError(
            f"command failed with exit code {rc}: {' '.join(map(str, cmd))}\n"
            f"(full log: {log_path})\n{tail}"
        )


def _download_sdist(dest: Path, log_path: Path) -> Path:
    pre = os.environ.get("HORDE_LLAMA_SDIST")
    if pre:
        p = Path(pre).expanduser()
        if not p.is_file():
            raise FileNotFoundError(f"HORDE_LLAMA_SDIST={pre} does not exist")
        _log(f"using pre-downloaded source {p}")
        return p
    _log(f"downloading llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION} source from PyPI ...")
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
          f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}", "-d", str(dest)], log_path)
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz")) + sorted(dest.glob("llama-cpp-python-*.tar.gz"))
    if not found:
        raise RuntimeError(f"pip download produced no sdist in {dest}: {os.listdir(dest)}")
    return found[0]


def _unpack(sdist: Path, dest: Path) -> Path:
    _log(f"unpacking {sdist.name} ...")
    with tarfile.open(sdist) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(dest, filter="data")
        else:  # pragma: no cover - Python < 3.11.4
            tf.extractall(dest)
    for cand in dest.iterdir():
        src = cand / "vendor" / "llama.cpp"
        if (src / "CMakeLists.txt").is_file():
            return src
    raise RuntimeError(f"vendor/llama.cpp not found in {sdist}")


def build_llama_server(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the path of a cached ``llama-server`` binary, building it if needed.

    The binary is cached in ``<cache root>/<version>/llama-server``.  A file lock
    serialises concurrent callers (e.g. pytest-xdist workers); the second one
    waits and then reuses the first one's binary.  A cold build takes a few
    minutes on 2 cores; a warm call returns in milliseconds.
    """
    cdir = _resolve_cache_dir(cache_dir)
    binary = cdir / BINARY_NAME
    if binary.is_file() and os.access(binary, os.X_OK):  # fast path, no lock
        return binary

    cdir.mkdir(parents=True, exist_ok=True)
    with _file_lock(cdir / ".build.lock"):
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
        if shutil.which("cmake") is None:
            raise RuntimeError("cmake is required to build llama-server")
        t0 = time.monotonic()
        log_path = cdir / "build.log"
        log_path.write_text("")
        _log(f"building {BINARY_NAME} (llama-cpp-python {LLAMA_CPP_PYTHON_VERSION}) "
             f"into {cdir}; log: {log_path}")
        work = Path(tempfile.mkdtemp(prefix="build-", dir=cdir))
        try:
            sdist = _download_sdist(work, log_path)
            src = _unpack(sdist, work / "src")
            bdir = work / "build"
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            env_note = " (SOURCE_DATE_EPOCH set: x86 SIMD defaults are off)" \
                if "SOURCE_DATE_EPOCH" in os.environ else ""
            _log("configuring with CMake" + env_note + " ...")
            _run(["cmake", "-S", src, "-B", bdir, *gen, *CMAKE_OPTIONS], log_path)
            _log(f"compiling target {BINARY_NAME} with -j{BUILD_JOBS} (takes a few minutes) ...")
            _run(["cmake", "--build", bdir, "--config", "Release", "--target", BINARY_NAME,
                  "-j", str(BUILD_JOBS)], log_path, progress=True)
            built = bdir / "bin" / BINARY_NAME
            if not built.is_file():
                raise RuntimeError(f"build finished but {built} is missing (log: {log_path})")
            tmp = cdir / f".{BINARY_NAME}.{os.getpid()}.tmp"
            shutil.copy2(built, tmp)
            tmp.chmod(0o755)
            os.replace(tmp, binary)  # atomic: the binary exists only when complete
            (cdir / "build-info.json").write_text(json.dumps({
                "llama_cpp_python": LLAMA_CPP_PYTHON_VERSION,
                "cmake_options": list(CMAKE_OPTIONS),
                "build_seconds": round(time.monotonic() - t0, 1),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }, indent=2))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        _log(f"built {binary} in {time.monotonic() - t0:.0f}s")
        return binary


# ---------------------------------------------------------------------------
# 2. The tiny model
# ---------------------------------------------------------------------------

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
TOOLS_MARKER = "<tools>"             # opens the tools list in the system prompt
# How every rendered tool call starts.  Not "<tool_call>\n" alone: llama-server
# rejects a lazy-grammar trigger word that is a single token unless it is a
# "preserved token", which its autoparser does not declare for this format.
TOOL_CALL_START = "<tool_call>\n{"
TOOL_CALL_END = "</tool_call>"
# A few merges so the tokenizer is a real BPE (common English/JSON pairs).
_MERGE_PAIRS = (
    ("Ġ", "t"), ("h", "e"), ("i", "n"), ("Ġt", "he"), ("e", "r"), ("o", "n"),
    ("Ġ", "a"), ("r", "e"), ("a", "t"), ("e", "n"), ("Ġ", "s"), ("o", "r"),
    ("\"", ":"), ("Ġ", "\""), ("Ġ", "{"), ("t", "o"),
)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable unicode mapping."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
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


def _output_bias(tokens: Sequence[str], special: dict[str, int]) -> np.ndarray:  # noqa: F821
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


_BIAS_CARRIER = 8.0      # constant value of hidden dim 0 (see write_tiny_model)
_MARKER_VALUE = 3.0      # embedding value of a marker token in its marker dim
_HEAD_GAIN = 0.5         # a marker head writes ~_HEAD_GAIN * normalised marker
_OUTPUT_SCALE = 0.25     # std of the context-dependent part of the output layer
_LAYER_OUT_SCALE = 0.03  # std of attn_output / ffn_down weights
_EOT_BIAS = 4.0          # logit bias of <|im_end|>: see the calibration note in write_tiny_model
_TOOL_CALL_LOGIT = 18.0  # design logit of TOOL_CALL_START with tools offered and no call yet
                         # (comes out ~4 lower in practice; p ~ 0.97 at the first step)
_END_CALL_LOGIT = 6.0    # logit of TOOL_CALL_END right after "}" inside a call
_QUOTE_BOOST = 4.5       # extra logit of '"' inside a call (ends JSON strings)
_EOT_AFTER_CALL = 8.0    # extra logit of <|im_end|> right after TOOL_CALL_END

# Residual-stream dims with a fixed role (the rest are random):
_D_BIAS = 0          # constant: output column 0 is a per-token bias
_D_TOOLS_MARK = 1    # set in the embedding of TOOLS_MARKER
_D_TOOLS = 2         # head 3 of layer 0: a tools list is in the context
_D_CALL_MARK = 3     # set in the embedding of TOOL_CALL_START
_D_CALLED = 4        # head 2 of layer 0: a call was started in the context
_D_END_MARK = 5      # set in the embedding of TOOL_CALL_END (bigram -> end of turn)
_D_ENDED = 6         # head 1 of layer 0: a call was closed in the context
_D_BRACE_MARK = 7    # set in the embedding of "}" (bigram -> TOOL_CALL_END)
_N_FIXED = 8


def write_tiny_model(path: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a deterministic tiny llama-architecture GGUF (~0.5 MB) and return its path.

    2 layers, width 64, 4 heads, context 4096, float32, random weights from
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
    n_embd, n_layer, n_head, n_ff, n_ctx = 64, 2, 4, 128, 4096
    head_dim = n_embd // n_head
    tokens, types, merges, special = _tokenizer()
    n_vocab = len(tokens)
    rng = np.random.default_rng(seed)
    n_rand = n_embd - _N_FIXED

    def w(*shape: int, scale: float = 0.08) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    writer = gguf.GGUFWriter(str(tmp), "llama")
    writer.add_name(f"horde-tiny-llama-seed{seed}")
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(head_dim)
    # high base: the lowest-frequency rope pair, used by the marker heads, stays
    # (nearly) position independent over the whole context
    writer.add_rope_freq_base(1_000_000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))

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

    # numpy shapes are (rows, cols) = (out, in); gguf reverses them to ggml's ne.
    #
    # Dim 0 carries a large constant from every token embedding and nothing
    # writes to it, so after the final RMS norm it is ~constant and output
    # column 0 acts as a per-token logit bias (llama has no output bias).  The
    # random dims are normalised per token and the fixed-role dims stay small,
    # so the RMS norm, and with it the bias scale, is about the same everywhere.
    emb = w(n_vocab, n_embd, scale=1.0)
    emb[:, _N_FIXED:] /= np.sqrt((emb[:, _N_FIXED:] ** 2).mean(axis=1, keepdims=True))
    emb[:, 1:_N_FIXED] = 0.0
    emb[:, _D_BIAS] = _BIAS_CARRIER
    marks = {_D_TOOLS_MARK: special[TOOLS_MARKER], _D_CALL_MARK: special[TOOL_CALL_START],
             _D_END_MARK: special[TOOL_CALL_END], _D_BRACE_MARK: tokens.index("}")}
    for dim, tok in marks.items():
        emb[tok, dim] = _MARKER_VALUE
    writer.add_tensor("token_embd.weight", emb)

    base_rms = float(np.sqrt((_BIAS_CARRIER ** 2 + n_rand) / n_embd))
    mark_rms = float(np.sqrt((_BIAS_CARRIER ** 2 + _MARKER_VALUE ** 2 + n_rand) / n_embd))
    mark_n = _MARKER_VALUE / mark_rms            # a marker dim after the norm (~2.1)
    signal_n = _HEAD_GAIN * mark_n / base_rms    # a head's signal after the final norm (~0.77)
    heads = ((3, _D_TOOLS_MARK, _D_TOOLS), (2, _D_CALL_MARK, _D_CALLED),
             (1, _D_END_MARK, _D_ENDED))
    for i in range(n_layer):
        p = f"blk.{i}."
        wq = w(n_embd, n_embd, scale=0.3)
        wk = w(n_embd, n_embd, scale=0.3)
        wv = w(n_embd, n_embd, scale=0.3)
        # small writes into the residual stream: the context matters, but the
        # stream stays dominated by the embedding (keeps the bias calibrated)
        wo = w(n_embd, n_embd, scale=_LAYER_OUT_SCALE)
        ffn_down = w(n_embd, n_ff, scale=_LAYER_OUT_SCALE)
        wo[:_N_FIXED, :] = 0.0
        ffn_down[:_N_FIXED, :] = 0.0
        if i == 0:
            # marker heads: every query (via the constant dim) looks for the
            # marker token and copies its marker value into a signal dim
            for head, mark_dim, out_dim in heads:
                h0 = head * head_dim
                for m in (wq, wk, wv):
                    m[h0:h0 + head_dim, :] = 0.0
                wo[:, h0:h0 + head_dim] = 0.0
                j = h0 + head_dim - 2          # lowest-frequency rope pair
                wq[j, _D_BIAS] = 1.0           # q ~ 5.8 at every position
                wk[j, mark_dim] = 9.0          # k ~ 19 at the marker, 0 elsewhere
                wv[h0, mark_dim] = 1.0         # v ~ 2.1 at the marker, 0 elsewhere
                wo[out_dim, h0] = _HEAD_GAIN   # score ~28: attention ~1 on the marker(s)
        writer.add_tensor(p + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(p + "attn_q.weight", wq)
        writer.add_tensor(p + "attn_k.weight", wk)
        writer.add_tensor(p + "attn_v.weight", wv)
        writer.add_tensor(p + "attn_output.weight", wo)
        writer.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(p + "ffn_gate.weight", w(n_ff, n_embd, scale=0.3))
        writer.add_tensor(p + "ffn_up.weight", w(n_ff, n_embd, scale=0.3))
        writer.add_tensor(p + "ffn_down.weight", ffn_down)

    # Output norm: scale dim 0 so that it is ~1 after the norm (column 0 of
    # the output matrix is then the bias in logits).
    out_norm = np.ones(n_embd, dtype=np.float32)
    out_norm[_D_BIAS] = base_rms / _BIAS_CARRIER
    writer.add_tensor("output_norm.weight", out_norm)
    out = w(n_vocab, n_embd, scale=_OUTPUT_SCALE)
    out[:, 1:_N_FIXED] = 0.0
    for sid in special.values():
        out[sid, :] = 0.0  # special tokens: no random context dependence
    out[:, _D_BIAS] = _output_bias(tokens, special)
    # logit(token) = bias + sum(weight * normalised fixed dim), per design:
    tc, end, eot = special[TOOL_CALL_START], special[TOOL_CALL_END], special["<|im_end|>"]
    quote = tokens.index('"')
    # "<tool_call>\n{": tools and no call yet -> _TOOL_CALL_LOGIT; else banned
    out[tc, _D_BIAS] = -20.0
    out[tc, _D_TOOLS] = (_TOOL_CALL_LOGIT + 20.0) / signal_n
    out[tc, _D_CALLED] = -(_TOOL_CALL_LOGIT + 40.0) / signal_n
    # "</tool_call>": AND(call started, previous token "}", call not closed)
    out[end, _D_BIAS] = -20.0
    out[end, _D_CALLED] = (_END_CALL_LOGIT + 20.0) / 2 / signal_n
    out[end, _D_BRACE_MARK] = (_END_CALL_LOGIT + 20.0) / 2 / mark_n
    out[end, _D_ENDED] = -(_END_CALL_LOGIT + 20.0) / signal_n
    # '"' likelier inside a call (started and not closed)
    out[quote, _D_CALLED] = _QUOTE_BOOST / signal_n
    out[quote, _D_ENDED] = -_QUOTE_BOOST / signal_n
    # end of turn right after "</tool_call>"
    out[eot, _D_END_MARK] = _EOT_AFTER_CALL / mark_n
    writer.add_tensor("output.weight", out)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, path)
    return path


# ---------------------------------------------------------------------------
# 3. Running the server
# ---------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # like the server: ignore TIME_WAIT leftovers, fail only on a live listener
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """preexec_fn: ask Linux to SIGTERM the server when its parent dies."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class LlamaServerError(RuntimeError):
    pass


# local requests must not go through an HTTP(S)_PROXY from the environment
_NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LlamaServer:
    """Run ``llama-server`` on a free local port for the lifetime of a ``with`` block.

    >>> with LlamaServer(build_llama_server(), write_tiny_model(tmp / "m.gguf")) as srv:
    ...     requests.post(srv.v1_url + "/chat/completions", json={...})

    Command: ``llama-server -m MODEL -c CTX -np PARALLEL --no-webui --jinja
    --host 127.0.0.1 --port PORT [extra_args]``.  Note that llama-server splits
    the context between the slots: ``ctx=4096, parallel=2`` gives 2048 tokens
    per request (``/props`` -> ``default_generation_settings.n_ctx``).  Ready
    means ``GET /health`` answered 200 (polled, bounded by *startup_timeout*);
    the server output goes to *log_path* (default: a temp file, deleted on a
    clean stop unless *keep_log*) and is included in startup errors.
    """

    def __init__(self, binary: str | os.PathLike[str], model_path: str | os.PathLike[str],
                 ctx: int = 4096, parallel: int = 2, *, port: int | None = None,
                 host: str = "127.0.0.1", extra_args: Sequence[str] = (),
                 startup_timeout: float = 60.0, stop_timeout: float = 10.0,
                 log_path: str | os.PathLike[str] | None = None,
                 keep_log: bool = False, kill_on_parent_exit: bool = True) -> None:
        self.binary = Path(binary)
        self.model_path = Path(model_path)
        self.ctx = ctx
        self.parallel = parallel
        self.host = host
        self.port = port
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self._log_path_arg = Path(log_path) if log_path else None
        self.keep_log = keep_log or log_path is not None
        self.kill_on_parent_exit = kill_on_parent_exit
        self.log_path: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_fh = None

    # -- urls ---------------------------------------------------------------
    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:PORT`` (``/health``, ``/props``)."""
        return f"http://{self.host}:{self.port}"

    @property
    def v1_url(self) -> str:
        """OpenAI base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return self.url + "/v1"

    base_url = v1_url

    def command(self) -> list[str]:
        return [
            str(self.binary), "-m", str(self.model_path),
            "-c", str(self.ctx), "-np", str(self.parallel),
            "--no-webui", "--jinja",
            "--host", self.host, "--port", str(self.port),
            *self.extra_args,
        ]

    def log_text(self) -> str:
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return ""

    def props(self) -> dict:
        """``GET /props`` (n_ctx per slot, total_slots, chat_template_caps, ...)."""
        with _NO_PROXY_OPENER.open(self.url + "/props", timeout=10) as r:
            return json.loads(r.read())

    # -- lifecycle ----------------------------------------------------------
    def start(self) -> LlamaServer:
        if self.proc is not None:
            raise LlamaServerError("already started")
        if not self.binary.is_file():
            raise FileNotFoundError(self.binary)
        if not self.model_path.is_file():
            raise FileNotFoundError(self.model_path)
        if self.port is None:
            self.port = free_port(self.host)
        elif not _port_is_free(self.host, self.port):
            # otherwise /health could be answered by whatever holds the port
            raise LlamaServerError(f"port {self.host}:{self.port} is already in use")
        if self._log_path_arg:
            self.log_path = self._log_path_arg
        else:
            fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self._log_fh = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=self._log_fh,
            stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent if (self.kill_on_parent_exit
                                            and sys.platform.startswith("linux")) else None,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.keep_log = True  # the exception names it
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.02
        last_err = "no answer yet"
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise LlamaServerError(
                    f"llama-server exited with code {rc} during startup\n"
                    f"command: {' '.join(self.command())}\nlog ({self.log_path}):\n"
                    f"{self.log_text()[-4000:]}")
            try:
                with _NO_PROXY_OPENER.open(self.url + "/health", timeout=2) as r:
                    if r.status == 200 and self.proc.poll() is None:
                        return
                    last_err = f"HTTP {r.status}"
            except urllib.error.HTTPError as e:  # 503 while the model loads
                last_err = f"HTTP {e.code}"
            except (urllib.error.URLError, OSError) as e:
                last_err = repr(e)
            if time.monotonic() > deadline:
                raise LlamaServerError(
                    f"llama-server not ready after {self.startup_timeout}s ({last_err})\n"
                    f"command: {' '.join(self.command())}\nlog ({self.log_path}):\n"
                    f"{self.log_text()[-4000:]}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=self.stop_timeout)
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
            if not self.keep_log and self.log_path is not None:
                with contextlib.suppress(OSError):
                    self.log_path.unlink()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------
# 4. CLI
# ---------------------------------------------------------------------------


def _main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m horde_testing.llama_backend",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache-dir", default=None, help="cache root (default: $HORDE_LLAMA_CACHE "
                    "or ~/.cache/horde-llama)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build (or reuse) llama-server and print its path")
    m = sub.add_parser("model", help="write the tiny GGUF model and print its path")
    m.add_argument("path", nargs="?", default=None)
    m.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("serve", help="serve the tiny model until Ctrl-C")
    s.add_argument("--port", type=int, default=None)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--ctx", type=int, default=4096)
    s.add_argument("--parallel", type=int, default=2)
    s.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    if args.cmd == "build":
        print(build_llama_server(args.cache_dir))
        return 0
    cdir = _resolve_cache_dir(args.cache_dir)
    if args.cmd == "model":
        print(write_tiny_model(args.path or cdir / f"tiny-seed{args.seed}.gguf", seed=args.seed))
        return 0
    # Ctrl-C, and also SIGTERM, stop the server cleanly (even when started in
    # the background by a shell, which makes the process ignore SIGINT).
    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    binary = build_llama_server(args.cache_dir)
    model = write_tiny_model(cdir / f"tiny-seed{args.seed}.gguf", seed=args.seed)
    with LlamaServer(binary, model, ctx=args.ctx, parallel=args.parallel, port=args.port,
                     host=args.host, keep_log=True) as srv:
        print(f"llama-server ready: {srv.v1_url}  (root {srv.url}, log {srv.log_path})",
              flush=True)
        print("Ctrl-C to stop", file=sys.stderr, flush=True)
        try:
            while srv.proc is not None and srv.proc.poll() is None:
                time.sleep(0.5)
            print(f"llama-server exited; log:\n{srv.log_text()[-2000:]}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(_main())
