"""The Horde: a crowdsourced chat broker with an OpenAI-compatible front."""

__version__ = "0.1.0"
