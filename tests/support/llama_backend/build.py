"""Building llama.cpp's llama-server once per machine from the llama-cpp-python sdist, cached by version."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
BINARY_NAME = "llama-server"

# CMake options, checked against vendor/llama.cpp of llama-cpp-python 0.3.36.
# (LLAMA_CURL is deprecated there and only produces a warning, so it is not
# passed; with LLAMA_USE_PREBUILT_UI=OFF and LLAMA_BUILD_UI=OFF the UI step
# neither runs npm nor downloads anything.)
CMAKE_OPTIONS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",  # the server lives under tools/
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_APP=OFF",
    "-DGGML_BUILD_TESTS=OFF",
    "-DGGML_BUILD_EXAMPLES=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DGGML_CCACHE=OFF",  # deterministic, and no "ccache not found" warning
)
BUILD_JOBS = 2


def _log(msg: str) -> None:
    print(f"[horde-llama] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# 1. Building llama-server
# ---------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``$HORDE_LLAMA_CACHE/<version>`` or ``~/.cache/horde-llama/<version>``."""
    root = os.environ.get("HORDE_LLAMA_CACHE")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "horde-llama"
    return base / LLAMA_CPP_PYTHON_VERSION


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir is None:
        return default_cache_dir()
    p = Path(cache_dir).expanduser()
    # An explicit cache dir is a root too, unless it already names the version.
    return p if p.name == LLAMA_CPP_PYTHON_VERSION else p / LLAMA_CPP_PYTHON_VERSION


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"waiting for another process building in {path.parent} ...")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _run(cmd: Sequence[str], log_path: Path, cwd: Path | None = None, progress: bool = False) -> None:
    """Run *cmd*, appending its output to *log_path*; raise with the tail on failure."""
    _log("$ " + " ".join(str(c) for c in cmd))
    last_pct = None
    with open(log_path, "a", encoding="utf-8", errors="replace", buffering=1) as log:
        log.write("\n$ " + " ".join(str(c) for c in cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if progress:
                s = line.strip()
                # ninja: "[12/345] Building ..."; make: "[ 12%] Building ..."
                if s.startswith("[") and "]" in s:
                    tag = s[1 : s.index("]")].strip()
                    if "/" in tag:
                        a, _, b = tag.partition("/")
                        try:
                            pct = int(100 * int(a) / max(1, int(b)))
                        except ValueError:
                            continue
                    elif tag.endswith("%"):
                        try:
                            pct = int(tag[:-1])
                        except ValueError:
                            continue
                    else:
                        continue
                    if last_pct is None or pct >= last_pct + 5 or pct == 100:
                        last_pct = pct
                        _log(f"build {pct:3d}%  {s[s.index(']') + 1 :].strip()[:100]}")
        rc = proc.wait()
    if rc != 0:
        tail = "".join(log_path.read_text(errors="replace").splitlines(True)[-40:])
        raise RuntimeError(
            f"command failed with exit code {rc}: {' '.join(map(str, cmd))}\n(full log: {log_path})\n{tail}"
        )


def _download_sdist(dest: Path, log_path: Path) -> Path:
    pre = os.environ.get("HORDE_LLAMA_SDIST")
    if pre:
        p = Path(pre).expanduser()
        if not p.is_file():
            raise FileNotFoundError(f"HORDE_LLAMA_SDIST={pre} does not exist")
        _log(f"using pre-downloaded source {p}")
        return p
    _log(f"downloading llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION} source from PyPI ...")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
            "-d",
            str(dest),
        ],
        log_path,
    )
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz")) + sorted(dest.glob("llama-cpp-python-*.tar.gz"))
    if not found:
        raise RuntimeError(f"pip download produced no sdist in {dest}: {os.listdir(dest)}")
    return found[0]


def _unpack(sdist: Path, dest: Path) -> Path:
    _log(f"unpacking {sdist.name} ...")
    with tarfile.open(sdist) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(dest, filter="data")
        else:  # pragma: no cover - Python < 3.11.4
            tf.extractall(dest)
    for cand in dest.iterdir():
        src = cand / "vendor" / "llama.cpp"
        if (src / "CMakeLists.txt").is_file():
            return src
    raise RuntimeError(f"vendor/llama.cpp not found in {sdist}")


def build_llama_server(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the path of a cached ``llama-server`` binary, building it if needed.

    The binary is cached in ``<cache root>/<version>/llama-server``.  A file lock
    serialises concurrent callers (e.g. pytest-xdist workers); the second one
    waits and then reuses the first one's binary.  A cold build takes a few
    minutes on 2 cores; a warm call returns in milliseconds.
    """
    cdir = resolve_cache_dir(cache_dir)
    binary = cdir / BINARY_NAME
    if binary.is_file() and os.access(binary, os.X_OK):  # fast path, no lock
        return binary

    cdir.mkdir(parents=True, exist_ok=True)
    with _file_lock(cdir / ".build.lock"):
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
        if shutil.which("cmake") is None:
            raise RuntimeError("cmake is required to build llama-server")
        t0 = time.monotonic()
        log_path = cdir / "build.log"
        log_path.write_text("")
        _log(f"building {BINARY_NAME} (llama-cpp-python {LLAMA_CPP_PYTHON_VERSION}) into {cdir}; log: {log_path}")
        work = Path(tempfile.mkdtemp(prefix="build-", dir=cdir))
        try:
            sdist = _download_sdist(work, log_path)
            src = _unpack(sdist, work / "src")
            bdir = work / "build"
            gen = ["-G", "Ninja"] if shutil.which("ninja") else []
            env_note = (
                " (SOURCE_DATE_EPOCH set: x86 SIMD defaults are off)" if "SOURCE_DATE_EPOCH" in os.environ else ""
            )
            _log("configuring with CMake" + env_note + " ...")
            _run(["cmake", "-S", src, "-B", bdir, *gen, *CMAKE_OPTIONS], log_path)
            _log(f"compiling target {BINARY_NAME} with -j{BUILD_JOBS} (takes a few minutes) ...")
            _run(
                ["cmake", "--build", bdir, "--config", "Release", "--target", BINARY_NAME, "-j", str(BUILD_JOBS)],
                log_path,
                progress=True,
            )
            built = bdir / "bin" / BINARY_NAME
            if not built.is_file():
                raise RuntimeError(f"build finished but {built} is missing (log: {log_path})")
            tmp = cdir / f".{BINARY_NAME}.{os.getpid()}.tmp"
            shutil.copy2(built, tmp)
            tmp.chmod(0o755)
            os.replace(tmp, binary)  # atomic: the binary exists only when complete
            (cdir / "build-info.json").write_text(
                json.dumps(
                    {
                        "llama_cpp_python": LLAMA_CPP_PYTHON_VERSION,
                        "cmake_options": list(CMAKE_OPTIONS),
                        "build_seconds": round(time.monotonic() - t0, 1),
                        "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    },
                    indent=2,
                )
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        _log(f"built {binary} in {time.monotonic() - t0:.0f}s")
        return binary
