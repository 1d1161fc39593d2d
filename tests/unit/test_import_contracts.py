"""The import contracts of pyproject.toml cover every module of horde/: each one sits in a layer (the bridge, a
program of its own, in the forbidden contract instead), the bridge's forbidden list names every server module,
no import is whitelisted, and no circle of imports closes, not even through a TYPE_CHECKING import."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The worker's program: the layers leave it out, the forbidden contract keeps it off the server.
BRIDGE = "horde.bridge"
#: The words the server and the bridge share (standard library only): the one module the bridge may import.
SHARED = "horde.protocol"


def contracts() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def contract(kind: str) -> dict:
    return next(c for c in contracts()["contracts"] if c["type"] == kind)


def modules() -> list[str]:
    """Every module and package of horde/, dotted (the root package itself left out)."""
    names = []
    for path in sorted((ROOT / "horde").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 1:
            names.append(".".join(parts))
    return names


def covered(module: str, names: set[str]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


def layered() -> set[str]:
    return {name.strip() for layer in contract("layers")["layers"] for name in re.split(r"[|:]", layer)}


def test_every_module_of_the_server_sits_in_a_layer():
    outside = [m for m in modules() if not covered(m, {BRIDGE}) and not covered(m, layered())]
    assert outside == []


def test_every_layer_names_a_module_that_exists():
    existing = set(modules())
    assert sorted(name for name in layered() if name not in existing) == []


def test_the_bridge_is_forbidden_every_module_of_the_server_but_the_protocol():
    forbidden = set(contract("forbidden")["forbidden_modules"])
    assert contract("forbidden")["source_modules"] == [BRIDGE]
    missing = [m for m in modules() if not covered(m, {BRIDGE, SHARED}) and not covered(m, forbidden)]
    assert missing == []
    assert not covered(SHARED, forbidden)


def test_no_import_is_whitelisted_and_type_checking_imports_count():
    assert contracts()["exclude_type_checking_imports"] is False
    assert [c["name"] for c in contracts()["contracts"] if c.get("ignore_imports")] == []


def test_no_module_of_the_server_or_the_bridge_imports_itself_back():
    """No circle of imports, TYPE_CHECKING ones included: a lower module names what it reads of a higher one
    through a Protocol (horde/accounts/parts.py, the drain's `Draining`, the bridge's `TextBackend`)."""
    import grimp  # import-linter's graph

    graph = grimp.build_graph("horde", include_external_packages=False, exclude_type_checking_imports=False)
    circles = [
        (module, imported)
        for module in sorted(graph.modules)
        for imported in sorted(graph.find_modules_directly_imported_by(module))
        if graph.chain_exists(importer=imported, imported=module)
    ]
    assert circles == []
