"""Templates the webhook made that no pod references are collected, on a real server (two workers, one
collects): marked first, then deleted after the grace period if still unreferenced; a template a pod
uses is kept, and a marked one is never used by a review."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from admission import make_review
from fakekube import FakeKubeServer
from pods import gpu_pod
from polling import wait_for
from webhook_support import StartServer, patched, watching

from dra_migrate.engine import convert, default_config

GRACE_S = 2.0
UNUSED = "dra-migrate.io/unused-since"


def _template(fake: Any, namespace: str, name: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = fake.templates.get((namespace, name))
    return found


def _admit(fake: Any, server: Any, name: str, count: int, namespace: str = "team-a") -> dict[str, Any]:
    """Review a pod and store it as the apiserver would (the collector lists pods)."""
    pod = gpu_pod(name=name, count=count)
    stored = patched(pod, server.review(make_review(pod, namespace=namespace)))
    stored["metadata"]["namespace"] = namespace
    fake.put("pods", stored)
    return stored


def test_unreferenced_templates_are_marked_then_deleted_and_used_ones_kept(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake = fake_kube.fake
    server = start_server(
        kubeconfig=kubeconfig, workers=2, config={"webhook": {"unusedTemplateGraceSeconds": GRACE_S}}
    )
    watching(fake, "resourceclaimtemplates")
    used = convert(gpu_pod(count=1), default_config()).templates[0]["metadata"]["name"]
    gone = convert(gpu_pod(count=2), default_config()).templates[0]["metadata"]["name"]
    _admit(fake, server, "keeps", 1)
    _admit(fake, server, "leaves", 2)
    fake.delete("pods", "team-a", "leaves")  # its pod is deleted: nothing references the template
    started = time.monotonic()
    wait_for(lambda: _template(fake, "team-a", gone) is None, what="the unused template deleted", timeout=60)
    # Marked before it was deleted, not before the grace period (counted from its creation) had passed twice.
    assert time.monotonic() - started >= GRACE_S
    assert any(kind == "MODIFIED" and obj["metadata"]["name"] == gone for _, _, kind, obj in fake.events)
    kept = _template(fake, "team-a", used)
    assert kept is not None and UNUSED not in (kept["metadata"].get("annotations") or {})
    # Once gone, the next pod of that shape gets it created again.
    _admit(fake, server, "again", 2)
    assert _template(fake, "team-a", gone) is not None
    assert fake.calls_to("DELETE") == 1  # one worker collects; the other never deleted anything


def test_a_marked_template_is_not_used_by_a_review(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    fake = fake_kube.fake
    template = convert(gpu_pod(), default_config()).templates[0]
    name = template["metadata"]["name"]
    template["metadata"]["annotations"] = {UNUSED: "2026-01-01T00:00:00Z"}
    fake.add_template(template, "team-a")
    server = start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake, "resourceclaimtemplates")
    pod = _admit(fake, server, "new", 1)
    assert [claim["resourceClaimTemplateName"] for claim in pod["spec"]["resourceClaims"]] == [f"{name}-2"]
