"""The text queue's counts, read on every admission: waiting generations for some models count the requests
that list one of them and those that take any model; for no models, every waiting generation."""

from horde.text import queue
from tests.support.text_api import text_queued


def test_waiting_generations_by_models(client, make_user, runtime):
    _, key = make_user(kudos=1000)
    text_queued(client, key, models=["m1"], params={"n": 2})
    text_queued(client, key, models=["m2"])
    text_queued(client, key, models=["m1", "m3"])
    text_queued(client, key, models=[])  # any model
    with runtime.db.read() as session:
        counts = {
            models: queue.waiting_count(session, list(models))
            for models in [("m1",), ("m2",), ("m3",), ("m4",), ("m2", "m3"), ()]
        }
    assert counts == {("m1",): 4, ("m2",): 2, ("m3",): 2, ("m4",): 1, ("m2", "m3"): 3, (): 5}
