"""The identity cache: an entry lives IDENTITY_CACHE_S, or no longer than the database poll while the process
cannot hear the others (a key they replaced would not reach it otherwise)."""

from __future__ import annotations

from horde.accounts.identity import Identity, IdentityCache

ALICE = Identity(id=1, username="alice", trusted=False, anonymous=False)


def test_an_entry_lives_its_time_while_the_process_hears_the_others_or_is_alone():
    cache = IdentityCache(ttl_s=60, polling_s=lambda: None)
    cache.put("k", ALICE)
    assert cache.get("k") == ALICE


def test_an_entry_lives_no_longer_than_the_poll_while_the_process_shares_the_database_unheard():
    polling = {"s": 0.0}
    cache = IdentityCache(ttl_s=60, polling_s=lambda: polling["s"])
    cache.put("k", ALICE)
    assert cache.get("k") is None  # a zero poll: read afresh every time
    polling["s"] = None
    cache.put("k", ALICE)
    assert cache.get("k") == ALICE


def test_forget_all_drops_every_entry():
    cache = IdentityCache(ttl_s=60)
    cache.put("k", ALICE)
    cache.forget_all()
    assert cache.get("k") is None
