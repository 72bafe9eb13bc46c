"""Which connections a worker gives up to keep slots free (webhook/connections.py)."""

from __future__ import annotations

import socket
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from admission import make_review
from pods import gpu_pod
from webhook_support import StartServer, https_session

from dra_migrate.webhook.connections import ConnectionBook
from dra_migrate.webhook.server import WORKER_CONNECTIONS
from dra_migrate.webhook.worker import CLIENT_SHARE_OF_CONNECTIONS


def book(capacity: int = 100, per_client: int = 60, headroom: int = 10) -> ConnectionBook[int]:
    return ConnectionBook(capacity, per_client=per_client, headroom=headroom)


def _opened(connections: ConnectionBook[int], connection: int, client: str) -> list[int] | None:
    """The connections `connection` displaces when admitted; None when it is refused."""
    admitted, displaced = connections.open(connection, client)
    return displaced if admitted else None


def test_a_client_over_its_share_displaces_its_own_idlest_connection() -> None:
    """An address's share held by idle or handshaking connections does not lock out another client
    behind the same address: each new connection takes the place of the idlest one there."""
    connections = book(per_client=3)
    assert [_opened(connections, n, "10.0.0.9") for n in range(3)] == [[], [], []]
    connections.waiting(1, first=True)
    connections.waiting(2, first=True)
    connections.serving(2)  # carries a review
    assert _opened(connections, 3, "10.0.0.9") == [1]  # waiting for a request: displaced first
    assert _opened(connections, 4, "10.0.0.9") == [0]  # then the oldest still in its handshake
    assert _opened(connections, 10, "10.0.0.1") == []  # other addresses are untouched
    connections.close(1)
    connections.close(0)
    assert len(connections) == 4


def test_a_client_whose_connections_all_carry_reviews_is_refused_over_its_share() -> None:
    connections = book(per_client=3)
    for n in range(3):
        connections.open(n, "10.0.0.9")
        connections.waiting(n, first=True)
        connections.serving(n)
    assert _opened(connections, 3, "10.0.0.9") is None
    assert _opened(connections, 4, "10.0.0.1") == []
    connections.close(0)
    assert _opened(connections, 5, "10.0.0.9") == []  # a closed connection gives its client the slot back
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


def test_a_client_behind_an_address_whose_share_is_held_still_gets_in(
    start_server: StartServer, kubeconfig: Path, tls_dir: Path
) -> None:
    """Someone at the apiserver's address (the same node, NAT or tunnel) holds its whole share of a
    worker's connections, stalled before their handshake; kube-apiserver's next connection from that
    address still gets its review answered (it was closed before its handshake)."""
    server = start_server(kubeconfig=kubeconfig, workers=1)
    share = int(WORKER_CONNECTIONS * CLIENT_SHARE_OF_CONNECTIONS)
    with ExitStack() as held:
        for _ in range(share):
            held.enter_context(socket.create_connection(("127.0.0.1", server.port)))
        time.sleep(1.0)  # accepted by the worker (a handshake may stall 5 s before it is closed)
        with https_session(tls_dir / "ca.crt") as session:  # a new connection, not one kept from before
            answer = session.post(
                f"{server.url}/mutate", json=make_review(gpu_pod()), timeout=10, headers={"Connection": "close"}
            )
        assert answer.status_code == 200, answer.text
        assert answer.json()["response"]["allowed"] is True
