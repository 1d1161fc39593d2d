"""The real Open WebUI (the self-hosted chat UI, from PyPI) in Debian's Chromium against a running Horde, set up as
its users do (OPENAI_API_BASE_URL and OPENAI_API_KEY): a "Hello" typed in its page reaches a scripted worker and
the reply streams back into the page; its title task reaches the Horde and is answered.

Its chats send its built-in tools with every message (36 definitions, about 6,200 tokens by the Horde's count), so
a model whose workers have a 4,096-token context refuses the first "Hello": the page shows the Horde's message.
With the model's Function Calling set to legacy (docs/how-to/use-open-webui.md) it sends no tools and the same
model answers. Runs with HORDE_TEST_OPENWEBUI=1 (tests/support/open_webui installs it once per machine).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from horde.chat.models import DONE, ChatRequest
from tests.support import open_webui
from tests.support.browser import CHROMIUM, chromium_page, screenshot
from tests.support.harness import Harness, write_rules
from tests.support.open_webui.server import OpenWebUI
from tests.support.processes import wait_until
from tests.support.recording_proxy import RecordingProxy
from tests.support.requests_by_model import request_ids_for_model

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"Chromium is not installed at {CHROMIUM}"),
]

#: A worker as large models are served: room for the built-in tools and the title task's max_tokens 1000.
LARGE_WORKER_FLAGS = ("--max-length", "1024", "--max-context-length", "32768")
#: The small-context workers of the issue: 4,096 tokens of context, 512-token replies.
SMALL_CONTEXT_TOKENS = 4096
SMALL_WORKER_FLAGS = ("--max-length", "512", "--max-context-length", str(SMALL_CONTEXT_TOKENS))
#: Its title task asks for this many tokens (Open WebUI 0.12).
TITLE_MAX_TOKENS = 1000
#: The words that open its title task's prompt, and of every other task (follow-ups, tags).
TITLE_TASK = "Generate a concise title"
ANY_TASK = "### Task:"
#: Open WebUI's page waits on the Horde, the worker, and its own tasks: generous, never a pass condition.
PAGE_TIMEOUT_MS = 90_000
CHAT_PATH = "/v1/chat/completions"
#: A prompt whose rule calls one of Open WebUI's built-in tools, which Open WebUI runs itself.
TIME_PROMPT = "What is the Unix time now?"
TIME_TOOL = "get_current_timestamp"


class Stack:
    """One Horde, its scripted workers, a recording proxy in front of its /v1, and one Open WebUI on the proxy."""

    def __init__(self, tmp: Path):
        token = uuid.uuid4().hex[:8]
        self.answer = f"answer-{token}"
        self.reply = f"{self.answer}: hello from the Horde's scripted worker."
        self.title = f"Horde title {token}"
        self.large, self.small, self.small_legacy = (
            f"owui-{kind}/model-{token}" for kind in ("large", "small", "legacy")
        )
        self.horde = Harness(f"sqlite:///{tmp / 'horde.db'}")
        rules = write_rules(tmp, self.rules())
        self.horde.worker([self.large], *LARGE_WORKER_FLAGS, rules=rules)
        self.horde.worker([self.small, self.small_legacy], *SMALL_WORKER_FLAGS, rules=rules)
        self.proxy = RecordingProxy(self.horde.url)
        self.webui = None
        try:
            self.webui = OpenWebUI(
                open_webui.python(), tmp / "open-webui", self.proxy.url, self.horde.user(kudos=10**6)
            )
            # What the how-to tells an admin to do for a small-context model: Function Calling set to legacy.
            self.webui.set_model_params(self.small_legacy, {"function_calling": "legacy"})
        except BaseException:
            self.close()
            raise

    def rules(self) -> list[dict]:
        follow_ups_and_tags = {"follow_ups": ["What else can you do?"], "tags": ["General"]}
        return [
            {
                "match": {"last_role": "tool"},
                "reply": {"content": f"{self.answer}: the tool said {{last_tool_output}}"},
            },
            {
                "match": {"contains": TIME_PROMPT, "has_tools": True},
                "reply": {"tool_calls": [{"name": TIME_TOOL, "arguments": {}}]},
            },
            {"match": {"contains": TITLE_TASK}, "reply": {"content": json.dumps({"title": self.title})}},
            {"match": {"contains": ANY_TASK}, "reply": {"content": json.dumps(follow_ups_and_tags)}},
            {
                "match": {},
                "reply": {"content": self.reply, "progress_steps": 3},
            },
        ]

    def chats_for(self, model: str) -> list:
        """What Open WebUI sent for `model` to /v1/chat/completions, refused ones included, oldest first."""
        return [ex for ex in self.proxy.posts(CHAT_PATH) if ex.body and ex.body.get("model") == model]

    def served(self, model: str) -> list[ChatRequest]:
        ids = request_ids_for_model(self.horde.runtime.db, model)
        with self.horde.runtime.db.read() as session:
            rows = session.scalars(select(ChatRequest).where(ChatRequest.id.in_(ids))).all()
            session.expunge_all()
        return rows

    def close(self) -> None:
        if self.webui:
            self.webui.stop()
        self.proxy.close()
        self.horde.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    open_webui.require_open_webui()
    stack = Stack(tmp_path_factory.mktemp("open-webui"))
    yield stack
    stack.close()


@pytest.fixture
def page():
    with chromium_page(1280, 900, PAGE_TIMEOUT_MS) as page:
        yield page


def say_hello(page, stack: Stack, model: str, prompt: str = "Hello") -> None:
    """Open a new chat in Open WebUI's page, pick `model` in its model selector and send `prompt`."""
    page.goto(stack.webui.url)
    chat_input = page.locator("#chat-input")
    welcome = page.get_by_text("Okay, Let's Go!")  # its release notes, shown once to a new user
    chat_input.or_(welcome).first.wait_for()
    if welcome.is_visible():
        welcome.click()
    page.locator("#model-selector-model-button").click()
    page.get_by_text(model, exact=True).last.click()
    page.locator("#model-selector-model-button").filter(has_text=model).wait_for()
    chat_input.click()
    page.keyboard.type(prompt)
    page.keyboard.press("Enter")


