"""The accounts' payloads and answer bodies (kudos transfers, shared keys), with the AI Horde's names and limits.

The routes load the inputs with these schemas (horde/http/payload.py) and build the answers as dicts; the answer
schemas write the Swagger document (horde/http/swagger.py). Unknown keys of an input are left out, as the AI Horde's
request parser leaves them.
"""

from __future__ import annotations

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

from horde.accounts import shared_keys

#: The largest amount one transfer may name: a balance is a 32-bit integer.
MAX_TRANSFER_KUDOS = 2**31 - 1
DEFAULT_TRANSFER_KUDOS = 100


class WholeKudos(fields.Number):
    """A JSON number that is a whole amount of kudos (10 and 10.0 alike, as horde-sdk sends a float): kudos here
    are whole, so 10.5 is refused rather than cut."""

    num_type = float
    json_schema = {"type": "number"}

    def _validated(self, value):
        number = super()._validated(value)
        if isinstance(value, bool) or not float(number).is_integer():
            raise ValidationError("Not a whole number of kudos.")
        return int(number)


class TransferSchema(Schema):
    """POST /kudos/transfer: who receives the kudos (`name#id`, or a shared key's id) and how many."""

    class Meta:
        unknown = EXCLUDE

    username = fields.String(required=True, validate=validate.Length(min=1, max=300))
    amount = WholeKudos(
        load_default=DEFAULT_TRANSFER_KUDOS,
        validate=validate.Range(min=-MAX_TRANSFER_KUDOS, max=MAX_TRANSFER_KUDOS),
    )


class TransferAnswerSchema(Schema):
    """The kudos sent."""

    transferred = fields.Float(required=True)


def _limit(maximum: int) -> fields.Integer:
    return fields.Integer(strict=True, validate=validate.Range(min=shared_keys.UNLIMITED, max=maximum))


class SharedKeyInputSchema(Schema):
    """POST (PUT) /sharedkeys and PATCH /sharedkeys/{id}: the AI Horde's SharedKeyInput. -1 means no limit; `expiry`
    is days from now; `kudos` is the most the key's requests may cost in all."""

    class Meta:
        unknown = EXCLUDE

    kudos = _limit(shared_keys.MAX_KUDOS)
    expiry = fields.Integer(strict=True, validate=validate.Range(min=shared_keys.UNLIMITED, max=36_500))
    name = fields.String(validate=validate.Length(min=shared_keys.NAME_CHARS[0], max=shared_keys.NAME_CHARS[1]))
    max_image_pixels = _limit(shared_keys.MAX_IMAGE_PIXELS)
    max_image_steps = _limit(shared_keys.MAX_IMAGE_STEPS)
    max_text_tokens = _limit(shared_keys.MAX_TEXT_TOKENS)


class SharedKeyDetailsSchema(Schema):
    """The AI Horde's SharedKeyDetails. `kudos` stays the limit as set; `utilized` counts what its requests were
    charged, so `kudos - utilized` is what is left (the AI Horde lowers `kudos` as the key is used instead)."""

    id = fields.String(required=True)
    username = fields.String(required=True, metadata={"description": "The owner's name#id"})
    name = fields.String()
    kudos = fields.Integer(required=True)
    expiry = fields.String(metadata={"description": "When the key expires (RFC 822); absent when it never does"})
    utilized = fields.Integer(required=True)
    max_image_pixels = fields.Integer(required=True)
    max_image_steps = fields.Integer(required=True)
    max_text_tokens = fields.Integer(required=True)


class SimpleAnswerSchema(Schema):
    """DELETE /sharedkeys/{id}: {"message": "OK"}."""

    message = fields.String(required=True)


TRANSFER_SCHEMA = TransferSchema()
SHARED_KEY_INPUT_SCHEMA = SharedKeyInputSchema()
