"""The screening error and the small checks every screening module shares.

Messages follow OpenAI's wording (docs/reference/chat_front.md):
type errors read ``Invalid type for 'X': expected an integer, but got a string
instead.``, range errors ``Invalid 'X': decimal above maximum value. ...``.
A boolean is never a number, and an integer-valued decimal is not an integer.
"""

from __future__ import annotations

import math
import re
from typing import Any

from horde import errors

UNSUPPORTED = errors.UnsupportedChatParameter.rc
BAD_REQUEST = errors.BadRequest.rc
CONFLICT = errors.ChatRequestConflict.rc
MODEL_NOT_FOUND = errors.ModelNotFound.rc

STATUS_BAD_REQUEST = errors.BadRequest.status
STATUS_NOT_FOUND = errors.ModelNotFound.status

NAME_MAX_CHARS = 64
NAME_PATTERN = "^[a-zA-Z0-9_-]+$"
_NAME_RE = re.compile(r"[a-zA-Z0-9_-]+")


class ScreeningError(errors.UnsupportedChatParameter):
    """A request refused by screening, with the status, code and param to report.

    A HordeError whose return code is `code`, always one of the errors.py classes' (the constants above);
    by default UnsupportedChatParameter, hence the base class. The front renders it in OpenAI's envelope
    without metadata (docs/reference/chat_front.md).
    """

    def __init__(
        self, message: str, *, status: int = STATUS_BAD_REQUEST, code: str = UNSUPPORTED, param: str | None = None
    ):
        super().__init__(message, param=param, status=status)
        self.rc = code

    @property
    def code(self) -> str:
        return self.rc

    def __repr__(self) -> str:
        return (
            f"ScreeningError(status={self.status}, code={self.code!r}, param={self.param!r}, message={self.message!r})"
        )


def json_type_name(value: Any) -> str:
    """OpenAI's name for the JSON type of a value, with its article."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def quote(value: Any) -> str:
    """A value as OpenAI quotes it in messages: strings in single quotes."""
    return f"'{value}'" if isinstance(value, str) else format_number(value)


def format_number(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return str(value)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def bad_type(param: str, expected: str, value: Any) -> ScreeningError:
    return ScreeningError(
        f"Invalid type for '{param}': expected {expected}, but got {json_type_name(value)} instead.",
        code=BAD_REQUEST,
        param=param,
    )


def missing(param: str) -> ScreeningError:
    return ScreeningError(f"Missing required parameter: '{param}'.", code=BAD_REQUEST, param=param)


def unknown_parameter(param: str) -> ScreeningError:
    return ScreeningError(f"Unknown parameter: '{param}'.", code=UNSUPPORTED, param=param)


def supported_values_text(choices: tuple[str, ...]) -> str:
    quoted = [f"'{c}'" for c in choices]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def invalid_choice(param: str, value: Any, choices: tuple[str, ...], *, code: str = BAD_REQUEST) -> ScreeningError:
    return ScreeningError(
        f"Invalid value: {quote(value)}. Supported values are: {supported_values_text(choices)}.",
        code=code,
        param=param,
    )


def empty_array(param: str) -> ScreeningError:
    return ScreeningError(
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        code=BAD_REQUEST,
        param=param,
    )


def array_too_long(param: str, maximum: int, length: int) -> ScreeningError:
    return ScreeningError(
        f"Invalid '{param}': array too long. Expected an array with maximum length {maximum}, "
        f"but got an array with length {length} instead.",
        code=UNSUPPORTED,
        param=param,
    )


def string_too_long(param: str, max_chars: int, length: int) -> ScreeningError:
    return ScreeningError(
        f"Invalid '{param}': string too long. Expected a string with maximum length {max_chars}, "
        f"but got a string with length {length} instead.",
        code=BAD_REQUEST,
        param=param,
    )


def empty_string(param: str) -> ScreeningError:
    return ScreeningError(
        f"Invalid '{param}': string too short. Expected a string with minimum length 1, "
        "but got an empty string instead.",
        code=BAD_REQUEST,
        param=param,
    )


def require_string(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise bad_type(param, "a string", value)
    return value


def require_bool(value: Any, param: str) -> bool:
    if not isinstance(value, bool):
        raise bad_type(param, "a boolean", value)
    return value


def require_int(value: Any, param: str) -> int:
    if not is_int(value):
        raise bad_type(param, "an integer", value)
    return value


def require_object(value: Any, param: str) -> dict:
    if not isinstance(value, dict):
        raise bad_type(param, "an object", value)
    return value


def require_list(value: Any, param: str) -> list:
    if not isinstance(value, list):
        raise bad_type(param, "an array", value)
    return value


def require_number(value: Any, param: str) -> float | int:
    if not is_number(value):
        raise bad_type(param, "a number", value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ScreeningError(
            f"Invalid '{param}': expected a finite number, but got {format_number(value)} instead.",
            code=BAD_REQUEST,
            param=param,
        )
    return value


def check_range(
    value: float | int,
    param: str,
    low: float | int | None,
    high: float | int | None,
    *,
    kind: str = "integer",
    code: str = UNSUPPORTED,
) -> None:
    """Refuse a number outside [low, high] with OpenAI's range message.

    ``kind`` is the parameter's type as OpenAI names it ("integer" or "decimal"),
    whatever the value sent: OpenAI reports temperature 3 as a decimal.
    """
    if low is not None and value < low:
        raise ScreeningError(
            f"Invalid '{param}': {kind} below minimum value. Expected a value >= {low}, "
            f"but got {format_number(value)} instead.",
            code=code,
            param=param,
        )
    if high is not None and value > high:
        raise ScreeningError(
            f"Invalid '{param}': {kind} above maximum value. Expected a value <= {high}, "
            f"but got {format_number(value)} instead.",
            code=code,
            param=param,
        )


def check_name(value: Any, param: str) -> str:
    """A function or json_schema name: 1 to 64 characters of A-Z, a-z, 0-9, _ and -."""
    name = require_string(value, param)
    if not name:
        raise empty_string(param)
    if len(name) > NAME_MAX_CHARS:
        raise string_too_long(param, NAME_MAX_CHARS, len(name))
    if not _NAME_RE.fullmatch(name):
        raise ScreeningError(
            f"Invalid '{param}': string does not match pattern. Expected a string that matches "
            f"the pattern '{NAME_PATTERN}'.",
            code=BAD_REQUEST,
            param=param,
        )
    return name


def same_json_value(left: Any, right: Any) -> bool:
    """Equality that keeps JSON types apart (false is not 0, 0 is not 0.0)."""
    return type(left) is type(right) and left == right
