"""Settings read from environment variables, with defaults that run out of the box."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_SQLITE_PATH = Path("var") / "horde.db"


def _float(env, name, default):
    value = env.get(name)
    return float(value) if value not in (None, "") else default


def _int(env, name, default):
    value = env.get(name)
    return int(value) if value not in (None, "") else default


def _list(env, name):
    value = env.get(name) or ""
    return tuple(item.strip() for item in value.split(",") if item.strip())


LOG_FORMATS = ("text", "json")


def _log_format(value: str) -> str:
    if value not in LOG_FORMATS:
        raise ValueError(f"HORDE_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {value!r}")
    return value


@dataclass(frozen=True)
class Settings:
    """Every tunable of the server; `from_env` is the only reader of the environment."""

    database_url: str = f"sqlite:///{DEFAULT_SQLITE_PATH}"
    redis_url: str | None = None
    redis_prefix: str = "horde"
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
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None =None, **overrides: Any) -> Settings:
        env = os.environ if env is None else env
        values = dict(
            database_url=env.get("HORDE_DATABASE_URL") or cls.database_url,
            redis_url=env.get("HORDE_REDIS_URL") or None,
            redis_prefix=env.get("HORDE_REDIS_PREFIX") or cls.redis_prefix,
            oai_prefix=env.get("HORDE_OAI_PREFIX") or cls.oai_prefix,
            oai_no_worker_grace_s=_float(env, "HORDE_OAI_NO_WORKER_GRACE_S", cls.oai_no_worker_grace_s),
            oai_keepalive_s=_float(env, "HORDE_OAI_KEEPALIVE_S", cls.oai_keepalive_s),
            oai_drop_grace_s=_float(env, "HORDE_OAI_DROP_GRACE_S", cls.oai_drop_grace_s),
            oai_wait_budget_s=_float(env, "HORDE_OAI_WAIT_BUDGET_S", cls.oai_wait_budget_s),
            idempotency_retention_s=_int(env, "HORDE_IDEMPOTENCY_RETENTION_S", cls.idempotency_retention_s),
            responses_retention_s=_int(env, "HORDE_RESPONSES_RETENTION_S", cls.responses_retention_s),
            worker_online_window_s=_float(env, "HORDE_WORKER_ONLINE_WINDOW_S", cls.worker_online_window_s),
            job_ttl_s=_float(env, "HORDE_JOB_TTL_S", cls.job_ttl_s),
            max_attempts=_int(env, "HORDE_MAX_ATTEMPTS", cls.max_attempts),
            default_context_tokens=_int(env, "HORDE_DEFAULT_CONTEXT_TOKENS", cls.default_context_tokens),
            rate_limit_per_minute=_int(env, "HORDE_RATE_LIMIT_PER_MINUTE", cls.rate_limit_per_minute),
            image_fetch_allow=_list(env, "HORDE_IMAGE_FETCH_ALLOW"),
            image_max_bytes=_int(env, "HORDE_IMAGE_MAX_BYTES", cls.image_max_bytes),
            sweep_interval_s=_float(env, "HORDE_SWEEP_INTERVAL_S", cls.sweep_interval_s),
            model_reference_path=env.get("HORDE_MODEL_REFERENCE") or None,
            cors_origins=_list(env, "HORDE_CORS_ORIGINS") or cls.cors_origins,
            metrics_token=env.get("HORDE_METRICS_TOKEN") or None,
            metrics_dir=env.get("HORDE_METRICS_DIR") or None,
            log_format=_log_format(env.get("HORDE_LOG_FORMAT") or cls.log_format),
            drain_s=_float(env, "HORDE_DRAIN_S", cls.drain_s),
            max_body_bytes=_int(env, "HORDE_MAX_BODY_BYTES", cls.max_body_bytes),
            max_messages=_int(env, "HORDE_MAX_MESSAGES", cls.max_messages),
            max_image_bytes_total=_int(env, "HORDE_MAX_IMAGE_BYTES_TOTAL", cls.max_image_bytes_total),
            max_images_per_request=_int(env, "HORDE_MAX_IMAGES_PER_REQUEST", cls.max_images_per_request),
            trusted_proxy_hops=_int(env, "HORDE_TRUSTED_PROXY_HOPS", cls.trusted_proxy_hops),
            http_idle_timeout_s=_float(env, "HORDE_HTTP_IDLE_TIMEOUT_S", cls.http_idle_timeout_s),
            http_header_timeout_s=_float(env, "HORDE_HTTP_HEADER_TIMEOUT_S", cls.http_header_timeout_s),
        )
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)
