"""The connection cap's shedding order (horde/serving/registry.py)."""

from __future__ import annotations

from horde.serving.registry import ConnectionRegistry, Phase


class Member:
    def __init__(self, name: str):
        self.name = name
        self.phase = Phase.RECEIVING
        self.was_shed = False

    def shed(self) -> None:
        self.was_shed = True

    def __repr__(self) -> str:
        return self.name


def full(cap: int) -> tuple[ConnectionRegistry, list[Member]]:
    registry = ConnectionRegistry(cap)
    members = [Member(f"m{index}") for index in range(cap)]
    for member in members:
        assert registry.admit(member)
    return registry, members


def test_below_the_cap_nobody_is_shed():
    registry, members = full(3)
    assert len(registry) == 3 and not any(member.was_shed for member in members)


def test_idle_connections_go_first_the_longest_idle_first():
    registry, (receiving, idle_first, idle_second, answering) = full(4)
    registry.move(idle_first, Phase.IDLE)
    registry.move(idle_second, Phase.IDLE)
    registry.move(answering, Phase.ANSWERING)
    newcomer = Member("new")
    assert registry.admit(newcomer)
    assert idle_first.was_shed and not idle_second.was_shed and not receiving.was_shed
    assert len(registry) == 4 and registry.count(Phase.IDLE) == 1


def test_then_the_connection_whose_progress_is_oldest():
    registry, (first, second, answering) = full(3)
    registry.move(answering, Phase.ANSWERING)
    registry.move(first, Phase.RECEIVING)  # its head ended: progress, so it is now the newest
    assert registry.admit(Member("new"))
    assert second.was_shed and not first.was_shed


def test_a_connection_being_answered_is_never_shed_and_a_full_house_refuses():
    registry, members = full(2)
    for member in members:
        registry.move(member, Phase.ANSWERING)
    assert not registry.admit(Member("new"))
    assert not any(member.was_shed for member in members) and len(registry) == 2


def test_a_shed_member_that_moves_later_is_not_counted_again():
    registry, (victim, other) = full(2)
    registry.move(other, Phase.ANSWERING)
    assert registry.admit(Member("new")) and victim.was_shed
    registry.move(victim, Phase.IDLE)  # its greenlet had not seen the shed yet
    registry.drop(victim)
    assert len(registry) == 2


def test_stopping_sheds_the_idle_and_keeps_the_rest():
    registry, (idle, receiving, answering) = full(3)
    registry.move(idle, Phase.IDLE)
    registry.move(answering, Phase.ANSWERING)
    registry.stop()
    assert registry.stopping and idle.was_shed
    assert not receiving.was_shed and not answering.was_shed and len(registry) == 2
