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

    python -m tests.support.llama_backend build
    python -m tests.support.llama_backend model [PATH] [--seed N]
    python -m tests.support.llama_backend serve [--port P] [--ctx N] [--parallel N]

Environment:

* ``HORDE_LLAMA_CACHE``: cache root (default ``~/.cache/horde-llama``); the
  binary lives in ``<root>/<version>/llama-server``.
* ``HORDE_LLAMA_SDIST``: optional path to an already downloaded
  ``llama_cpp_python-<version>.tar.gz`` (skips the pip download).
"""

from tests.support.llama_backend.build import (
    BINARY_NAME,
    LLAMA_CPP_PYTHON_VERSION,
    build_llama_server,
    default_cache_dir,
)
from tests.support.llama_backend.model import write_tiny_model
from tests.support.llama_backend.server import LlamaServer, LlamaServerError, free_port

__all__ = [
    "BINARY_NAME",
    "LLAMA_CPP_PYTHON_VERSION",
    "LlamaServer",
    "LlamaServerError",
    "build_llama_server",
    "default_cache_dir",
    "free_port",
    "write_tiny_model",
]
