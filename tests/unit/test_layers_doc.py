"""docs/architecture.md's layer table names the modules of the import-linter layers, row for row."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE_HEADER = "| layer | modules | job |"


def contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layered = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [{name.strip() for name in re.split(r"[|:]", layer)} for layer in layered["layers"]]


def documented_layers() -> list[set[str]]:
    lines = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        modules_cell = line.split("|")[2]
        rows.append({_module(path) for path in re.findall(r"`([^`]+)`", modules_cell)})
    return rows


def _module(path: str) -> str:
    """`horde/ops/routes.py`, `ops/routes.py` (relative to horde/) or `web/` as a dotted module name."""
    path = path.removeprefix("horde/").removesuffix("/").removesuffix(".py")
    return "horde." + path.replace("/", ".")


def test_the_table_names_the_contract_layers_in_order():
    assert documented_layers() == contract_layers()
