"""A serving process's background work: the sweeper of every domain, its presence on the database (how it hears the
other processes), and, on SQLite, the log's checkpoints.

It sits with the operator's parts, above the domains it sweeps, so that the serving layer (horde/serving/)
imports none of them: `python -m horde serve` hands `start_housekeeping` to `serve`, and horde/wsgi.py calls it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import gevent

from horde.chat import service
from horde.errors import ServiceUnavailable
from horde.presence.hearing import start_hearing
from horde.storage.sqlite_checkpoint import start_checkpoints

if TYPE_CHECKING:
    from horde.runtime import Runtime

log = logging.getLogger(__name__)
KEY_PURGE_EVERY_SWEEPS = 60


def sweeper(runtime: Runtime) -> None:
    """Expire jobs past their ttl, so a request restarts even when nobody pops; sample the queue once a minute
    (the Status charts' series, horde/console/sampler.py).

    Every KEY_PURGE_EVERY_SWEEPS sweeps, drop the rate counts of seconds past the window, expired idempotency
    keys and stored responses, files and batches past their retention, past days' registration counts and ended
    sign-in sessions.
    """
    from horde.accounts import rate_limit
    from horde.background import records as background_records
    from horde.batches import retention as batch_retention
    from horde.batches import service as batches
    from horde.console.sampler import Sampler
    from horde.files import service as files
    from horde.oai import idempotency
    from horde.oai.responses import store as responses_store
    from horde.registration import address_counts, signin
    from horde.text import service as text_service

    sweeps = 0
    sampler = Sampler()
    while True:
        gevent.sleep(runtime.settings.sweep_interval_s)
        sweeps += 1
        try:
            service.sweep(runtime)
            text_service.sweep(runtime)
            if sweeps % KEY_PURGE_EVERY_SWEEPS == 0:
                # With the purges, not every sweep: a budget's sum reads its caller's seconds from the window's start on
                # the primary key, so older rows are never read, and the DELETE reads the whole table.
                with runtime.db.autocommit() as session:
                    rate_limit.forget_past_seconds(session)
                idempotency.purge_expired(runtime)
                responses_store.purge_expired(runtime)
                background_records.purge_expired(runtime)
                files.purge_expired(runtime, in_use=lambda file_id: batches.reads(runtime, file_id))
                batch_retention.purge_ended(runtime)
                with runtime.db.autocommit() as session:
                    address_counts.forget_past_days(session)
                signin.forget_expired(runtime)
            sampler.sample_when_due(runtime)  # last: a failing sample holds up none of the sweep's other work
        except ServiceUnavailable:
            pass  # the database logs the outage once; the next sweep tries again
        except Exception:
            log.exception("sweeping expired jobs failed")


def start_housekeeping(runtime: Runtime) -> None:
    """A serving process's background work: the sweeper, its presence on the database while it shares it without
    Redis (the line that says how it hears the other processes), the batch driver and, on SQLite, the log's
    checkpoints."""
    from horde.batches.driver import Driver
    from horde.oai.batch_lines import OpenAILines

    gevent.spawn(sweeper, runtime)
    start_hearing(runtime.db, runtime.bus, runtime.settings.events_poll_s)
    gevent.spawn(Driver(runtime, OpenAILines(runtime)).run_forever)
    start_checkpoints(runtime.db.sqlite_file)
