"""Background responses and resumable streams against real servers and scripted workers, with the OpenAI SDK.

The SDK's responses.create(background=True), responses.retrieve (polled, and streamed from `starting_after`),
responses.stream(response_id=..., starting_after=...) and responses.cancel; a dropped stream that cancels
nothing; two server processes on PostgreSQL and Redis, and a kill -9 of the process that created the response.
"""

from __future__ import annotations

import json
import signal

import openai
import pytest
import requests

from tests.support.harness import RULES_PATH, postgres_servers, unique_model, write_rules
from tests.support.openapi import validate
from tests.support.processes import wait_until

#: A reply that comes in eight progress posts (reasoning, then text) over about three seconds: longer than the drop
#: grace (1 s in the e2e settings), which would cancel a foreground stream whose client went away.
STEPS_RULE = {
    "match": {"contains": "in steps please"},
    "reply": {
        "reasoning_content": "Let me think this through, one step at a time.",
        "content": "One, two, three, four, five, six, seven, eight, nine, ten: the count is done.",
        "progress_steps": 8,
        "progress_interval_s": 0.35,
    },
}
ENDED = ("completed", "incomplete", "failed", "cancelled")


@pytest.fixture
def steps_rules(tmp_path):
    return write_rules(tmp_path, [STEPS_RULE, *json.loads(RULES_PATH.read_text())["rules"]])


def raw_get(server, key, path):
    return requests.get(server.url + "/v1" + path, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def ended(client, response_id):
    """The response once it ended (polled as a client polls it)."""
    return wait_until(
        lambda: (found := client.responses.retrieve(response_id)).status in ENDED and found,
        timeout_s=60,
        what=f"{response_id} to end",
    )


def text_of(events):
    return "".join(event.delta for event in events if event.type == "response.output_text.delta")


def test_create_in_the_background_then_poll(horde):
    model = unique_model()
    horde.worker([model])
    key = horde.user(kudos=100)
    client = horde.openai(key)
    created = client.responses.with_raw_response.create(model=model, input="Hello there", background=True)
    validate(created.http_response.json(), "Response")
    queued = created.parse()
    print("responses.create(background=True) ->", queued.id, queued.status)
    assert queued.status == "queued" and queued.background is True
    done = ended(client, queued.id)
    assert done.status == "completed" and done.output_text == "You wrote: Hello there" and done.background is True
    validate(raw_get(horde.server, key, f"/responses/{queued.id}").json(), "Response")
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model=model, input="Hi", background=True, store=False)
    assert refused.value.body["param"] == "background"


def test_a_dropped_stream_resumes_after_n_and_cancels_nothing(horde, steps_rules):
    model = unique_model()
    horde.worker([model], rules=steps_rules)
    key = horde.user(kudos=100)
    client = horde.openai(key)
    first = []
    with client.responses.create(model=model, input="in steps please", background=True, stream=True) as stream:
        for event in stream:
            first.append(event)
            if event.type == "response.output_text.delta":
                break  # the client drops, in the middle of the text
    response_id = first[0].response.id
    last = first[-1].sequence_number
    print("dropped after", [(event.sequence_number, event.type) for event in first])
    assert [event.sequence_number for event in first] == list(range(last + 1))
    assert [event.type for event in first[:3]] == ["response.created", "response.queued", "response.in_progress"]

    rest = list(client.responses.retrieve(response_id, stream=True, starting_after=last))
    print("resumed:", [(event.sequence_number, event.type) for event in rest][:4], "...", rest[-1].type)
    assert [event.sequence_number for event in rest] == list(range(last + 1, last + 1 + len(rest)))
    assert rest[-1].type == "response.completed"  # the drop cancelled nothing
    done = client.responses.retrieve(response_id)
    assert text_of(first) + text_of(rest) == done.output_text == STEPS_RULE["reply"]["content"]
    assert rest[-1].response.output_text == done.output_text

    with client.responses.stream(response_id=response_id, starting_after=3) as helper:
        helped = list(helper)
        final = helper.get_final_response()
    assert helped[0].sequence_number == 4 and final.output_text == done.output_text

    replay = requests.get(
        horde.url + f"/v1/responses/{response_id}?stream=true",
        headers={"Authorization": f"Bearer {key}"},
        stream=True,
        timeout=30,
    )
    payloads = [
        json.loads(line[len("data: ") :])
        for line in replay.iter_lines(decode_unicode=True)
        if line.startswith("data: ")
    ]
    for payload in payloads:
        validate(payload, "ResponseStreamEvent")
    assert [payload["sequence_number"] for payload in payloads] == list(range(len(payloads)))
    assert payloads[: last + 1] == [event.model_dump(mode="json", exclude_unset=True) for event in first]


