"""Reading a request's JSON body safely, for both APIs.

Flask's parser recurses: a body nested a few thousand levels deep raises
RecursionError (a 500). Bodies are parsed here instead and refused with 400
BadRequest when they are not JSON or nest deeper than any valid request does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from horde import errors

MAX_BODY_DEPTH = 64


def parse(raw: bytes) -> Any:
    """The parsed body, or None when it is empty."""
    if not raw:
        return None
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise errors.BadRequest("We could not parse the JSON body of your request. The body must be JSON.") from None
    if depth(body) > MAX_BODY_DEPTH:
        raise errors.BadRequest(f"The JSON body nests deeper than {MAX_BODY_DEPTH} levels.")
    return body


def depth(value: Any) -> int:
    """How deeply arrays and objects nest in `value`, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        children: Iterable
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest
