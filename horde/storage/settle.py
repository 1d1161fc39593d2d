"""Bookkeeping writes that a database outage must neither lose nor turn into an error.

Releasing a holder or marking an answer delivered happens after the client has
its answer (or its error). When the database cannot be reached then, the write
is retried in the background every RETRY_S until it works, for up to GIVE_UP_S.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from horde import errors

log = logging.getLogger(__name__)

RETRY_S = 1.0
GIVE_UP_S = 600.0


def settle(what: str, write: Callable[[], None]) -> None:
    """Run `write` now; if the database is unreachable, again in the background until it is back."""
    try:
        write()
    except errors.ServiceUnavailable:
        log.warning("%s waits for the database", what)
        threading.Thread(target=_retry, args=(what, write), name="horde-settle", daemon=True).start()


def _retry(what: str, write: Callable[[], None]) -> None:
    deadline = time.monotonic() + GIVE_UP_S
    while time.monotonic() < deadline:
        time.sleep(RETRY_S)
        try:
            write()
        except errors.ServiceUnavailable:
            continue
        except Exception:  # a background retry has nobody to raise to
            log.exception("%s failed after the database returned", what)
            return
        log.info("%s done after the database returned", what)
        return
    log.error("gave up %s after %s s without the database", what, GIVE_UP_S)
