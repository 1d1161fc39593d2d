"""The event bus: a request's listeners all hear it; an announced job wakes one poller, not all."""

import threading

from horde.events.bus import LocalEventBus
from tests.support.processes import wait_until

WAIT_S = 60


class Poller:
    """A thread blocked in a long-poll wait on `channels`, like a pop with nothing to claim."""

    def __init__(self, bus, *channels):
        self.subscription = bus.subscribe(*channels, single=True)
        self.subscription.mark_seen()
        self.woken = threading.Event()
        self.thread = threading.Thread(target=self._wait, daemon=True)
        self.thread.start()

    def _wait(self):
        if self.subscription.wait(WAIT_S):
            self.woken.set()


def heard(pollers) -> list:
    """Pollers that an event reached: woken already, or about to wake (dispatch is synchronous)."""
    return [poller for poller in pollers if poller.woken.is_set() or poller.subscription.pending]


def start_waiting(bus, count, channel="jobs:m"):
    pollers = []
    for _ in range(count):  # one at a time, so that their order of waiting is known
        pollers.append(Poller(bus, channel))
        wait_until(lambda: len(bus._waiting.get(channel, ())) == len(pollers), what="the poller to wait")
    return pollers


def test_one_announcement_wakes_the_longest_waiting_poller_only():
    bus = LocalEventBus()
    pollers = start_waiting(bus, 5)
    bus.publish("jobs:m")
    assert heard(pollers) == [pollers[0]]
    bus.publish("jobs:m")
    assert heard(pollers) == pollers[:2]


def test_a_poller_that_cannot_use_the_job_passes_it_to_one_that_has_not_looked():
    bus = LocalEventBus()
    pollers = start_waiting(bus, 3)
    bus.publish("jobs:m")
    first = pollers[0]
    assert first.woken.wait(WAIT_S)
    first.subscription.mark_seen()  # it looked at the queue and found nothing it may take
    assert first.subscription.pass_on()
    assert heard(pollers) == pollers[:2]
    pollers[1].woken.wait(WAIT_S)
    pollers[1].subscription.mark_seen()
    assert pollers[1].subscription.pass_on()
    assert heard(pollers) == pollers
    pollers[2].woken.wait(WAIT_S)
    pollers[2].subscription.mark_seen()
    assert not pollers[2].subscription.pass_on()  # everyone has seen it: the chain ends


def test_an_announcement_while_every_poller_is_busy_is_kept_for_one_of_them():
    bus = LocalEventBus()
    busy = [bus.subscribe("jobs:m", single=True) for _ in range(3)]
    for subscription in busy:
        subscription.mark_seen()  # each is inside its claim, not waiting
    bus.publish("jobs:m")
    assert sum(subscription.pending for subscription in busy) == 1
    assert [subscription.wait(0) for subscription in busy].count(True) == 1


def test_request_listeners_all_hear_every_event():
    bus = LocalEventBus()
    listeners = [bus.subscribe("request:r") for _ in range(3)]
    poller = start_waiting(bus, 1, "jobs:m")[0]
    bus.publish("request:r")
    assert [listener.wait(0) for listener in listeners] == [True, True, True]
    assert heard([poller]) == []


def test_a_publish_lets_the_woken_long_poll_run_before_the_publisher_goes_on(monkeypatch):
    """Under gevent, the poller's claim (or a waiter's answer) is what the other side waits for: it runs first."""
    import gevent
    import gevent.event

    from horde import cooperative
    from horde.events import bus as events

    monkeypatch.setattr(cooperative.monkey, "is_module_patched", lambda name: True)
    monkeypatch.setattr(events.threading, "Event", gevent.event.Event)  # as gevent's patching makes it
    bus = LocalEventBus()
    order = []
    with bus.subscribe("jobs:m", single=True) as subscription:
        poller = gevent.spawn(lambda: subscription.wait(WAIT_S) and order.append("poller claims"))
        gevent.sleep(0)  # the poller is waiting
        bus.publish("jobs:m")
        order.append("publisher answers")
        poller.join(WAIT_S)
    assert order == ["poller claims", "publisher answers"]


def test_a_busy_poller_that_leaves_with_an_announcement_hands_it_on():
    """Chosen while inside its own pop, a poller returns (busy, or with another job) without waiting again: the
    announcement goes to a poller that has not seen it, not to a recheck seconds later."""
    bus = LocalEventBus()
    both = [bus.subscribe("jobs:m", single=True) for _ in range(2)]
    for subscription in both:
        subscription.mark_seen()  # each is inside its claim, not waiting
    bus.publish("jobs:m")  # no poller waits: one of the busy ones is chosen
    (chosen,) = [subscription for subscription in both if subscription.pending]
    (other,) = [subscription for subscription in both if subscription is not chosen]
    woken = threading.Event()
    threading.Thread(target=lambda: other.wait(WAIT_S) and woken.set(), daemon=True).start()
    wait_until(lambda: len(bus._waiting.get("jobs:m", ())) == 1, what="the other poller to wait")
    chosen.close()  # it returned without waiting again
    assert woken.wait(WAIT_S)


def test_a_handover_goes_to_the_listeners_of_the_channel_and_never_to_a_job_poller():
    bus = LocalEventBus()
    listener, other_channel = bus.subscribe("request:r"), bus.subscribe("request:s")
    poller = bus.subscribe("request:r", single=True)
    finish = object()
    bus.publish("request:r", finish)
    assert listener.wait(0) and listener.take_handover() is finish
    assert listener.take_handover() is None, "taken once"
    assert poller.wait(0) and poller.take_handover() is None
    assert not other_channel.wait(0) and other_channel.take_handover() is None
    bus.publish("request:r")
    assert listener.wait(0) and listener.take_handover() is None, "a plain event hands nothing over"


def test_without_a_poll_interval_only_an_event_wakes_a_waiter():
    subscription = LocalEventBus().subscribe("request:r")
    assert LocalEventBus().poll_interval_s() is None
    assert subscription.wait(0.05) is False


def test_with_a_poll_interval_a_waiter_wakes_to_read_the_database_though_nothing_was_published():
    """HORDE_EVENTS_POLL_S: processes that share a database without Redis hear each other by reading it."""
    bus = LocalEventBus(poll_s=0.05)
    subscription = bus.subscribe("request:r")
    assert bus.poll_interval_s() == 0.05
    assert subscription.wait(WAIT_S) is True  # without the interval: False, after the whole WAIT_S
    assert subscription.wait(WAIT_S) is True  # and again, every interval
