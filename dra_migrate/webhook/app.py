"""Flask app factory: HTTP in and out, nothing else.

    POST /mutate        AdmissionReview (admission.k8s.io/v1 or v1beta1) -> AdmissionReview
    POST /mutate-noop   only with `noop_route`: the same envelope handling, always `allowed: true`
                        (the benchmark's baseline for "the server stack without conversion")
    GET  /healthz       the process answers
    GET  /readyz        certificate loaded and configuration valid
    GET  /metrics       Prometheus text format

A well-formed review always gets HTTP 200 with the decision inside (webhook/review.py); a
malformed one gets a 4xx JSON body shaped like a Kubernetes Status, and the server carries on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from dra_migrate.webhook import metrics
from dra_migrate.webhook.deadline import review_deadline
from dra_migrate.webhook.envelope import (
    AdmissionRequest,
    AdmissionResponse,
    InvalidReviewError,
    parse_review,
    render_review,
)
from dra_migrate.webhook.review import Reviewer

log = logging.getLogger(__name__)

# kube-apiserver limits request bodies to 3 MiB, so a bigger review cannot be a real one.
MAX_BODY_BYTES = 3 * 1024 * 1024
DRAIN_LIMIT_BYTES = 4 * MAX_BODY_BYTES
JSON = "application/json"


class RequestProblemError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _status_body(code: int, message: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "message": message}


def _json_response(payload: dict[str, Any], status: int = 200) -> Response:
    return Response(json.dumps(payload, separators=(",", ":")), status=status, mimetype=JSON)


def _problem_response(problem: RequestProblemError) -> Response:
    response = _json_response(_status_body(problem.code, problem.message), problem.code)
    if problem.code == 413:
        # Closing a connection with unread data resets it, and a client still sending would
        # see the reset instead of this answer: read a moderate excess first, then close.
        _discard_body(DRAIN_LIMIT_BYTES)
        response.headers["Connection"] = "close"
    return response


def _discard_body(limit: int) -> None:
    stream = request.environ.get("wsgi.input")
    left = limit
    try:
        while stream is not None and left > 0 and (chunk := stream.read(min(65536, left))):
            left -= len(chunk)
    except (OSError, ValueError):
        pass


def _read_body() -> bytes:
    """At most MAX_BODY_BYTES, whether or not the client sent a Content-Length (chunked)."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise RequestProblemError(413, f"body of {length} bytes exceeds the {MAX_BODY_BYTES}-byte limit")
    stream = request.environ["wsgi.input"]
    raw: bytes = stream.read(length if length is not None else MAX_BODY_BYTES + 1)
    if len(raw) > MAX_BODY_BYTES:
        raise RequestProblemError(413, f"body exceeds the {MAX_BODY_BYTES}-byte limit")
    return raw


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read_review() -> AdmissionRequest:
    if request.mimetype != JSON:
        raise RequestProblemError(415, f"Content-Type must be {JSON}, got {request.content_type or 'none'!r}")
    raw = _read_body()
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


def create_app(
    reviewer: Reviewer,
    *,
    readiness: Callable[[], list[str]] = list,
    noop_route: bool = False,
) -> Flask:
    """`readiness` returns what is not ready yet (empty when ready)."""
    app = Flask("webhook")
    mode = reviewer.mode

    @app.post("/mutate")
    def mutate() -> Response:
        started = time.perf_counter()
        arrived = time.monotonic()
        try:
            admission = _read_review()
        except RequestProblemError as problem:
            metrics.record_review(metrics.INVALID_OUTCOME, time.perf_counter() - started)
            return _problem_response(problem)
        with review_deadline(arrived):
            decision = reviewer.review(admission)
        response = _json_response(render_review(admission.api_version, admission.uid, decision.response))
        metrics.record_review(str(decision.outcome), time.perf_counter() - started, decision.converted, mode)
        return response

    if noop_route:

        @app.post("/mutate-noop")
        def mutate_noop() -> Response:
            try:
                admission = _read_review()
            except RequestProblemError as problem:
                return _problem_response(problem)
            return _json_response(render_review(admission.api_version, admission.uid, AdmissionResponse(True)))

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
        return _problem_response(RequestProblemError(code, exc.description or exc.name))

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _json_response(_status_body(500, f"internal error: {type(exc).__name__}"), 500)

    return app
