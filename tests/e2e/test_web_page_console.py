"""The page's console in headless Chromium (tests/e2e/web/browser.py): Register, Account, Status, Moderator,
against a real server, a real scripted worker and real clients (the OpenAI SDK, requests).

HORDE_SCREENSHOTS_DIR writes the screenshots docs/how-to/use-the-web-page.md shows.
"""

from __future__ import annotations

import uuid

import pytest
import requests

from horde.accounts import roles
from horde.accounts import service as accounts
from horde.registration import invites
from tests.e2e.test_batches import chat_line, jsonl, upload
from tests.e2e.web.browser import PHONE, chromium_page, needs_chromium, screenshot, sign_in
from tests.support.harness import Harness, unique_model, write_rules
from tests.support.processes import Server, wait_until

pytestmark = [pytest.mark.e2e, needs_chromium]

#: What a registration starts with here, so that the new account can chat at once.
NEW_USER_KUDOS = 500
#: The page's history page (account.js HISTORY_PAGE).
HISTORY_PAGE = 25
#: A batch long enough (a second a line, one thread) to be cancelled while it runs.
BATCH_LINES = 20
SETTINGS = {"HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY": 1000, "HORDE_NEW_USER_KUDOS": NEW_USER_KUDOS}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    harness = Harness(f"sqlite:///{tmp_path_factory.mktemp('console') / 'horde.db'}", SETTINGS)
    model = unique_model("console")
    harness.worker([model])
    yield harness, model
    harness.close()


def register(harness: Harness, name: str = "") -> dict:
    """An account made through the API, as another person would: {id, username, api_key}."""
    answer = requests.post(
        harness.url + "/api/v2/register", json={"username": name or f"p-{uuid.uuid4().hex[:8]}"}, timeout=10
    )
    assert answer.status_code == 201, answer.text
    return answer.json()


def with_role(harness: Harness, role: str) -> str:
    """The key of a new user given `role` as the operator gives it (python -m horde users role)."""
    name = f"{role}-{uuid.uuid4().hex[:8]}"
    with harness.runtime.db.transaction() as session:
        _, key = accounts.create_user(session, name)
        roles.set_role(session, name, role)
    return key


def user_details(harness: Harness, key: str) -> dict:
    answer = requests.get(harness.url + "/api/v2/find_user", headers={"apikey": key}, timeout=10)
    answer.raise_for_status()
    return answer.json()


def reloaded_until(page, table: str, wanted: str):
    """`wanted` on the page, reloaded until its `table` (drawn from what the Horde answered) holds it."""

    def shown():
        page.reload()
        page.locator(table).wait_for()
        found = page.locator(wanted)
        return found if found.count() else None

    return wait_until(shown, what=f"{wanted} on the page")


def chat(page, model: str, text: str) -> None:
    page.goto(page.url.split("#")[0] + "#playground")
    page.locator(f'#chat-model option[value="{model}"]').wait_for(state="attached")
    page.select_option("#chat-model", model)
    page.fill("#chat-input", text)
    page.click("#chat-send")
    page.locator(".message.assistant .meta").last.wait_for()


