"""The gunicorn worker's socket wrapper: a response's header block and body leave in one write."""

from __future__ import annotations

from typing import Any

from dra_migrate.webhook.worker import HeadersWithBody


class RecordingSocket:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", 8443)


def test_header_block_waits_for_the_body() -> None:
    sock = RecordingSocket()
    out = HeadersWithBody(sock)
    out.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
    assert sock.writes == []
    out.sendall(b"{}")
    out.flush()
    # One write: one TLS record and one system call per response, not two.
    assert sock.writes == [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"]


def test_a_response_without_body_is_flushed() -> None:
    sock = RecordingSocket()
    out = HeadersWithBody(sock)
    out.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
    out.flush()
    out.flush()
    assert sock.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]


def test_later_writes_pass_straight_through_and_other_calls_reach_the_socket() -> None:
    sock = RecordingSocket()
    out: Any = HeadersWithBody(sock)
    for part in (b"head", b"body-1", b"body-2"):
        out.sendall(part)
    assert sock.writes == [b"headbody-1", b"body-2"]
    assert out.getsockname() == ("127.0.0.1", 8443)
