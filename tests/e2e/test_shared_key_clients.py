"""A shared key as the key of the real OpenAI and Anthropic SDKs: the owner pays, within the key's limits."""

from __future__ import annotations

import anthropic
import openai
import pytest
import requests

from tests.support.harness import unique_model

HTTP_TIMEOUT_S = 10


def native(horde, method: str, path: str, key: str | None = None, body: dict | None = None) -> dict:
    headers = {"apikey": key} if key else {}
    answer = requests.request(method, f"{horde.url}/api/v2{path}", json=body, headers=headers, timeout=HTTP_TIMEOUT_S)
    assert answer.status_code < 300, answer.text
    return answer.json()


def test_sdks_paying_with_a_shared_key_charge_its_owner_within_its_limits(horde):
    model = unique_model("lent")
    owner = horde.user(kudos=100)
    horde.worker([model])
    key = native(horde, "POST", "/sharedkeys", owner, {"kudos": 20, "max_text_tokens": 100, "name": "sdk"})["id"]

    completion = horde.openai(key).chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=64
    )
    assert completion.choices[0].message.content == "You wrote: Hi"
    message = anthropic.Anthropic(base_url=horde.url, api_key=key, max_retries=0).messages.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": "Hello"}]
    )
    assert message.content[0].text == "You wrote: Hello"

    utilized = native(horde, "GET", f"/sharedkeys/{key}")["utilized"]
    assert utilized >= 2 and native(horde, "GET", "/find_user", owner)["kudos"] == 100 - utilized
    with pytest.raises(openai.BadRequestError) as too_long:
        horde.openai(key).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=101
        )
    assert "limited to 100 tokens" in too_long.value.message
    native(horde, "PATCH", f"/sharedkeys/{key}", owner, {"kudos": utilized})
    with pytest.raises(openai.PermissionDeniedError) as empty:
        horde.openai(key).chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}])
    assert empty.value.code == "SharedKeyEmpty"
    assert native(horde, "GET", f"/sharedkeys/{key}")["utilized"] == utilized
