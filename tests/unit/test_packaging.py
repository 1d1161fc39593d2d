"""pyproject.toml and the requirements files name the same dependencies, so neither install drifts; the
project is imported as installed, never through sys.path edits."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _requirements(name: str) -> list[str]:
    lines = (ROOT / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "-r"))]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_runtime_dependencies_match_requirements_txt():
    assert _project()["dependencies"] == _requirements("requirements.txt")


def test_test_dependencies_match_requirements_test_txt():
    assert _project()["optional-dependencies"]["test"] == _requirements("requirements-test.txt")


def test_requirements_test_txt_includes_the_runtime_requirements():
    assert "-r requirements.txt" in (ROOT / "requirements-test.txt").read_text().splitlines()


def test_no_module_edits_sys_path():
    """The project is installed (`pip install -e .`); bench scripts import their neighbours as scripts do."""
    edits = [
        str(path.relative_to(ROOT))
        for folder in ("horde", "horde_testing", "bench", "tests", "scripts")
        for path in (ROOT / folder).rglob("*.py")
        if "sys.path." + "insert" in path.read_text(encoding="utf-8")
        or "sys.path." + "append" in path.read_text(encoding="utf-8")
    ]
    assert edits == []
