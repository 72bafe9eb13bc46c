"""Flask app factory: HTTP in and out, nothing else.

    POST /mutate        AdmissionReview (admission.k8s.io/v1 or v1beta1) -> AdmissionReview
    POST /mutate-noop   only with `noop_route`: the same envelope handling, always `allowed: true`
                        (the benchmark's baseline for "the server stack without conversion")
    GET  /healthz       the process answers
    GET  /readyz        certificate loaded and configuration valid
    GET  /metrics       Prometheus text format

With `require_client_certificate` (serve --client-ca) the review endpoints answer 401 to a
client that presented no verified certificate.

A well-formed review always gets HTTP 200 with the decision inside (webhook/review.py); a
malformed one gets a 4xx JSON body shaped like a Kubernetes Status, and the server carries on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import gevent
from flask import Flask, Response, request
from gunicorn.http.errors import ParseException
from werkzeug.exceptions import HTTPException

from dra_migrate.webhook import deadline, metrics
from dra_migrate.webhook.bodies import MAX_REVIEW_BYTES
from dra_migrate.webhook.envelope import (
    AdmissionRequest,
    AdmissionResponse,
    InvalidReviewError,
    parse_review,
    render_review,
)
from dra_migrate.webhook.review import Reviewer

log = logging.getLogger(__name__)

# The largest review of a pod kube-apiserver can store (webhook/bodies.py); a bigger one is not real.
MAX_BODY_BYTES = MAX_REVIEW_BYTES
DRAIN_LIMIT_BYTES = 2 * MAX_BODY_BYTES
JSON = "application/json"


class RequestProblemError(Exception):
    def __init__(self, code: int, message: str, close: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.close = close  # the rest of the stream is unread or unreadable: no next request on it


Environ = dict[str, Any]
# (HTTP status, JSON body, extra headers): what a review endpoint answers, before any framework.
Answer = tuple[int, bytes, list[tuple[str, str]]]


def _status_body(code: int, message: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "message": message}


def _json_bytes(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def _json_response(payload: dict[str, Any], status: int = 200) -> Response:
    return Response(_json_bytes(payload), status=status, mimetype=JSON)


class BodyTimeoutError(Exception):
    """The body did not arrive within a review's time (raised by gevent.Timeout)."""


def _problem_answer(environ: Environ, problem: RequestProblemError) -> Answer:
    headers: list[tuple[str, str]] = []
    if problem.close:
        headers.append(("Connection", "close"))
    if problem.code == 413:
        # Closing a connection with unread data resets it, and a client still sending would
        # see the reset instead of this answer: read a moderate excess first, then close.
        _discard_body(environ, DRAIN_LIMIT_BYTES)
        headers.append(("Connection", "close"))
    return problem.code, _json_bytes(_status_body(problem.code, problem.message)), headers


def _as_response(answer: Answer) -> Response:
    status, body, headers = answer
    response = Response(body, status=status, mimetype=JSON)
    for name, value in headers:
        response.headers[name] = value
    return response


def _discard_body(environ: Environ, limit: int) -> None:
    stream = environ.get("wsgi.input")
    left = limit
    try:
        while stream is not None and left > 0 and (chunk := stream.read(min(65536, left))):
            left -= len(chunk)
    except (OSError, ValueError):
        pass


def _content_length(environ: Environ) -> int | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None
    return length if length >= 0 else None


def _read_body(environ: Environ) -> bytes:
    """At most MAX_BODY_BYTES, whether or not the client sent a Content-Length (chunked)."""
    length = _content_length(environ)
    if length is not None and length > MAX_BODY_BYTES:
        raise RequestProblemError(413, f"body of {length} bytes exceeds the {MAX_BODY_BYTES}-byte limit")
    stream = environ["wsgi.input"]
    try:
        # kube-apiserver sends a body at once; one that trickles in holds its buffer as long as it lasts
        with gevent.Timeout(deadline.REVIEW_SECONDS, BodyTimeoutError):
            raw: bytes = stream.read(length if length is not None else MAX_BODY_BYTES + 1)
    except ParseException as exc:  # a malformed chunked body (a chunk size or extension gunicorn refuses)
        raise RequestProblemError(400, f"malformed request body: {type(exc).__name__}", close=True) from None
    except BodyTimeoutError:
        message = f"request body not received within {deadline.REVIEW_SECONDS:g} s"
        raise RequestProblemError(408, message, close=True) from None
    if len(raw) > MAX_BODY_BYTES:
        raise RequestProblemError(413, f"body exceeds the {MAX_BODY_BYTES}-byte limit")
    return raw


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read_review(environ: Environ) -> AdmissionRequest:
    content_type = environ.get("CONTENT_TYPE") or ""
    if content_type.split(";", 1)[0].strip().lower() != JSON:
        raise RequestProblemError(415, f"Content-Type must be {JSON}, got {content_type or 'none'!r}")
    raw = _read_body(environ)
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestProblemError(400, f"body is not valid JSON: {exc}") from None
    except RecursionError:
        # Go's JSON (the apiserver's) nests up to 10,000 levels, Python's parser about 900.
        raise RequestProblemError(400, "body is JSON nested deeper than this server parses") from None
    try:
        return parse_review(body)
    except InvalidReviewError as exc:
        raise RequestProblemError(400, f"not a valid AdmissionReview: {exc}") from None


