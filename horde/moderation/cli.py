"""The operator's moderation commands (`python -m horde users ...`, `ipaddr ...`, `modes ...`, `workers
name-keys`, `audit`): what a moderator does through the API, for an operator without a moderator's account. Each
calls the API's service and is recorded in the audit trail with the operator (`operator <login>`) as the actor.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from horde.accounts import service as accounts
from horde.moderation import awards, deletion, modes, timeouts, users
from horde.moderation.schemas import MAX_CONCURRENCY, MAX_USAGE_MULTIPLIER, MAX_WORKER_INVITED, MIN_USAGE_MULTIPLIER
from horde.oversight import trail
from horde.oversight.trail import Actor, Done, Target
from horde.oversight.view import read_modes

if TYPE_CHECKING:
    from horde.runtime import Runtime

Build = Callable[[], "Runtime"]
ON_OFF = {"on": True, "off": False}


def add_user_commands(users_commands: Any, build: Build) -> None:
    """The moderation commands under `python -m horde users`."""
    role = users_commands.add_parser("role", help="set a user's role (the authorization table)")
    role.add_argument("name", help="the user's name, or name#id where names repeat")
    role.add_argument("role", choices=("admin", "moderator", "user"))
    _reason(role)
    role.set_defaults(run=lambda args: _set_role(build, args))
    kudos = users_commands.add_parser("kudos", help="set a user's kudos balance (an adjustment on the ledger)")
    kudos.add_argument("name")
    kudos.add_argument("kudos", type=int)
    _reason(kudos)
    kudos.set_defaults(run=lambda args: _set_kudos(build, args))
    for command, field, text in (
        ("flag", "flagged", "flag a user: its workers take no jobs, it sends and receives no kudos"),
        ("trust", "trusted", "trust a user (unpauses its workers)"),
    ):
        parser = users_commands.add_parser(command, help=text)
        parser.add_argument("name")
        parser.add_argument("--off", action="store_true", help=f"lift it instead (not {field})")
        _reason(parser)
        parser.set_defaults(run=lambda args, field=field: _change(build, args, {field: not args.off}))
    limits = users_commands.add_parser("limits", help="set a user's concurrency, invited workers or usage multiplier")
    limits.add_argument("name")
    limits.add_argument("--concurrency", type=_bounded(int, 0, MAX_CONCURRENCY))
    limits.add_argument("--worker-invited", type=_bounded(int, 0, MAX_WORKER_INVITED))
    limits.add_argument("--usage-multiplier", type=_bounded(float, MIN_USAGE_MULTIPLIER, MAX_USAGE_MULTIPLIER))
    _reason(limits)
    limits.set_defaults(run=lambda args: _limits(build, args))
    delete = users_commands.add_parser("delete", help="delete a user (its ledger entries stay)")
    delete.add_argument("name")
    _reason(delete)
    delete.set_defaults(run=lambda args: _delete(build, args))
    award = users_commands.add_parser("kudos-award", help="award kudos to a user (one ledger entry)")
    award.add_argument("name")
    award.add_argument("amount", type=_bounded(int, 1, 10**15))
    _reason(award)
    award.set_defaults(run=lambda args: _award(build, args))


def add_commands(commands: Any, build: Build) -> None:
    """`ipaddr`, `modes`, `workers name-keys` and `audit`."""
    ipaddr = commands.add_parser("ipaddr", help="addresses in timeout").add_subparsers(required=True)
    ipaddr.add_parser("list", help="every address in timeout").set_defaults(run=lambda args: _list_timeouts(build))
    add = ipaddr.add_parser("add", help="put an address or a network (CIDR) in timeout")
    add.add_argument("ipaddr")
    add.add_argument("--hours", type=_bounded(int, 1, 24 * 365 * 10), required=True)
    _reason(add)
    add.set_defaults(run=lambda args: _time_out(build, args))
    remove = ipaddr.add_parser("remove", help="lift an address's or network's timeout")
    remove.add_argument("ipaddr")
    _reason(remove)
    remove.set_defaults(run=lambda args: _lift(build, args))
    horde_modes = commands.add_parser("modes", help="the Horde's modes").add_subparsers(required=True)
    horde_modes.add_parser("show", help="the modes").set_defaults(run=lambda args: _show_modes(build))
    set_modes = horde_modes.add_parser("set", help="set modes (on or off)")
    for name in modes.MODE_NAMES:
        set_modes.add_argument(f"--{name.removesuffix('_mode').replace('_', '-')}", dest=name, choices=ON_OFF)
    _reason(set_modes)
    set_modes.set_defaults(run=lambda args: _set_modes(build, args))
    workers = commands.add_parser("workers", help="workers").add_subparsers(required=True)
    keys = workers.add_parser("name-keys", help="give workers their name keys; print the names that look alike")
    keys.set_defaults(run=lambda args: _name_keys(build))
    audit = commands.add_parser("audit", help="print the audit trail, latest first, one JSON object a line")
    audit.add_argument("--limit", type=_bounded(int, 1, trail.MAX_PAGE), default=trail.DEFAULT_PAGE)
    audit.add_argument("--before", type=int)
    audit.set_defaults(run=lambda args: _audit(build, args))


def _reason(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reason", help="why: kept in the audit trail")


def _bounded(kind: type, low: float, high: float) -> Callable[[str], Any]:
    def read(raw: str) -> Any:
        value = kind(raw)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{raw}: between {low} and {high}")
        return value

    return read


def _user_id(runtime: Runtime, name: str) -> int:
    with runtime.db.read() as session:
        return accounts.find_by_name(session, name).id


def _set_role(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    user_id = _user_id(runtime, args.name)
    if args.role == "admin":  # the API never makes an admin: only here
        _record_role(runtime, user_id, args)
    else:
        users.apply_changes(runtime, Actor.operator(), user_id, {"moderator": args.role == "moderator"}, args.reason)
    print(f"{args.name} is now {args.role}.")
    runtime.close()
    return 0


def _record_role(runtime: Runtime, user_id: int, args: argparse.Namespace) -> None:
    from horde.accounts import roles
    from horde.accounts.auth import forget_identities

    with runtime.db.transaction() as session:
        user = roles.set_role(session, args.name, args.role)
        trail.record(
            session,
            Actor.operator(),
            Done.SET_ROLE,
            Target.USER,
            user_id,
            before={"role": user.role},
            after={"role": args.role},
            reason=args.reason,
        )
    forget_identities(runtime)


def _set_kudos(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    with runtime.db.transaction() as session:
        user = accounts.find_by_name(session, args.name)
        before = user.kudos
        accounts.set_kudos(session, user, args.kudos)
        trail.record(
            session,
            Actor.operator(),
            Done.SET_KUDOS,
            Target.USER,
            user.id,
            before={"kudos": before},
            after={"kudos": user.kudos},
            reason=args.reason,
        )
        print(f"{user.username} now has {user.kudos} kudos.")
    runtime.close()
    return 0


def _change(build: Build, args: argparse.Namespace, changes: dict[str, Any]) -> int:
    runtime = build()
    answer = users.apply_changes(runtime, Actor.operator(), _user_id(runtime, args.name), changes, args.reason)
    print(json.dumps(answer))
    runtime.close()
    return 0


def _limits(build: Build, args: argparse.Namespace) -> int:
    changes = {
        field: value
        for field, value in (
            ("concurrency", args.concurrency),
            ("worker_invited", args.worker_invited),
            ("usage_multiplier", args.usage_multiplier),
        )
        if value is not None
    }
    if not changes:
        print("Nothing to set: give --concurrency, --worker-invited or --usage-multiplier.")
        return 2
    return _change(build, args, changes)


def _delete(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    deletion.remove(runtime, Actor.operator(), _user_id(runtime, args.name), args.reason)
    print(f"{args.name} is deleted.")
    runtime.close()
    return 0


def _award(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    user_id = _user_id(runtime, args.name)
    name = args.name if "#" in args.name else f"{args.name}#{user_id}"
    awards.award(runtime, Actor.operator(), name, args.amount, args.reason)
    print(f"{name} was awarded {args.amount} kudos.")
    runtime.close()
    return 0


def _list_timeouts(build: Build) -> int:
    runtime = build()
    for entry in timeouts.listing(runtime):
        print(json.dumps(entry))
    runtime.close()
    return 0


def _time_out(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    timeouts.time_out(runtime, Actor.operator(), args.ipaddr, args.hours, args.reason)
    print(f"{args.ipaddr} is in timeout for {args.hours} hours.")
    runtime.close()
    return 0


def _lift(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    lifted = timeouts.lift(runtime, Actor.operator(), args.ipaddr, args.reason)
    print(f"{args.ipaddr} is out of timeout." if lifted else f"{args.ipaddr} was not in timeout.")
    runtime.close()
    return 0


def _show_modes(build: Build) -> int:
    runtime = build()
    with runtime.db.read() as session:
        print(json.dumps(read_modes(session).as_dict()))
    runtime.close()
    return 0


def _set_modes(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    wanted = {name: ON_OFF[getattr(args, name)] for name in modes.MODE_NAMES if getattr(args, name) is not None}
    print(json.dumps(modes.set_modes(runtime, Actor.operator(), wanted, args.reason)))
    runtime.close()
    return 0


def _name_keys(build: Build) -> int:
    from horde.workers.names import fill_missing_keys

    runtime = build()  # its start fills the keys already; this says which names still look alike
    with runtime.db.transaction() as session:
        collisions = fill_missing_keys(session.connection())
    for names in collisions:
        print(f"look alike (only the first holds the name; rename the others): {json.dumps(names)}")
    print(f"{len(collisions)} group(s) of workers whose names look alike.")
    runtime.close()
    return 1 if collisions else 0


def _audit(build: Build, args: argparse.Namespace) -> int:
    runtime = build()
    with runtime.db.read() as session:
        for entry in trail.page(session, before_id=args.before, limit=args.limit):
            print(json.dumps(entry))
    runtime.close()
    return 0
