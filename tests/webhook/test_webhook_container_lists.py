"""Every reader of a pod's containers takes them from the same lists (dra_migrate/engine/containers.py):
a device asked for in any container the API lets ask for one is seen by the webhook's match
condition, its checks, the engine's conversion and the translator's device view alike; one in an
ephemeral container (which the API forbids) by none of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cel
import kubernetes_validate
import pytest
from pods import container, gpu, pod

from dra_migrate.engine import ALL_CONTAINERS, REQUESTING_CONTAINERS, convert, default_config, pod_containers
from dra_migrate.translator.renders.devices import device_view
from dra_migrate.webhook.match_conditions import expression
from dra_migrate.webhook.podcheck import mapped_requests


def _pod_asking_in(kind: str) -> dict[str, Any]:
    """A pod whose only device request is in one container of `kind` (an app container without
    devices keeps the pod valid)."""
    spec: dict[str, Any] = {"containers": [container("app")]}
    spec.setdefault(kind, []).append(container("asks", gpu(2)))
    return pod(spec, namespace="ns")


@pytest.mark.parametrize("kind", ALL_CONTAINERS)
def test_a_device_request_is_seen_by_every_reader_or_by_none(kind: str) -> None:
    config = default_config()
    manifest = _pod_asking_in(kind)
    asks = kind in REQUESTING_CONTAINERS
    assert [(k, c["name"]) for k, _, c in pod_containers(manifest["spec"]) if c["name"] == "asks"] == [(kind, "asks")]

    assert cel.evaluate(expression(config), {"object": manifest}) is asks  # the webhook is called
    assert bool(mapped_requests(manifest, config)) is asks  # its checks count the request
    result = convert(manifest, config)
    assert (result.changed, bool(result.templates)) == (asks, asks)  # the engine converts it
    view = device_view([manifest], config)
    asking = {key[-1]: devices for key, devices in view.items()}
    assert ("asks" in asking and bool(asking["asks"])) is asks  # the translator's device view shows it


SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


@pytest.mark.parametrize("release", sorted(d.name for d in SCHEMAS.glob("v1.3*-local")))
def test_the_lists_are_the_apis(release: str) -> None:
    """From each release's OpenAPI schema (kubernetes-validate): the PodSpec fields that list
    containers, and which of their item types may set resources."""
    pod_spec = json.loads((SCHEMAS / release / "podspec-v1.json").read_text())["properties"]
    lists = {
        field: schema["items"]["$ref"].rsplit(".", 1)[-1]
        for field, schema in pod_spec.items()
        if isinstance(schema.get("items"), dict) and schema["items"].get("$ref", "").endswith("Container")
    }
    assert set(lists) == set(ALL_CONTAINERS), lists
    ephemeral = json.loads((SCHEMAS / release / "ephemeralcontainer-v1.json").read_text())["properties"]
    assert "Resources are not allowed for ephemeral containers" in ephemeral["resources"]["description"]
    assert {field for field, item in lists.items() if item == "Container"} == set(REQUESTING_CONTAINERS)