def test_register_chat_see_the_charge_transfer_and_lend_through_a_shared_key(site):
    harness, model = site
    with chromium_page() as (page, problems):
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=harness.url)
        page.goto(harness.url + "/#register")
        page.locator("#register-mode", has_text="Anyone may register").wait_for()
        page.fill("#register-username", "Page Person")
        page.click("#register-form button[type=submit]")
        shown = page.locator("#register-result input.secret")
        shown.wait_for()
        key = shown.input_value()
        assert "cannot show it again" in page.locator("#register-result .warning").inner_text()
        page.bring_to_front()  # the clipboard is refused to a page without focus ("Document is not focused")
        page.click("#register-result button:text('Copy')")
        said = page.locator("#register-result .secret-box [aria-live]:not(:empty)")
        assert said.inner_text() == "Copied.", "the page says so when the browser refuses the clipboard"
        assert page.evaluate("navigator.clipboard.readText()") == key
        screenshot(page, "register")
        page.locator("#kudos", has_text=f"{NEW_USER_KUDOS} kudos").wait_for()
        me = user_details(harness, key)
        assert me["username"].startswith("Page Person#")

        chat(page, model, "Hello from the console")
        assert "You wrote: Hello from the console" in page.locator(".message.assistant .content").inner_text()

        page.goto(harness.url + "/#account")
        charge = page.locator("#history-table tbody tr", has_text="request charged").first
        charge.wait_for()
        balance = user_details(harness, key)["kudos"]
        assert balance < NEW_USER_KUDOS
        assert charge.locator(".balance-after").inner_text() == f"{int(balance):,}"
        page.locator("#balance-chart canvas[aria-label]").first.wait_for(state="attached")

        other_key = harness.user()
        other = user_details(harness, other_key)
        page.fill("#transfer-username", other["username"])
        page.fill("#transfer-amount", "25")
        page.click("#transfer-form button[type=submit]")
        page.locator("#transfer-line", has_text=f"Sent 25 kudos to {other['username']}").wait_for()
        page.locator("#history-table tbody tr", has_text="sent").first.wait_for()
        assert user_details(harness, other_key)["kudos"] == 25

        page.fill("#sharedkey-name", "lent from the page")
        page.fill("#sharedkey-kudos", "100")
        page.fill("#sharedkey-tokens", "64")
        page.click("#sharedkey-submit")
        shared = page.locator("#sharedkey-result input.secret")
        shared.wait_for()
        shared_key = shared.input_value()
        row = page.locator("#sharedkeys-table tbody tr", has_text="lent from the page")
        row.wait_for()
        assert shared_key in row.inner_text()

        reply = harness.openai(shared_key).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Paid with a shared key"}]
        )
        assert reply.choices[0].message.content == "You wrote: Paid with a shared key"
        page.reload()
        used = page.locator("#sharedkeys-table tbody tr", has_text="lent from the page").locator("td").nth(3)
        used.wait_for()
        assert int(used.inner_text()) > 0
        page.locator("#history-table tbody tr", has_text="request charged").nth(1).wait_for()
        screenshot(page, "account")
        assert problems == []


def test_a_worker_of_mine_goes_into_maintenance_from_the_page_at_phone_width(site):
    harness, model = site
    made = register(harness)
    worker_name = f"page-worker-{uuid.uuid4().hex[:6]}"
    harness.worker([model], key=made["api_key"], name=worker_name)
    with chromium_page(PHONE) as (page, problems):
        page.goto(harness.url + "/#account")
        sign_in(page, made["api_key"])

        row = reloaded_until(page, "#my-workers-table", f'#my-workers .maintenance[data-worker="{worker_name}"]')
        row.locator("input[type=checkbox]").check()
        row.locator("input.maintenance-msg").fill("Back soon")
        row.locator("button", has_text="Save").click()
        page.locator("#workers-line", has_text="is in maintenance").wait_for()
        workers = requests.get(harness.url + "/api/v2/workers?type=chat", timeout=10).json()
        assert [worker["maintenance_mode"] for worker in workers if worker["name"] == worker_name] == [True]
        saved = page.locator(f'#my-workers .maintenance[data-worker="{worker_name}"]')
        assert saved.locator("input[type=checkbox]").is_checked()
        assert saved.locator("input.maintenance-msg").input_value() == "Back soon"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        page.locator("#workers-title").scroll_into_view_if_needed()
        screenshot(page, "account-phone", full_page=False)

        mine = requests.get(
            harness.url + f"/api/v2/users/{made['id']}/workers", headers={"apikey": made["api_key"]}, timeout=10
        ).json()
        [worker_id] = [worker["id"] for worker in mine if worker["name"] == worker_name]
        page.click(f'button[aria-label="Delete worker {worker_name}"]')
        page.locator("#confirm", has_text=worker_name).wait_for()
        page.click("#confirm-yes")
        page.locator("#workers-line", has_text=f"Deleted {worker_name}").wait_for()
        assert requests.get(harness.url + f"/api/v2/workers/{worker_id}", timeout=10).status_code == 404
        assert problems == []


