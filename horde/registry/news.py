"""GET /status/news: the operator's news, from the JSON file HORDE_NEWS names (none: no news).

The file holds a list of the AI Horde's Newspiece objects (`date_published`, `newspiece`, `importance`, and
optionally `title`, `tags`, `more_info_urls`). It is read again when it changes (its modification time), at most
NEWS_MAX_BYTES; a file that is missing, too large or not such a list is logged and answered as no news, so a
mistake of the operator never fails the clients that read it.
"""

from __future__ import annotations

import json
import logging
import os
import threading

from marshmallow import EXCLUDE, ValidationError

from horde.registry.schemas import NewspieceSchema

NEWS_MAX_BYTES = 1024 * 1024
NEWS_MAX_PIECES = 100
log = logging.getLogger(__name__)
_PIECES = NewspieceSchema(many=True, unknown=EXCLUDE)


class News:
    """The news of one file, read again when its modification time moves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: tuple[str, float, list[dict]] | None = None

    def pieces(self, path: str | None) -> list[dict]:
        """Newest first, at most NEWS_MAX_PIECES."""
        if not path:
            return []
        try:
            modified = os.stat(path).st_mtime
        except OSError as exc:
            log.error("HORDE_NEWS=%s cannot be read (%s): no news", path, exc)
            return []
        read = self._read
        if read is not None and read[:2] == (path, modified):
            return read[2]
        pieces = _load(path)
        with self._lock:
            self._read = (path, modified, pieces)
        return pieces


def _load(path: str) -> list[dict]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(NEWS_MAX_BYTES + 1)
        if len(raw) > NEWS_MAX_BYTES:
            raise ValueError(f"larger than {NEWS_MAX_BYTES} bytes")
        pieces = _PIECES.load(json.loads(raw))
    except (OSError, ValueError, ValidationError) as exc:
        log.error("HORDE_NEWS=%s is not a list of news pieces (%s): no news", path, exc)
        return []
    pieces.sort(key=lambda piece: piece["date_published"], reverse=True)
    return pieces[:NEWS_MAX_PIECES]


NEWS = News()
