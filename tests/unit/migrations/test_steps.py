"""The numbered steps of sql/ as the runner reads them: order, kinds, checksums, and the statements it sends."""

from __future__ import annotations

import pytest

from horde.migrations import steps as step_files
from horde.migrations.steps import (
    POSTGRESQL,
    SQLITE,
    StepFolderError,
    added_column,
    sqlite_statements,
    steps,
    without_transaction,
)


def _write(folder, name: str, text: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_steps_are_ordered_by_number_with_gaps_and_each_kind_has_its_file_or_none(tmp_path):
    _write(tmp_path, "0001_schema.sql", "CREATE TABLE current (n integer);")
    _write(tmp_path, "0010_later.sql", "BEGIN;\nSELECT 10;\nCOMMIT;\n")
    _write(tmp_path, "0002_first.sql", "SELECT 2;")
    _write(tmp_path, "sqlite/0002_first.sql", "SELECT 2;")
    _write(tmp_path, "sqlite/0031_only_sqlite.sql", "SELECT 31;")
    _write(tmp_path, "README.md", "not a step")
    _write(tmp_path, "0003_Bad-Name.sql", "not a step either")
    found = steps(tmp_path)
    assert [step.name for step in found] == ["0002_first", "0010_later", "0031_only_sqlite"]
    assert [step.number for step in found] == [2, 10, 31]
    later, only_sqlite = found[1], found[2]
    assert (later.text(POSTGRESQL), later.text(SQLITE)) == ("BEGIN;\nSELECT 10;\nCOMMIT;\n", "")
    assert (only_sqlite.text(POSTGRESQL), only_sqlite.text(SQLITE)) == ("", "SELECT 31;")


def test_a_checksum_is_of_the_kinds_own_file_and_follows_its_text(tmp_path):
    _write(tmp_path, "0002_first.sql", "SELECT 2;")
    before = steps(tmp_path)[0]
    assert before.checksum(SQLITE) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # of nothing
    _write(tmp_path / "again", "0002_first.sql", "SELECT 2; -- changed")
    after = steps(tmp_path / "again")[0]
    assert after.checksum(POSTGRESQL) != before.checksum(POSTGRESQL)
    assert len(before.checksum(POSTGRESQL)) == 64


def test_a_folder_past_its_bounds_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(step_files, "MAX_STEPS", 2)
    for number in range(2, 5):
        _write(tmp_path, f"{number:04d}_step.sql", "SELECT 1;")
    with pytest.raises(StepFolderError, match="more than 2 steps"):
        steps(tmp_path)
    monkeypatch.setattr(step_files, "MAX_STEP_BYTES", 4)
    _write(tmp_path / "large", "0002_step.sql", "SELECT 1;")
    with pytest.raises(StepFolderError, match="larger than 4 bytes"):
        steps(tmp_path / "large")


def test_the_repositorys_steps_include_every_numbered_file_but_the_schema():
    names = [step.name for step in steps()]
    assert "0001_schema" not in names
    assert names[0] == "0002_text_responses_known_models"
    assert [step.number for step in steps()] == sorted(step.number for step in steps())


def test_the_runner_sends_a_postgresql_file_without_its_own_begin_and_commit():
    text = "-- a comment\nBEGIN;\nCREATE INDEX x ON t (a);\nDO $$\nBEGIN\n  PERFORM 1;\nEND\n$$;\nCOMMIT;\n-- end\n"
    body = without_transaction(text)
    assert "BEGIN;" not in body and "COMMIT;" not in body
    assert "DO $$\nBEGIN\n  PERFORM 1;\nEND\n$$;" in body  # a function's own BEGIN stays
    assert without_transaction("SELECT 1;\n") == "SELECT 1;"  # a file without them goes as it is


def test_sqlite_statements_are_split_where_sqlite_says_they_end():
    text = "-- head\nALTER TABLE t ADD COLUMN a TEXT DEFAULT 'x;y';\n\nCREATE INDEX i\n    ON t (a);\n-- tail\n"
    assert sqlite_statements(text) == [
        "-- head\nALTER TABLE t ADD COLUMN a TEXT DEFAULT 'x;y';",
        "CREATE INDEX i\n    ON t (a);",
    ]


@pytest.mark.parametrize(
    "statement,target",
    [
        ("ALTER TABLE workers ADD COLUMN nsfw BOOLEAN NOT NULL DEFAULT 0;", ("workers", "nsfw")),
        ('-- why\nalter table "users" add "kudos_admin" INTEGER;', ("users", "kudos_admin")),
        ("CREATE INDEX IF NOT EXISTS ix ON workers (nsfw);", None),
        ("ALTER TABLE workers RENAME COLUMN a TO b;", None),
    ],
)
def test_an_added_column_is_recognised(statement, target):
    assert added_column(statement) == target