@pytest.mark.parametrize(("name", "says"), [("x" * 51, "50"), ("has#hash", "#")], ids=["too-long", "hash"])
def test_the_register_view_shows_the_refusal_as_the_horde_words_it(site, name, says):
    harness, _ = site
    with chromium_page() as (page, problems):
        page.goto(harness.url + "/#register")
        page.locator("#register-mode", has_text="Anyone may register").wait_for()
        page.fill("#register-username", name)
        page.click("#register-form button[type=submit]")
        line = page.locator("#register-line.error")
        line.wait_for()
        expected = requests.post(harness.url + "/api/v2/register", json={"username": name}, timeout=10).json()
        assert line.inner_text() == expected["message"] + " (" + expected["rc"] + ")"
        assert says in expected["message"]
        assert page.locator("#register-result input.secret").count() == 0
        assert problems == ["Failed to load resource: the server responded with a status of 400 (BAD REQUEST)"]


def test_the_moderator_flags_a_user_and_the_trail_shows_it(site):
    harness, _ = site
    target = register(harness)
    with chromium_page() as (page, problems):
        page.goto(harness.url + "/#account")
        sign_in(page, with_role(harness, "moderator"))
        page.click("#nav-moderator")
        page.locator("#mod-audit table").wait_for()
        page.fill("#mod-find", target["username"])
        page.click("#mod-find-form button[type=submit]")
        page.locator("#mod-user-title", has_text=target["username"]).wait_for()
        page.check("#mod-flagged")
        page.fill("#mod-reason", "garbage replies from the page")
        page.click("#mod-save-user")
        page.locator("#mod-user-line", has_text="Saved").wait_for()
        record = page.locator("#audit-table tbody tr", has_text="garbage replies from the page")
        record.wait_for()
        assert "modify_user" in record.inner_text() and "flagged" in record.inner_text()
        assert requests.get(harness.url + f"/api/v2/users/{target['id']}", timeout=10).json()["flagged"] is True
        screenshot(page, "moderator")

        spared = register(harness)
        page.fill("#mod-find", str(spared["id"]))
        page.click("#mod-find-form button[type=submit]")
        page.locator("#mod-user-title", has_text=spared["username"]).wait_for()
        page.click("#mod-delete-user")
        page.locator("#confirm", has_text=spared["username"]).wait_for()
        page.click("#confirm button[value=no]")
        assert requests.get(harness.url + f"/api/v2/users/{spared['id']}", timeout=10).status_code == 200
        page.click("#mod-delete-user")
        page.click("#confirm-yes")
        page.locator("#mod-user-line.error", has_text="NotAdmin").wait_for()  # an admin's: the Horde says so
        assert requests.get(harness.url + f"/api/v2/users/{spared['id']}", timeout=10).status_code == 200
        assert problems == ["Failed to load resource: the server responded with a status of 403 (FORBIDDEN)"]


@pytest.mark.parametrize("viewport", [None, PHONE], ids=["desktop", "phone"])
def test_the_status_charts_render_with_their_labels(site, viewport):
    harness, model = site
    harness.openai(harness.user(kudos=50)).chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Count me in the charts"}]
    )
    with chromium_page(viewport) as (page, problems):
        page.goto(harness.url + "/#status")
        chart = page.locator('#requests-chart canvas[aria-label^="Requests served per minute"]')
        chart.first.wait_for(state="attached")
        assert page.locator("#queue-chart canvas[aria-label*='Workers']").count() >= 1
        assert "Requests served per minute" in page.locator("#requests-chart .visually-hidden").inner_text()
        page.locator("#workers-table td", has_text=model).first.wait_for()
        page.locator(f'#series-model option[value="{model}"]').wait_for(state="attached")
        page.select_option("#series-model", model)
        page.locator(f'#requests-chart canvas[aria-label*="{model}"]').first.wait_for(state="attached")
        if viewport == PHONE:
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        screenshot(page, "status-phone" if viewport else "status", full_page=viewport is None)
        assert problems == []


