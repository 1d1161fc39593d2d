"""The worker registry as the AI Horde shows it: GET /workers, /workers/{id} and /workers/name/{name}.

A worker pops chat, text or both; `type` is the kind asked for. Without a filter the list holds the workers of
the AI Horde's kinds (text), since its clients refuse any other type; chat workers are listed with `type=chat`.
One worker is shown as "text" when it pops text, else "chat". A deleted worker is never shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from horde.accounts.models import User
from horde.accounts.names import alias
from horde.chat.models import JOB_SUBMITTED as CHAT_SUBMITTED
from horde.chat.models import ChatJob, ChatRequest
from horde.text import checkin
from horde.text.models import JOB_PROCESSING as TEXT_PROCESSING
from horde.text.models import JOB_SUBMITTED as TEXT_SUBMITTED
from horde.text.models import TextJob
from horde.timeutil import seconds_since
from horde.workers.declarations import feature_names, guarantee_names
from horde.workers.models import Worker

if TYPE_CHECKING:
    from horde.config import Settings


def pops(worker: Worker, kind: str) -> bool:
    """The worker popped `kind` at least once; `online` says whether lately."""
    moment = worker.text_pop_at if kind == "text" else worker.last_pop_at
    return moment is not None and moment > checkin.NEVER_POPPED


KINDS = ("text", "chat")
#: What /workers lists without a `type`: the AI Horde's kinds of work that this Horde serves.
AI_HORDE_KINDS = ("text",)


@dataclass(frozen=True)
class Viewer:
    """Who asks: a moderator sees a worker's pause, owner, address and contact; its owner sees the last three."""

    user_id: int | None = None
    moderator: bool = False


PUBLIC = Viewer()


def listing(session: Session, settings: Settings, kind: str | None, viewer: Viewer = PUBLIC) -> list[dict]:
    found = session.scalars(select(Worker).where(Worker.deleted_at.is_(None)).order_by(Worker.name)).all()
    kinds = (kind,) if kind else AI_HORDE_KINDS
    return [
        detail(session, settings, worker, shown, viewer) for worker in found for shown in kinds if pops(worker, shown)
    ]


def one(session: Session, settings: Settings, worker: Worker, viewer: Viewer = PUBLIC) -> dict:
    return detail(session, settings, worker, _kind_of(worker), viewer)


def _kind_of(worker: Worker) -> str:
    return "text" if pops(worker, "text") else "chat"


def detail(session: Session, settings: Settings, worker: Worker, kind: str, viewer: Viewer = PUBLIC) -> dict:
    """WorkerDetailItem, with the declarations of `kind`. As on the AI Horde: whether a moderator paused it only a
    moderator sees; its owner (`name#id`) a moderator, its owner, and everyone when the owner shows its workers;
    its address and its owner's contact a moderator and its owner; whether its owner is flagged, everyone."""
    last_pop = worker.text_pop_at if kind == "text" else worker.last_pop_at
    online = seconds_since(last_pop) <= settings.worker_online_window_s
    owner = session.execute(
        select(User.username, User.trusted, User.flagged, User.public_workers, User.contact).where(
            User.id == worker.owner_id
        )
    ).one()
    trusted, flagged = owner.trusted, owner.flagged
    privileged = viewer.moderator or viewer.user_id == worker.owner_id
    fulfilled, rewards, tokens = _work_done(session, worker.id)
    speed = checkin.tokens_per_s(session, worker.id)
    item = {
        "type": kind,
        "name": worker.name,
        "id": worker.id,
        "online": online,
        "requests_fulfilled": fulfilled,
        "kudos_rewards": rewards,
        "kudos_details": {"generated": rewards, "uptime": 0},
        "performance": f"{speed:.1f} tokens per second" if speed else "No requests fulfilled yet",
        "threads": worker.threads,
        "uptime": int(seconds_since(worker.created_at)),
        "maintenance_mode": bool(worker.maintenance),
        "paused": bool(worker.paused) and viewer.moderator,
        "info": worker.info,
        "nsfw": bool(worker.nsfw),
        "trusted": bool(trusted),
        "flagged": bool(flagged),
        "uncompleted_jobs": _uncompleted(session, worker.id),
        "bridge_agent": worker.bridge_agent or "unknown:0:unknown",
        "team": {"name": None, "id": None},
        "tokens_generated": tokens,
    }
    if privileged or owner.public_workers:
        item["owner"] = alias(owner.username, worker.owner_id, anonymous=False)
    if privileged:
        item["ipaddr"], item["contact"] = worker.ip_address, owner.contact
    if kind == "text":
        item.update(
            models=list(worker.text_models or []),
            max_length=worker.text_max_length,
            max_context_length=worker.text_max_context_length,
            softprompts=list(worker.softprompts or []),
        )
    else:
        item.update(
            models=list(worker.models or []),
            max_length=worker.max_length,
            max_context_length=worker.max_context_length,
            features=feature_names(worker.features_mask),
            guarantees=guarantee_names(worker.guarantees_mask),
        )
    return item


def _work_done(session: Session, worker_id: str) -> tuple[int, int, int]:
    text_count, text_kudos, text_tokens = session.execute(
        select(
            func.count(TextJob.id),
            func.coalesce(func.sum(TextJob.kudos), 0),
            func.coalesce(func.sum(TextJob.tokens), 0),
        ).where(TextJob.worker_id == worker_id, TextJob.state == TEXT_SUBMITTED)
    ).one()
    chat_count = (
        session.scalar(
            select(func.count(ChatJob.id)).where(ChatJob.worker_id == worker_id, ChatJob.state == CHAT_SUBMITTED)
        )
        or 0
    )
    chat_kudos = (
        session.scalar(
            select(func.coalesce(func.sum(ChatRequest.kudos_charged), 0)).where(ChatRequest.worker_id == worker_id)
        )
        or 0
    )
    return int(text_count) + int(chat_count), int(text_kudos) + int(chat_kudos), int(text_tokens)


def _uncompleted(session: Session, worker_id: str) -> int:
    return (
        session.scalar(
            select(func.count(TextJob.id)).where(
                TextJob.worker_id == worker_id, TextJob.state != TEXT_SUBMITTED, TextJob.state != TEXT_PROCESSING
            )
        )
        or 0
    )
