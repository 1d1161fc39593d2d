"""The worker protocol has one definition (horde/protocol.py) that the server and the reference worker both
read: a declaration the bridge accepts at every bound, the server's pop schema accepts; one past a bound, both
refuse. The module imports nothing but the standard library, and the bridge nothing else of the server."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest
from marshmallow import ValidationError

from horde import protocol
from horde.bridge.declarations import Declarations
from horde.http import contract
from horde.workers.schemas import POP_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
#: A declaration at its smallest, each field at its lower bound.
SMALLEST = dict(
    name="w",
    models=["m"],
    max_length=protocol.MAX_LENGTH_MIN_TOKENS,
    max_context_length=protocol.MAX_CONTEXT_LENGTH_MIN_TOKENS,
    threads=protocol.THREADS_MIN,
)
#: At its largest, each field at its upper bound, every feature and guarantee declared.
LARGEST = dict(
    name="w" * protocol.NAME_MAX_CHARS,
    models=[f"m{i}" for i in range(protocol.MODELS_MAX)],
    max_length=protocol.MAX_LENGTH_MAX_TOKENS,
    max_context_length=protocol.MAX_LENGTH_MAX_TOKENS * 8,
    threads=protocol.THREADS_MAX,
    features=list(protocol.FEATURES),
    guarantees=list(protocol.GUARANTEES),
)
#: One past a bound, each.
PAST_A_BOUND = {
    "name too long": dict(SMALLEST, name="w" * (protocol.NAME_MAX_CHARS + 1)),
    "no model": dict(SMALLEST, models=[]),
    "too many models": dict(SMALLEST, models=[f"m{i}" for i in range(protocol.MODELS_MAX + 1)]),
    "max_length too small": dict(SMALLEST, max_length=protocol.MAX_LENGTH_MIN_TOKENS - 1),
    "max_length too large": dict(LARGEST, max_length=protocol.MAX_LENGTH_MAX_TOKENS + 1),
    "context too small": dict(SMALLEST, max_context_length=protocol.MAX_CONTEXT_LENGTH_MIN_TOKENS - 1),
    "context too large": dict(SMALLEST, max_context_length=protocol.MAX_CONTEXT_LENGTH_MAX_TOKENS + 1),
    "no thread": dict(SMALLEST, threads=protocol.THREADS_MIN - 1),
    "too many threads": dict(SMALLEST, threads=protocol.THREADS_MAX + 1),
    "unknown feature": dict(SMALLEST, features=["telepathy"]),
    "unknown guarantee": dict(SMALLEST, guarantees=["telepathy"]),
}


@pytest.mark.parametrize("fields", [SMALLEST, LARGEST], ids=["smallest", "largest"])
@pytest.mark.parametrize("wait_s", [0, protocol.POP_WAIT_MAX_S])
def test_a_declaration_the_bridge_accepts_the_server_accepts(fields, wait_s):
    body = Declarations(**fields).pop_body(wait_s)
    assert POP_SCHEMA.load(body)["threads"] == fields["threads"]


@pytest.mark.parametrize("fields", PAST_A_BOUND.values(), ids=PAST_A_BOUND.keys())
def test_a_declaration_past_a_bound_is_refused_by_both(fields):
    with pytest.raises(ValueError):
        Declarations(**fields)
    body = dict(Declarations(**SMALLEST).pop_body(0), **fields)
    with pytest.raises(ValidationError):
        POP_SCHEMA.load(body)


def test_a_pop_waiting_past_the_bound_is_refused_by_the_server():
    with pytest.raises(ValidationError):
        POP_SCHEMA.load(Declarations(**SMALLEST).pop_body(protocol.POP_WAIT_MAX_S + 1))


def test_a_workers_longest_reply_spans_the_max_tokens_a_request_may_ask():
    """The chat contract's token bounds (requests) and the protocol's (workers) are the same range: a request
    for TOKEN_CEILING tokens can find a worker that may declare it."""
    assert (protocol.MAX_LENGTH_MIN_TOKENS, protocol.MAX_LENGTH_MAX_TOKENS) == (
        contract.TOKEN_FLOOR,
        contract.TOKEN_CEILING,
    )


def test_the_protocol_module_imports_only_the_standard_library():
    tree = ast.parse((ROOT / "horde" / "protocol.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert {name.split(".")[0] for name in imported} - sys.stdlib_module_names - {"__future__"} == set()


def test_the_bridges_contract_forbids_every_module_of_the_server_but_the_protocol():
    """A module added to horde/ is forbidden to the bridge from its first commit, or this fails."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    bridge_contract = next(c for c in contracts if c.get("source_modules") == ["horde.bridge"])
    top_level = {
        "horde." + path.name.removesuffix(".py")
        for path in (ROOT / "horde").iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").exists()
    }
    assert sorted(top_level - {"horde.bridge", "horde.protocol"}) == sorted(bridge_contract["forbidden_modules"])
