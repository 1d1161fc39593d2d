"""Pinned installs of the agents' clients into a cache outside the repository, made once per machine.

`~/.cache/horde-tests/agents/<name>-<version>/` (or `$HORDE_TEST_AGENTS_CACHE/...`) holds one install: an npm
project (a package.json and its package-lock.json kept beside this module in npm/<name>/, so every transitive
version is the locked one) or a Python venv of a frozen requirements file (pip/<name>.txt). An install is built in
a temporary directory of the cache and renamed into place when complete, under a file lock, so two test processes
never see half of one and only one of them builds it. A finished install carries a stamp of what it was built from;
a directory whose stamp differs (the pins changed) is built anew beside it and swapped in.

To move a client to another version: change its package.json and run `npm install` in a copy of its folder to
rewrite the lock; or install the new version in a scratch venv and `pip freeze` it into pip/<name>.txt. Then change
the version in clients.py (it names the cache directory) and commit.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

STAMP_NAME = ".horde-tests-stamp"
INSTALL_TIMEOUT_S = 900.0


class InstallError(RuntimeError):
    """A client could not be installed; the message carries the installer's output."""


def cache_root() -> Path:
    root = os.environ.get("HORDE_TEST_AGENTS_CACHE")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "horde-tests" / "agents"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _run(command: list[str], cwd: Path, env: dict | None = None) -> None:
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, errors="replace", timeout=INSTALL_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise InstallError(
            f"{' '.join(command)} took over {INSTALL_TIMEOUT_S:.0f} s:\n{exc.stdout}\n{exc.stderr}"
        ) from None
    if done.returncode != 0:
        raise InstallError(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )


def installed(name: str, version: str, stamp: str, build, root: Path | None = None) -> Path:
    """The directory of `name`-`version` built by `build(tmp_dir)` from what `stamp` names, built now if missing;
    under `root` when given (another cache than the agents')."""
    root = root or cache_root()
    target = root / f"{name}-{version}"
    stamp_path = target / STAMP_NAME
    if stamp_path.is_file() and stamp_path.read_text() == stamp:
        return target
    with _locked(root / f".{name}-{version}.lock"):
        if stamp_path.is_file() and stamp_path.read_text() == stamp:
            return target  # another process built it while this one waited
        building = Path(tempfile.mkdtemp(prefix=f".{name}-{version}-", dir=root))
        try:
            build(building)
            (building / STAMP_NAME).write_text(stamp)
            if target.exists():
                stale = target.with_name(f".{target.name}-stale-{os.getpid()}")
                target.rename(stale)
                shutil.rmtree(stale, ignore_errors=True)
            building.chmod(0o755)
            building.rename(target)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return target


def npm_project(name: str, version: str, pins: Path) -> Path:
    """An install of `pins`' package.json driven by its package-lock.json; returns it (node_modules within).

    `npm install` rather than `npm ci`: the lock holds only the platform packages (the clients' native binaries)
    that the registry served when it was written, and `npm ci` refuses a lock that lacks an optional dependency
    of another platform. With the lock in place `npm install` takes every version from it; the direct
    dependencies are checked against package.json's exact pins afterwards."""
    files = [pins / "package.json", pins / "package-lock.json"]
    stamp = hashlib.sha256(b"".join(path.read_bytes() for path in files)).hexdigest()

    def build(directory: Path) -> None:
        for path in files:
            shutil.copy(path, directory / path.name)
        env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
        _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], directory, env)
        _check_pinned(directory)

    return installed(name, version, stamp, build)


def _check_pinned(directory: Path) -> None:
    wanted = json.loads((directory / "package.json").read_text())["dependencies"]
    for package, version in wanted.items():
        found = json.loads((directory / "node_modules" / package / "package.json").read_text())["version"]
        if found != version:
            raise InstallError(f"npm installed {package} {found}, not the pinned {version}")


def pip_venv(name: str, version: str, lock: Path, root: Path | None = None) -> Path:
    """A venv of its own holding every package of `lock` (a frozen requirements file), apart from the project's."""
    stamp = f"{sys.version_info.major}.{sys.version_info.minor} {hashlib.sha256(lock.read_bytes()).hexdigest()}"

    def build(directory: Path) -> None:
        base_python = getattr(sys, "_base_executable", sys.executable)
        _run([base_python, "-m", "venv", str(directory)], directory)
        _run([str(directory / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(lock)], directory)

    return installed(name, version, stamp, build, root)
