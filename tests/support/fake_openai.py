"""A small OpenAI-compatible server that imitates llama.cpp, vLLM or koboldcpp, for the probe and backend tests.

Its behaviour is set per test: which server it pretends to be (the metadata
endpoints), whether it honours a forced function, refuses an oversized prompt,
follows json_schema, repeats itself for a seed. Replies stream word by word with an
optional delay, and it notices when a client closes a stream early.
"""

from __future__ import annotations

import json
import random
import threading
import time

from flask import Flask, Response, jsonify, request
from werkzeug.serving import make_server

from horde.bridge.schema_instance import instance_for

MODEL_ID = "tiny-model.gguf"


class FakeOpenAI:
    def __init__(
        self,
        kind="llamacpp",
        *,
        ctx=2048,
        slots=2,
        supports_tools=True,
        honors_forced=False,
        refuses_long=True,
        json_ok=True,
        seed_deterministic=True,
        vision=False,
        reply="Hello there, this is a fake model talking.",
        reasoning=None,
        chunk_delay_s=0.0,
    ):
        self.kind, self.ctx, self.slots = kind, ctx, slots
        self.supports_tools, self.honors_forced, self.refuses_long = supports_tools, honors_forced, refuses_long
        self.json_ok, self.seed_deterministic, self.vision = json_ok, seed_deterministic, vision
        self.reply, self.reasoning, self.chunk_delay_s = reply, reasoning, chunk_delay_s
        self.fail_next: list[tuple[int, dict]] = []
        self.requests: list[dict] = []
        self.closed_early = 0
        self.app = self._build_app()
        self._server = None
        self.url = ""

    def start(self) -> FakeOpenAI:
        self._server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()

    # -- what the "model" answers ----------------------------------------------------

    def answer(self, body: dict) -> dict:
        tools, choice = body.get("tools"), body.get("tool_choice", "auto")
        fmt = body.get("response_format") or {}
        if tools and (choice == "required" or isinstance(choice, dict)):
            name = tools[0]["function"]["name"]
            if isinstance(choice, dict) and self.honors_forced:
                name = choice["function"]["name"]
            return {"tool_calls": [{"id": "call_fake", "name": name, "arguments": "{}"}], "finish": "tool_calls"}
        if fmt.get("type") == "json_schema":
            content = json.dumps(instance_for(fmt["json_schema"]["schema"])) if self.json_ok else "plain words"
            return {"content": content, "finish": "stop"}
        content = self.reply
        if "seed" in body and not self.seed_deterministic:
            content += f" {random.random()}"
        elif "seed" in body:
            content += f" (seed {body['seed']})"
        return {"content": content, "reasoning": self.reasoning, "finish": "stop"}

    def _chunks(self, answer: dict, usage: dict | None):
        def chunk(delta=None, finish=None, **extra):
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": MODEL_ID,
                "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
                **extra,
            }

        yield chunk({"role": "assistant", "content": None})
        for word in (answer.get("reasoning") or "").split(" ") if answer.get("reasoning") else []:
            yield chunk({"reasoning_content": word + " "})
        for index, call in enumerate(answer.get("tool_calls") or []):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": ""},
                        }
                    ]
                }
            )
            half = len(call["arguments"]) // 2
            for piece in (call["arguments"][:half], call["arguments"][half:]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        words = (answer.get("content") or "").split(" ") if answer.get("content") else []
        for position, word in enumerate(words):
            yield chunk({"content": word if position == 0 else " " + word})
        yield chunk(finish=answer["finish"])
        if usage is not None:
            yield {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage}

    def _stream(self, answer: dict, usage: dict | None):
        finished = False
        try:
            for chunk in self._chunks(answer, usage):
                yield f"data: {json.dumps(chunk)}\n\n"
                if self.chunk_delay_s:
                    time.sleep(self.chunk_delay_s)
            yield "data: [DONE]\n\n"
            finished = True
        finally:
            if not finished:
                self.closed_early += 1

    # -- the HTTP side ---------------------------------------------------------------

    def _build_app(self) -> Flask:
        app = Flask("fake_openai")

        @app.get("/v1/models")
        def models():
            entry = {"id": MODEL_ID if self.kind != "koboldcpp" else "koboldcpp/tiny", "object": "model"}
            if self.kind == "llamacpp":
                entry["meta"] = {"n_ctx": self.ctx, "n_ctx_train": 4096}
            if self.kind == "vllm":
                entry["max_model_len"] = self.ctx
            return jsonify(object="list", data=[entry])

        @app.get("/props")
        def props():
            if self.kind != "llamacpp":
                return jsonify(error={"message": "Not Found"}), 404
            return jsonify(
                default_generation_settings={"n_ctx": self.ctx},
                total_slots=self.slots,
                modalities={"vision": self.vision},
                chat_template_caps={"supports_tools": self.supports_tools},
            )

        @app.get("/api/extra/version")
        def kobold_version():
            if self.kind != "koboldcpp":
                return jsonify(detail="Not Found"), 404
            return jsonify(result="KoboldCpp", version="1.102", vision=self.vision)

        @app.get("/api/extra/true_max_context_length")
        def kobold_ctx():
            return jsonify(value=self.ctx) if self.kind == "koboldcpp" else (jsonify(detail="Not Found"), 404)

        @app.get("/version")
        def vllm_version():
            return jsonify(version="0.9.0") if self.kind == "vllm" else (jsonify(detail="Not Found"), 404)

        @app.get("/api/version")
        def ollama_version():
            return jsonify(version="0.12.0") if self.kind == "ollama" else (jsonify(error="not found"), 404)

        @app.post("/api/show")
        def ollama_show():
            if self.kind != "ollama":
                return jsonify(error="not found"), 404
            return jsonify(
                capabilities=["completion", "tools", "thinking"] + (["vision"] if self.vision else []),
                model_info={"llama.context_length": 8192},
                parameters=f"num_ctx {self.ctx}\nstop x",
            )

        @app.post("/v1/chat/completions")
        def chat():
            body = request.get_json()
            self.requests.append(body)
            if self.fail_next:
                status, error = self.fail_next.pop(0)
                return jsonify(error), status
            texts = [m["content"] for m in body["messages"] if isinstance(m.get("content"), str)]
            prompt_chars = sum(len(text) for text in texts)
            if self.refuses_long and prompt_chars // 2 > self.ctx:
                return jsonify(
                    error={
                        "code": 400,
                        "message": "the request exceeds the available context size",
                        "type": "exceed_context_size_error",
                    }
                ), 400
            answer = self.answer(body)
            usage = {"prompt_tokens": max(1, prompt_chars // 4), "completion_tokens": 11}
            if body.get("stream"):
                include = (body.get("stream_options") or {}).get("include_usage")
                return Response(self._stream(answer, usage if include else None), mimetype="text/event-stream")
            message = {"role": "assistant", "content": answer.get("content")}
            if answer.get("tool_calls"):
                message["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in answer["tool_calls"]
                ]
            return jsonify(
                id="chatcmpl-1",
                object="chat.completion",
                model=MODEL_ID,
                usage=usage,
                choices=[{"index": 0, "message": message, "finish_reason": answer["finish"]}],
            )

        return app
