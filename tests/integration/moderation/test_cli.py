"""The operator's moderation commands: the API's services, recorded in the trail with the operator as the actor."""

from __future__ import annotations

import getpass
import json

import pytest
from sqlalchemy import select

from horde.__main__ import main
from horde.accounts.models import User
from horde.oversight.models import AuditEntry
from tests.support.text_api import find_user


@pytest.fixture
def horde_cli(monkeypatch, database_url, runtime, capsys):
    """`python -m horde ...` on the test's database: its exit code and the lines it printed."""
    monkeypatch.setenv("HORDE_DATABASE_URL", database_url)

    def run(*argv: str) -> tuple[int, list[str]]:
        code = main(list(argv))
        return code, capsys.readouterr().out.splitlines()

    return run


def trail(runtime) -> list[tuple]:
    with runtime.db.read() as session:
        return list(
            session.execute(
                select(
                    AuditEntry.actor_id, AuditEntry.actor, AuditEntry.action, AuditEntry.target, AuditEntry.reason
                ).order_by(AuditEntry.id)
            )
        )


def test_the_operators_commands_change_users_and_are_recorded(horde_cli, client, make_user, runtime):
    user, key = make_user(kudos=10)
    name = f"{user.username}#{user.id}"
    assert horde_cli("users", "role", name, "moderator", "--reason", "new mod")[0] == 0
    assert horde_cli("users", "kudos", name, "50")[0] == 0
    assert horde_cli("users", "kudos-award", name, "5", "--reason", "thanks")[0] == 0
    code, lines = horde_cli("users", "limits", name, "--concurrency", "9", "--worker-invited", "2")
    assert code == 0 and json.loads(lines[-1]) == {"concurrency": 9, "worker_invited": 2}
    assert horde_cli("users", "trust", name)[0] == 0
    assert horde_cli("users", "flag", name, "--reason", "garbage")[0] == 0
    details = find_user(client, key)
    assert (details["kudos"], details["concurrency"], details["flagged"], details["moderator"]) == (55.0, 9, True, True)
    assert horde_cli("users", "flag", name, "--off")[0] == 0
    assert horde_cli("users", "role", name, "user")[0] == 0
    assert horde_cli("users", "delete", name, "--reason", "asked to")[0] == 0
    with runtime.db.read() as session:
        assert session.get(User, user.id).deleted_at is not None
    operator = f"operator {getpass.getuser()}"
    assert trail(runtime) == [
        (None, operator, "modify_user", str(user.id), "new mod"),
        (None, operator, "set_kudos", str(user.id), None),
        (None, operator, "award_kudos", str(user.id), "thanks"),
        (None, operator, "modify_user", str(user.id), None),
        (None, operator, "modify_user", str(user.id), None),
        (None, operator, "modify_user", str(user.id), "garbage"),
        (None, operator, "modify_user", str(user.id), None),
        (None, operator, "modify_user", str(user.id), None),
        (None, operator, "delete_user", str(user.id), "asked to"),
    ]


def test_the_operators_timeouts_modes_and_trail(horde_cli, client, runtime):
    assert horde_cli("ipaddr", "add", "203.0.113.0/24", "--hours", "2", "--reason", "flood")[0] == 0
    code, lines = horde_cli("ipaddr", "list")
    assert code == 0 and json.loads(lines[0])["ipaddr"] == "203.0.113.0/24"
    refused = client.get("/api/v2/find_user", environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert refused.json["rc"] == "TimeoutIP"
    assert horde_cli("ipaddr", "remove", "203.0.113.0/24")[1] == ["203.0.113.0/24 is out of timeout."]
    assert horde_cli("ipaddr", "remove", "203.0.113.0/24")[1] == ["203.0.113.0/24 was not in timeout."]
    assert json.loads(horde_cli("modes", "set", "--maintenance", "on")[1][-1]) == {"maintenance_mode": True}
    assert json.loads(horde_cli("modes", "show")[1][-1])["maintenance_mode"] is True
    runtime.oversight.forget()  # as the command line's event reaches a server (through Redis; else within VIEW_S)
    assert client.post("/api/v2/generate/text/async", json={"prompt": "x"}).json["rc"] == "MaintenanceMode"
    code, lines = horde_cli("audit", "--limit", "2")
    assert code == 0 and [json.loads(line)["action"] for line in lines] == ["set_modes", "free_address"]
    with pytest.raises(SystemExit):  # argparse's own refusal
        horde_cli("ipaddr", "add", "203.0.113.1", "--hours", "0")


def test_name_keys_reports_look_alikes_and_exits_1_while_they_remain(horde_cli, runtime, make_user):
    from sqlalchemy import insert

    from horde.workers.models import Worker

    owner, _ = make_user()
    rows = [
        {"id": f"w{n}", "name": name, "owner_id": owner.id, "models": [], "max_length": 64, "max_context_length": 512}
        for n, name in enumerate(("twin-worker", "TWIN-WORKER"))
    ]
    with runtime.db.transaction() as session:
        session.execute(insert(Worker), rows)
    code, lines = horde_cli("workers", "name-keys")
    assert code == 1 and lines[-1] == "1 group(s) of workers whose names look alike."
    assert json.loads(lines[0].split(": ", 1)[1]) == ["twin-worker", "TWIN-WORKER"]
