"""The caller's rate is counted late in admission (right before the price check), yet its refusal comes first."""

from __future__ import annotations

import pytest

from horde import errors
from horde.accounts.identity import Identity
from horde.chat import service
from tests.support.native import pop

RATE_LIMIT_PER_MINUTE = 3


@pytest.fixture
def settings(settings):
    return settings.replace(rate_limit_per_minute=RATE_LIMIT_PER_MINUTE)


def test_a_caller_over_its_rate_hears_so_before_any_later_refusal(runtime, client, make_user):
    """A request for an unknown model from a caller over its limit gets the 429, as does a good one."""
    _, worker_key = make_user("owner")
    pop(client, worker_key)
    user, _ = make_user("client", kudos=100)
    native = {"model": "m1", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
    for _ in range(RATE_LIMIT_PER_MINUTE):
        service.create(runtime, Identity.of(user), dict(native))

    for model in ("no-such-model", "m1"):
        with pytest.raises(errors.TooManyRequests):
            service.create(runtime, Identity.of(user), dict(native, model=model))


def test_under_its_rate_a_caller_hears_the_later_refusal(runtime, client, make_user):
    _, worker_key = make_user("owner")
    pop(client, worker_key)
    user, _ = make_user("client", kudos=100)
    native = {"model": "no-such-model", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 16}
    with pytest.raises(errors.ModelNotFound):
        service.create(runtime, Identity.of(user), native)
