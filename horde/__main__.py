"""python -m horde serve | users create|kudos|role|flag|trust|limits|delete|kudos-award | invites create|list|revoke
| ipaddr | modes | workers name-keys | audit | worker | schema-sql | db upgrade|status"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        from horde.bridge.cli import main as worker_main

        return worker_main(argv[1:])
    if argv[:1] == ["serve"]:
        from gevent import monkey

        monkey.patch_all()
    args = _parser().parse_args(argv)
    from horde.migrations.runner import SchemaBehind

    try:
        return args.run(args)
    except SchemaBehind as refused:  # the database lacks a migration: one line that names the command
        print(refused, file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    from horde.moderation import cli as moderation

    parser = argparse.ArgumentParser(prog="python -m horde")
    commands = parser.add_subparsers(required=True)
    serve = commands.add_parser("serve", help="serve the Horde on gevent")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=7001)
    serve.set_defaults(run=_serve)
    users = commands.add_parser("users", help="manage users").add_subparsers(required=True)
    create = users.add_parser("create", help="create a user; prints its API key on the last line")
    create.add_argument("name")
    create.add_argument("--kudos", type=int, default=0)
    create.add_argument("--trusted", action="store_true")
    create.set_defaults(run=_users_create)
    moderation.add_user_commands(users, _runtime)
    moderation.add_commands(commands, _runtime)
    invites = commands.add_parser("invites", help="invite codes (HORDE_REGISTRATION=invite)").add_subparsers(
        required=True
    )
    invite = invites.add_parser("create", help="make an invite code; prints it on the last line")
    invite.add_argument("--uses", type=int, default=1, help="how many accounts it may make (default 1)")
    invite.add_argument("--days", type=int, default=None, help="how many days it lasts (default: until used up)")
    invite.set_defaults(run=_invites_create)
    invites.add_parser("list", help="the newest invites, their uses and expiry").set_defaults(run=_invites_list)
    revoke = invites.add_parser("revoke", help="use an invite up: no account can be made with it any more")
    revoke.add_argument("id", type=int)
    revoke.set_defaults(run=_invites_revoke)
    commands.add_parser("worker", help="run the reference worker (see --help after it)")
    schema = commands.add_parser("schema-sql", help="print the PostgreSQL schema")
    schema.set_defaults(run=_schema_sql)
    db = commands.add_parser("db", help="the database's migrations (the numbered files of sql/)")
    steps = db.add_subparsers(required=True)
    upgrade = steps.add_parser("upgrade", help="apply the migrations the database lacks (an empty one: the schema)")
    upgrade.set_defaults(run=_db_upgrade)
    status = steps.add_parser("status", help="list applied and pending migrations; exit 1 while any is pending")
    status.set_defaults(run=_db_status)
    return parser


def _runtime():
    from horde.app import init_schema
    from horde.config import Settings
    from horde.runtime import Runtime

    runtime = Runtime.build(Settings.from_env())
    init_schema(runtime)
    return runtime


def _serve(args) -> int:
    import logging

    from horde.app import create_app
    from horde.ops.housekeeping import start_housekeeping
    from horde.serving.server import serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    runtime = _runtime()
    serve(create_app(runtime=runtime), runtime, args.host, args.port, start_housekeeping)
    return 0


def _users_create(args) -> int:
    from horde.accounts import service as accounts

    runtime = _runtime()
    with runtime.db.transaction() as session:
        user, key = accounts.create_user(session, args.name, kudos=args.kudos, trusted=args.trusted)
        print(f"Created user {user.username} (id {user.id}, {user.kudos} kudos, trusted={user.trusted}). API key:")
    print(key)
    return 0


def _db_upgrade(_args) -> int:
    from horde.migrations.runner import describe_upgrade
    from horde.models import upgrade_schema

    db = _database()
    try:
        print("\n".join(describe_upgrade(upgrade_schema(db.engine))))
    finally:
        db.dispose()
    return 0


def _db_status(_args) -> int:
    from horde.migrations.runner import describe, read_status
    from horde.migrations.steps import steps

    db = _database()
    try:
        with db.read_engine.connect() as connection:  # a read: no write lock on SQLite
            status = read_status(connection, steps())
    finally:
        db.dispose()
    print("\n".join(describe(status)))
    return 1 if status.pending else 0


def _database():
    """The database alone: the db commands need none of a server's parts."""
    from horde.config import Settings
    from horde.storage.database import Database

    settings = Settings.from_env()
    return Database(settings.database_url, settings.database_pooler)


def _invites_create(args) -> int:
    from horde.errors import HordeError
    from horde.registration import invites

    runtime = _runtime()
    try:
        with runtime.db.transaction() as session:
            code = invites.create(session, args.uses, days=args.days)
    except HordeError as refusal:
        print(refusal.message, file=sys.stderr)
        return 2
    lasts = f", for {args.days} day(s)" if args.days else ""
    print(f"Invite code for {args.uses} account(s){lasts}; it is shown this once:")
    print(code)
    return 0


def _invites_list(_args) -> int:
    from horde.registration import invites

    runtime = _runtime()
    with runtime.db.read() as session:
        total, shown = invites.count(session), invites.listed(session)
    print(f"{total} invite(s); the newest {len(shown)}:" if total > len(shown) else f"{total} invite(s)")
    for row in shown:
        expiry = f"expires {row['expires_at']:%Y-%m-%d %H:%M} UTC" if row["expires_at"] else "no expiry"
        print(f"{row['id']:>6}  used {row['used']} of {row['uses']}  made {row['created_at']:%Y-%m-%d %H:%M}  {expiry}")
    return 0


def _invites_revoke(args) -> int:
    from horde.registration import invites

    runtime = _runtime()
    with runtime.db.transaction() as session:
        found = invites.revoke(session, args.id)
    print(
        f"Invite {args.id} is used up." if found else f"No invite {args.id}.", file=sys.stdout if found else sys.stderr
    )
    return 0 if found else 1


def _schema_sql(_args) -> int:
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex, CreateTable

    from horde.models import functions_sql, tables

    for table in tables():
        print(str(CreateTable(table).compile(dialect=postgresql.dialect())).strip() + ";\n")
        for index in sorted(table.indexes, key=lambda index: str(index.name)):
            print(str(CreateIndex(index).compile(dialect=postgresql.dialect())).strip() + ";")
        print()
    for function in functions_sql():
        print(function + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
