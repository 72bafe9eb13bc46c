"""How large a review the server reads, and how many bytes of request bodies a worker holds at once.

The largest review: kube-apiserver checks a client's request body against 3 MiB (k8s.io/apiserver
pkg/server/config.go, MaxRequestBodyBytes), sized as twice etcd's recommended request limit of
1.5 MiB, on the grounds that JSON is at most twice the protobuf stored. The review a webhook gets is
not that body: it is the object after defaulting, managedFields and earlier webhooks, re-encoded as
JSON, and nothing checks its size on the way out. What bounds it is that the pod must still be
stored: at most 1.5 MiB of protobuf in etcd (its default --max-request-bytes). JSON takes more than
twice that in the worst case: a string byte that JSON escapes (a control character) takes six bytes.
So the review of any pod etcd stores is under 6 x 1.5 MiB plus the envelope: MAX_REVIEW_BYTES. (A
larger one is answered 413; a cluster that raised etcd's limit needs a larger bound here.)

The budget: what a worker reads is held in memory until its review is answered, and a client can
hold it longer by sending slowly (5 s at most, webhook/deadline.py). A request's declared length
(the bound itself when it declares none: chunked) is taken from the worker's BODY_BUDGET_BYTES
before its body is read and given back when it is answered or its connection is cut. A request
that does not fit is refused at once with the overload answer (webhook/shedding.py), so memory
stays bounded by the budget, whatever K slow or large uploads do. One largest review fits, next to
hundreds of ordinary ones (a few KiB each).
"""

from __future__ import annotations

MIB = 1024 * 1024
MAX_REVIEW_BYTES = 10 * MIB
BODY_BUDGET_BYTES = 16 * MIB


class BodyBudget:
    """The bytes of request bodies one worker holds; not thread-safe (one greenlet runs at a time)."""

    def __init__(self, limit: int = BODY_BUDGET_BYTES) -> None:
        self._limit = limit
        self.held = 0

    def take(self, size: int) -> bool:
        """Hold `size` bytes if they fit; False (nothing held) when they do not."""
        if self.held + size > self._limit:
            return False
        self.held += size
        return True

    def give_back(self, size: int) -> None:
        self.held -= size


def declared_size(headers: list[tuple[str, str]]) -> int:
    """The body size a request's headers declare, capped at MAX_REVIEW_BYTES (a larger one is
    refused unread); the cap itself when it declares none (chunked, or an unusable length)."""
    lengths = [value for name, value in headers if name.upper() == "CONTENT-LENGTH"]
    if len(lengths) == 1 and lengths[0].strip().isdigit():
        return min(int(lengths[0]), MAX_REVIEW_BYTES)
    return MAX_REVIEW_BYTES
