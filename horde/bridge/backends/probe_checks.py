"""Small real requests that show what an OpenAI-compatible server does, not what it accepts.

Each feature and guarantee is declared only when a probe shows it: a streamed reply
(`progress`), valid JSON under a json_schema format (`json_schema`, `json_object`),
real tool calls under `tool_choice: "required"` (`tools`), the same output for the same
seed (`seed`), and so on. Every request is short (a few tokens), so the whole probe
takes a few seconds on a small model. `reasons` says why each name was or was not
declared; the worker logs it at start.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import requests

from horde.bridge.backends.openai_http import BackendHTTP, BackendHTTPError
from horde.bridge.backends.probe import ServerInfo
from horde.bridge.backends.sse import ChatStreamAccumulator, iter_sse_data
from horde.protocol import FEATURES, GUARANTEES

log = logging.getLogger(__name__)

CHAT_PATH = "/v1/chat/completions"
PROBE_MESSAGES = [{"role": "user", "content": "Say hello."}]
PROBE_MAX_TOKENS = 8
PROBE_STRUCTURED_MAX_TOKENS = 64
PROBE_TRIES = 3
PROBE_SEED = 4242
PROBE_TEMPERATURE = 1.0
PROBE_REQUEST_TIMEOUT_S = 30.0
PROMPT_FIT_TIMEOUT_S = 15.0
#: The oversized prompt is this many times the context, in words that are a token each or more.
PROMPT_FIT_OVERSIZE_FACTOR = 2
PROBE_SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
PROBE_FORMAT = {"type": "json_schema", "json_schema": {"name": "probe", "schema": PROBE_SCHEMA, "strict": True}}
#: Two parameterless tools, so a forced call is short; the probe forces the second.
PROBE_TOOLS: list[dict] = [
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Tell the time.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_date",
            "description": "Tell the date.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]
PROBE_TOOL_NAMES = {tool["function"]["name"] for tool in PROBE_TOOLS}
FORCED_TOOL = PROBE_TOOLS[1]["function"]["name"]


@dataclass
class ProbeResult:
    features: list[str] = field(default_factory=list)
    guarantees: list[str] = field(default_factory=list)
    streaming: bool = False
    stream_usage: bool = False
    reasons: dict[str, str] = field(default_factory=dict)

    def decide(self, name: str, ok: bool, why: str) -> bool:
        target = self.features if name in FEATURES else self.guarantees
        if ok and name not in target:
            target.append(name)
        self.reasons[name] = f"{'declared' if ok else 'not declared'}: {why}"
        return ok

    def ordered(self) -> ProbeResult:
        self.features = [n for n in FEATURES if n in self.features]
        self.guarantees = [n for n in GUARANTEES if n in self.guarantees]
        return self


class Prober:
    def __init__(self, http: BackendHTTP, info: ServerInfo):
        self.http, self.info = http, info
        self.model = info.model_ids[0]

    def chat(self, timeout_s: float = PROBE_REQUEST_TIMEOUT_S, **body: Any) -> ChatStreamAccumulator:
        request = {"model": self.model, "messages": PROBE_MESSAGES, "max_tokens": PROBE_MAX_TOKENS, **body}
        acc = ChatStreamAccumulator()
        acc.feed(self.http.post_json(CHAT_PATH, request, timeout_s))
        return acc

    def try_chat(self, **body: Any) -> tuple[ChatStreamAccumulator | None, str]:
        """The reply, or None and the server's refusal."""
        try:
            return self.chat(**body), ""
        except BackendHTTPError as exc:
            return None, f"HTTP {exc.status}: {exc.message}"
        except requests.RequestException as exc:
            return None, exc.__class__.__name__

    def run(self) -> ProbeResult:
        result = ProbeResult()
        self._streaming(result)
        self._structured(result)
        self._tools(result)
        self._sampling(result)
        self._metadata(result)
        self._prompt_fit(result)
        for name in (*FEATURES, *GUARANTEES):
            log.info("probe: %-26s %s", name, result.reasons.get(name, "not declared: not probed"))
        return result.ordered()

    def _streaming(self, result: ProbeResult) -> None:
        for usage in (True, False):
            body = {"model": self.model, "messages": PROBE_MESSAGES, "max_tokens": PROBE_MAX_TOKENS, "stream": True}
            if usage:
                body["stream_options"] = {"include_usage": True}
            acc, error = ChatStreamAccumulator(), ""
            try:
                response = self.http.open_stream(CHAT_PATH, body, PROBE_REQUEST_TIMEOUT_S)
                try:
                    for data in iter_sse_data(response.iter_lines()):
                        acc.feed_data(data)
                finally:
                    response.close()
            except Exception as exc:  # any failure means: no streaming
                error = str(exc)
            if acc.chunks and not error:
                result.streaming, result.stream_usage = True, usage and acc.usage is not None
                result.decide("progress", True, f"a streamed reply came in {acc.chunks} chunks")
                return
        result.decide("progress", False, f"streaming failed ({error or 'no chunks'}): replies are sent whole")

    def _structured(self, result: ProbeResult) -> None:
        valid, first_json, error = 0, False, ""
        for attempt in range(PROBE_TRIES):
            acc, error = self.try_chat(response_format=PROBE_FORMAT, max_tokens=PROBE_STRUCTURED_MAX_TOKENS)
            if acc is None:
                break
            document = _json_or_none(acc.content)
            if attempt == 0:
                first_json = document is not None
            if document is not None and acc.finish_reason != "length" and _validates(document, PROBE_SCHEMA):
                valid += 1
        why = error or f"{valid} of {PROBE_TRIES} json_schema replies validated"
        result.decide("json_schema", first_json, why if first_json else f"json_schema not honoured ({why})")
        result.decide(
            "json_object",
            first_json,
            "the json_schema probe returned JSON" if first_json else "no JSON under a json_schema format",
        )
        result.decide("schema_adherence", first_json and valid == PROBE_TRIES, why)

    def _tools(self, result: ProbeResult) -> None:
        if self.info.tools_supported is False:
            why = "; ".join(n for n in self.info.notes if "tools" in n) or "the server metadata rules tools out"
            for name in ("tools", "tool_choice", "tools_with_response_format"):
                result.decide(name, False, why)
            return
        required_ok, error = 0, ""
        for _ in range(PROBE_TRIES):
            acc, error = self.try_chat(
                tools=PROBE_TOOLS, tool_choice="required", max_tokens=PROBE_STRUCTURED_MAX_TOKENS
            )
            if not _called(acc, PROBE_TOOL_NAMES):
                break
            required_ok += 1
        if not required_ok:
            why = f"tool_choice required gave no tool call ({error or 'content only'})"
            for name in ("tools", "tool_choice", "tools_with_response_format"):
                result.decide(name, False, why)
            return
        result.decide("tools", True, "tool_choice required returned tool calls")
        self._tool_choice(result, required_ok)
        self._tools_with_format(result)

    def _tool_choice(self, result: ProbeResult, required_ok: int) -> None:
        """The guarantee covers required and a named function: both must hold in every try."""
        if self.info.kind == "llama.cpp":
            result.decide("tool_choice", False, "llama.cpp does not enforce a named forced function")
            return
        if required_ok < PROBE_TRIES:
            result.decide("tool_choice", False, f"required called a tool in {required_ok}/{PROBE_TRIES} tries")
            return
        forced = {"type": "function", "function": {"name": FORCED_TOOL}}
        forced_ok = 0
        for _ in range(PROBE_TRIES):
            acc, _error = self.try_chat(tools=PROBE_TOOLS, tool_choice=forced, max_tokens=PROBE_STRUCTURED_MAX_TOKENS)
            if not _called(acc, {FORCED_TOOL}, only=True):
                break
            forced_ok += 1
        result.decide(
            "tool_choice",
            forced_ok == PROBE_TRIES,
            "required and a forced second function were honoured in every try"
            if forced_ok == PROBE_TRIES
            else f"a forced second function was honoured {forced_ok} time(s)",
        )

    def _tools_with_format(self, result: ProbeResult) -> None:
        if "json_schema" not in result.features:
            result.decide("tools_with_response_format", False, "json_schema is not served")
            return
        acc, error = self.try_chat(
            tools=PROBE_TOOLS, response_format=PROBE_FORMAT, max_tokens=PROBE_STRUCTURED_MAX_TOKENS
        )
        ok = acc is not None and (
            _called(acc, PROBE_TOOL_NAMES) or _validates(_json_or_none(acc.content), PROBE_SCHEMA)
        )
        result.decide(
            "tools_with_response_format",
            ok,
            "tools with a json_schema format gave a valid reply"
            if ok
            else f"tools with a json_schema format failed ({error or 'invalid reply'})",
        )

    def _sampling(self, result: ProbeResult) -> None:
        outputs = [self.try_chat(seed=PROBE_SEED, temperature=PROBE_TEMPERATURE) for _ in range(2)]
        first, second = outputs[0][0], outputs[1][0]
        same = first is not None and second is not None and first.content == second.content
        result.decide(
            "seed",
            same,
            "the same seed gave the same reply twice (best effort under batching)"
            if same
            else f"the same seed gave different replies ({outputs[0][1] or outputs[1][1]})",
        )
        for name in ("frequency_penalty", "presence_penalty"):
            if name == "frequency_penalty" and self.info.kind.startswith("koboldcpp"):
                result.decide(name, False, "koboldcpp folds it into presence_penalty")
                continue
            acc, error = self.try_chat(**{name: 0.5})
            result.decide(name, acc is not None, "accepted" if acc is not None else f"refused ({error})")

    def _metadata(self, result: ProbeResult) -> None:
        result.decide(
            "vision",
            self.info.vision,
            f"{self.info.kind} reports vision {'on' if self.info.vision else 'off or unknown'}",
        )
        if not self.info.reasoning_supported:
            result.decide("reasoning_effort", False, f"{self.info.kind} shows no reasoning support")
            return
        acc, error = self.try_chat(reasoning_effort="low")
        result.decide(
            "reasoning_effort",
            acc is not None,
            "the model reasons and reasoning_effort is accepted"
            if acc is not None
            else f"reasoning_effort refused ({error})",
        )

    def _prompt_fit(self, result: ProbeResult) -> None:
        ctx = self.info.context_tokens
        if not ctx:
            result.decide("prompt_fit", False, "the context size is unknown")
            return
        prompt = " x" * (ctx * PROMPT_FIT_OVERSIZE_FACTOR)
        try:
            self.chat(timeout_s=PROMPT_FIT_TIMEOUT_S, messages=[{"role": "user", "content": prompt}], max_tokens=1)
        except BackendHTTPError as exc:
            refused = 400 <= exc.status < 500
            result.decide(
                "prompt_fit",
                refused,
                f"a prompt over the context was refused (HTTP {exc.status})"
                if refused
                else f"a prompt over the context failed with HTTP {exc.status}",
            )
        except requests.RequestException as exc:
            why = f"a prompt over the context did not get a refusal ({exc.__class__.__name__})"
            result.decide("prompt_fit", False, why)
        else:
            result.decide("prompt_fit", False, "a prompt over the context was accepted (trimmed)")


def _json_or_none(text: str | None):
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _validates(document, schema: dict) -> bool:
    return document is not None and jsonschema.validators.validator_for(schema)(schema).is_valid(document)


def _called(acc: ChatStreamAccumulator | None, names: set[str], only: bool = False) -> bool:
    """True when the reply calls one of `names` (`only`: and nothing else) with JSON object arguments."""
    if acc is None:
        return False
    calls = acc.tool_calls()
    if not calls:
        return False
    good = [
        c
        for c in calls
        if c["function"]["name"] in names and isinstance(_json_or_none(c["function"]["arguments"]), dict)
    ]
    return len(good) == len(calls) if only else bool(good)


def probe_server(http: BackendHTTP, info: ServerInfo) -> ProbeResult:
    return Prober(http, info).run()
