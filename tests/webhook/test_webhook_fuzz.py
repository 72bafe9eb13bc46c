"""No review gets a 500: wrong types at every level, deep nesting, huge quantities (in-process and real server).

The base is a GPU pod as kube-apiserver sends it (defaults applied, managedFields, sidecar and init
containers, claims, nodeName with node affinity). Each case changes it somewhere; the answer must be
HTTP 200 with a decision (a denial carries a 4xx code and a message) or a 4xx Status with a message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from admission import make_review
from fakekube import FakeKube, FakeKubeServer
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from webhook_support import ServerProcess

from dra_migrate.engine import default_config
from dra_migrate.webhook.app import create_app
from dra_migrate.webhook.review import Reviewer

Path = tuple[str | int, ...]
DEEP = "\u0000deep\u0000"  # placeholder replaced by raw deeply nested JSON after encoding


def apiserver_pod() -> dict[str, Any]:
    gpu = {"nvidia.com/gpu": "1", "cpu": "2", "memory": "8Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "train-",
            "namespace": "team-a",
            "labels": {"app": "train"},
            "annotations": {"note": "x"},
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}}}}},
                }
            ],
        },
        "spec": {
            "initContainers": [
                {"name": "warm", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                {"name": "proxy", "image": "x", "restartPolicy": "Always", "resources": {"limits": dict(gpu)}},
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "x",
                    "env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
                    "resources": {"limits": dict(gpu), "requests": dict(gpu), "claims": [{"name": "shared"}]},
                },
                {"name": "mig", "image": "x", "resources": {"limits": {"nvidia.com/mig-1g.5gb": 1}}},
            ],
            "ephemeralContainers": [{"name": "debug", "image": "x"}],
            "resourceClaims": [{"name": "shared", "resourceClaimName": "team-claim"}],
            "nodeName": "node-1",
            "nodeSelector": {"pool": "gpu"},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
                        ]
                    }
                }
            },
            "restartPolicy": "Always",
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def base_review() -> dict[str, Any]:
    return make_review(apiserver_pod())


def paths(node: Any, prefix: Path = ()) -> Iterator[Path]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from paths(value, (*prefix, index))


ALL_PATHS = [path for path in paths(base_review()) if path]


def replaced(review: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(review))
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()


def encoded(review: dict[str, Any], depth: int = 0) -> bytes:
    text = json.dumps(review)
    return text.replace(json.dumps(DEEP), '{"a":' * depth + "1" + "}" * depth).encode()


def check_answer(status: int, body: Any, what: str) -> None:
    assert status != 500 and status < 500, f"{what}: HTTP {status} {body}"
    assert isinstance(body, dict), f"{what}: {body!r}"
    if status != 200:
        assert 400 <= status < 500 and body.get("message"), f"{what}: {status} {body}"
        return
    response = body["response"]
    if not response["allowed"]:
        code = response["status"]["code"]
        assert 400 <= code < 500, f"{what}: denied with {code}: {response['status']}"
        assert response["status"]["message"], what


@pytest.fixture(scope="module")
def client() -> FlaskClient:
    reviewer = Reviewer.for_api(default_config(), FakeKube())
    return create_app(reviewer).test_client()


def post(client: FlaskClient, data: bytes) -> tuple[int, Any]:
    answer = client.post("/mutate", data=data, content_type="application/json")
    return answer.status_code, answer.get_json(silent=True)


WRONG = [5, "x", [], {}, None, True, 1.5, [5], {"a": 5}]


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: ".".join(map(str, p)))
def test_wrong_type_at_every_level(client: FlaskClient, path: Path) -> None:
    for value in WRONG:
        status, body = post(client, encoded(replaced(base_review(), path, value)))
        check_answer(status, body, f"{path} = {value!r}")


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("request", "object", "metadata", "managedFields", 0, "fieldsV1"), DEEP),
        (("request", "object", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"), "1E9999999"),
        (("request", "object", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"), "1E900000"),
        (("request", "object", "spec", "containers", 0, "resources", "claims"), 5),
    ],
    ids=["managedFields-600-deep", "quantity-1E9999999", "quantity-1E900000", "claims-5"],
)
def test_reported_inputs_get_decisions(client: FlaskClient, where: Path, value: Any) -> None:
    status, body = post(client, encoded(replaced(base_review(), where, value), depth=600))
    check_answer(status, body, str(where))
    assert status == 200


def test_deep_managed_fields_are_converted_as_usual(client: FlaskClient) -> None:
    review = replaced(base_review(), ("request", "object", "metadata", "managedFields", 0, "fieldsV1"), DEEP)
    status, body = post(client, encoded(review, depth=600))
    assert status == 200 and body["response"]["allowed"] and body["response"]["patchType"] == "JSONPatch"


@pytest.mark.parametrize("depth", [950, 5000])
def test_nesting_beyond_the_parser_is_a_400(client: FlaskClient, depth: int) -> None:
    review = replaced(base_review(), ("request", "object", "metadata", "managedFields", 0, "fieldsV1"), DEEP)
    status, body = post(client, encoded(review, depth=depth))
    check_answer(status, body, f"depth {depth}")


leaf_values = st.one_of(
    st.sampled_from([*WRONG, DEEP, "1E9999999", "-1", "0.5", "1e-999999", "999999999999999999999", "", "Infinity"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
edits = st.lists(
    st.tuples(st.sampled_from(ALL_PATHS), st.one_of(leaf_values, st.just(_DELETE))), min_size=1, max_size=4
)


def apply_edits(edit_list: list[tuple[Path, Any]]) -> dict[str, Any]:
    review = base_review()
    for path, value in edit_list:
        try:
            review = replaced(review, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path's parent
    return review


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit_list=edits, depth=st.sampled_from([2, 600, 1200]))
def test_fuzzed_reviews_in_process(client: FlaskClient, edit_list: list[tuple[Path, Any]], depth: int) -> None:
    status, body = post(client, encoded(apply_edits(edit_list), depth=depth))
    check_answer(status, body, repr(edit_list))


@pytest.fixture(scope="module")
def server(tls_dir: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    work = tmp_path_factory.mktemp("fuzz")
    with FakeKubeServer() as fake:
        process = ServerProcess(tls_dir=tls_dir, work_dir=work, kubeconfig=fake.write_kubeconfig(work / "kubeconfig"))
        try:
            yield process.wait_ready()
        finally:
            process.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edit_list=edits, depth=st.sampled_from([2, 600, 1200]))
def test_fuzzed_reviews_on_the_real_server(
    server: ServerProcess, edit_list: list[tuple[Path, Any]], depth: int
) -> None:
    answer = server.post(encoded(apply_edits(edit_list), depth=depth))
    try:
        body = answer.json()
    except ValueError:
        body = answer.text
    check_answer(answer.status_code, body, repr(edit_list))


def test_real_server_log_has_no_traceback(server: ServerProcess) -> None:
    assert "Traceback" not in server.log(), server.log()[-3000:]