# An HTTP error, not a denial: kube-apiserver then applies the webhook's failurePolicy at once. No
# Retry-After: with it, client-go calls again until timeoutSeconds runs out (tests/e2e/test_refusal_status.py).
_OVERLOADED = _json_bytes(
    _status_body(429, "dra-migrate is overloaded and did not review this pod; retry (the pod's controller does)")
)
# What a worker answers, without running the app, to a review it refuses under overload (webhook/shedding.py):
# an error status without Retry-After, so that kube-apiserver applies the failurePolicy at once.
OVERLOADED_RESPONSE = (
    b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(_OVERLOADED)}\r\n\r\n".encode()
    + _OVERLOADED
)


def _client_certificate_missing(environ: Environ) -> RequestProblemError | None:
    """With `serve --client-ca` TLS asks every client for a certificate and verifies the ones it
    gets (an invalid one fails the handshake), but lets clients without one in, so that kubelet
    probes reach /healthz and /readyz. Reviews need the verified certificate."""
    sock = environ.get("gunicorn.socket")
    try:
        presented = sock is not None and hasattr(sock, "getpeercert") and bool(sock.getpeercert())
    except (OSError, ValueError):
        presented = False
    if presented:
        return None
    return RequestProblemError(401, "a client certificate signed by the configured --client-ca is required")


class ReviewEndpoints:
    """POST /mutate (and /mutate-noop) on the bare WSGI environ.

    They are most of the traffic, and Flask's request and response objects cost about a
    quarter of a review's CPU (0.2 ms), so `create_app` serves them from a WSGI middleware in
    front of Flask's routing; Flask routes the rest and keeps 404/405 for these paths.
    """

    def __init__(self, reviewer: Reviewer, *, require_client_certificate: bool = False) -> None:
        self._reviewer = reviewer
        self._mode = reviewer.mode
        self._require_certificate = require_client_certificate

    def _read(self, environ: Environ) -> AdmissionRequest:
        if self._require_certificate and (missing := _client_certificate_missing(environ)) is not None:
            raise missing
        return _read_review(environ)

    def mutate(self, environ: Environ) -> Answer:
        started = time.perf_counter()
        arrived = time.monotonic()
        try:
            admission = self._read(environ)
        except RequestProblemError as problem:
            metrics.record_review(metrics.INVALID_OUTCOME, time.perf_counter() - started)
            return _problem_answer(environ, problem)
        with deadline.review_deadline(arrived):
            decision = self._reviewer.review(admission)
        body = _json_bytes(render_review(admission.api_version, admission.uid, decision.response))
        metrics.record_review(str(decision.outcome), time.perf_counter() - started, decision.converted, self._mode)
        return 200, body, []

    def mutate_noop(self, environ: Environ) -> Answer:
        try:
            admission = self._read(environ)
        except RequestProblemError as problem:
            return _problem_answer(environ, problem)
        return 200, _json_bytes(render_review(admission.api_version, admission.uid, AdmissionResponse(True))), []


class _PostRoutes:
    """WSGI middleware: the given POST paths answered directly, everything else passed to `inner`."""

    def __init__(self, inner: Any, routes: dict[str, Callable[[Environ], Answer]]) -> None:
        self._inner = inner
        self._routes = routes

    def __call__(self, environ: Environ, start_response: Any) -> Any:
        handler = self._routes.get(environ.get("PATH_INFO", "")) if environ.get("REQUEST_METHOD") == "POST" else None
        if handler is None:
            return self._inner(environ, start_response)
        try:
            status, body, extra = handler(environ)
        except Exception as exc:
            log.exception("unhandled error on POST %s", environ.get("PATH_INFO"))
            status, body, extra = 500, _json_bytes(_status_body(500, f"internal error: {type(exc).__name__}")), []
        headers = [("Content-Type", JSON), ("Content-Length", str(len(body))), *extra]
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]


def create_app(
    reviewer: Reviewer,
    *,
    readiness: Callable[[], list[str]] = list,
    noop_route: bool = False,
    require_client_certificate: bool = False,
) -> Flask:
    """`readiness` returns what is not ready yet (empty when ready)."""
    app = Flask("webhook")
    endpoints = ReviewEndpoints(reviewer, require_client_certificate=require_client_certificate)
    routes: dict[str, Callable[[Environ], Answer]] = {"/mutate": endpoints.mutate}

    @app.post("/mutate")
    def mutate() -> Response:  # reached only without the middleware (it answers POST first)
        return _as_response(endpoints.mutate(request.environ))

    if noop_route:
        routes["/mutate-noop"] = endpoints.mutate_noop

        @app.post("/mutate-noop")
        def mutate_noop() -> Response:
            return _as_response(endpoints.mutate_noop(request.environ))

    @app.get("/healthz")
    def healthz() -> Response:
        return _json_response({"status": "ok"})

    @app.get("/readyz")
    def readyz() -> Response:
        problems = readiness()
        if problems:
            return _json_response({"status": "not ready", "problems": problems}, 503)
        return _json_response({"status": "ready"})

    @app.get("/metrics")
    def metrics_endpoint() -> Response:
        body, content_type = metrics.exposition()
        return Response(body, content_type=content_type)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = exc.code or 500
        return _as_response(_problem_answer(request.environ, RequestProblemError(code, exc.description or exc.name)))

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _json_response(_status_body(500, f"internal error: {type(exc).__name__}"), 500)

    app.wsgi_app = _PostRoutes(app.wsgi_app, routes)  # type: ignore[method-assign]
    return app
