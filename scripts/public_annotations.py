"""Every public function of the given packages annotates its parameters and its return type.

mypy can require annotations only of every function or of none; the project asks them of the public ones
(what another module calls), so this walks the syntax tree instead. Public: a module-level function or a
method of a module-level class, none of whose names starts with an underscore; `__init__` counts (its
parameters, not its return). Prints one line per gap and exits 1 when there is any.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

Function = ast.FunctionDef | ast.AsyncFunctionDef


def public_functions(tree: ast.Module) -> Iterator[tuple[Function, bool]]:
    """(function, is_method) for each public function and method of a module."""
    for node in tree.body:
        if isinstance(node, Function) and not node.name.startswith("_"):
            yield node, False
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for member in node.body:
                if isinstance(member, Function) and (member.name == "__init__" or not member.name.startswith("_")):
                    yield member, True


def gaps(function: Function, is_method: bool) -> list[str]:
    """What a function leaves unannotated: parameter names, and `return`."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if is_method and positional and not _is_static(function):
        positional = positional[1:]  # self or cls
    named = [*positional, *arguments.kwonlyargs]
    missing = [argument.arg for argument in named if argument.annotation is None]
    missing += [f"*{star.arg}" for star in (arguments.vararg, arguments.kwarg) if star and star.annotation is None]
    if function.returns is None and function.name != "__init__":
        missing.append("return")
    return missing


def _is_static(function: Function) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def _is_public_module(path: Path) -> bool:
    return not any(part.startswith("_") and part not in {"__init__.py", "__main__.py"} for part in path.parts)


def main(roots: list[str]) -> int:
    found = 0
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            if not _is_public_module(path):
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for function, is_method in public_functions(tree):
                missing = gaps(function, is_method)
                if missing:
                    found += 1
                    print(f"{path}:{function.lineno}: {function.name} lacks annotations: {', '.join(missing)}")
    if found:
        print(f"{found} public functions not fully annotated")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["horde"]))
