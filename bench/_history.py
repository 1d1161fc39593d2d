"""A Horde's past, written into a bench's fresh database: finished chat requests with their submitted jobs and
their kudos entries, as a Horde that has served for months keeps them.

Why: a fresh database hides every read that walks history (a sort over all jobs, a scan of a user's requests);
its cost per request grows with the Horde's age, which a bench on empty tables never shows. The rows are made
by the database itself (one INSERT ... SELECT per table over a recursive count), so a million take seconds,
not the minutes of sending them. The history is a day old and older: outside every rate window and every
retention that a sweeper would shorten.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import text

from horde.timeutil import utcnow

HISTORY_MODEL = "bench-history-model"
#: Past requests served by each retired worker: a Horde's history spreads over many workers, as its statistics show.
HISTORY_REQUESTS_PER_WORKER = 1_000
HISTORY_AGE_S = 86_400
#: Kudos each past request moved from its client to the worker's owner.
HISTORY_KUDOS_PER_REQUEST = 2
#: Rows per INSERT ... SELECT: a recursive count of a million rows in one statement holds them all in memory.
HISTORY_BATCH_ROWS = 100_000


def fill(runtime, count: int, client_ids: list[int], owner_id: int) -> None:
    """`count` finished chat requests of the clients (in turn), each with one submitted job of one of `owner_id`'s
    retired workers and its charge and reward; every balance moves by its new entries, so balance = ledger holds."""
    if count <= 0:
        return
    postgresql = runtime.db.is_postgresql
    first_client = min(client_ids)
    if sorted(client_ids) != list(range(first_client, first_client + len(client_ids))):
        raise ValueError("the history's clients are a bench's users, made one after another")
    first_at = utcnow() - dt.timedelta(seconds=HISTORY_AGE_S + count)
    with runtime.db.transaction() as session:
        connection = session.connection()
        retired_workers(
            connection, count // HISTORY_REQUESTS_PER_WORKER + 1, owner_id, "history", HISTORY_MODEL, first_at
        )
        for start in range(0, count, HISTORY_BATCH_ROWS):
            rows = min(HISTORY_BATCH_ROWS, count - start)
            for statement in _statements(postgresql, len(client_ids)):
                connection.execute(
                    text(statement),
                    {
                        "start": start,
                        "rows": rows,
                        "first_at": first_at,
                        "owner": owner_id,
                        "model": HISTORY_MODEL,
                        "first_client": first_client,
                    },
                )
        history = "FROM kudos_ledger WHERE kudos_ledger.user_id = users.id AND kudos_ledger.request_id LIKE 'history-%'"
        connection.execute(  # the balances and their running totals (horde/accounts/moves.py) take the history in
            text(
                f"UPDATE users SET kudos = kudos + (SELECT coalesce(sum(amount), 0) {history}), "
                f"kudos_accumulated = kudos_accumulated + (SELECT coalesce(sum(amount), 0) {history}), "
                f"requested_generations = requested_generations + (SELECT count(*) {history} AND kind = 'charge'), "
                f"fulfilled_generations = fulfilled_generations + (SELECT count(*) {history} AND kind = 'reward')"
            )
        )


def retired_workers(
    connection, count: int, owner_id: int, tag: str, model: str, at: dt.datetime, text_model: str | None = None
) -> None:
    """`count` workers of `owner_id` in one statement, ids `<tag>-worker-0`.., that declared `model` (and
    `text_model` on a text pop, when given) on their last pops, at `at`."""
    postgresql = connection.dialect.name == "postgresql"
    json = "CAST(:{} AS json)" if postgresql else ":{}"
    false = "false" if postgresql else "0"
    connection.execute(
        text(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :last) "
            "INSERT INTO workers (id, name, owner_id, models, max_length, max_context_length, threads, "
            "features_mask, guarantees_mask, bridge_agent, last_pop_at, created_at, nsfw, require_upfront_kudos, "
            "text_models, text_max_length, text_max_context_length, text_pop_at, maintenance) "
            f"SELECT :tag || '-worker-' || i, 'bench-' || :tag || '-worker-' || i, :owner, {json.format('models')}, "
            f"512, 4096, 1, 0, 0, 'bench:1:' || :tag, :at, :at, {false}, {false}, {json.format('text_models')}, "
            f":text_length, :text_context, :text_at, {false} FROM n"
        ),
        {
            "last": count - 1,
            "owner": owner_id,
            "tag": tag,
            "models": f'["{model}"]',
            "text_models": f'["{text_model}"]' if text_model else None,
            "text_length": 512 if text_model else None,
            "text_context": 4096 if text_model else None,
            "text_at": at if text_model else None,
            "at": at,
        },
    )


def _statements(postgresql: bool, clients: int) -> list[str]:
    """The batch's rows, numbered start + 1 .. start + rows: request i is i seconds after the first."""
    numbers = "WITH RECURSIVE n(i) AS (SELECT :start + 1 UNION ALL SELECT i + 1 FROM n WHERE i < :start + :rows) "
    if postgresql:
        at = "CAST(:first_at AS timestamp) + make_interval(secs => i)"
        ended = "CAST(:first_at AS timestamp) + make_interval(secs => i + 1)"
        json = "CAST({} AS json)"
        true, false = "true", "false"
    else:
        at = "strftime('%Y-%m-%d %H:%M:%f', :first_at, '+' || i || ' seconds')"
        ended = "strftime('%Y-%m-%d %H:%M:%f', :first_at, '+' || (i + 1) || ' seconds')"
        json = "{}"
        true, false = "1", "0"
    client = f"(:first_client + i % {clients})"
    request_id = "'history-' || i"
    worker = f"'history-worker-' || (i / {HISTORY_REQUESTS_PER_WORKER})"
    models = json.format("'[\"' || :model || '\"]'")
    payload = json.format('\'{"messages": [{"role": "user", "content": "past"}]}\'')
    reply = json.format('\'{"content": "done"}\'')
    return [
        numbers + "INSERT INTO chat_requests (id, user_id, state, created_at, finished_at, priority_class, priority, "
        "models, max_tokens, context_tokens, prompt_tokens, required_features, required_guarantees, trusted_only, "
        "payload, n_images, kudos_estimate, kudos_charged, client_agent, body_hash, holders, delivered, attempts, "
        "current_job_id, worker_id, worker_name, served_model, reply, progress_seq) "
        f"SELECT {request_id}, {client}, 'done', {at}, {ended}, 1, 0, {models}, 32, 4096, 8, 0, 0, {false}, "
        f"{payload}, 0, 2, 2, 'bench:1:history', 'history-' || i, 0, {true}, 1, 'history-job-' || i, "
        f"{worker}, 'bench-' || {worker}, :model, {reply}, 0 FROM n",
        numbers + "INSERT INTO chat_jobs (id, request_id, worker_id, model, state, started_at, deadline_at, "
        "ended_at) "
        f"SELECT 'history-job-' || i, {request_id}, {worker}, :model, 'submitted', {at}, {ended}, "
        f"{ended} FROM n",
        numbers + "INSERT INTO kudos_ledger (user_id, amount, kind, request_id, created_at) "
        f"SELECT {client}, -{HISTORY_KUDOS_PER_REQUEST}, 'charge', {request_id}, {ended} FROM n",
        numbers + "INSERT INTO kudos_ledger (user_id, amount, kind, request_id, created_at) "
        f"SELECT :owner, {HISTORY_KUDOS_PER_REQUEST}, 'reward', {request_id}, {ended} FROM n",
    ]
