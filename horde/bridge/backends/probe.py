"""Which server is behind an OpenAI-compatible URL, and what its metadata says.

Detection reads only GET endpoints (and Ollama's /api/show): model ids, context
size, slots, template and modality flags. It never declares a feature by itself:
`probe_checks.py` confirms each one with a real request. Metadata can only rule a
feature out (koboldcpp emulates tools, a template without tools support) or supply
what no request can show (vision, the context size).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from horde.bridge.backends.openai_http import BackendHTTP

log = logging.getLogger(__name__)

PROBE_GET_TIMEOUT_S = 3.0
#: Ollama's /v1 serves in its default window unless the Modelfile sets num_ctx.
OLLAMA_DEFAULT_NUM_CTX_TOKENS = 4096


class BackendUnavailable(Exception):
    """The URL does not answer like an OpenAI-compatible server."""


@dataclass
class ServerInfo:
    model_ids: list[str]
    kind: str = "openai-compatible"
    context_tokens: int | None = None
    slots: int | None = None
    #: None: the metadata does not say, so the tools probe decides.
    tools_supported: bool | None = None
    reasoning_supported: bool = False
    vision: bool = False
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(text)


def detect_server(http: BackendHTTP) -> ServerInfo:
    models = http.get_json("/v1/models", PROBE_GET_TIMEOUT_S)
    data = models.get("data") if isinstance(models, dict) else None
    if not data or not all(isinstance(m, dict) and m.get("id") for m in data):
        raise BackendUnavailable(f"GET {http.root}/v1/models gave no model list")
    info = ServerInfo(model_ids=[str(m["id"]) for m in data])
    first = data[0]
    meta = first.get("meta") if isinstance(first.get("meta"), dict) else {}
    for key, value in (
        ("meta.n_ctx", meta.get("n_ctx")),
        ("max_model_len", first.get("max_model_len")),
        ("meta.n_ctx_train", meta.get("n_ctx_train")),
    ):
        if _positive_int(value):
            info.context_tokens = _positive_int(value)
            info.note(f"context {info.context_tokens} from /v1/models {key}")
            break
    for detect in (_koboldcpp, _llamacpp, _ollama, _vllm):
        if detect(http, info):
            break
    log.info("backend at %s is %s serving %s", http.root, info.kind, ", ".join(info.model_ids))
    return info


def _positive_int(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _koboldcpp(http: BackendHTTP, info: ServerInfo) -> bool:
    version = http.get_json("/api/extra/version", PROBE_GET_TIMEOUT_S)
    if not isinstance(version, dict) or version.get("result") != "KoboldCpp":
        return False
    info.kind = f"koboldcpp {version.get('version', '')}".strip()
    info.tools_supported = False
    info.note("koboldcpp emulates tools (extra generations, one forced call): tools not declared")
    info.vision = bool(version.get("vision"))
    true_ctx = http.get_json("/api/extra/true_max_context_length", PROBE_GET_TIMEOUT_S)
    if isinstance(true_ctx, dict) and _positive_int(true_ctx.get("value")):
        info.context_tokens = _positive_int(true_ctx["value"])
        info.note(f"context {info.context_tokens} from /api/extra/true_max_context_length")
    return True


def _llamacpp(http: BackendHTTP, info: ServerInfo) -> bool:
    props = http.get_json("/props", PROBE_GET_TIMEOUT_S)
    if not isinstance(props, dict) or not isinstance(props.get("default_generation_settings"), dict):
        return False
    info.kind = "llama.cpp"
    n_ctx = _positive_int(props["default_generation_settings"].get("n_ctx"))
    if n_ctx:
        info.context_tokens = n_ctx
        info.note(f"context {n_ctx} per slot from /props")
    info.slots = _positive_int(props.get("total_slots"))
    template_caps = props.get("chat_template_caps")
    caps = template_caps if isinstance(template_caps, dict) else {}
    if "supports_tools" in caps:
        info.tools_supported = bool(caps["supports_tools"])
        if not info.tools_supported:
            info.note("the chat template does not support tools (chat_template_caps)")
    info.reasoning_supported = bool(caps.get("supports_reasoning_effort"))
    info.vision = bool((props.get("modalities") or {}).get("vision"))
    return True


def _ollama(http: BackendHTTP, info: ServerInfo) -> bool:
    version = http.get_json("/api/version", PROBE_GET_TIMEOUT_S)
    if not isinstance(version, dict) or "version" not in version:
        return False
    info.kind = f"ollama {version['version']}"
    try:
        show = http.post_json("/api/show", {"model": info.model_ids[0]}, PROBE_GET_TIMEOUT_S)
    except Exception:  # an older Ollama or a proxy: no capabilities to read
        info.note("Ollama /api/show failed: no tools, vision or thinking declared")
        info.tools_supported = False
        return True
    capabilities = show.get("capabilities") or []
    info.tools_supported = "tools" in capabilities
    info.vision = "vision" in capabilities
    info.reasoning_supported = "thinking" in capabilities
    trained = next(
        (_positive_int(v) for k, v in (show.get("model_info") or {}).items() if k.endswith(".context_length")), None
    )
    match = re.search(r"^num_ctx\s+(\d+)", show.get("parameters") or "", re.MULTILINE)
    window = int(match.group(1)) if match else OLLAMA_DEFAULT_NUM_CTX_TOKENS
    info.context_tokens = min(window, trained) if trained else window
    info.note(
        f"context {info.context_tokens}: Ollama's {'num_ctx' if match else 'default window'}"
        f"{f', model trained for {trained}' if trained else ''}"
    )
    return True


def _vllm(http: BackendHTTP, info: ServerInfo) -> bool:
    version = http.get_json("/version", PROBE_GET_TIMEOUT_S)
    if not isinstance(version, dict) or "version" not in version:
        return False
    info.kind = f"vllm {version['version']}"
    return True
