"""A real Open WebUI server for one test module: the pinned install's `open-webui serve` on a free port, pointed
at a Horde's /v1 the way its users set it up (OPENAI_API_BASE_URL, OPENAI_API_KEY), offline and without sign-in."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import requests

from tests.support.processes import free_port, wait_until

#: Its first start creates its database and runs its migrations: about a minute on two busy cores.
START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 15.0
#: The admin that Open WebUI makes itself when sign-in is off (WEBUI_AUTH=False).
ADMIN_EMAIL, ADMIN_PASSWORD = "admin@localhost", "admin"


def offline_env(home: Path, horde_v1: str, key: str, **extra: str) -> dict[str, str]:
    """Its environment: the Horde as its only connection, and nothing fetched from outside this machine (no
    Ollama, no embedding or speech model download, no version check, no telemetry)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "DATA_DIR": str(home / "data"),
        "WEBUI_SECRET_KEY": os.urandom(24).hex(),
        "WEBUI_AUTH": "False",
        "OPENAI_API_BASE_URL": horde_v1,
        "OPENAI_API_KEY": key,
        "ENABLE_OLLAMA_API": "False",
        "OFFLINE_MODE": "True",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "RAG_EMBEDDING_MODEL": "",
        "ENABLE_WEB_SEARCH": "False",
        "ENABLE_VERSION_UPDATE_CHECK": "False",
        "ANONYMIZED_TELEMETRY": "False",
        "DO_NOT_TRACK": "True",
        "SCARF_NO_ANALYTICS": "true",
    }
    return {**env, **extra}


class OpenWebUI:
    """`python` is the pinned install's interpreter, `home` an empty directory of its own (its HOME, its data and
    its log); `extra` adds or overrides environment variables."""

    def __init__(self, python: Path, home: Path, horde_url: str, key: str, **extra: str):
        self.home = home
        (self.home / "data").mkdir(parents=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(self.home / "open-webui.log", "wb")
        command = [str(python), "-c", "import open_webui; open_webui.app()", "serve", "--host", "127.0.0.1"]
        self.popen = subprocess.Popen(
            [*command, "--port", str(self.port)],
            cwd=self.home,
            env=offline_env(self.home, horde_url + "/v1", key, **extra),
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(self._healthy, timeout_s=START_TIMEOUT_S, what="Open WebUI to answer /health")
        except BaseException:
            self.stop()
            raise

    def output(self) -> str:
        return (self.home / "open-webui.log").read_text(errors="replace")

    def _healthy(self) -> bool:
        if self.popen.poll() is not None:
            raise RuntimeError(f"Open WebUI exited {self.popen.returncode}:\n{self.output()[-6000:]}")
        try:
            return requests.get(self.url + "/health", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def admin_token(self) -> str:
        answer = requests.post(
            self.url + "/api/v1/auths/signin", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}, timeout=30
        )
        answer.raise_for_status()
        return answer.json()["token"]

    def set_model_params(self, model: str, params: dict) -> None:
        """What the admin does in Admin Settings > Models > (the model) > Advanced Params: a stored model entry
        of the connection's model with these parameters."""
        answer = requests.post(
            self.url + "/api/v1/models/create",
            headers={"Authorization": f"Bearer {self.admin_token()}"},
            json={"id": model, "name": model, "meta": {}, "params": params},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["params"] == params, answer.text

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.log.close()
