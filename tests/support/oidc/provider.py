"""A real OpenID Connect provider for the sign-in's tests: node-oidc-provider (pinned in npm/, installed once per
machine into the tests' cache like the agents' clients: tests/support/agents/install.py), run by provider.mjs with
one confidential client and its development sign-in; and a browser's walk through it with `requests`.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urljoin

import requests

from tests.support.agents.install import npm_project
from tests.support.processes import free_port, wait_until

HERE = Path(__file__).resolve().parent
PINS = HERE / "npm"
NAME, VERSION = "oidc-provider", "9.13.3"
START_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 15.0
_FORM = re.compile(r'<form[^>]*action="([^"]+)"[^>]*method="post"', re.IGNORECASE)


def missing_tools() -> str | None:
    """Why the provider cannot run here, or None."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            return f"the OpenID Connect provider of the tests runs on Node.js: `{tool}` is not installed"
    return None


def horde_settings(port: int, client_id: str, client_secret: str, name: str = "Test ID") -> dict:
    """A Horde's settings for the provider at `port`, registration's per-address limit raised for the tests' many
    sign-ins from one address."""
    return {
        "HORDE_OIDC_ISSUER": f"http://127.0.0.1:{port}",
        "HORDE_OIDC_CLIENT_ID": client_id,
        "HORDE_OIDC_CLIENT_SECRET": client_secret,
        "HORDE_OIDC_PROVIDER_NAME": name,
        "HORDE_REGISTRATIONS_PER_ADDRESS_PER_DAY": 50,
    }


class OidcProvider:
    """node-oidc-provider on 127.0.0.1 at `port` (the issuer is http://127.0.0.1:port), whose one client may return
    to `redirect_uris`."""

    def __init__(self, port: int, client_id: str, client_secret: str, redirect_uris: list[str]):
        node_modules = npm_project(NAME, VERSION, PINS) / "node_modules"
        self.issuer = f"http://127.0.0.1:{port}"
        self.log = tempfile.NamedTemporaryFile(prefix="horde-oidc-provider-", suffix=".log", delete=False)
        self.popen = subprocess.Popen(
            [
                "node",
                str(HERE / "provider.mjs"),
                str(node_modules),
                str(port),
                client_id,
                client_secret,
                *redirect_uris,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(self._ready, START_TIMEOUT_S, "the OpenID Connect provider to answer its discovery")
        except (TimeoutError, RuntimeError):
            self.stop()
            raise RuntimeError("the OpenID Connect provider did not start:\n" + self.output()) from None

    @staticmethod
    def free_port() -> int:
        return free_port()

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def _ready(self) -> bool:
        if self.popen.poll() is not None:
            raise RuntimeError("exited")
        try:
            answer = requests.get(self.issuer + "/.well-known/openid-configuration", timeout=1)
        except requests.RequestException:
            return False
        return answer.status_code == 200

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.log.close()


def sign_in(browser: requests.Session, horde_url: str, login: str) -> requests.Response:
    """A person's walk with `browser` (its cookies): the Horde's /oidc/login, the provider's sign-in form (any
    password) and its consent when asked, back to the Horde's callback; the answer the callback's redirect leads
    to, or the first answer that is not the provider's form."""
    answer = browser.get(horde_url + "/oidc/login", timeout=HTTP_TIMEOUT_S)
    for _ in range(4):  # the login, then the consent: each a form that posts back to the provider
        form = _FORM.search(answer.text) if answer.url.startswith(("http://127.0.0.1",)) else None
        if form is None or "/interaction/" not in answer.url:
            return answer
        action = urljoin(answer.url, html.unescape(form.group(1)))
        if 'name="login"' in answer.text:
            fields = {"prompt": "login", "login": login, "password": "any"}
        else:
            fields = {"prompt": "consent"}
        answer = browser.post(action, data=fields, timeout=HTTP_TIMEOUT_S)
    return answer