def start_batch(harness: Harness, key: str, tmp_path) -> str:
    """A batch of BATCH_LINES chat lines for a worker of its own that takes a second a line: the batch's id."""
    batch_model = unique_model("console-batch")
    rules = write_rules(tmp_path, [{"match": {}, "reply": {"content": "slowly", "delay_s": 1}}])
    harness.worker([batch_model], "--threads", "1", rules=rules)
    client = harness.openai(key)
    wait_until(lambda: batch_model in {card.id for card in client.models.list()}, what="the batch's worker")
    lines = [chat_line(f"line-{n}", batch_model, f"line {n}", max_tokens=16) for n in range(BATCH_LINES)]
    uploaded = upload(client, jsonl(lines))
    return client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h").id


def test_account_edits_and_deletes_a_shared_key_pages_its_history_cancels_a_batch_and_replaces_its_key(site, tmp_path):
    harness, _ = site
    made = register(harness)
    key, user_id = made["api_key"], made["id"]
    friend = user_details(harness, harness.user())["username"]
    for _ in range(HISTORY_PAGE + 2):  # more entries than a page: the history's "Older"
        sent = requests.post(
            harness.url + "/api/v2/kudos/transfer",
            json={"username": friend, "amount": 1},
            headers={"apikey": key},
            timeout=10,
        )
        assert sent.status_code == 200, sent.text
    with chromium_page() as (page, problems):
        page.goto(harness.url + "/#account")
        sign_in(page, key)
        rows = page.locator("#history-table tbody tr")
        rows.nth(HISTORY_PAGE - 1).wait_for()
        assert rows.count() == HISTORY_PAGE
        page.click("#history-older")
        rows.nth(HISTORY_PAGE + 2).wait_for()  # the transfers and the registration's grant
        assert rows.count() == HISTORY_PAGE + 3
        assert page.locator("#history-older").is_hidden()
        assert rows.last.locator(".balance-after").inner_text() == f"{NEW_USER_KUDOS}"

        page.fill("#sharedkey-name", "to be changed")
        page.fill("#sharedkey-expiry", "7")
        page.click("#sharedkey-submit")
        row = page.locator("#sharedkeys-table tbody tr", has_text="to be changed")
        row.wait_for()
        shared_id = page.locator("#sharedkey-result input.secret").input_value()
        assert "no limit" in row.inner_text()
        row.locator("button", has_text="Edit").click()
        assert page.locator("#sharedkey-legend").inner_text().startswith("Change the shared key")
        page.fill("#sharedkey-kudos", "40")
        page.click("#sharedkey-submit")
        page.locator("#sharedkeys-table tbody tr", has_text="to be changed").locator("td").nth(2).filter(
            has_text="40"
        ).wait_for()
        changed = requests.get(harness.url + f"/api/v2/sharedkeys/{shared_id}", timeout=10).json()
        assert changed["kudos"] == 40 and "expiry" in changed  # an expiry left empty while editing stays
        page.locator("#sharedkeys-table tbody tr", has_text="to be changed").locator(
            "button", has_text="Delete"
        ).click()
        page.locator("#confirm").wait_for()
        page.click("#confirm-yes")
        page.locator("#sharedkeys-table tbody tr", has_text="No shared key yet").wait_for()
        assert requests.get(harness.url + f"/api/v2/sharedkeys/{shared_id}", timeout=10).status_code != 200

        batch = start_batch(harness, key, tmp_path)
        reloaded_until(page, "#batches-table", f'#batches-table button[aria-label="Cancel batch {batch}"]').click()
        page.locator("#batches-line", has_text=f"Cancelling {batch}").wait_for()
        assert harness.openai(key).batches.retrieve(batch).status in ("cancelling", "cancelled")
        page.locator("#batches-table .batch-status").filter(has_text="cancel").first.wait_for()

        page.click("#rotate-key")
        fresh = page.locator("#rotate-result input.secret")
        fresh.wait_for()
        new_key = fresh.input_value()
        assert user_details(harness, new_key)["id"] == user_id
        assert requests.get(harness.url + "/api/v2/find_user", headers={"apikey": key}, timeout=10).status_code == 401
        assert page.evaluate("sessionStorage.getItem('horde.apiKey')") == new_key
        page.reload()
        page.locator("#kudos", has_text=made["username"]).wait_for()
        assert problems == []


