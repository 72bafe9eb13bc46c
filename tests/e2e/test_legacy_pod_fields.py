"""Why legacy pod claim fields are the translator's job and not the webhook's.

A 1.31+ apiserver has no `resourceClaims[].source` field (docs/dra-api.md 3.1): it rejects it under strict
field validation, and otherwise drops it while decoding the request, before any admission webhook
sees the object. The webhook therefore never receives `source`; only the offline translator can
flatten it, which these tests show against the real apiserver.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dra_migrate.engine import convert, default_config

from .controlplane import ControlPlane

LEGACY_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "legacy-claim-source"},
    "spec": {
        "resourceClaims": [{"name": "gpu", "source": {"resourceClaimTemplateName": "gpu-template"}}],
        "containers": [
            {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"claims": [{"name": "gpu"}]}}
        ],
    },
}


def _dry_run(control_plane: ControlPlane, namespace: str, pod: dict[str, Any], tmp_path: Path, validate: str) -> str:
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(pod))
    result = control_plane.kubectl(
        "create",
        "--dry-run=server",
        f"--validate={validate}",
        "-n",
        namespace,
        "-f",
        str(manifest),
        "-o",
        "json",
        check=False,
    )
    return result.stdout + result.stderr


def test_apiserver_rejects_or_drops_source_before_admission(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    strict = _dry_run(control_plane, namespace, LEGACY_POD, tmp_path, "strict")
    assert 'unknown field "spec.resourceClaims[0].source"' in strict
    ignored = _dry_run(control_plane, namespace, LEGACY_POD, tmp_path, "false")
    # Dropped while decoding, so validation (after admission) sees an entry with neither field set.
    assert "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`" in ignored


def test_translated_legacy_pod_is_accepted(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    result = convert(LEGACY_POD, default_config())
    assert result.changed
    assert result.object is not None
    assert result.object["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    answer = _dry_run(control_plane, namespace, result.object, tmp_path, "strict")
    assert json.loads(answer)["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "gpu-template"
