"""Pod checks before conversion: the type table agrees with the Pod schema; the per-pod limit denies early."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from admission import make_review
from fakekube import FakeKube
from webhook_support import ServerProcess, StartServer

from dra_migrate.engine import default_config, parse_config
from dra_migrate.webhook import review as review_module
from dra_migrate.webhook.podcheck import MAX_MAPPED_REQUESTS, POD, ListOf, MapOf, Shape
from dra_migrate.webhook.responses import Outcome
from dra_migrate.webhook.review import Reviewer

SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def definitions(release: str) -> dict[str, Any]:
    defs: dict[str, Any] = json.loads((SCHEMAS / f"v{release}.0-local" / "_definitions.json").read_text())["$defs"]
    return defs


def resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def schema_types(schema: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    schema = resolve(schema, defs)
    if "oneOf" in schema:  # Quantity: string or number
        return set().union(*(schema_types(option, defs) for option in schema["oneOf"]))
    declared = schema.get("type", "object")
    return {declared} if isinstance(declared, str) else set(declared) - {"null"}


def leaves(
    shape: Shape, schema: dict[str, Any], defs: dict[str, Any], path: str
) -> Iterator[tuple[str, Shape, set[str]]]:
    """(path, our shape, the schema's types) for every node of the table."""
    schema = resolve(schema, defs)
    types = schema_types(schema, defs)
    yield path, shape, types
    if isinstance(shape, ListOf):
        yield from leaves(shape.item, schema["items"], defs, f"{path}[]")
    elif isinstance(shape, MapOf):
        yield from leaves(shape.value, schema["additionalProperties"], defs, f"{path}{{}}")
    elif isinstance(shape, dict):
        for key, child in shape.items():
            assert key in schema.get("properties", {}), f"{path}.{key} is not a Pod field"
            yield from leaves(child, schema["properties"][key], defs, f"{path}.{key}")


@pytest.mark.parametrize("release", ["1.34", "1.37"])
def test_type_table_agrees_with_the_pod_schema(release: str) -> None:
    defs = definitions(release)
    pod_schema = defs["io.k8s.api.core.v1.Pod"]
    # `source` (pre-1.31 pod claims) is gone from the schema; the apiserver drops it, the check
    # only makes sure the engine can read it when something else sends it.
    checked = 0
    for path, shape, types in leaves(_without_source(POD), pod_schema, defs, "pod"):
        if isinstance(shape, ListOf):
            assert types == {"array"}, path
        elif isinstance(shape, dict | MapOf):
            assert types == {"object"}, path
        else:
            ours = {JSON_TYPES[t] for t in shape}
            # Python's int is also a JSON number; a quantity accepts both.
            assert types <= ours | ({"number"} if "integer" in ours else set()), (path, types, ours)
            assert "string" not in types or "string" in ours, path
            checked += 1
    assert checked >= 20


def _without_source(table: dict[str, Shape]) -> dict[str, Shape]:
    spec = table["spec"]
    assert isinstance(spec, dict)
    claims = spec["resourceClaims"]
    assert isinstance(claims, ListOf) and isinstance(claims.item, dict)
    item = {key: value for key, value in claims.item.items() if key != "source"}
    return {**table, "spec": {**spec, "resourceClaims": ListOf(item)}}


def accel_pod(containers: int, per_container: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "wide"},
        "spec": {
            "containers": [
                {
                    "name": f"c{c}",
                    "image": "x",
                    "resources": {"limits": {f"accel.test/m{c}x{i}": 1 for i in range(per_container)}},
                }
                for c in range(containers)
            ]
        },
    }


ACCEL = {
    "builtinMappings": False,
    "mappings": [{"pattern": r"accel\.test/(?P<m>[a-z0-9]+)", "deviceClassName": "${m}.accel.test"}],
}


@pytest.fixture
def reviewer() -> Reviewer:
    return Reviewer.for_api(parse_config(ACCEL), FakeKube())


def test_the_limit_converts_up_to_it(reviewer: Reviewer) -> None:
    decision = reviewer.review(_request(accel_pod(4, MAX_MAPPED_REQUESTS // 4)))
    assert decision.outcome is Outcome.PATCHED


def test_over_the_limit_is_denied_before_any_conversion(reviewer: Reviewer, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_conversion(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the engine ran for a pod over the limit")

    monkeypatch.setattr(review_module, "convert", no_conversion)
    decision = reviewer.review(_request(accel_pod(1, 500)))
    assert decision.outcome is Outcome.DENIED_INVALID
    assert decision.response.status_code == 422
    message = decision.response.message or ""
    assert "500 device-plugin resources" in message and f"at most {MAX_MAPPED_REQUESTS}" in message
    assert "dra-migrate.io/skip=true" in message


def test_opted_out_pods_are_not_limited(reviewer: Reviewer) -> None:
    pod = accel_pod(1, 100)
    pod["metadata"]["labels"] = {"dra-migrate.io/skip": "true"}
    assert reviewer.review(_request(pod)).outcome is Outcome.OPTED_OUT


def _request(pod: dict[str, Any]) -> Any:
    from dra_migrate.webhook.envelope import parse_review

    return parse_review(make_review(pod))


def test_real_server_denies_a_wide_pod_with_the_reason(start_server: StartServer, kubeconfig: Path) -> None:
    server: ServerProcess = start_server(kubeconfig=kubeconfig, config=ACCEL)
    response = server.review(make_review(accel_pod(2, 400)))
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert "800 device-plugin resources" in response["status"]["message"]
    # The server carries on: a normal pod is converted right after.
    assert server.review(make_review(accel_pod(1, 1)))["patchType"] == "JSONPatch"


def test_default_config_has_no_limit_surprise_for_ordinary_pods() -> None:
    reviewer = Reviewer.for_api(default_config(), FakeKube())
    pod = accel_pod(0, 0)
    pod["spec"]["containers"] = [
        {"name": f"c{i}", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}} for i in range(8)
    ]
    assert reviewer.review(_request(pod)).outcome is Outcome.PATCHED
