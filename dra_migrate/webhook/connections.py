"""The open connections of one worker process, and which of them to give up when slots run short.

A worker serves at most `capacity` connections (gunicorn's worker_connections): once they are all
taken it accepts nothing, and new connections (kubelet probes, an apiserver that just restarted)
wait in the listen backlog until they time out. Idle connections cost a client nothing to hold,
so two rules keep slots free for those that matter:

- One client address holds at most `per_client` of them. A new connection over that share takes the
  place of the address's own connection that has carried nothing the longest (waiting for its next
  request, else still in its TLS handshake), which is shut down: an address's share cannot be
  filled with held connections so that nobody else there gets in (clients behind one NAT, node or
  konnectivity agent share an address with whoever holds them). Only when every connection of the
  address carries a review is a new one closed before its handshake, which costs the worker almost
  nothing. kube-apiserver holds one connection per review in flight (its in-flight limits keep
  that in the hundreds) plus a few idle ones.
- When the open connections reach `capacity - headroom`, the ones that have waited longest for
  their next request are shut down until `headroom` more are free. A connection waiting for a
  request (idle between reviews, or still sending its header block) carries no review, and a Go
  client opens a new connection for its next request when the server has closed an idle one.
  Connections in their handshake (5 s at most) or carrying a review are never chosen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Generic, TypeVar

Connection = TypeVar("Connection")


class ConnectionBook(Generic[Connection]):
    def __init__(self, capacity: int, *, per_client: int, headroom: int) -> None:
        if not 0 < headroom * 2 < capacity or per_client < 1:
            raise ValueError(f"capacity {capacity} leaves no room for headroom {headroom} twice over")
        self._capacity = capacity
        self._per_client = per_client
        self._headroom = headroom
        self._client: dict[Connection, str] = {}
        self._by_client: Counter[str] = Counter()
        self._handshaking: dict[Connection, None] = {}  # oldest first
        # Waiting for a request, oldest first (dicts keep insertion order); True: none carried yet.
        self._waiting: dict[Connection, bool] = {}
        self._reclaimed: set[Connection] = set()  # shut down, not closed by their handlers yet

    def __len__(self) -> int:
        return len(self._client)

    def open(self, connection: Connection, client: str) -> tuple[bool, list[Connection]]:
        """Count a new connection, in its handshake: whether it is admitted (False: not counted, its
        client's connections all carry reviews), and the connection of the same client it displaces
        (to shut down; counted until `close`)."""
        displaced: list[Connection] = []
        held = self._by_client.get(client, 0) - sum(1 for c in self._reclaimed if self._client[c] == client)
        if held >= self._per_client:
            victim = self._idlest(client)
            if victim is None:
                return False, []
            self._waiting.pop(victim, None)
            self._handshaking.pop(victim, None)
            self._reclaimed.add(victim)
            displaced.append(victim)
        self._client[connection] = client
        self._by_client[client] += 1
        self._handshaking[connection] = None
        return True, displaced

    def _idlest(self, client: str) -> Connection | None:
        """The client's connection that has carried nothing the longest: waiting, else handshaking."""
        for connections in (self._waiting, self._handshaking):
            for connection in connections:
                if self._client[connection] == client and connection not in self._reclaimed:
                    return connection
        return None

    def waiting(self, connection: Connection, *, first: bool = False) -> None:
        """The connection waits for its next request (its first one when `first`); not one being
        reclaimed, which its handler closes next."""
        if connection in self._client and connection not in self._reclaimed:
            self._handshaking.pop(connection, None)
            self._waiting.pop(connection, None)
            self._waiting[connection] = first

    def serving(self, connection: Connection) -> None:
        """A request arrived on the connection: not to be reclaimed until it waits again."""
        self._waiting.pop(connection, None)

    def close(self, connection: Connection) -> None:
        self._waiting.pop(connection, None)
        self._handshaking.pop(connection, None)
        self._reclaimed.discard(connection)
        client = self._client.pop(connection, None)
        if client is not None:
            self._by_client[client] -= 1
            if not self._by_client[client]:
                del self._by_client[client]

    def to_reclaim(self, has_input: Callable[[Connection], bool] = lambda connection: False) -> list[Connection]:
        """Waiting connections to shut down, oldest first, when slots run short (else none).
        One with input already received (`has_input`: a request on its way) is passed over and
        counts as waiting from now on.

        They stay counted until `close`: their handlers close them once shut down."""
        staying = len(self._client) - len(self._reclaimed)
        if staying < self._capacity - self._headroom:
            return []
        wanted = staying - (self._capacity - 2 * self._headroom)
        chosen: list[Connection] = []
        passed_over: list[tuple[Connection, bool]] = []
        for connection, first in list(self._waiting.items()):
            if len(chosen) == wanted:
                break
            del self._waiting[connection]
            if has_input(connection):
                passed_over.append((connection, first))
            else:
                chosen.append(connection)
        self._waiting.update(passed_over)
        self._reclaimed.update(chosen)
        return chosen

    def waiting_connections(self, *, carried_one: bool = False) -> list[Connection]:
        """Connections waiting for a request; with `carried_one`, only those that have carried one."""
        return [connection for connection, first in self._waiting.items() if not (carried_one and first)]
