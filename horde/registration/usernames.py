"""A new account's name, by the AI Horde's rules: names repeat (`name#id` tells users apart), surrounding spaces
are dropped (the AI Horde strips them too), and what is left must be 1 to MAX_USERNAME_CHARS characters.

Refused with 400 BadRequest naming `username`: an empty name, a longer one, a control or invisible character
(Unicode's categories Cc, Cf, Cs, Co, Cn, and the line and paragraph separators, which would let two names look
alike or break a page's line), and `#`, which separates the name from the id in `name#id`: a name holding one
would read as another user's alias. Markup is kept as typed and escaped wherever a page shows it (the AI Horde
escapes it into the name instead).
"""

from __future__ import annotations

import unicodedata

from horde import errors

MAX_USERNAME_CHARS = 50
#: The name a provider's claims fall back to when none of them makes a name (horde/registration/oidc.py).
FALLBACK_USERNAME = "member"
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
ALIAS_SEPARATOR = "#"


def checked_username(raw: str) -> str:
    """`raw` without its surrounding whitespace, or 400 BadRequest (param `username`) saying what is wrong."""
    name = raw.strip()
    if not name:
        raise _refused("The username must not be empty.")
    if len(name) > MAX_USERNAME_CHARS:
        raise _refused(f"The username must be at most {MAX_USERNAME_CHARS} characters long; it has {len(name)}.")
    for position, character in enumerate(name):
        if unicodedata.category(character) in _REFUSED_CATEGORIES:
            raise _refused(
                f"The username must not hold control or invisible characters: U+{ord(character):04X} at {position}."
            )
    if ALIAS_SEPARATOR in name:
        raise _refused("The username must not hold '#': it separates the name from the id in name#id.")
    return name


def username_from(candidates: list[object]) -> str:
    """The first of `candidates` (a provider's claims, in order of preference) that makes an acceptable name once
    its refused characters are dropped and it is cut to length; FALLBACK_USERNAME when none does."""
    for candidate in candidates:
        if not isinstance(candidate, str):
            continue
        kept = "".join(
            character
            for character in candidate
            if unicodedata.category(character) not in _REFUSED_CATEGORIES and character != ALIAS_SEPARATOR
        )
        name = kept.strip()[:MAX_USERNAME_CHARS].strip()
        if name:
            return name
    return FALLBACK_USERNAME


def _refused(message: str) -> errors.HordeError:
    return errors.BadRequest(message, param="username")
