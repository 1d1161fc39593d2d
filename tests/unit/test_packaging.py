"""pyproject.toml and the requirements files name the same dependencies, so neither install drifts; the lock
pins all they pull in, within their bounds; the project is imported through the venv's path, never sys.path edits."""

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support.distributions import canonical, closure

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


def _locked() -> dict[str, str]:
    """requirements-lock.txt: canonical name -> version."""
    pins = {}
    for line in (ROOT / "requirements-lock.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (pinned,) = requirement.specifier
            assert pinned.operator == "==", line
            pins[canonical(requirement.name)] = pinned.version
    return pins


def _all_requirements() -> list[str]:
    return _requirements("requirements.txt") + _requirements("requirements-test.txt")


def test_the_lock_pins_every_requirement_within_its_bounds():
    locked = _locked()
    wrong = []
    for line in _all_requirements():
        requirement = Requirement(line)
        version = locked.get(canonical(requirement.name))
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            wrong.append(f"{line}: locked at {version}")
    assert wrong == [], "run `bash scripts/lock.sh` after changing a requirement"


def test_the_lock_pins_all_the_requirements_pull_in_and_nothing_else():
    """Walked through the metadata of the packages installed here: in a venv installed from the lock, as
    scripts/setup.sh makes it (scripts/test-newest.sh's venv has other versions, and may have other packages)."""
    locked = _locked()
    pulled_in = closure(_all_requirements())
    installed = {canonical(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}
    if any(installed.get(name) != locked[name] for name in pulled_in & set(locked)):
        pytest.skip("this venv was not installed from requirements-lock.txt")
    assert (sorted(pulled_in - set(locked)), sorted(set(locked) - pulled_in)) == ([], [])


def test_the_packages_whose_internals_the_code_uses_have_an_upper_bound():
    """horde/storage/precompiled.py (SQLAlchemy), horde/serving/server.py (gevent), horde/storage/pg_hub_wait.py
    (psycopg) and horde/serving/gunicorn.py (gunicorn) rely on parts their authors may change in any release line."""
    bounded = {}
    for line in _requirements("requirements.txt"):
        requirement = Requirement(line)
        bounded[canonical(requirement.name)] = any(
            spec.operator in ("<", "<=", "~=", "==") for spec in requirement.specifier
        )
    assert {name: bounded[name] for name in ("sqlalchemy", "gevent", "psycopg", "gunicorn")} == dict.fromkeys(
        ("sqlalchemy", "gevent", "psycopg", "gunicorn"), True
    )


def test_no_module_edits_sys_path():
    """The venv imports the project from the checkout (scripts/setup.sh's path file); bench scripts import their
    neighbours as scripts do."""
    edits = [
        str(path.relative_to(ROOT))
        for folder in ("horde", "bench", "tests", "scripts")
        for path in (ROOT / folder).rglob("*.py")
        if "sys.path." + "insert" in path.read_text(encoding="utf-8")
        or "sys.path." + "append" in path.read_text(encoding="utf-8")
    ]
    assert edits == []
