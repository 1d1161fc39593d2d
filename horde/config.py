"""Settings read from environment variables, with defaults that run out of the box.

Every field of `Settings` has one variable in `VARIABLES`, read by a small typed reader: an empty or unset
variable keeps the default; a value that does not parse, or falls outside its range, stops the start with a
`SettingError` that names the variable (docs/decisions/0008-settings-from-the-environment.md).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_SQLITE_PATH = Path("var") / "horde.db"


class SettingError(ValueError):
    """A variable of the environment that the server cannot start with."""


@dataclass(frozen=True)
class Variable:
    """How one setting is read: its variable, its type, and its range (`above` is exclusive)."""

    name: str
    kind: type = str
    minimum: float | None = None
    above: float | None = None
    optional: bool = False
    choices: tuple[str, ...] = ()

    def read(self, env: Mapping[str, str], default: Any) -> Any:
        raw = env.get(self.name)
        if raw is None or raw.strip() == "":
            return None if self.optional else default
        if self.kind is tuple:
            return tuple(item.strip() for item in raw.split(",") if item.strip())
        if self.kind is str:
            if self.choices and raw not in self.choices:
                raise SettingError(f"{self.name}={raw!r}: must be one of {', '.join(self.choices)}.")
            return raw
        try:
            value = self.kind(raw)
        except ValueError:
            raise SettingError(f"{self.name}={raw!r}: expected {_kind_name(self.kind)}.") from None
        if self.minimum is not None and not value >= self.minimum:
            raise SettingError(f"{self.name}={raw!r}: must be at least {self.minimum}.")
        if self.above is not None and not value > self.above:
            raise SettingError(f"{self.name}={raw!r}: must be greater than {self.above}.")
        return value


def _kind_name(kind: type) -> str:
    return "an integer" if kind is int else "a number"


def _seconds(name: str) -> Variable:
    return Variable(name, float, above=0)


def _count(name: str, minimum: int = 1) -> Variable:
    return Variable(name, int, minimum=minimum)


LOG_FORMATS = ("text", "json")
#: HORDE_DATABASE_POOLER's values (horde/storage/pg_engines.py says what the first changes).
POOLER_TRANSACTION = "transaction"
DATABASE_POOLERS = (POOLER_TRANSACTION, "session")
#: HORDE_REGISTRATION: anyone may register, only with an invite code, or nobody (horde/registration/modes.py).
REGISTRATION_MODES = ("open", "invite", "closed")


@dataclass(frozen=True)
class Settings:
    """Every tunable of the server; `from_env` is the only reader of the environment."""

    database_url: str = f"sqlite:///{DEFAULT_SQLITE_PATH}"
    #: What sits between the Horde and PostgreSQL: "transaction", a pooler in transaction mode (PgBouncer's
    #: `pool_mode = transaction`), where nothing may outlive a transaction; None or "session": a server connection
    #: stays the Horde's for its session (a direct connection, or a pooler in session mode).
    database_pooler: str | None = None
    redis_url: str | None = None
    redis_prefix: str = "horde"
    #: Without Redis, how often waiters and long-polling pops read the database to hear of what other processes
    #: sharing it changed, while any does (horde/presence/hearing.py); a process alone hears its own events.
    events_poll_s: float = 1.0
    oai_prefix: str = "/v1"
    oai_no_worker_grace_s: float = 20.0
    oai_keepalive_s: float = 5.0
    oai_drop_grace_s: float = 10.0
    oai_wait_budget_s: float = 300.0
    idempotency_retention_s: int = 86_400
    responses_retention_s: int = 2_592_000
    worker_online_window_s: float = 300.0
    job_ttl_s: float = 150.0
    max_attempts: int = 3
    default_context_tokens: int = 4096
    default_job_duration_s: float = 10.0
    rate_limit_per_minute: int = 600
    image_fetch_allow: tuple[str, ...] = ()
    image_max_bytes: int = 5 * 1024 * 1024
    image_fetch_timeout_s: float = 2.0
    sweep_interval_s: float = 1.0
    model_reference_path: str | None = None
    #: Origins a browser may call /v1 and /api/v2 from; ("*",) is any origin (keys travel in headers only).
    cors_origins: tuple[str, ...] = ("*",)
    #: When set, GET /metrics requires it as a Bearer token.
    metrics_token: str | None = None
    #: Seals what the Horde hands a client to read back later (Responses' reasoning.encrypted_content); unset,
    #: a secret made once on the first start and kept in the database (table server_secrets) is used.
    secret_key: str | None = None
    #: prometheus_client's multiprocess directory; None picks one per run under gunicorn.
    metrics_dir: str | None = None
    #: "text" or "json" (one JSON object per line).
    log_format: str = "text"
    #: On SIGTERM, how long open streams and waits may still run before they end in server_shutting_down.
    drain_s: float = 30.0
    max_body_bytes: int = 32 * 1024 * 1024
    max_messages: int = 2048
    max_image_bytes_total: int = 32 * 1024 * 1024
    max_images_per_request: int = 16
    trusted_proxy_hops: int = 0
    http_idle_timeout_s: float = 75.0
    http_header_timeout_s: float = 10.0
    #: How long a conversation's next turn waits for the worker that served its last turn (0: no affinity).
    affinity_wait_ms: int = 300
    #: A JSON file of the AI Horde's news pieces, answered by GET /api/v2/status/news; None: no news.
    news_path: str | None = None
    #: A request's body must have arrived whole this long after its head ended.
    http_body_timeout_s: float = 30.0
    #: The request line and header block together, in bytes; above it is 431.
    max_header_bytes: int = 65_536
    #: Open connections of one `python -m horde serve` process (under gunicorn, --worker-connections).
    max_connections: int = 10_000
    #: What a flex request's requester pays of the price (service_tier "flex", batch lines); its worker earns the price.
    batch_price_factor: float = 0.5
    #: Where uploaded files and their chunks live: None keeps them in the database, a directory keeps each in a file.
    files_dir: str | None = None
    #: The largest file a user may upload (POST /v1/files), in bytes.
    file_max_bytes: int = 100 * 1024 * 1024
    #: What one user's files may hold in all (uploads and the batches' output and error files), in bytes.
    file_store_max_bytes: int = 1024 * 1024 * 1024
    #: How long files and batches are kept after their creation (a file may ask for less with expires_after).
    files_retention_s: int = 2_592_000
    #: The most requests (lines) one batch may hold.
    batch_max_requests: int = 50_000
    #: The most lines of one batch queued at once: the rest wait in its file.
    batch_max_in_flight: int = 64
    #: The most batches of one user not yet ended (validating, in progress, finalizing or cancelling).
    batch_max_active: int = 10
    #: Who may make an account (POST /api/v2/register, the /register form): one of REGISTRATION_MODES.
    registration: str = "open"
    #: Accounts one client address may make in a UTC day (the address the rate limit reads, proxies included).
    registrations_per_address_per_day: int = 3
    #: Kudos a new account starts with, granted on the ledger.
    new_user_kudos: int = 0
    #: OpenID Connect sign-in (horde/registration/oidc.py): on when the issuer and the client's id and secret are set.
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = None
    #: The provider's name as the sign-in link shows it; unset: the issuer's host.
    oidc_provider_name: str | None = None
    #: The callback's address as the provider knows it; unset: /oidc/callback on the address the browser used.
    oidc_redirect_url: str | None = None
    #: In raid mode, an untrusted account younger than this queues no generation (docs/reference/moderation.md).
    raid_new_account_s: float = 7 * 86_400.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """The settings of `env` (the process's environment by default); `overrides` win over both."""
        env = os.environ if env is None else env
        values = {field.name: VARIABLES[field.name].read(env, field.default) for field in dataclasses.fields(cls)}
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


#: Each setting's variable; tests/unit/test_config.py keeps it complete.
VARIABLES: dict[str, Variable] = {
    "database_url": Variable("HORDE_DATABASE_URL"),
    "database_pooler": Variable("HORDE_DATABASE_POOLER", optional=True, choices=DATABASE_POOLERS),
    "redis_url": Variable("HORDE_REDIS_URL", optional=True),
    "redis_prefix": Variable("HORDE_REDIS_PREFIX"),
    "events_poll_s": _seconds("HORDE_EVENTS_POLL_S"),
    "oai_prefix": Variable("HORDE_OAI_PREFIX"),
    "oai_no_worker_grace_s": Variable("HORDE_OAI_NO_WORKER_GRACE_S", float, minimum=0),
    "oai_keepalive_s": _seconds("HORDE_OAI_KEEPALIVE_S"),
    "oai_drop_grace_s": Variable("HORDE_OAI_DROP_GRACE_S", float, minimum=0),
    "oai_wait_budget_s": Variable("HORDE_OAI_WAIT_BUDGET_S", float, minimum=0),
    "idempotency_retention_s": _count("HORDE_IDEMPOTENCY_RETENTION_S"),
    "responses_retention_s": _count("HORDE_RESPONSES_RETENTION_S"),
    "worker_online_window_s": _seconds("HORDE_WORKER_ONLINE_WINDOW_S"),
    "job_ttl_s": _seconds("HORDE_JOB_TTL_S"),
    "max_attempts": _count("HORDE_MAX_ATTEMPTS"),
    "default_context_tokens": _count("HORDE_DEFAULT_CONTEXT_TOKENS"),
    "default_job_duration_s": _seconds("HORDE_DEFAULT_JOB_DURATION_S"),
    "rate_limit_per_minute": _count("HORDE_RATE_LIMIT_PER_MINUTE"),
    "image_fetch_allow": Variable("HORDE_IMAGE_FETCH_ALLOW", tuple),
    "image_max_bytes": _count("HORDE_IMAGE_MAX_BYTES"),
    "image_fetch_timeout_s": _seconds("HORDE_IMAGE_FETCH_TIMEOUT_S"),
    "sweep_interval_s": _seconds("HORDE_SWEEP_INTERVAL_S"),
    "model_reference_path": Variable("HORDE_MODEL_REFERENCE", optional=True),
    "max_body_bytes": _count("HORDE_MAX_BODY_BYTES"),
    "max_messages": _count("HORDE_MAX_MESSAGES"),
    "max_image_bytes_total": _count("HORDE_MAX_IMAGE_BYTES_TOTAL"),
    "max_images_per_request": _count("HORDE_MAX_IMAGES_PER_REQUEST"),
    "trusted_proxy_hops": _count("HORDE_TRUSTED_PROXY_HOPS", minimum=0),
    "http_idle_timeout_s": _seconds("HORDE_HTTP_IDLE_TIMEOUT_S"),
    "http_header_timeout_s": _seconds("HORDE_HTTP_HEADER_TIMEOUT_S"),
    "http_body_timeout_s": _seconds("HORDE_HTTP_BODY_TIMEOUT_S"),
    "max_header_bytes": _count("HORDE_MAX_HEADER_BYTES", minimum=1024),
    "max_connections": _count("HORDE_MAX_CONNECTIONS"),
    "cors_origins": Variable("HORDE_CORS_ORIGINS", tuple),
    "metrics_token": Variable("HORDE_METRICS_TOKEN", optional=True),
    "secret_key": Variable("HORDE_SECRET_KEY", optional=True),
    "metrics_dir": Variable("HORDE_METRICS_DIR", optional=True),
    "log_format": Variable("HORDE_LOG_FORMAT", choices=LOG_FORMATS),
    "drain_s": Variable("HORDE_DRAIN_S", float, minimum=0),
    "affinity_wait_ms": _count("HORDE_AFFINITY_WAIT_MS", minimum=0),
    "news_path": Variable("HORDE_NEWS", optional=True),
    "batch_price_factor": Variable("HORDE_BATCH_PRICE_FACTOR", float, above=0),
    "files_dir": Variable("HORDE_FILES_DIR", optional=True),
    "file_max_bytes": _count("HORDE_FILE_MAX_BYTES"),
    "file_store_max_bytes": _count("HORDE_FILE_STORE_MAX_BYTES"),
    "files_retention_s": _count("HORDE_FILES_RETENTION_S"),
    "batch_max_requests": _count("HORDE_BATCH_MAX_REQUESTS"),
    "batch_max_in_flight": _count("HORDE_BATCH_MAX_IN_FLIGHT"),
    "batch_max_active": _count("HORDE_BATCH_MAX_ACTIVE"),
    "registration": Variable("HORDE_REGISTRATION", choices=REGISTRATION_MODES),
    "registrations_per_address_per_day": _count("HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY", minimum=0),
    "new_user_kudos": _count("HORDE_NEW_USER_KUDOS", minimum=0),
    "oidc_issuer": Variable("HORDE_OIDC_ISSUER", optional=True),
    "oidc_client_id": Variable("HORDE_OIDC_CLIENT_ID", optional=True),
    "oidc_client_secret": Variable("HORDE_OIDC_CLIENT_SECRET", optional=True),
    "oidc_provider_name": Variable("HORDE_OIDC_PROVIDER_NAME", optional=True),
    "oidc_redirect_url": Variable("HORDE_OIDC_REDIRECT_URL", optional=True),
    "raid_new_account_s": Variable("HORDE_RAID_NEW_ACCOUNT_S", float, minimum=0),
}