def test_cancel_a_running_response_charges_what_was_generated(horde):
    model = unique_model()
    horde.worker([model])
    key = horde.user(kudos=100)
    client = horde.openai(key)
    running = client.responses.create(model=model, input="very long", background=True)
    request_id = "-".join((running.id[5:13], running.id[13:17], running.id[17:21], running.id[21:25], running.id[25:]))
    wait_until(lambda: len(_progress(horde, request_id)) > 40, timeout_s=30, what="some text generated")
    cancelled = client.responses.cancel(running.id)
    again = client.responses.cancel(running.id)
    print("responses.cancel ->", cancelled.status, repr(cancelled.output_text[:50]), cancelled.model_extra["x_horde"])
    assert cancelled.status == "cancelled" and again == cancelled
    assert 40 <= len(cancelled.output_text) < 739  # what was generated until the cancel, not the whole reply
    assert cancelled.model_extra["x_horde"]["kudos"] >= 1
    assert client.responses.retrieve(running.id) == cancelled
    with pytest.raises(openai.BadRequestError) as synchronous:
        client.responses.cancel(client.responses.create(model=model, input="Hi").id)
    assert synchronous.value.body["message"] == "Cannot cancel a synchronous response."


def _progress(horde, request_id):
    from horde.chat import service

    request = service.read(horde.runtime, request_id)
    return (request.progress_content or "") if request is not None else ""


def test_two_processes_and_a_kill_9_of_the_creating_one(steps_rules):
    with postgres_servers() as harness:
        creator, survivor = harness.servers
        model = unique_model()
        harness.worker([model], rules=steps_rules, server=survivor)
        key = harness.user(kudos=100)
        on_creator, on_survivor = harness.openai(key, server=creator), harness.openai(key, server=survivor)

        polled = on_creator.responses.create(model=model, input="Hello", background=True)
        assert ended(on_survivor, polled.id).output_text == "You wrote: Hello"  # polled from the other process
        to_cancel = on_creator.responses.create(model=model, input="in steps please", background=True)
        cancelled = on_survivor.responses.cancel(to_cancel.id)
        assert cancelled.status == "cancelled" and on_creator.responses.retrieve(to_cancel.id) == cancelled

        seen = []
        stream = on_creator.responses.create(model=model, input="in steps please", background=True, stream=True)
        for event in stream:
            seen.append(event)
            if event.type == "response.output_text.delta":
                break
        creator.popen.send_signal(signal.SIGKILL)  # mid-stream, nothing of it in any other process's memory
        creator.popen.wait(10)
        response_id, last = seen[0].response.id, seen[-1].sequence_number
        rest = list(on_survivor.responses.retrieve(response_id, stream=True, starting_after=last))
        print("after kill -9:", len(seen), "events seen on the creator,", len(rest), "from the survivor")
        assert rest[0].sequence_number == last + 1 and rest[-1].type == "response.completed"
        done = on_survivor.responses.retrieve(response_id)
        assert text_of(seen) + text_of(rest) == done.output_text == STEPS_RULE["reply"]["content"]
        replayed = list(on_survivor.responses.retrieve(response_id, stream=True))
        assert [event.model_dump() for event in replayed[: last + 1]] == [event.model_dump() for event in seen]
