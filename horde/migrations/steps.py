"""The numbered steps of `sql/`, read once per process, and their statements as the runner sends them.

`sql/` is reached through `horde/migrations/sql`, a link to the checkout's folder (a wheel copies the files in its
place), so that the steps are found wherever the package is. `0001_schema.sql` is the current schema, not a step.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

SQL_FOLDER = Path(__file__).resolve().parent / "sql"
SQLITE_SUBFOLDER = "sqlite"
SCHEMA_FILE = "0001_schema.sql"
#: A step's file: four digits, an underscore, a name of lower-case letters, digits and underscores.
STEP_FILE = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
POSTGRESQL, SQLITE = "postgresql", "sqlite"
#: The most steps a folder may hold, and the largest step file: a start reads them all.
MAX_STEPS = 1000
MAX_STEP_BYTES = 1024 * 1024
_ADD_COLUMN = re.compile(r'^\s*ALTER\s+TABLE\s+"?(\w+)"?\s+ADD\s+(?:COLUMN\s+)?"?(\w+)"?', re.I)


class StepFolderError(ValueError):
    """`sql/` holds what the runner cannot take as steps (too many, too large)."""


@dataclass(frozen=True)
class Step:
    """One numbered step: its PostgreSQL file's text and its SQLite file's ('' where the step has none)."""

    name: str
    postgresql: str
    sqlite: str

    @property
    def number(self) -> int:
        return int(self.name[:4])

    def text(self, dialect: str) -> str:
        return self.postgresql if dialect == POSTGRESQL else self.sqlite

    def checksum(self, dialect: str) -> str:
        """SHA-256 (hex) of the step's text for `dialect`: what a database records when it has the step."""
        return hashlib.sha256(self.text(dialect).encode("utf-8")).hexdigest()


@functools.cache
def steps(folder: Path = SQL_FOLDER) -> tuple[Step, ...]:
    """Every step of `folder` (PostgreSQL's files, and SQLite's in its subfolder), ordered by number then name;
    gaps in the numbers are fine."""
    texts: dict[str, dict[str, str]] = {}
    for dialect, where in ((POSTGRESQL, folder), (SQLITE, folder / SQLITE_SUBFOLDER)):
        for path in sorted(where.glob("*.sql")) if where.is_dir() else ():
            if path.name == SCHEMA_FILE or not STEP_FILE.match(path.name):
                continue
            if path.stat().st_size > MAX_STEP_BYTES:
                raise StepFolderError(f"{path}: larger than {MAX_STEP_BYTES} bytes")
            texts.setdefault(path.stem, {})[dialect] = path.read_text(encoding="utf-8")
    if len(texts) > MAX_STEPS:
        raise StepFolderError(f"{folder}: more than {MAX_STEPS} steps")
    ordered = sorted(texts, key=lambda name: (int(name[:4]), name))
    return tuple(Step(name, texts[name].get(POSTGRESQL, ""), texts[name].get(SQLITE, "")) for name in ordered)


def without_transaction(text: str) -> str:
    """A PostgreSQL step's statements without the `BEGIN;` and `COMMIT;` that open and close its file: the runner
    runs them in a transaction of its own, with the step's record. A file without them is returned as it is."""
    lines = text.splitlines()
    code = [index for index, line in enumerate(lines) if line.strip() and not line.strip().startswith("--")]
    if len(code) >= 2 and lines[code[0]].strip().upper() == "BEGIN;" and lines[code[-1]].strip().upper() == "COMMIT;":
        lines[code[0]] = lines[code[-1]] = ""
    return "\n".join(lines)


def sqlite_statements(text: str) -> list[str]:
    """A SQLite step's statements, one by one (sqlite3 says where a statement ends: quotes and triggers included)."""
    statements, pending = [], ""
    for line in text.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if _code(pending):
                statements.append(pending.strip())
            pending = ""
    if _code(pending):
        statements.append(pending.strip())  # no closing semicolon: SQLite runs it all the same
    return statements


def added_column(statement: str) -> tuple[str, str] | None:
    """(table, column) of an `ALTER TABLE ... ADD COLUMN` statement, else None."""
    found = _ADD_COLUMN.match(_code(statement))
    return (found.group(1), found.group(2)) if found else None


def _code(statement: str) -> str:
    """The statement without its comment lines and surrounding blanks."""
    return "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--")).strip()
