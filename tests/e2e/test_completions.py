"""OpenAI's /v1/completions on the Horde's text jobs, with the OpenAI SDK, through the reference worker."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import openai
import pytest
from sqlalchemy import func, select

from horde.text.models import TextRequest
from tests.e2e.test_text_horde_sdk import balance, find_user
from tests.support.harness import unique_model
from tests.support.openapi import validate
from tests.support.processes import wait_until

TEXT_RULES = Path(__file__).with_name("rules_text.json")
CANCEL_TIMEOUT_S = 60
REFERENCE_MODEL = "koboldcpp/Qwen3-8B"


@pytest.fixture
def text_model(horde):
    model = unique_model("text")
    horde.worker([model], "--kinds", "text", "--threads", "2", rules=TEXT_RULES)
    return model


def test_create_answers_a_text_completion(horde, text_model):
    key = horde.user(kudos=50)
    completion = horde.openai(key).completions.create(model=text_model, prompt="Say hi", max_tokens=32, seed=5)
    body = completion.model_dump(exclude_unset=True)
    validate(body, "CreateCompletionResponse")
    assert body["object"] == "text_completion" and body["id"].startswith("cmpl-")
    assert [(c["index"], c["text"], c["finish_reason"]) for c in body["choices"]] == [(0, "You wrote: Say hi", "stop")]
    assert body["model"] == text_model
    assert body["usage"]["completion_tokens"] > 0 and body["usage"]["prompt_tokens"] > 0
    x_horde = completion.model_extra["x_horde"]
    assert x_horde["kudos"] == 50 - balance(horde, key) > 0


def test_stop_is_not_in_the_text_and_n_gives_n_choices(horde, text_model):
    completion = horde.openai(horde.user(kudos=50)).completions.create(
        model=text_model, prompt="abc", max_tokens=16, n=2, stop=["wrote"]
    )
    assert sorted(c.index for c in completion.choices) == [0, 1]
    assert {(c.text, c.finish_reason) for c in completion.choices} == {("You ", "stop")}
    assert len(completion.model_extra["x_horde"]["generations"]) == 2


def test_length_finish_when_max_tokens_cuts(horde, text_model):
    prompt = "word " * 30
    completion = horde.openai(horde.user(kudos=50)).completions.create(model=text_model, prompt=prompt, max_tokens=16)
    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].text == ("You wrote: " + prompt)[:64]


def test_stream_sends_each_choice_then_usage(horde, text_model):
    events = list(
        horde.openai(horde.user(kudos=50)).completions.create(
            model=text_model, prompt="streamed", max_tokens=32, n=2, stream=True, stream_options={"include_usage": True}
        )
    )
    texts, finishes = {}, {}
    for event in events:
        body = event.model_dump(exclude_unset=True)
        validate(body, "CreateCompletionResponse")
        for choice in event.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
            if choice.finish_reason:
                finishes[choice.index] = choice.finish_reason
    assert texts == {0: "You wrote: streamed", 1: "You wrote: streamed"} and finishes == {0: "stop", 1: "stop"}
    assert events[-1].choices == [] and events[-1].usage.completion_tokens > 0


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"echo": True}, "echo"),
        ({"logprobs": 2}, "logprobs"),
        ({"suffix": "end"}, "suffix"),
        ({"best_of": 2}, "best_of"),
        ({"logit_bias": {"50256": -100}}, "logit_bias"),
        ({"prompt": ["one", "two"]}, "prompt"),
        ({"prompt": [1, 2, 3]}, "prompt"),
        ({"n": 21}, "n"),
        ({"max_tokens": 8}, "max_tokens"),
    ],
)
def test_refusals_name_their_parameter(horde, text_model, extra, param):
    body = {"model": text_model, "prompt": "x", **extra}
    with pytest.raises(openai.BadRequestError) as refused:
        horde.openai(horde.user()).completions.create(**body)
    assert refused.value.status_code == 400 and refused.value.body["param"] == param


def test_penalties_are_refused_unless_zero(horde, text_model):
    client = horde.openai(horde.user(kudos=50))
    assert client.completions.create(model=text_model, prompt="zero", frequency_penalty=0).choices
    with pytest.raises(openai.NotFoundError) as refused:
        client.completions.create(model=text_model, prompt="x", presence_penalty=0.5)
    assert refused.value.body["code"] == "no_worker_supports_features"


def test_unknown_model_and_unserved_model(horde):
    client = horde.openai(horde.user())
    with pytest.raises(openai.NotFoundError) as unknown:
        client.completions.create(model="nobody/has-this", prompt="x")
    assert unknown.value.body["code"] == "model_not_found"
    with httpx.Client() as http:  # in the model reference, but no text worker serves it
        answer = http.post(
            horde.url + "/v1/completions",
            json={"model": REFERENCE_MODEL, "prompt": "x"},
            headers={"Authorization": "Bearer 0000000000"},
        )
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "no_eligible_worker"
    assert answer.headers["x-should-retry"] == "false"


def test_a_model_its_worker_dropped_stays_known_and_is_refused_as_unserved(horde):
    """A real worker serves a text model, then comes back under the same name serving another: the first is still
    known (known_text_models), so the SDK gets 503 no_eligible_worker for it, and 404 for a model never declared."""
    owner, key = horde.user(trusted=True), horde.user(kudos=50)
    client = horde.openai(key)
    dropped, kept, name = unique_model("dropped"), unique_model("kept"), f"dropping-{uuid.uuid4().hex[:8]}"
    worker = horde.worker([dropped], "--kinds", "text", key=owner, name=name, rules=TEXT_RULES)
    assert client.completions.create(model=dropped, prompt="before", max_tokens=16).choices
    worker.stop()
    horde.workers.remove(worker)
    horde.worker([kept], "--kinds", "text", key=owner, name=name, rules=TEXT_RULES)
    wait_until(lambda: _serves(horde, name, kept), what=f"{name} to declare {kept}")  # its name was online already

    before = balance(horde, key)
    with pytest.raises(openai.InternalServerError) as unserved:
        client.completions.create(model=dropped, prompt="after", max_tokens=16)
    assert balance(horde, key) == before, "nothing charged"
    user_id = find_user(horde, key)["id"]
    with horde.runtime.db.read() as session:  # the request served before, and none queued since
        assert session.scalar(select(func.count()).where(TextRequest.user_id == user_id)) == 1
    assert unserved.value.status_code == 503
    assert (unserved.value.body["code"], unserved.value.body["param"]) == ("no_eligible_worker", "model")
    with pytest.raises(openai.NotFoundError) as unknown:
        client.completions.create(model=unique_model("never"), prompt="x", max_tokens=16)
    assert unknown.value.body["code"] == "model_not_found"
    assert client.completions.create(model=kept, prompt="still served", max_tokens=16).choices


def _serves(horde, worker_name: str, model: str) -> bool:
    stats = httpx.get(horde.url + "/api/v2/status/models", params={"type": "text"}, timeout=2).json()
    return any(stat["name"] == model and worker_name in stat["worker_names"] for stat in stats)


def test_idempotency_key_makes_one_charged_request(horde, text_model):
    key = horde.user(kudos=50)
    client = horde.openai(key)
    headers = {"Idempotency-Key": "text-once"}
    first = client.completions.create(model=text_model, prompt="once", extra_headers=headers)
    again = client.with_raw_response.completions.create(model=text_model, prompt="once", extra_headers=headers)
    assert again.headers.get("Idempotent-Replayed") == "true" and again.parse().id == first.id
    assert 50 - balance(horde, key) == first.model_extra["x_horde"]["kudos"]


def test_models_list_text_models_with_their_endpoints(horde, text_model):
    cards = {card.id: card.model_dump() for card in horde.openai().models.list()}
    assert cards[text_model]["x_horde"]["endpoints"] == ["completions"]
    assert horde.openai().models.retrieve(text_model).model_dump()["x_horde"]["endpoints"] == ["completions"]


def test_closed_stream_cancels_the_running_generation_uncharged(horde, text_model):
    from horde.text.models import TextRequest

    key = horde.user(kudos=50)
    with (
        httpx.Client(timeout=30) as http,
        http.stream(
            "POST",
            horde.url + "/v1/completions",
            headers={"Authorization": f"Bearer {key}"},
            # 4 s of generation (rules_text.json): still running when the server cancels, a keepalive (1 s) after
            # the client went and the drop grace (1 s) later
            json={"model": text_model, "prompt": "outlast the drop grace", "stream": True},
        ) as answer,
    ):
        request_id = answer.headers["x-request-id"]
        next(answer.iter_lines())  # the opening keepalive; then the client goes

    def cancelled():
        with horde.runtime.db.read() as session:
            row = session.get(TextRequest, request_id)
            return row if row.state == "cancelled" else None

    row = wait_until(cancelled, CANCEL_TIMEOUT_S, "the request to be cancelled")
    assert row.kudos_charged == 0 and balance(horde, key) == 50
