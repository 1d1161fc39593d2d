"""The Batch API through the app's HTTP interface (uploads, batches, their files) and a batch driver run by hand,
one pass at a time, for integration tests that decide when each step happens."""

from __future__ import annotations

import io
import json
from typing import Any

from horde.batches.driver import Driver
from horde.oai.batch_lines import OpenAILines

CHAT = "/v1/chat/completions"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def jsonl(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def chat_line(custom_id: str, content: str = "Hello", model: str = "m1", url: str = CHAT, **body: Any) -> dict:
    request = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 64, **body}
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": request}


def upload(client, key: str, data: bytes, name: str = "batch.jsonl", **fields: Any):
    form = {"purpose": "batch", **fields, "file": (io.BytesIO(data), name)}
    return client.post("/v1/files", data=form, headers=bearer(key), content_type="multipart/form-data")


def uploaded_id(client, key: str, data: bytes) -> str:
    answer = upload(client, key, data)
    assert answer.status_code == 200, answer.json
    return answer.json["id"]


def create(client, key: str, file_id: str, endpoint: str = CHAT, **body: Any):
    body = {"input_file_id": file_id, "endpoint": endpoint, "completion_window": "24h", **body}
    return client.post("/v1/batches", json=body, headers=bearer(key))


def batch_of(client, key: str, lines: list[dict], endpoint: str = CHAT) -> str:
    """A batch of `lines`, created (validating)."""
    answer = create(client, key, uploaded_id(client, key, jsonl(lines)), endpoint)
    assert answer.status_code == 200, answer.json
    return answer.json["id"]


def retrieve(client, key: str, batch_id: str) -> dict:
    answer = client.get(f"/v1/batches/{batch_id}", headers=bearer(key))
    assert answer.status_code == 200, answer.json
    return answer.json


def content_lines(client, key: str, file_id: str | None) -> list[dict]:
    if file_id is None:
        return []
    answer = client.get(f"/v1/files/{file_id}/content", headers=bearer(key))
    assert answer.status_code == 200, answer.json
    return [json.loads(line) for line in answer.get_data().splitlines()]


def driver(runtime, owner: str = "test-driver") -> Driver:
    return Driver(runtime, OpenAILines(runtime), owner=owner)
