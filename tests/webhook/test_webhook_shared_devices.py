"""The webhook decides shared names as `convert --cluster` does, from the `sharedDevices` section that
`plan --write` puts in its configuration (it reads no nodes itself): a pod that selects whole-GPU nodes
is converted, one that can land on a time-sliced node is not turned into an exclusive claim, and with
consumable shares one that selects only the time-sliced pool gets a claim for one share. Real gunicorn
over TLS, the configuration file exactly as written, and the translator given the same file agrees."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission import make_review
from fakekube import FakeKubeServer
from gpu_cluster import POOL, snapshot_objects
from pods import gpu_pod
from webhook_support import StartServer, decoded_patch

from dra_migrate.cli import main
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.cluster.state import ClusterState


def _written_config(tmp_path: Path, *extra: str) -> dict[str, Any]:
    objects, version = snapshot_objects()
    state = ClusterState(server_version=version, api_versions={"v1", "apps/v1", "resource.k8s.io/v1"})
    state.add(objects)
    write_snapshot(state, tmp_path / "cluster")
    out = tmp_path / "out"
    main(["plan", "--cluster", str(tmp_path / "cluster"), "--pool-label", POOL, "--write", str(out), *extra])
    config: dict[str, Any] = yaml.safe_load((out / "webhook-config.yaml").read_text())
    return config


def _pod(selector: dict[str, str] | None) -> dict[str, Any]:
    pod = copy.deepcopy(gpu_pod(count=1))
    if selector:
        pod["spec"]["nodeSelector"] = selector
    return pod


def _claim_requests(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The patch operations that give the pod a claim (none: its request was kept)."""
    patch = decoded_patch(response) or []
    return [op for op in patch if "resourceClaims" in op["path"]]


@pytest.mark.parametrize("consumable", [False, True], ids=["exclusive-only", "consumable-shares"])
def test_the_webhook_decides_shared_names_like_the_translator(
    start_server: StartServer,
    fake_kube: FakeKubeServer,
    kubeconfig: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    consumable: bool,
) -> None:
    config = _written_config(tmp_path, *(["--consumable-shares"] if consumable else []))
    (entry,) = config["sharedDevices"]
    assert entry["resource"] == "nvidia.com/gpu" and {POOL: "shared"}.items() <= entry["sharingNodes"][0].items()
    assert ("shareCapacity" in entry) is consumable
    capsys.readouterr()
    server = start_server(config=config, kubeconfig=kubeconfig)

    whole = server.review(make_review(_pod({POOL: "whole"})))
    assert whole["allowed"] is True and _claim_requests(whole)

    anywhere = server.review(make_review(_pod(None)))  # can land on a time-sliced node
    assert not _claim_requests(anywhere)
    assert "shares it" in " ".join(anywhere.get("warnings", [])) + str(anywhere.get("status", {}))

    shared = server.review(make_review(_pod({POOL: "shared"})))
    assert bool(_claim_requests(shared)) is consumable
    requests = [
        r["exactly"] for t in fake_kube.fake.templates.values() for r in t["spec"]["spec"]["devices"]["requests"]
    ]
    assert [r.get("capacity") for r in requests if "capacity" in r] == (
        [{"requests": {"shares": "1"}}] if consumable else []
    )

    # the translator with the same file decides the same, and writes the share request
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(_pod({POOL: "shared"})))
    code = main(["convert", "--config", str(config_file), str(manifest)])
    documents = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    if consumable:
        assert code == 0
        (template,) = [d for d in documents if d["kind"] == "ResourceClaimTemplate"]
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"]["capacity"] == {"requests": {"shares": "1"}}
    else:
        assert code == 2
