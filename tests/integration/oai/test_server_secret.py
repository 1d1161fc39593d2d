"""The sealing key is the same in every server process: HORDE_SECRET_KEY, else one secret made once in the database,
whoever starts first (horde/storage/secrets.py, table server_secrets; horde/oai/sealing.py derives its key)."""

from __future__ import annotations

import threading

from sqlalchemy import delete, select

from horde.app import init_schema
from horde.oai import sealing
from horde.runtime import Runtime
from horde.storage import secrets
from horde.storage.secrets import ServerSecret

ROUNDS = 8
STARTS_AT_ONCE = 6


def test_the_first_start_makes_the_secret_and_every_process_reads_the_same(runtime, settings):
    with runtime.db.read() as session:
        made = session.scalar(select(ServerSecret.value).where(ServerSecret.name == secrets.SECRET_NAME))
    assert made  # init_schema made it
    other = Runtime.build(settings)  # another process on the same database
    try:
        init_schema(other)
        token = sealing.seal(sealing.key(runtime), 1, sealing.REASONING, "thought")
        assert sealing.open_sealed(sealing.key(other), 1, sealing.REASONING, token) == "thought"
        with other.db.read() as session:
            assert session.scalars(select(ServerSecret.value)).all() == [made]
    finally:
        other.close()


def test_horde_secret_key_seals_alike_wherever_it_is_set(runtime, settings):
    configured = [Runtime.build(settings.replace(secret_key="an operator's secret, 32+ chars")) for _ in range(2)]
    try:
        token = sealing.seal(sealing.key(configured[0]), 1, sealing.REASONING, "thought")
        assert sealing.open_sealed(sealing.key(configured[1]), 1, sealing.REASONING, token) == "thought"
        assert sealing.key(configured[0]) != sealing.key(runtime)  # not the database's secret
    finally:
        for hub in configured:
            hub.close()


def test_processes_starting_at_once_keep_one_secret(runtime, settings):
    """Many rounds: the table emptied, then several connections make the secret at the same instant."""
    hubs = [Runtime.build(settings) for _ in range(STARTS_AT_ONCE)]
    try:
        for _ in range(ROUNDS):
            with runtime.db.transaction() as session:
                session.execute(delete(ServerSecret))
            barrier = threading.Barrier(len(hubs))
            made: list[bytes] = []
            threads = [threading.Thread(target=_start, args=(hub, barrier, made)) for hub in hubs]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            assert len(made) == len(hubs) and len(set(made)) == 1
            with runtime.db.read() as session:
                assert len(session.scalars(select(ServerSecret.value)).all()) == 1
    finally:
        for hub in hubs:
            hub.close()


def _start(hub: Runtime, barrier: threading.Barrier, made: list[bytes]) -> None:
    """One process's first start, at the same instant as the others."""
    barrier.wait()
    with hub.db.transaction() as session:
        made.append(secrets.stored_secret(session))
