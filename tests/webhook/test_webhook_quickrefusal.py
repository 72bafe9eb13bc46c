"""Which requests are refused from their bytes, before gunicorn parses them (webhook/quickrefusal.py):
only the plainest review request, whose end is certain; everything else is left to gunicorn."""

from __future__ import annotations

import pytest

from dra_migrate.webhook.quickrefusal import MAX_BODY_BYTES, refusable_size

HEAD = b"POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n"


def test_a_plain_review_request_ends_after_its_declared_body() -> None:
    assert refusable_size(HEAD + b"{}   ") == len(HEAD) + 5
    assert refusable_size(HEAD) == len(HEAD) + 5  # the body not read yet: its end is still certain
    pipelined = HEAD + b"{}   " + HEAD + b"{}   "
    assert refusable_size(pipelined) == len(HEAD) + 5
    spaced = HEAD.replace(b"Content-Length: 5", b"content-length:\t5 ")
    assert refusable_size(spaced) == len(spaced) + 5


@pytest.mark.parametrize(
    "head",
    [
        HEAD[:-2],  # the header block not all here
        HEAD.replace(b"POST /mutate", b"POST /mutate-noop"),
        HEAD.replace(b"POST", b"post"),
        HEAD.replace(b"HTTP/1.1", b"HTTP/1.0"),
        HEAD.replace(b"/mutate", b"/mutate?x=1"),
        HEAD.replace(b"Content-Length: 5\r\n", b""),  # no length
        HEAD.replace(b"Content-Length: 5", b"Content-Length: 5\r\nContent-Length: 5"),
        HEAD.replace(b"Content-Length: 5", b"Content-Length: +5"),
        HEAD.replace(b"Content-Length: 5", b"Content-Length: 5, 5"),
        HEAD.replace(b"Content-Length: 5", b"Content-Length : 5"),
        HEAD.replace(b"Content-Length: 5", b"Transfer-Encoding: chunked\r\nContent-Length: 5"),
        HEAD.replace(b"Host: webhook", b"Connection: close"),
        HEAD.replace(b"Host: webhook", b"Expect: 100-continue"),
        HEAD.replace(b"Host: webhook\r\n", b"Host: webhook\r\n folded\r\n"),  # obsolete line folding
        HEAD.replace(b"Host: webhook\r\n", b"Host: web\nhook\r\n"),  # a bare LF
        HEAD.replace(b"Host: webhook\r\n", b"Host: web\rhook\r\n"),
        HEAD.replace(b"Host: webhook", b"Host: w\xc3\xa9bhook"),
        HEAD.replace(b"Host: webhook", b"Host webhook"),
        HEAD.replace(b"Content-Length: 5", f"Content-Length: {MAX_BODY_BYTES + 1}".encode()),
        b"\r\n" + HEAD,
    ],
)
def test_anything_less_plain_is_left_to_gunicorn(head: bytes) -> None:
    assert refusable_size(head + b"{}   ") is None


def test_a_header_block_longer_than_gunicorn_reads_at_once_is_left_to_it() -> None:
    long = HEAD.replace(b"Host: webhook", b"X-Padding: " + b"a" * 9000)
    assert refusable_size(long) is None