#: Each view, and what it shows once it has drawn what the Horde answered.
DRAWN = {
    "models": ".model-card",
    "playground": "#chat-model option",
    "status": "#workers-table",
    "account": "#history-table",
    "register": "#register-mode:not([hidden])",
    "moderator": "#audit-table",
}


#: The visible controls of the shown view without an accessible name: a field without a label or aria-label, a
#: button without text or aria-label.
UNLABELLED = """(view) => [...document.querySelectorAll(`#view-${view} input, #view-${view} select,
  #view-${view} textarea, #view-${view} button`)]
  .filter((control) => control.offsetParent !== null)
  .filter((control) => control.tagName === "BUTTON"
    ? !(control.textContent.trim() || control.getAttribute("aria-label"))
    : !(control.labels.length || control.getAttribute("aria-label") || control.getAttribute("aria-labelledby")))
  .map((control) => control.outerHTML)"""


def test_every_control_is_labelled_and_the_views_open_from_the_keyboard(site):
    harness, model = site
    made = register(harness)
    harness.worker([model], key=made["api_key"])  # so that My workers has a row of controls
    with chromium_page() as (page, problems):
        page.goto(harness.url + "/#models")
        page.fill("#api-key", "not-a-key-of-this-horde")
        page.press("#api-key", "Enter")
        page.locator("#sign-in-line.error", has_text="InvalidAPIKey").wait_for()
        assert page.evaluate("sessionStorage.length") == 0
        problems.clear()  # the refused key's 401
        sign_in(page, with_role(harness, "moderator"))
        for view, drawn in DRAWN.items():
            page.goto(f"{harness.url}/#{view}")
            page.locator(drawn).first.wait_for(state="attached")
            assert page.evaluate(UNLABELLED, view) == [], view
        page.locator("#sign-out").click()
        page.goto(harness.url + "/#account")
        sign_in(page, made["api_key"])
        page.locator("#my-workers-table tbody tr .maintenance").wait_for()
        assert page.evaluate(UNLABELLED, "account") == []

        page.goto(harness.url + "/#models")
        page.reload()  # the keyboard starts from the top of the page
        page.locator("#model-cards .model-card").first.wait_for()
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to the content"
        for _ in range(10):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.textContent") == "Status":
                break
        assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
        page.keyboard.press("Enter")
        page.wait_for_url(harness.url + "/#status")
        page.locator("#view-status").wait_for()
        assert page.locator("nav a[aria-current=page]").inner_text() == "Status"
        assert page.evaluate("document.activeElement.id") == "status-title"  # the focus follows to the view
        assert problems == []


def test_an_admin_times_out_a_network_pauses_a_worker_and_sets_a_mode_from_the_page(site):
    harness, _ = site
    key = with_role(harness, "admin")
    worker_name = f"paused-{uuid.uuid4().hex[:6]}"
    harness.worker([unique_model("console-pause")], name=worker_name)
    network = "203.0.113.0/24"
    try:
        with chromium_page() as (page, problems):
            page.goto(harness.url + "/#models")
            sign_in(page, key)
            page.click("#nav-moderator")
            page.locator("#mod-timeouts-table").wait_for()

            page.fill("#mod-ipaddr", network)
            page.fill("#mod-hours", "2")
            page.fill("#mod-ip-reason", "a scraper")
            page.click("#mod-timeout-form button[type=submit]")
            page.locator("#mod-timeouts-table tbody tr", has_text=network).wait_for()
            page.locator("#audit-table tbody tr", has_text="a scraper").wait_for()
            page.click(f'button[aria-label="Lift the timeout of {network}"]')
            page.locator("#mod-timeouts-table tbody tr", has_text="No address is in timeout").wait_for()

            pause = reloaded_until(page, "#mod-workers-table", f'button[aria-label="Pause {worker_name}"]')
            pause.click()
            page.locator(f'button[aria-label="Unpause {worker_name}"]').wait_for()
            listed = requests.get(harness.url + "/api/v2/workers?type=chat", headers={"apikey": key}, timeout=10)
            assert [worker["paused"] for worker in listed.json() if worker["name"] == worker_name] == [True]

            page.check("#mod-invite_only_mode")
            page.click("#mod-modes-form button[type=submit]")
            page.locator("#mod-modes-line", has_text="Modes saved").wait_for()
            modes = requests.get(harness.url + "/api/v2/status/modes", headers={"apikey": key}, timeout=10).json()
            assert modes["invite_only_mode"] is True
            page.locator("#audit-table tbody tr", has_text="set_modes").wait_for()

            doomed = register(harness)
            page.fill("#mod-find", doomed["username"])
            page.click("#mod-find-form button[type=submit]")
            page.locator("#mod-user-title", has_text=doomed["username"]).wait_for()
            page.click("#mod-delete-user")
            page.click("#confirm-yes")
            page.locator("#mod-user-line", has_text=f"Deleted {doomed['username']}").wait_for()
            assert requests.get(harness.url + f"/api/v2/users/{doomed['id']}", timeout=10).status_code == 404
            page.locator("#audit-table tbody tr", has_text="delete_user").wait_for()
            assert problems == []
    finally:
        requests.put(
            harness.url + "/api/v2/status/modes", json={"invite_only_mode": False}, headers={"apikey": key}, timeout=10
        )


