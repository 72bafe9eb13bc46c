"""A watched copy is built page by page from the API's paged list: a worker keeps a few fields of
each object of a page before it reads the next, so it never holds a whole list of objects (their
peak would stay in its resident memory), and templates of one shape share one content key."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fakekube import TEMPLATES, FakeKube, FakeKubeServer

from dra_migrate.webhook.kube_client import KubeResourceApi, load_configuration
from dra_migrate.webhook.resource_api import claim_templates
from dra_migrate.webhook.templates import MANAGED_SELECTOR, TemplateRecord, template_record
from dra_migrate.webhook.watchcache import WatchCache

PAGE = 500  # what the client asks for (kube_client.KubeResourceApi.list_page)


def own_template(number: int, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": f"gpu-nvidia-com-{count}-{number}",
            "namespace": f"team-{number % 40}",
            "uid": f"00000000-0000-4000-8000-{number:012d}",
            "labels": {"app.kubernetes.io/managed-by": "dra-migrate"},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}
                    ]
                }
            }
        },
    }


def test_the_copy_keeps_each_page_before_reading_the_next(tmp_path: Path) -> None:
    templates = 2 * PAGE + 200
    fake = FakeKube()
    fake.fill(TEMPLATES, [own_template(number, 1 + number % 2) for number in range(templates)])
    pages_read_at_keep: list[int] = []

    def keep(obj: Mapping[str, Any]) -> TemplateRecord:
        pages_read_at_keep.append(fake.calls_to("GET", "resourceclaimtemplates?"))
        return template_record(obj)

    with FakeKubeServer(fake) as served:
        api = KubeResourceApi(load_configuration(served.write_kubeconfig(tmp_path / "kubeconfig")))
        cache = WatchCache(api, claim_templates("v1"), keep, timeout=10.0, label_selector=MANAGED_SELECTOR)
        cache.start()
        try:
            assert cache.wait_synced(30.0)
            kept = cache.items()
        finally:
            cache.stop()
    assert len(kept) == templates
    # the objects of the first page were kept while the list had read one page of three
    assert pages_read_at_keep[:PAGE] == [1] * PAGE, sorted(set(pages_read_at_keep[:PAGE]))
    assert pages_read_at_keep[-1] == 3
    # two shapes (one and two GPUs): two content keys, each held once however many templates have it
    assert len({id(record.content_key) for record in kept}) == 2
