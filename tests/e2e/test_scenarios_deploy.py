"""deploy/ against the real apiserver: `kubectl apply --dry-run=server -k deploy/base`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from .cluster_fixtures import Kube, delete_namespace
from .controlplane import ControlPlane
from .manifests import kubectl_kustomize, run_text
from .webhook_process import DEPLOY_BASE, DEPLOY_SERVER_CONFIG, deploy_configuration, generated_match_conditions


@pytest.fixture
def deploy_namespace(control_plane: ControlPlane, kube: Kube, tmp_path: Path) -> Iterator[str]:
    """The base's Namespace, created for real (labels included): a dry run of a Namespace does
    not create it, so the namespaced objects of the same dry run would fail with NotFound."""
    [namespace] = [o for o in kubectl_kustomize(control_plane, DEPLOY_BASE) if o["kind"] == "Namespace"]
    name = str(namespace["metadata"]["name"])
    assert kube.get("v1", "Namespace", name) is None, f"namespace {name} already exists"
    path = tmp_path / "namespace.yaml"
    path.write_text(yaml.safe_dump(namespace), encoding="utf-8")
    control_plane.kubectl("apply", "-f", str(path))
    try:
        yield name
    finally:
        delete_namespace(kube, name)


def test_deploy_base_is_accepted_by_server_side_dry_run(
    control_plane: ControlPlane, kube: Kube, deploy_namespace: str
) -> None:
    built = kubectl_kustomize(control_plane, DEPLOY_BASE)
    result = control_plane.kubectl("apply", "--dry-run=server", "-k", str(DEPLOY_BASE), check=False)
    assert result.returncode == 0, run_text(result)

    # One "... (server dry run)" line per object of the build, nothing left out.
    lines = [line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(lines) == len(built), run_text(result)
    for obj in built:
        name = obj["metadata"]["name"]
        assert any(f"/{name} " in line and obj["kind"].lower() in line.lower() for line in lines), (
            f"{obj['kind']} {name} missing from the dry run:\n{result.stdout}"
        )
    # The Deployment's pods meet the namespace's `restricted` Pod Security level (warn mode
    # reports violations of Deployments' pod templates at admission) and nothing else warns.
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert not warnings, run_text(result)
    # Nothing was stored: the webhook configuration stays unregistered.
    assert kube.get("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "dra-migrate") is None
    assert kube.get("apps/v1", "Deployment", "dra-migrate", deploy_namespace) is None


def test_deployed_match_conditions_are_the_generated_ones(control_plane: ControlPlane) -> None:
    """The CEL the webhook scenarios prove in the apiserver (device-less pods never reach the
    webhook, and get through during an outage) is deploy/'s; it must be the generator's output
    for the shipped config, or the two drift apart."""
    [hook] = deploy_configuration(control_plane)["webhooks"]
    generated = generated_match_conditions(DEPLOY_SERVER_CONFIG)
    assert hook.get("matchConditions") == generated, (
        "deploy/base/mutatingwebhookconfiguration.yaml matchConditions differ from "
        f"`dra-migrate webhook match-conditions --config deploy/base/config.yaml`: {hook.get('matchConditions')}"
    )
