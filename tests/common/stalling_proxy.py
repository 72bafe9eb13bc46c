"""A TCP proxy that can go silent without closing anything: what a NAT or load balancer that forgot
its flows does to the connections through it (bytes read and dropped, no reset, no FIN)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from contextlib import suppress
from typing import Any


class StallingProxy:
    """Forwards TCP to one address; `stall()` silences every connection open so far, for good (and,
    with `new_too`, every later one as well: the whole path to the API gone quiet)."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._links: list[dict[str, Any]] = []
        self._closed = False
        self._stall_new = False
        threading.Thread(target=self._accept, name="stalling-proxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            link = {"stalled": self._stall_new, "sockets": (client, upstream)}
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._links.append(link)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink, link), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, link: Mapping[str, Any]) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                if not link["stalled"]:  # a stalled link swallows everything, and closes nothing
                    sink.sendall(data)
            if not link["stalled"]:
                sink.shutdown(socket.SHUT_WR)

    def stall(self, *, new_too: bool = False) -> int:
        """Every connection open now stops forwarding; returns how many there are."""
        with self._lock:
            self._stall_new = new_too
            for link in self._links:
                link["stalled"] = True
            return len(self._links)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            links, self._links = self._links, []
        self._listener.close()
        for link in links:
            for sock in link["sockets"]:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
