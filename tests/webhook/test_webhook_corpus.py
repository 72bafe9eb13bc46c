"""Every pod of the legacy corpus through a real server: the patch reproduces the engine's output."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import corpus
import jsonpatch
import pytest
from admission import make_review
from fakekube import FakeKubeServer
from webhook_support import ServerProcess, corpus_pods, decoded_patch

from dra_migrate.engine import at_admission, convert, default_config

corpus.require_module("legacy")
CONFIG = default_config()
PODS = list(corpus_pods(CONFIG))


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeKubeServer]:
    with FakeKubeServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(tls_dir: Path, fake: FakeKubeServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    work = tmp_path_factory.mktemp("corpus")
    process = ServerProcess(tls_dir=tls_dir, work_dir=work, kubeconfig=fake.write_kubeconfig(work / "kubeconfig"))
    try:
        yield process.wait_ready()
    finally:
        process.stop()


_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _namespace(pod: dict[str, Any]) -> str:
    """The pod's namespace as the apiserver sends it: a placeholder the apiserver would refuse in its URL
    (`NAMESPACE`, `${NS}`) never reaches a webhook, so such a pod is reviewed in a real namespace."""
    namespace = pod["metadata"].get("namespace")
    return namespace if isinstance(namespace, str) and len(namespace) <= 63 and _LABEL.match(namespace) else "corpus"


def test_corpus_has_pods() -> None:
    files = {label.split("#")[0] for label, _ in PODS}
    assert len(files) >= 60, files
    assert len(PODS) >= 80


def _check(server: ServerProcess, fake: FakeKubeServer, pod: dict[str, Any], review: dict[str, Any]) -> None:
    expected = convert(pod, at_admission(CONFIG))
    response = server.review(review)
    assert response["allowed"] is True, response
    patch = decoded_patch(response)
    if expected.changed:
        assert patch, "the engine converted this pod but the webhook sent no patch"
        assert jsonpatch.apply_patch(review["request"]["object"], patch) == expected.object
        namespace = review["request"]["namespace"]
        for template in expected.templates:
            stored = fake.fake.templates[(namespace, template["metadata"]["name"])]
            assert stored["spec"] == template["spec"]
        assert response["warnings"], "a conversion must be reported to the user"
        assert response["auditAnnotations"]["decision"] == "converted"
    else:
        assert patch is None


@pytest.mark.parametrize(("label", "pod"), PODS, ids=[label for label, _ in PODS])
def test_patch_reproduces_engine_output(
    server: ServerProcess, fake: FakeKubeServer, label: str, pod: dict[str, Any]
) -> None:
    _check(server, fake, pod, make_review(pod, namespace=_namespace(pod)))


@pytest.mark.parametrize(("label", "pod"), PODS[::7], ids=[label for label, _ in PODS[::7]])
def test_v1beta1_reviews(server: ServerProcess, fake: FakeKubeServer, label: str, pod: dict[str, Any]) -> None:
    _check(server, fake, pod, make_review(pod, namespace=_namespace(pod), api_version="admission.k8s.io/v1beta1"))


@pytest.mark.parametrize(("label", "pod"), PODS[::5], ids=[label for label, _ in PODS[::5]])
def test_generate_name_pods(server: ServerProcess, fake: FakeKubeServer, label: str, pod: dict[str, Any]) -> None:
    """As a controller creates them: no name, no namespace in the object, only in the request."""
    metadata = {k: v for k, v in pod["metadata"].items() if k not in ("name", "namespace")}
    pod = {**pod, "metadata": {**metadata, "generateName": "worker-"}}
    _check(server, fake, pod, make_review(pod, namespace="generated"))


def test_templates_created_once_per_namespace(server: ServerProcess, fake: FakeKubeServer) -> None:
    """After the corpus ran, every template exists once, and POSTs never exceed the templates."""
    posts = fake.fake.calls_to("POST", "/resourceclaimtemplates")
    assert posts == len(fake.fake.templates)
    assert server.process.poll() is None
    assert "Traceback" not in server.log()
