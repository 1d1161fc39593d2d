"""GET /ready: can this process serve now? (`/health` only says that it runs.)

503 while the database is unreachable: nothing can be served without it. Redis
only speeds up wake-ups, so without it the process stays ready and says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from horde.errors import ServiceUnavailable
from horde.events.bus import POLL_WITHOUT_EVENTS_S

if TYPE_CHECKING:
    from horde.runtime import Runtime

UNREACHABLE = "unreachable"


def readiness(runtime: Runtime) -> tuple[dict, int, dict]:
    """The probe's body, status and headers; `down` names what cannot be reached."""
    database = "ok" if runtime.db.ping() else UNREACHABLE
    redis = runtime.bus.status()
    down = [name for name, state in (("database", database), ("redis", redis)) if state == UNREACHABLE]
    body: dict = {
        "status": "ready" if database == "ok" else "unavailable",
        "database": database,
        "redis": redis,
        "down": down,
    }
    if redis == UNREACHABLE:
        body["events"] = f"Redis is unreachable: waiters read the database every {POLL_WITHOUT_EVENTS_S:g} s"
    if database != "ok":
        return body, 503, {"Retry-After": str(ServiceUnavailable.RETRY_AFTER_S)}
    return body, 200, {}
