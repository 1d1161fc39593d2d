"""Imports every table so that `Base.metadata` knows the whole schema."""

from horde.accounts.models import KudosEntry, User  # noqa: F401
from horde.chat.models import ChatJob, ChatRequest, ChatRequestModel  # noqa: F401
from horde.oai.idempotency_models import IdempotencyKey  # noqa: F401
from horde.oai.responses.models import StoredResponse  # noqa: F401
from horde.text.models import TextJob, TextRequest, TextRequestModel  # noqa: F401
from horde.workers.models import KnownModel, Worker  # noqa: F401
