"""The pinned clients: which package, which version, and the command that runs each once installed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.agents.install import npm_project, pip_venv

NPM_PINS = Path(__file__).resolve().parent / "npm"
PIP_PINS = Path(__file__).resolve().parent / "pip"
AI_SDK_PINS = Path(__file__).resolve().parents[2] / "e2e" / "agents" / "js"


@dataclass(frozen=True)
class NpmClient:
    """An npm package that puts a command (`bin`) in node_modules/.bin; pinned by npm/<name>/package-lock.json."""

    name: str
    version: str
    bin: str

    def install(self) -> list[str]:
        """The command's argv prefix, installing the pinned client first if this machine has not."""
        return [str(npm_project(self.name, self.version, NPM_PINS / self.name) / "node_modules" / ".bin" / self.bin)]


@dataclass(frozen=True)
class PipClient:
    """A PyPI package in a venv of its own, pinned with its dependencies by pip/<name>.txt, run as
    `python -m module` (the venv's scripts name the temporary directory it was built in, its python does not)."""

    name: str
    version: str
    module: str

    def install(self) -> list[str]:
        return [
            str(pip_venv(self.name, self.version, PIP_PINS / f"{self.name}.txt") / "bin" / "python"),
            "-m",
            self.module,
        ]


CLAUDE_CODE = NpmClient("claude-code", "2.1.197", "claude")
CODEX = NpmClient("codex", "0.171.0", "codex")
OPENCODE = NpmClient("opencode", "1.18.33", "opencode")
QWEN_CODE = NpmClient("qwen-code", "0.15.10", "qwen")
AIDER = PipClient("aider", "0.86.2", "aider")
LLM = PipClient("llm", "0.30", "llm")
#: ai 6 with its OpenAI, Anthropic and OpenAI-compatible providers, locked together in js/package-lock.json.
AI_SDK_NAME, AI_SDK_VERSION = "ai-sdk", "6.0.333"


def ai_sdk_node_modules() -> Path:
    return npm_project(AI_SDK_NAME, AI_SDK_VERSION, AI_SDK_PINS) / "node_modules"
