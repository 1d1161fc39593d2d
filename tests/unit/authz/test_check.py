"""The authorization check on its own: roles, key kinds and ownership against the table's rows."""

from __future__ import annotations

import pytest

from horde import errors
from horde.accounts.identity import Identity
from horde.authz.check import authorize, may
from horde.authz.roles import KeyKind, Role, effective_role, key_kind
from horde.authz.rules import TABLE, Action, Who


def caller(role="user", *, shared=False, anonymous=False, user_id=7) -> Identity:
    return Identity(
        id=user_id,
        username="someone",
        trusted=False,
        anonymous=anonymous,
        role=role,
        shared_key_id="0b6b2f0e-0000-4000-8000-000000000000" if shared else None,
    )


def test_a_shared_key_never_acts_with_its_owners_role():
    moderator_key = caller("admin", shared=True)
    assert key_kind(moderator_key) is KeyKind.SHARED and effective_role(moderator_key) is Role.USER
    with pytest.raises(errors.InvalidAPIKey):
        authorize(moderator_key, Action.DELETE_WORKER, owner_id=99)
    with pytest.raises(errors.InvalidAPIKey):  # not even on its owner's own worker
        authorize(moderator_key, Action.DELETE_WORKER, owner_id=moderator_key.id)


def test_roles_include_the_ones_below_them():
    assert may(caller("admin"), Action.AWARD_KUDOS) and may(caller("moderator"), Action.AWARD_KUDOS)
    assert not may(caller("moderator"), Action.SET_MODES)
    with pytest.raises(errors.NotAdmin):
        authorize(caller("moderator"), Action.SET_MODES)
    with pytest.raises(errors.NotAllowedAwards):  # the AI Horde's code for an award by a non-moderator
        authorize(caller(), Action.AWARD_KUDOS)
    with pytest.raises(errors.NotModerator):
        authorize(caller(), Action.READ_AUDIT)


def test_ownership_counts_only_for_the_owner_and_never_for_the_anonymous_user():
    assert may(caller(user_id=5), Action.ROTATE_API_KEY, owner_id=5)
    assert not may(caller(user_id=5), Action.ROTATE_API_KEY, owner_id=6)
    anonymous = caller(anonymous=True, user_id=1)
    assert not may(anonymous, Action.ROTATE_API_KEY, owner_id=1)
    with pytest.raises(errors.AnonForbidden):
        authorize(anonymous, Action.ROTATE_API_KEY, owner_id=1)


def test_a_role_written_by_hand_that_the_table_does_not_know_is_a_plain_user():
    assert effective_role(caller("superuser")) is Role.USER
    assert not may(caller("superuser"), Action.AWARD_KUDOS)


def test_every_action_has_a_row_and_every_row_that_admits_anyone_needs_no_key():
    assert set(TABLE) == set(Action)
    for action, rule in TABLE.items():
        if rule.who is Who.ANYONE:
            assert may(caller(anonymous=True), action), action
