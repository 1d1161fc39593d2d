"""A text pop runs on every poll of every text worker: the owner's key comes from the process's identity
cache, as on the chat pop, and the pop's own statements do the rest."""

from tests.integration.text.helpers import text_pop, text_queued
from tests.support.statements import statements


def test_a_text_pop_with_a_key_seen_lately_reads_no_user(client, make_user, runtime):
    _, key = make_user("owner", kudos=100)
    text_pop(client, key)  # the first pop checks the worker in and caches the key's owner
    text_queued(client, key)
    with statements(runtime) as seen:
        job = text_pop(client, key)
    assert job["id"] and job["payload"]
    assert not [statement for statement in seen if "from users" in statement], seen
    assert any(statement.startswith("update text_requests") for statement in seen)
