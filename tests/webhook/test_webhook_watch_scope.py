"""What a real server asks the API for its watched copies: only dra-migrate's templates (a label
selector the apiserver applies), and only the metadata of namespaces (their labels are all it reads)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from fakekube import FakeKubeServer
from webhook_support import StartServer, watching

MANAGED = "app.kubernetes.io/managed-by=dra-migrate"


def _reads(fake_kube: FakeKubeServer, plural: str) -> list[tuple[dict[str, list[str]], str]]:
    """(query, Accept) of the server's lists and watches of `plural` (all namespaces)."""
    return [
        (parse_qs(urlsplit(path).query), accept)
        for path, accept in list(fake_kube.fake.accepts)
        if urlsplit(path).path.endswith(f"/{plural}") and "/namespaces/" not in urlsplit(path).path.rsplit(plural, 1)[0]
    ]


def test_the_copies_ask_only_for_what_the_webhook_reads(
    start_server: StartServer, fake_kube: FakeKubeServer, kubeconfig: Path
) -> None:
    start_server(kubeconfig=kubeconfig, workers=1)
    watching(fake_kube.fake, "resourceclaimtemplates", "namespaces")
    templates = _reads(fake_kube, "resourceclaimtemplates")
    assert templates and all(query.get("labelSelector") == [MANAGED] for query, _ in templates), templates
    assert {("watch" in query) for query, _ in templates} == {True, False}  # the list and the watch
    namespaces = _reads(fake_kube, "namespaces")
    assert namespaces
    for query, accept in namespaces:
        kind = "PartialObjectMetadata" if "watch" in query else "PartialObjectMetadataList"
        assert accept.startswith(f"application/json;as={kind};g=meta.k8s.io;v=v1"), (query, accept)