def test_the_register_view_asks_for_an_invite_when_the_horde_does(site):
    harness, _ = site
    with harness.runtime.db.transaction() as session:
        code = invites.create(session, 1)
    server = Server({**harness.env, "HORDE_REGISTRATION": "invite"})  # another, on the module's database
    try:
        with chromium_page() as (page, problems):
            page.goto(server.url + "/#register")
            page.locator("#register-mode", has_text="by invitation").wait_for()
            page.fill("#register-username", "invited")
            page.fill("#register-invite", "not-a-code")
            page.click("#register-form button[type=submit]")
            page.locator("#register-line.error", has_text="InvalidInviteCode").wait_for()
            page.fill("#register-invite", code)
            page.click("#register-form button[type=submit]")
            page.locator("#register-result input.secret").wait_for()
            page.locator("#kudos", has_text="invited#").wait_for()
            assert problems == ["Failed to load resource: the server responded with a status of 403 (FORBIDDEN)"]
    finally:
        server.stop()


def test_the_register_view_says_when_registration_is_closed_and_shows_the_refusal(site):
    """Closed by an admin's raid mode, which closes registration on every server at once."""
    harness, _ = site
    admin_key = with_role(harness, "admin")

    def raid(on: bool) -> None:
        answer = requests.put(
            harness.url + "/api/v2/status/modes", json={"raid_mode": on}, headers={"apikey": admin_key}, timeout=10
        )
        assert answer.status_code == 200, answer.text

    with chromium_page() as (page, problems):
        page.goto(harness.url + "/#register")
        page.locator("#register-mode", has_text="Anyone may register").wait_for()
        raid(True)
        try:
            page.fill("#register-username", "latecomer")
            page.click("#register-form button[type=submit]")  # the view still shows the form: the Horde decides
            line = page.locator("#register-line.error", has_text="RegistrationClosed")
            line.wait_for()
            refusal = requests.post(harness.url + "/api/v2/register", json={"username": "latecomer"}, timeout=10)
            assert line.inner_text() == f"{refusal.json()['message']} ({refusal.json()['rc']})"
            assert page.locator("#register-result input.secret").count() == 0
            page.reload()
            page.locator("#register-mode", has_text="Registration is closed").wait_for()
        finally:
            raid(False)
        assert problems == ["Failed to load resource: the server responded with a status of 403 (FORBIDDEN)"]


def test_every_view_fits_a_phone(site):
    harness, _ = site
    with chromium_page(PHONE) as (page, problems):
        page.goto(harness.url + "/#models")
        sign_in(page, with_role(harness, "moderator"))
        for view, drawn in DRAWN.items():
            page.goto(f"{harness.url}/#{view}")
            page.locator(drawn).first.wait_for(state="attached")
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], view
        assert problems == []
