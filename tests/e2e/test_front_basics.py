"""Guide: configure, model card, several models, accepted and refused keys, errors and limits."""

import json

import openai
import pytest
import requests

from tests.support.harness import unique_model
from tests.support.openapi import validate

ALL_FEATURES = (
    "tools,json_object,json_schema,tools_with_response_format,vision,seed,frequency_penalty,"
    "presence_penalty,reasoning_effort,progress"
)


def test_models_answers_200_and_malformed_header_401(horde):
    key = horde.user()
    assert requests.get(horde.url + "/v1/models", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert requests.get(horde.url + "/v1/models").status_code == 200
    bad = requests.get(horde.url + "/v1/models", headers={"Authorization": "Token abc"})
    assert bad.status_code == 401
    assert bad.json()["error"]["code"] == "InvalidAuthorizationHeader"
    unknown = requests.get(horde.url + "/v1/models", headers={"Authorization": "Bearer not-a-key"})
    assert unknown.status_code == 401


def test_model_card_lists_online_models_with_maxima_and_unions(horde):
    model = unique_model()
    horde.worker(
        [model],
        "--max-length",
        "300",
        "--max-context-length",
        "2048",
        "--features",
        "seed,progress",
        "--guarantees",
        "prompt_fit",
    )
    horde.worker(
        [model],
        "--max-length",
        "600",
        "--max-context-length",
        "1024",
        "--features",
        "tools,vision",
        "--guarantees",
        "prompt_fit",
        "--threads",
        "2",
    )
    client = horde.openai(horde.user())
    listed = {item.id: item for item in client.models.list().data}
    assert model in listed
    card = listed[model].model_dump()
    assert card["context_length"] == 2048
    assert card["top_provider"]["max_completion_tokens"] == 600
    assert {"seed", "tools", "parallel_tool_calls", "max_tokens", "temperature"} <= set(card["supported_parameters"])
    assert "tool_choice" not in card["supported_parameters"]
    assert card["architecture"]["input_modalities"] == ["text", "image"]
    assert card["x_horde"]["workers"] == 2 and card["x_horde"]["threads"] == 3
    assert client.models.retrieve(model).id == model
    with pytest.raises(openai.NotFoundError) as raised:
        client.models.retrieve(model + ":variant")
    assert raised.value.body["code"] == "model_not_found"


def test_default_keys_only_are_served(horde):
    model = unique_model()
    horde.worker([model])
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [],
        "tool_choice": None,
        "parallel_tool_calls": None,
        "response_format": {"type": "text"},
        "logprobs": False,
        "top_logprobs": 0,
        "store": False,
        "service_tier": "auto",
    }
    response = requests.post(horde.url + "/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["object"] == "chat.completion"
    assert response.json()["choices"][0]["message"]["content"] == "You wrote: Hi"


def test_refused_key_raises_bad_request_with_param(horde):
    model = unique_model()
    horde.worker([model])
    client = horde.openai()
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hi"}], logit_bias={"50256": -100}
        )
    assert raised.value.body["code"] == "UnsupportedChatParameter"
    assert raised.value.param == "logit_bias"


def test_any_of_several_models(horde):
    served, unserved = unique_model(), unique_model()
    horde.worker([served])
    client = horde.openai()
    completion = (
        client.chat.completions.create(
            model="ignored",
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"models": [unserved, served], "model": None},
        )
        if False
        else None
    )
    response = requests.post(
        horde.url + "/v1/chat/completions",
        json={"models": [served, served], "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert response.status_code == 200 and response.json()["model"] == served
    missing = requests.post(
        horde.url + "/v1/chat/completions",
        json={"models": [served, "nobody/has-this"], "messages": [{"role": "user", "content": "x"}]},
    )
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "models[1]"
    both = requests.post(
        horde.url + "/v1/chat/completions",
        json={"model": served, "models": [served], "messages": [{"role": "user", "content": "x"}]},
    )
    assert both.status_code == 400 and both.json()["error"]["code"] == "ChatRequestConflict"
    too_many = requests.post(
        horde.url + "/v1/chat/completions",
        json={"models": [served] * 6, "messages": [{"role": "user", "content": "x"}]},
    )
    assert too_many.status_code == 400 and too_many.json()["error"]["code"] == "UnsupportedChatParameter"
    assert completion is None


def test_unserved_known_model_is_503_no_eligible_worker_at_once(horde):
    model = unique_model()
    worker = horde.worker([model])
    worker.stop()
    with horde.runtime.db.transaction() as session:  # the worker's check-in ages out of the online window
        import datetime as dt

        from horde.workers.models import Worker

        row = session.query(Worker).filter_by(name=worker.worker_name).one()
        row.last_pop_at = row.last_pop_at - dt.timedelta(seconds=301)
    response = requests.post(
        horde.url + "/v1/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "Hi"}]}
    )
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "no_eligible_worker"
    assert "not served by any" in response.json()["error"]["message"]
    assert response.headers["x-should-retry"] == "false"


def test_max_tokens_above_the_card_is_lowered_and_reported(horde):
    model = unique_model()
    horde.worker([model], "--max-length", "256")
    client = horde.openai(horde.user())
    card = client.models.retrieve(model).model_dump()
    completion = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4000
    )
    adjustments = completion.model_extra["x_horde"]["context_adjustments"]
    assert {
        "from": 4000,
        "to": card["top_provider"]["max_completion_tokens"],
        "reason": "worker_max_length",
    } in adjustments


def test_answer_shape_and_x_horde(horde):
    model = unique_model()
    worker = horde.worker([model])
    completion = horde.openai().chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}])
    x_horde = completion.model_extra["x_horde"]
    assert x_horde["worker_name"] == worker.worker_name and x_horde["model"] == model
    assert x_horde["context_adjustments"] is None and x_horde["kudos"] >= 1
    assert completion.system_fingerprint.startswith("fp_")
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens_details.reasoning_tokens == 0
    body = json.loads(completion.model_dump_json())
    assert body["choices"][0]["native_finish_reason"] == "stop"
    raw = requests.post(
        horde.url + "/v1/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "Hi"}]}
    ).json()
    validate(raw, "CreateChatCompletionResponse")
