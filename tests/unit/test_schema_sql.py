"""The schema SQL kept in sql/ matches the models."""

import contextlib
import io
from pathlib import Path

from horde.__main__ import main

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


def test_schema_sql_matches_the_models():
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["schema-sql"]) == 0
    assert printed.getvalue() == (SQL_DIR / "0001_schema.sql").read_text()
