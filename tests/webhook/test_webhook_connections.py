"""Which connections a worker gives up to keep slots free (webhook/connections.py)."""

from __future__ import annotations

import pytest

from dra_migrate.webhook.connections import ConnectionBook


def book(capacity: int = 100, per_client: int = 60, headroom: int = 10) -> ConnectionBook[int]:
    return ConnectionBook(capacity, per_client=per_client, headroom=headroom)


def test_a_client_over_its_share_is_refused_and_others_are_not() -> None:
    connections = book(per_client=3)
    assert [connections.open(n, "10.0.0.9") for n in range(4)] == [True, True, True, False]
    assert connections.open(10, "10.0.0.1")
    connections.close(0)
    assert connections.open(11, "10.0.0.9")  # a closed connection gives its client the slot back
    assert len(connections) == 4


def test_nothing_is_reclaimed_below_the_high_water_mark() -> None:
    connections = book()
    for n in range(89):
        connections.open(n, f"10.0.0.{n % 3}")
        connections.waiting(n, first=True)
    assert connections.to_reclaim() == []


def test_the_longest_waiting_are_reclaimed_until_headroom_is_free_twice_over() -> None:
    connections = book()
    for n in range(90):
        connections.open(n, f"10.0.0.{n % 3}")
        connections.waiting(n, first=True)
    connections.serving(0)  # carries a review: never reclaimed
    connections.serving(1)
    connections.waiting(1)  # waits again after its review: now the most recent
    assert connections.to_reclaim() == list(range(2, 12))
    # Shut down but not closed yet: counted, and not chosen twice.
    assert connections.to_reclaim() == []
    for n in range(2, 12):
        connections.close(n)
    assert len(connections) == 80


def test_a_connection_with_a_request_on_its_way_is_passed_over() -> None:
    connections = book()
    for n in range(90):
        connections.open(n, "10.0.0.1" if n < 45 else "10.0.0.2")
        connections.waiting(n, first=True)
    assert connections.to_reclaim(has_input=lambda n: n in (0, 3)) == [1, 2, *range(4, 12)]
    # Passed over: still waiting, now counted as the most recent.
    assert connections.waiting_connections()[:2] == [12, 13] and {0, 3} <= set(connections.waiting_connections())


def test_a_reclaimed_connection_that_finishes_a_request_is_not_waiting_again() -> None:
    connections = book()
    for n in range(90):
        connections.open(n, "10.0.0.1" if n < 45 else "10.0.0.2")
        connections.waiting(n, first=True)
    [*reclaimed] = connections.to_reclaim()
    connections.waiting(reclaimed[0])  # its handler finished a request it had already read
    assert reclaimed[0] not in connections.waiting_connections()
    assert connections.to_reclaim() == []  # not chosen, nor counted, twice


def test_connections_in_their_handshake_or_serving_are_never_reclaimed() -> None:
    connections = book()
    for n in range(95):
        connections.open(n, "10.0.0.1" if n < 50 else "10.0.0.2")
    connections.waiting(7, first=True)
    assert connections.to_reclaim() == [7]  # the only one waiting for a request


def test_shutdown_order_separates_connections_that_carried_a_request() -> None:
    connections = book()
    for n in range(3):
        connections.open(n, "10.0.0.1")
        connections.waiting(n, first=True)
    connections.serving(1)
    connections.waiting(1)
    assert connections.waiting_connections(carried_one=True) == [1]
    assert connections.waiting_connections() == [0, 2, 1]


@pytest.mark.parametrize(("capacity", "headroom"), [(100, 50), (100, 0), (10, 6)])
def test_headroom_must_fit_twice_in_the_capacity(capacity: int, headroom: int) -> None:
    with pytest.raises(ValueError, match="headroom"):
        ConnectionBook[int](capacity, per_client=1, headroom=headroom)
