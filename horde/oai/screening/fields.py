"""Marshmallow fields without coercion, and loading of fixed-shape objects.

The fixed-shape objects (the horde object, stream_options, json_schema, a
tool's function) are marshmallow schemas. Their fields accept exactly one JSON
type, and their error messages carry a ``{path}`` placeholder that
``load_fixed_object`` fills with the full param path, so the ScreeningError has
the documented code, param and message: an unknown key is
UnsupportedChatParameter, anything else BadRequest.
"""

from __future__ import annotations

from typing import Any

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields

from horde.oai.screening.base import (
    BAD_REQUEST,
    ScreeningError,
    check_name,
    json_type_name,
    quote,
    supported_values_text,
    unknown_parameter,
)

PATH = "{path}"
UNKNOWN_KEY_MARK = "\x00unknown"

__all__ = [
    "EXCLUDE",
    "RAISE",
    "Choice",
    "FixedSchema",
    "FunctionName",
    "JsonObject",
    "NonEmptyStringList",
    "PositiveInt",
    "StrictBool",
    "StrictString",
    "load_fixed_object",
]


class FixedSchema(Schema):
    """Base schema: unknown keys are refused (subclasses may set Meta.unknown = EXCLUDE)."""

    error_messages = {"unknown": UNKNOWN_KEY_MARK}

    class Meta:
        unknown = RAISE


class _Typed(fields.Field):
    """A field accepting one JSON type; null is accepted only where allow_none is set."""

    expected = "a value"

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("allow_none", True)
        super().__init__(**kwargs)
        # make_error() calls str.format, so the placeholder's braces are doubled here.
        self.error_messages["required"] = "Missing required parameter: '{{path}}'."
        self.error_messages["null"] = (
            f"Invalid type for '{{{{path}}}}': expected {self.expected}, but got null instead."
        )

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        if not self._accepts(value):
            raise ValidationError(
                f"Invalid type for '{PATH}': expected {self.expected}, but got {json_type_name(value)} instead."
            )
        return self._check(value)

    def _accepts(self, value: Any) -> bool:
        return True

    def _check(self, value: Any) -> Any:
        return value


class StrictBool(_Typed):
    expected = "a boolean"

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


class StrictString(_Typed):
    expected = "a string"

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, str)


class JsonObject(_Typed):
    """Any JSON object, forwarded unchanged (a JSON Schema, for instance)."""

    expected = "an object"

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, dict)


class Choice(StrictString):
    """A string from a closed set, refused with OpenAI's enum message."""

    def __init__(self, choices: tuple[str, ...], **kwargs: Any):
        super().__init__(**kwargs)
        self.choices = choices

    def _check(self, value: str) -> str:
        if value not in self.choices:
            raise ValidationError(
                f"Invalid value: {quote(value)}. Supported values are: {supported_values_text(self.choices)}."
            )
        return value


class PositiveInt(_Typed):
    expected = "an integer"

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def _check(self, value: int) -> int:
        if value < 1:
            raise ValidationError(
                f"Invalid '{PATH}': integer below minimum value. Expected a value >= 1, but got {value} instead."
            )
        return value


class NonEmptyStringList(_Typed):
    """A non-empty array of non-empty strings."""

    expected = "an array of strings"

    def _accepts(self, value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)

    def _check(self, value: list) -> list:
        if not value:
            raise ValidationError(
                f"Invalid '{PATH}': empty array. Expected an array with minimum length 1, "
                "but got an empty array instead."
            )
        if not all(value):
            raise ValidationError(f"Invalid '{PATH}': the array contains an empty string.")
        return list(value)


class FunctionName(StrictString):
    """A function or schema name: 1 to 64 characters of A-Z, a-z, 0-9, _ and -."""

    def _check(self, value: str) -> str:
        try:
            return check_name(value, PATH)
        except ScreeningError as error:
            raise ValidationError(error.message) from None


def load_fixed_object(schema: Schema, data: dict, path: str) -> dict:
    """Load ``data`` with ``schema``; raise the first failure as a ScreeningError.

    Failures are reported in the order of the keys in ``data``, then missing
    required keys in the schema's field order. Keys loaded as null are left out.
    """
    try:
        loaded = schema.load(data)
    except ValidationError as error:
        raise _first_failure(error.normalized_messages(), data, schema, path) from None
    return {key: value for key, value in loaded.items() if value is not None}


def _first_failure(messages: dict, data: dict, schema: Schema, path: str) -> ScreeningError:
    order = [key for key in data if key in messages]
    order += [key for key in schema.fields if key in messages and key not in order]
    order += [key for key in messages if key not in order]
    key = order[0]
    message = _first_message(messages[key])
    param = f"{path}.{key}" if path else str(key)
    if message == UNKNOWN_KEY_MARK:
        return unknown_parameter(param)
    return ScreeningError(message.replace(PATH, param), code=BAD_REQUEST, param=param)


def _first_message(messages: Any) -> str:
    while isinstance(messages, (list, dict)):
        messages = messages[0] if isinstance(messages, list) else next(iter(messages.values()))
    return str(messages)