def messages_text(page) -> str:
    return page.locator("#messages-container").inner_text()


def wait_for_reply(page, stack: Stack) -> None:
    """The worker's whole reply in the page (it streams in, in three parts)."""
    page.locator("#messages-container").get_by_text(stack.reply).wait_for()


def test_hello_streams_the_workers_reply_and_the_title_task_is_answered(stack, page):
    say_hello(page, stack, stack.large)
    wait_for_reply(page, stack)
    page.get_by_text(stack.title).first.wait_for()  # the sidebar names the chat with the worker's title

    sent = stack.chats_for(stack.large)
    chats = [ex for ex in sent if ex.body["messages"][-1]["content"] == "Hello"]
    assert len(chats) == 1, [ex.body for ex in sent]
    chat = chats[0].body
    assert chat["stream"] is True
    assert len(chat["tools"]) >= 30, [tool["function"]["name"] for tool in chat["tools"]]
    assert chats[0].status == 200 and f"{stack.answer}" in chats[0].answer
    for exchange in sent:  # the Horde acts on everything Open WebUI sends: nothing ignored
        assert "x-horde-ignored-parameters" not in exchange.headers, (exchange.body, exchange.headers)
    titles = [ex for ex in sent if TITLE_TASK in ex.body["messages"][0]["content"]]
    assert titles and titles[0].body["max_tokens"] == TITLE_MAX_TOKENS and not titles[0].body.get("stream")
    assert titles[0].status == 200 and stack.title in json.loads(titles[0].answer)["choices"][0]["message"]["content"]

    rows = wait_until(lambda: [row for row in stack.served(stack.large) if row.state == DONE] or None)
    hello_rows = [row for row in rows if row.payload["messages"][-1]["content"] == "Hello"]
    assert hello_rows and hello_rows[0].prompt_tokens > SMALL_CONTEXT_TOKENS, "the tools alone outgrow 4,096 tokens"


def test_a_small_context_model_refuses_the_tools_and_the_page_shows_why(stack, page):
    say_hello(page, stack, stack.small)
    refusal = f"above the context of {SMALL_CONTEXT_TOKENS} tokens that the request can have"
    page.locator("#messages-container").get_by_text(refusal).wait_for()
    assert "of them the tools' definitions, which no dropped turn shortens" in messages_text(page)
    screenshot(page, "open-webui-refused")
    assert stack.answer not in messages_text(page)

    chats = [ex for ex in stack.chats_for(stack.small) if ex.body["messages"][-1]["content"] == "Hello"]
    assert len(chats) == 1 and chats[0].body.get("tools"), "native function calling sent its built-in tools"
    assert chats[0].status == 400
    error = json.loads(chats[0].answer)["error"]
    assert error["code"] == "no_worker_supports_limit" and error["param"] == "messages"
    assert error["metadata"]["context_tokens"] == SMALL_CONTEXT_TOKENS
    assert error["metadata"]["tools_tokens"] > SMALL_CONTEXT_TOKENS, "the tools alone outgrow the context"
    assert f"({error['metadata']['tools_tokens']} of them the tools' definitions" in error["message"]
    assert not [row for row in stack.served(stack.small) if row.payload["messages"][-1]["content"] == "Hello"]


def test_a_small_context_model_with_legacy_function_calling_answers(stack, page):
    say_hello(page, stack, stack.small_legacy)
    wait_for_reply(page, stack)
    screenshot(page, "open-webui-legacy")

    chats = [ex for ex in stack.chats_for(stack.small_legacy) if ex.body["messages"][-1]["content"] == "Hello"]
    assert len(chats) == 1 and "tools" not in chats[0].body, chats[0].body
    assert chats[0].status == 200
    # Its title task's max_tokens 1000 is above the small workers' 512: served, lowered and named.
    titles = wait_until(
        lambda: [
            ex
            for ex in stack.chats_for(stack.small_legacy)
            if TITLE_TASK in ex.body["messages"][0]["content"] and ex.done
        ],
        what="the title task answered",
    )
    assert titles[0].status == 200 and titles[0].body["max_tokens"] == TITLE_MAX_TOKENS
    assert titles[0].headers.get("x-horde-lowered-parameters") == "max_tokens=512", titles[0].headers


def test_a_built_in_tool_called_by_the_worker_runs_in_open_webui_and_its_result_comes_back(stack, page):
    say_hello(page, stack, stack.large, TIME_PROMPT)
    opening = f"{stack.answer}: the tool said"
    page.locator("#messages-container").get_by_text(opening).wait_for()

    sent = [ex for ex in stack.chats_for(stack.large) if ex.body.get("tools")]
    asked = [ex for ex in sent if ex.body["messages"][-1]["content"] == TIME_PROMPT]
    assert asked and asked[0].status == 200 and TIME_TOOL in asked[0].answer
    results = [ex for ex in sent if ex.body["messages"][-1]["role"] == "tool"]
    assert results, [ex.body["messages"][-1] for ex in sent]
    call = results[0].body["messages"][-2]["tool_calls"][0]
    assert call["function"]["name"] == TIME_TOOL
    timestamp = results[0].body["messages"][-1]["content"]
    assert results[0].status == 200
    wait_until(lambda: timestamp in messages_text(page), what="the tool's result quoted in the page")
