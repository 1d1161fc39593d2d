"""What installing a list of requirements brings, read from the installed packages' metadata."""

from __future__ import annotations

import re
from importlib import metadata

from packaging.requirements import Requirement


def canonical(name: str) -> str:
    """A distribution's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(requirements: list[str]) -> set[str]:
    """Every distribution (canonical name) that installing `requirements` brings, extras and markers included."""
    seen: set[str] = set()
    pending = [(Requirement(line), ()) for line in requirements]
    while pending:
        requirement, parent_extras = pending.pop()
        environments = [{"extra": extra} for extra in parent_extras] or [{"extra": ""}]
        if requirement.marker and not any(requirement.marker.evaluate(env) for env in environments):
            continue
        name = canonical(requirement.name)
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        for line in metadata.requires(requirement.name) or ():
            pending.append((Requirement(line), tuple(requirement.extras)))
    return {key.split("[")[0] for key in seen}
