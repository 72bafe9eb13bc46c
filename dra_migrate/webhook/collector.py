"""Deletes the ResourceClaimTemplates dra-migrate made that no pod uses any more.

A template cannot be owned by the pods that use it: at admission the pod has no UID yet, so no
owner reference can name it. Instead one worker of each webhook pod (an flock on a file all its
workers share; no leader among replicas) looks, every so often, at dra-migrate's templates (its
managed-by label) older than the grace period (`webhook.unusedTemplateGraceSeconds`, 10 minutes
by default), against the pods of their namespace, read from the API:

1. a template no pod references is marked: the annotation `dra-migrate.io/unused-since`, written
   with its resourceVersion as a precondition. From then on no review uses it: a review that
   needs that content gives the pod the next name (webhook/templates.py);
2. a marked template that a pod references again (a pod admitted before the mark reached every
   replica) is unmarked;
3. a template marked for the grace period and still referenced by no pod is deleted, with its uid
   and resourceVersion as preconditions (a template changed or re-marked meanwhile stays).

Why this is safe without a leader: a review sees the mark within 15 s (a watched copy silent for
longer is not trusted, webhook/watchcache.py), and the pod of a review that used the template
before that is in etcd within the apiserver's request timeout (60 s). With a grace period of at
least 90 s, the pods listed before the deletion include every pod that may use the template, so a
template is deleted only when no pod uses it or ever will. Replicas doing the same work at once
meet the preconditions: the second mark or delete fails (409) and is skipped.

A namespace filled up to `webhook.maxTemplatesPerNamespace` with templates no pod uses (direct
POSTs to /mutate, pods that failed validation after admission) heals within two grace periods.
"""

from __future__ import annotations

import fcntl
import logging
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from dra_migrate.webhook.resource_api import PODS, ApiError, ApiResource, ResourceApi, list_all
from dra_migrate.webhook.templates import MANAGED_SELECTOR, UNUSED_ANNOTATION

log = logging.getLogger(__name__)

LOCK_NAME = "dra-migrate-template-collector.lock"
LONGEST_PAUSE_SECONDS = 300.0  # a pod list per namespace holding old templates, per pass: keep passes rare


@dataclass
class Collected:
    marked: int = 0
    unmarked: int = 0
    deleted: int = 0


def _timestamp(value: Any) -> float | None:
    """An RFC 3339 time of the API (`2026-01-01T00:00:00Z`) as a Unix time, or None."""
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _now_text(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def referenced_templates(pods: Iterable[Mapping[str, Any]]) -> set[str]:
    """The template names the pods' claims are made from."""
    names: set[str] = set()
    for pod in pods:
        spec = pod.get("spec")
        claims = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
        for claim in claims if isinstance(claims, list) else ():
            name = claim.get("resourceClaimTemplateName") if isinstance(claim, Mapping) else None
            if isinstance(name, str):
                names.add(name)
    return names


def marked_since(template: Mapping[str, Any]) -> float | None:
    annotations = (template.get("metadata") or {}).get("annotations")
    value = annotations.get(UNUSED_ANNOTATION) if isinstance(annotations, Mapping) else None
    return None if value is None else _timestamp(value) or 0.0


class TemplateCollector:
    def __init__(
        self,
        api: ResourceApi,
        resource: Callable[[], ApiResource | None],
        *,
        grace_seconds: float,
        timeout: float,
        lock_directory: Path | None = None,
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._api = api
        self._resource = resource  # the templates' API version, once the cluster's release is known
        self._grace = grace_seconds
        self._timeout = timeout
        self._lock_path = (lock_directory or Path(tempfile.gettempdir())) / LOCK_NAME
        self._lock_file: IO[bytes] | None = None
        self._on_api_error = on_api_error
        self._clock = clock
        self._stop = threading.Event()

    @property
    def pause(self) -> float:
        return min(LONGEST_PAUSE_SECONDS, max(1.0, self._grace / 4))

    def start(self) -> None:
        threading.Thread(target=self._run, name="template-collector", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.pause * random.uniform(0.8, 1.2)):
            if not self._this_worker_collects():
                continue
            try:
                collected = self.collect()
            except ApiError as exc:
                self._on_api_error(exc.operation, exc.reason)
                log.warning("unused ResourceClaimTemplates not collected this time: %s", exc.detail)
            except Exception:
                log.exception("unexpected error collecting unused ResourceClaimTemplates")
            else:
                if collected.deleted or collected.marked:
                    log.info(
                        "unused ResourceClaimTemplates: %d marked, %d deleted, %d in use again",
                        collected.marked,
                        collected.deleted,
                        collected.unmarked,
                    )

    def _this_worker_collects(self) -> bool:
        """True in the one worker of this pod that holds the lock (taken for good by the first to ask)."""
        if self._lock_file is not None:
            return True
        try:
            handle = self._lock_path.open("ab")
        except OSError:
            return True  # no shared directory: every worker collects (preconditions keep it correct)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock_file = handle
        return True

    def collect(self) -> Collected:
        """One pass over dra-migrate's templates (see the module's docstring)."""
        resource = self._resource()
        collected = Collected()
        if resource is None:
            return collected
        now = self._clock()
        by_namespace: dict[str, list[dict[str, Any]]] = {}
        for template in list_all(self._api, resource, None, self._timeout, label_selector=MANAGED_SELECTOR).items:
            metadata = template.get("metadata") or {}
            created = _timestamp(metadata.get("creationTimestamp"))
            if created is not None and now - created >= self._grace and metadata.get("namespace"):
                by_namespace.setdefault(str(metadata["namespace"]), []).append(template)
        for namespace, templates in sorted(by_namespace.items()):
            in_use = referenced_templates(list_all(self._api, PODS, namespace, self._timeout).items)
            for template in templates:
                self._settle(resource, namespace, template, in_use, now, collected)
        return collected

    def _settle(
        self,
        resource: ApiResource,
        namespace: str,
        template: Mapping[str, Any],
        in_use: set[str],
        now: float,
        collected: Collected,
    ) -> None:
        metadata = template["metadata"]
        name, version = str(metadata["name"]), str(metadata.get("resourceVersion") or "")
        since = marked_since(template)
        try:
            if name in in_use:
                if since is not None:
                    self._annotate(resource, namespace, name, version, None)
                    collected.unmarked += 1
            elif since is None:
                self._annotate(resource, namespace, name, version, _now_text(now))
                collected.marked += 1
            elif now - since >= self._grace:
                uid = str(metadata.get("uid") or "")
                self._api.delete_exactly(resource, namespace, name, self._timeout, uid=uid, resource_version=version)
                collected.deleted += 1
        except ApiError as exc:
            if exc.status not in (404, 409):  # gone, or changed by another replica: its turn
                raise

    def _annotate(self, resource: ApiResource, namespace: str, name: str, version: str, value: str | None) -> None:
        patch = {"metadata": {"resourceVersion": version, "annotations": {UNUSED_ANNOTATION: value}}}
        self._api.patch(resource, namespace, name, patch, self._timeout)


def lock_directory() -> Path | None:
    """The directory the workers of one `serve` share (its metrics directory), if any."""
    shared = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return Path(shared) if shared else None
