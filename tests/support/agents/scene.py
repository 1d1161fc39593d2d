"""A test's scene: a fresh user, a capable scripted worker for a model of its own with rules that call the
client's own tool, a working directory holding a marker file, and what the Horde's database must show afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from horde.accounts import service as accounts
from horde.chat.models import DONE, ChatRequest
from tests.e2e.test_races import entries
from tests.support.agents.run import CLIENT_TIMEOUT_S, ClientRun, run_client, sealed_env
from tests.support.harness import Harness, write_rules
from tests.support.requests_by_model import request_ids_for_model

#: What the agents' users configure: a worker with a 200,000-token context and 16,384-token replies, which declares
#: every feature (tools, JSON, reasoning) as the scripted backend does by default.
CAPABLE_WORKER_FLAGS = ("--max-length", "16384", "--max-context-length", "200000")
#: Enough for the agents' long prompts and 16,384-token replies, which ask for kudos upfront beyond the free allowance.
USER_KUDOS = 100_000
#: The prompt of every tool round trip, and what its rule looks for.
LIST_PROMPT = "List the files in this directory."


@dataclass(frozen=True)
class Scene:
    horde: Harness
    model: str
    key: str
    home: Path
    workdir: Path
    #: The name of a file made in `workdir`: only the client's own tool can have seen it.
    marker: str
    #: A word every reply of this scene's worker carries and no prompt does: only this worker can have said it.
    answer: str

    def env(self, proxy_guard: bool = True, **variables: str) -> dict[str, str]:
        return sealed_env(self.home, proxy_guard, **variables)

    def run(self, argv: list[str], env: dict[str, str], timeout_s: float = CLIENT_TIMEOUT_S) -> ClientRun:
        return run_client(argv, self.workdir, env, timeout_s)


def make_scene(
    horde: Harness, tmp_path: Path, rules: Callable[[Scene], list[dict]], model_prefix: str = "agents"
) -> Scene:
    """A scene whose worker follows `rules(scene)` (they may name its working directory or marker)."""
    token = uuid.uuid4().hex[:10]
    workdir, home = tmp_path / "work", tmp_path / "home"
    workdir.mkdir()
    home.mkdir()
    scene = Scene(
        horde=horde,
        model=f"{model_prefix}/model-{token}",
        key=horde.user(kudos=USER_KUDOS),
        home=home,
        workdir=workdir,
        marker=f"marker-{token}.txt",
        answer=f"answer-{token}",
    )
    (workdir / scene.marker).write_text("made by the test, seen only through the client's tool\n")
    horde.worker([scene.model], *CAPABLE_WORKER_FLAGS, rules=write_rules(tmp_path, rules(scene)))
    return scene


def hello_rules(scene: Scene) -> list[dict]:
    return [{"match": {}, "reply": {"content": f"{scene.answer}: hello from the Horde's scripted worker."}}]


def tool_rules(call: dict | Callable[[Scene], dict]) -> Callable[[Scene], list[dict]]:
    """Rules that answer LIST_PROMPT with `call` (the client's own tool; or `call(scene)`) and the tool's result
    with an answer that quotes it; anything else the client asks on the side (a title) gets a plain answer."""

    def rules(scene: Scene) -> list[dict]:
        return [
            {
                "match": {"last_role": "tool"},
                "reply": {"content": f"{scene.answer}: the tool said {{last_tool_output}}"},
            },
            {
                "match": {"contains": LIST_PROMPT, "has_tools": True},
                "reply": {"tool_calls": [call(scene) if callable(call) else call]},
            },
            *hello_rules(scene),
        ]

    return rules


def quotes_the_tool_output(scene: Scene, printed: str) -> bool:
    """The client printed the worker's answer to the tool's result, and that answer quotes the marker file: what
    follows the answer's opening words, so a client that echoes its tool's output itself does not count."""
    opening = f"{scene.answer}: the tool said"
    return opening in printed and scene.marker in printed.split(opening, 1)[1]


def served_requests(horde: Harness, model: str) -> list[ChatRequest]:
    ids = request_ids_for_model(horde.runtime.db, model)
    with horde.runtime.db.read() as session:
        rows = session.scalars(select(ChatRequest).where(ChatRequest.id.in_(ids))).all()
        session.expunge_all()
    return sorted(rows, key=lambda row: row.created_at)


def assert_served_and_charged_once(scene: Scene, at_least: int = 1) -> list[ChatRequest]:
    """Every request the client made for the scene's model was served by a worker and charged exactly once (one
    charge, the worker owner's matching reward); returns them, oldest first."""
    rows = served_requests(scene.horde, scene.model)
    assert len(rows) >= at_least, f"expected at least {at_least} request(s) for {scene.model}, found {len(rows)}"
    for row in rows:
        assert row.state == DONE, f"request {row.id} ended {row.state}, not done"
        assert row.kudos_charged > 0, f"request {row.id} was not charged"
        charged = entries(scene.horde, row.id)
        assert charged == {"charge": [-row.kudos_charged], "reward": [row.kudos_charged]}, (row.id, charged)
    assert balance(scene) == USER_KUDOS - sum(row.kudos_charged for row in rows)
    return rows


def assert_nothing_queued_or_charged(scene: Scene) -> None:
    assert served_requests(scene.horde, scene.model) == []
    assert balance(scene) == USER_KUDOS


def balance(scene: Scene) -> int:
    with scene.horde.runtime.db.read() as session:
        user = accounts.find_user(session, scene.key)
        assert user is not None
        return user.kudos
