"""A background response's events are a pure function of its kept progress and its end (background_events.py)."""

import datetime as dt
import json
import random
from collections import namedtuple

from sqlalchemy.orm import configure_mappers

import horde.models  # noqa: F401  (every table, for the mappers)
from horde.chat.models import CANCELLED, DONE, PROCESSING
from horde.chat.request_rows import transient
from horde.oai.ignored import Ignored
from horde.oai.responses import answer, recipe
from horde.oai.responses.background_events import BackgroundWriter
from horde.oai.responses.tools import Namespaces

Entry = namedtuple("Entry", "job_id content reasoning")
REASONING = "First I read the question, then I think about it at some length."
CONTENT = "Here is the answer, written one piece at a time by the worker, as its progress posts bring it."
BODY = {"background": True, "metadata": {"run": "nightly"}}
SHAPE = answer.Shape(include_reasoning=True, namespaces=Namespaces())


def request(**changes):
    configure_mappers()  # as the first query would: a transient request reads its attributes through them
    values = {
        "id": "0b1c2d3e-0000-4000-8000-000000000001",
        "created_at": dt.datetime(2026, 1, 1),
        "finished_at": None,
        "models": ["m1", "m2"],
        "served_model": None,
        "payload": {"messages": [{"role": "user", "content": "Hi"}]},
        "state": PROCESSING,
        "attempts": 1,
        "reply": None,
        "prompt_tokens": 12,
        "kudos_charged": 0,
        "worker_id": None,
        "worker_name": None,
        "context_adjustments": None,
        "fault_rc": None,
        "fault_message": None,
        "progress_content": None,
        "progress_reasoning": None,
    }
    return transient(values | changes)


def entries(job="job-1"):
    """The deltas of posts that bring the reasoning, then the content, in uneven pieces."""
    rng = random.Random(7)
    out, reasoning_at, content_at = [], 0, 0
    while reasoning_at < len(REASONING):
        step = rng.randint(1, 20)
        out.append(Entry(job, "", REASONING[reasoning_at : reasoning_at + step]))
        reasoning_at += step
    while content_at < len(CONTENT):
        step = rng.randint(1, 30)
        out.append(Entry(job, CONTENT[content_at : content_at + step], ""))
        content_at += step
    return out


def finished():
    reply = {"content": CONTENT, "reasoning_content": REASONING, "finish_reason": "stop"}
    return request(
        state=DONE, reply=reply, served_model="m2", worker_id="w1", finished_at=dt.datetime(2026, 1, 1, 0, 1)
    )


def render(batches, end):
    """Every event, numbered, as a follower that read the entries in `batches` writes them."""
    writer = BackgroundWriter(request(attempts=0), BODY, SHAPE)
    events = writer.numbered(writer.opening_events())
    for batch in batches:
        events += writer.numbered(writer.entries(batch))
    events += writer.numbered(writer.finish(end))
    return events, writer.final


def payloads(events):
    return [json.loads(chunk.split(b"data: ", 1)[1]) for _, chunk in events]


def test_any_reading_of_the_entries_writes_the_same_events():
    every = entries()
    alone, final = render([every], finished())
    assert [number for number, _ in alone] == list(range(len(alone)))
    rng = random.Random(11)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(every)), rng.randint(1, 8)))
        batches = [every[start:end] for start, end in zip([0, *cuts], [*cuts, len(every)], strict=True)]
        assert render(batches + [[]], finished()) == (alone, final)
    kinds = [payload["type"] for payload in payloads(alone)]
    assert kinds[:3] == ["response.created", "response.queued", "response.in_progress"]
    assert payloads(alone)[0]["response"]["model"] == "m1"  # the model asked for, whoever reads it first
    assert kinds[-1] == "response.completed" and payloads(alone)[-1]["response"] == final
    text = "".join(p["delta"] for p in payloads(alone) if p["type"] == "response.output_text.delta")
    assert text == CONTENT and final["output"][-1]["content"][0]["text"] == CONTENT


def test_a_cancel_ends_with_the_text_generated_so_far():
    kept = entries()[:20]
    shown = "".join(entry.content for entry in kept)
    reasoning = "".join(entry.reasoning for entry in kept)
    end = request(state=CANCELLED, progress_content=shown, progress_reasoning=reasoning, kudos_charged=3)
    events, final = render([kept], end)
    assert [p["type"] for p in payloads(events)][-2:] == ["error", "response.failed"]
    assert final["status"] == "cancelled" and payloads(events)[-1]["response"] == final
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["output"][-1]["content"][0]["text"] == shown and final["x_horde"]["kudos"] == 3


def test_another_worker_after_text_ends_the_stream_as_a_restart_does():
    kept = entries()[:20] + [Entry("job-2", "Something else", "")]
    events, final = render([kept], finished())
    assert [p["type"] for p in payloads(events)][-2:] == ["error", "response.failed"]
    assert final["status"] == "failed" and final["model"] == "m1"


def test_the_recipe_survives_json():
    namespaces = Namespaces({"ns__f": ("ns", "f")}, ["tools[0].tools[0]"])
    shape = answer.Shape(
        include_reasoning=False, ignored=Ignored(token_param="max_output_tokens"), namespaces=namespaces
    )
    shape.ignored.add("client_metadata")
    shape.ignored.lower("max_output_tokens", 99999, 16384)
    kept = recipe.of(
        {"background": True, "input": "not kept", "metadata": {}}, shape, [{"role": "user", "content": "x"}]
    )
    again = recipe.from_json(json.loads(json.dumps(recipe.to_json(kept))))
    assert again == kept and "input" not in again.body
