"""`python -m horde invites create|list|revoke` on the test's database: the code on the last line registers, as many
times as its uses, then no more; the operator's `users create` keeps a name unique."""

from __future__ import annotations

import pytest

from horde import errors
from horde.__main__ import main
from horde.config import Settings


@pytest.fixture
def settings(database_url):
    return Settings.from_env({}, database_url=database_url, registration="invite")


@pytest.fixture
def cli(runtime, monkeypatch, capsys):
    monkeypatch.setenv("HORDE_DATABASE_URL", runtime.settings.database_url)

    def run(*argv: str) -> tuple[int, list[str], str]:
        status = main(list(argv))
        printed = capsys.readouterr()
        return status, printed.out.splitlines(), printed.err

    return run


def test_a_code_made_on_the_command_line_registers_its_uses(cli, client):
    status, lines, _ = cli("invites", "create", "--uses", "2")
    assert status == 0
    code = lines[-1]
    for name in ("first", "second"):
        assert client.post("/api/v2/register", json={"username": name, "invite_code": code}).status_code == 201
    third = client.post("/api/v2/register", json={"username": "third", "invite_code": code})
    assert third.json["rc"] == "InvalidInviteCode"
    status, lines, _ = cli("invites", "list")
    assert status == 0 and "used 2 of 2" in lines[-1] and code not in "\n".join(lines)


def test_a_revoked_code_registers_no_more(cli, client):
    code = cli("invites", "create", "--uses", "5", "--days", "3")[1][-1]
    assert client.post("/api/v2/register", json={"username": "a", "invite_code": code}).status_code == 201
    listed = cli("invites", "list")[1]
    invite_id = listed[-1].split()[0]
    assert "expires" in listed[-1]
    assert cli("invites", "revoke", invite_id)[0] == 0
    assert client.post("/api/v2/register", json={"username": "b", "invite_code": code}).status_code == 403
    assert cli("invites", "revoke", "999999")[0] == 1


@pytest.mark.parametrize("argv", [("--uses", "0"), ("--uses", "1", "--days", "0"), ("--uses", "2000000")])
def test_out_of_range_invites_are_refused(cli, argv):
    status, lines, err = cli("invites", "create", *argv)
    assert status == 2 and lines == [] and "An invite" in err


def test_the_operators_command_keeps_names_unique_while_registration_repeats_them(cli, client, runtime):
    assert cli("users", "create", "operator-made")[0] == 0
    with pytest.raises(errors.BadRequest, match="is taken"):
        cli("users", "create", "operator-made")
    runtime.settings = runtime.settings.replace(registration="open")
    made = client.post("/api/v2/register", json={"username": "operator-made"})
    assert made.status_code == 201  # a person may take a name the operator gave
    assert cli("users", "kudos", made.json["username"], "7")[0] == 0  # name#id names one of the two
    assert client.get("/api/v2/find_user", headers={"apikey": made.json["api_key"]}).json["kudos"] == 7
