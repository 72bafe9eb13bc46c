"""`dra-migrate plan` over a snapshot directory of a GPU cluster (tests/common/gpu_cluster.py): pools and
their stacks, the time-sliced pool, every workload's path, quotas, the cutover, and what --write writes;
`convert --cluster` decides exactly as the plan does."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from gpu_cluster import POOL, cluster_objects, snapshot_objects

from dra_migrate.cli import main
from dra_migrate.cluster.snapshot import write_snapshot
from dra_migrate.cluster.state import ClusterState
from dra_migrate.configfile import load_settings


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    objects, version = snapshot_objects()
    state = ClusterState(server_version=version, api_versions={"v1", "apps/v1", "resource.k8s.io/v1"})
    state.add(objects)
    write_snapshot(state, tmp_path / "cluster")
    return tmp_path / "cluster"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _plan(capsys: pytest.CaptureFixture[str], snapshot: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = _run(capsys, "plan", "--cluster", str(snapshot), "--pool-label", POOL, "--report", "json", *extra)
    return code, json.loads(out), err


def test_the_plan_names_the_over_admitted_node_the_shared_pool_and_every_workloads_path(
    capsys: pytest.CaptureFixture[str], snapshot: Path
) -> None:
    code, plan, err = _plan(capsys, snapshot)
    assert code == 2  # a node served both ways is an error
    assert "both-0" in err and plan["errors"] and "both-0" in plan["errors"][0]
    assert plan["schema"] == "dra-migrate.plan/v1" and plan["target"] == "1.36"
    pools = {p["name"]: p for p in plan["pools"]}
    assert {name: p["stack"] for name, p in pools.items()} == {
        "dra": "dra",
        "mixed": "both",
        "shared": "device-plugin",
        "whole": "device-plugin",
    }
    assert pools["mixed"]["both"] == ["both-0"]
    (sharing,) = pools["shared"]["sharing"]
    assert {k: sharing[k] for k in ("advertised", "strategy", "replicas", "nodes", "dra_capacity")} == {
        "advertised": "nvidia.com/gpu",
        "strategy": "time-slicing",
        "replicas": 4,
        "nodes": ["shared-0", "shared-1"],
        "dra_capacity": None,  # unless the DRA driver will hand out shares (--consumable-shares)
    }
    assert "--consumable-shares" in sharing["dra"]
    assert pools["shared"]["gpus"] == {"device-plugin": 4}  # 16 advertised shares of 4 GPUs
    assert pools["whole"]["device_plugin"] == {"nvidia.com/gpu": 8, "nvidia.com/mig-1g.10gb": 2}
    assert pools["dra"]["dra"] == {"gpu.nvidia.com": 8}
    paths = {w["name"]: (w["path"], w["pools"]) for w in plan["workloads"]}
    assert paths == {
        "trainer": ("claims", ["whole"]),
        "mig": ("kep-5004", ["whole"]),  # once the plan's class for its MIG profile exists
        "inference": ("claims", ["dra"]),
        "notebook": ("blocked", ["shared"]),  # a time-sliced share is never an exclusive claim
        "anywhere": ("blocked", ["dra", "mixed", "shared", "whole"]),  # it could land on a shared node
    }
    changed = {w["name"]: w["path_before_classes"] for w in plan["workloads"] if w["path_before_classes"]}
    assert changed == {"mig": "claims"}  # the only path the DeviceClass step changes
    class_step = next(s for s in plan["steps"] if s["action"].startswith("apply the DeviceClasses"))
    assert "Deployment ml/mig claims -> kep-5004" in class_step["check"]
    notebook = next(w for w in plan["workloads"] if w["name"] == "notebook")
    assert "time-slicing" in notebook["reasons"][0] and "4" in notebook["reasons"][0]
    (quota,) = plan["quotas"]
    assert quota["keys"] == ["requests.nvidia.com/gpu"]
    assert quota["converted"]["spec"]["hard"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "8"
    steps = [(s["pool"], s["action"]) for s in plan["steps"]]
    assert steps[0][0] == "mixed" and "both-0" in steps[0][1]
    assert any(pool == "shared" and action.startswith("keep this pool on the device plugin") for pool, action in steps)
    assert not any(pool == "dra" for pool, _ in steps)


def test_with_consumable_shares_a_time_sliced_pool_moves_and_its_shares_become_claims_for_one(
    capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path
) -> None:
    """Where the NVIDIA DRA driver hands out each GPU as `replicas` shares (Kubernetes 1.36+), the pool moves
    like the others with the driver's settings written out, and a workload that can land only there gets a
    claim for one share; one that can also land on whole-GPU nodes stays blocked."""
    code, plan, _ = _plan(capsys, snapshot, "--consumable-shares", "--write", str(tmp_path / "out"))
    assert code == 2  # still the node served both ways
    (sharing,) = next(p for p in plan["pools"] if p["name"] == "shared")["sharing"]
    assert sharing["dra_capacity"] == "shares" and "4 shares" in sharing["dra"]
    paths = {w["name"]: w["path"] for w in plan["workloads"]}
    assert paths["notebook"] == "claims" and paths["anywhere"] == "blocked"
    anywhere = next(w for w in plan["workloads"] if w["name"] == "anywhere")
    assert "select one kind" in anywhere["reasons"][0]
    shared_steps = [s["action"] for s in plan["steps"] if s["pool"] == "shared"]
    assert not any(a.startswith("keep this pool") for a in shared_steps)
    assert any("dra-driver-values-shared.yaml" in a and 'consumableShares: "4"' in a for a in shared_steps)
    values = yaml.safe_load((tmp_path / "out" / "dra-driver-values-shared.yaml").read_text())
    assert values == {
        "featureGates": {"ConsumableShares": True},
        "consumableShares": "4",
        # the pool's nodes whose per-node config shares (nvidia.com/device-plugin.config), not the whole pool
        "kubeletPlugin": {"nodeSelector": {POOL: "shared", "nvidia.com/device-plugin.config": "shared"}},
    }

    manifest = tmp_path / "notebook.yaml"
    notebook = next(o for o in cluster_objects() if o["metadata"]["name"] == "notebook")
    manifest.write_text(yaml.safe_dump(notebook))
    code, out, err = _run(capsys, "convert", "--cluster", str(snapshot), "--consumable-shares", str(manifest))
    assert code == 0, err
    (template,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "ResourceClaimTemplate"]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["capacity"] == {"requests": {"shares": "1"}}
    code, _, err = _run(
        capsys, "convert", "--cluster", str(snapshot), "--consumable-shares", "--target-version", "1.35", str(manifest)
    )
    assert code == 2 and "DRAConsumableCapacity" in err  # alpha, off by default in 1.35


def test_text_and_html_reports(capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path) -> None:
    code, text, _ = _run(capsys, "plan", "--cluster", str(snapshot), "--pool-label", POOL)
    assert code == 2
    for heading in ("Node pools", "DeviceClasses with extendedResourceName", "Workloads:", "Quotas", "Cutover"):
        assert heading in text
    page = tmp_path / "plan.html"
    code, out, _ = _run(
        capsys, "plan", "--cluster", str(snapshot), "--pool-label", POOL, "--report", "html", "--report-file", str(page)
    )
    assert code == 2 and out == ""

    class Page(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[str] = []
            self.headings: list[str] = []
            self._in_heading = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.append(tag)
            self._in_heading = tag == "h2"

        def handle_data(self, data: str) -> None:
            if self._in_heading:
                self.headings.append(data)
                self._in_heading = False

    parsed = Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    assert "script" not in parsed.tags and "link" not in parsed.tags  # self-contained
    assert parsed.tags.count("svg") == 1 and parsed.tags.count("rect") >= 4
    assert [h for h in parsed.headings if h.startswith("Pool ")] == [
        "Pool dra: dra",
        "Pool mixed: both",
        "Pool shared: device-plugin",
        "Pool whole: device-plugin",
    ]
    assert parsed.tags.count("table") == 4 + 3  # one per pool, workloads, quotas, the DeviceClass the plan writes


def test_write_gives_device_classes_quotas_and_a_webhook_configuration(
    capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cluster-side"
    code, _, _ = _plan(capsys, snapshot, "--write", str(out))
    assert code == 2
    classes = list(yaml.safe_load_all((out / "deviceclasses.yaml").read_text()))
    # none for nvidia.com/gpu: the shared pool time-slices it, and KEP-5004 would serve its pods whole GPUs
    assert {c["spec"]["extendedResourceName"]: c["metadata"]["name"] for c in classes} == {
        "nvidia.com/mig-1g.10gb": "nvidia.com-mig-1g.10gb",  # one class per MIG profile
    }
    mig = next(c for c in classes if c["metadata"]["name"] == "nvidia.com-mig-1g.10gb")
    assert any("1g.10gb" in s["cel"]["expression"] for s in mig["spec"]["selectors"])
    (quota,) = yaml.safe_load_all((out / "quotas.yaml").read_text())
    assert "gpu.nvidia.com.deviceclass.resource.k8s.io/devices" in quota["spec"]["hard"]
    settings = load_settings(str(out / "webhook-config.yaml"))  # a valid configuration for `serve --config`
    assert str(settings.config.target) == "1.36"
    written = yaml.safe_load((out / "webhook-config.yaml").read_text())
    assert [e["resource"] for e in written["sharedDevices"]] == ["nvidia.com/gpu"]
    assert settings.config.mappings.resolve("nvidia.com/gpu").shared is not None  # type: ignore[union-attr]


def test_a_snapshot_that_cannot_be_read_is_an_error_naming_the_file(
    capsys: pytest.CaptureFixture[str], snapshot: Path
) -> None:
    (snapshot / "broken.yaml").write_text("items: [\n")
    code, out, err = _run(capsys, "plan", "--cluster", str(snapshot))
    assert code == 2 and out == ""
    assert "broken.yaml" in err and "Traceback" not in err
    code, _, err = _run(capsys, "plan", "--cluster", str(snapshot / "missing"))
    assert code == 2 and "no such directory" in err
    (snapshot.parent / "a-file").write_text("")
    code, _, err = _run(capsys, "plan", "--cluster", str(snapshot.parent / "a-file"))
    assert code == 2 and "not a directory" in err
    (snapshot / "broken.yaml").unlink()
    code, _, err = _run(capsys, "plan", "--cluster", str(snapshot), "--write", str(snapshot.parent / "a-file"))
    assert code == 2 and "--write" in err and "name a directory" in err
    code, _, err = _run(capsys, "plan", "--cluster", str(snapshot), "--target-version", "1.31")
    assert code == 2 and "--target-version: target version 1.31 is not supported" in err
    (snapshot.parent / "empty").mkdir()
    code, out, err = _run(capsys, "plan", "--cluster", str(snapshot.parent / "empty"))
    assert code == 2 and out == "" and "no Node, Pod, workload" in err


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: x\n", "document 1: Node n1: status: a string"),
        (
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: DaemonSet\n"
            "  metadata: {name: p, namespace: kube-system}\n  spec: {template: {spec: {volumes: 7}}}\n",
            "document 1: DaemonSet kube-system/p: spec.template.spec.volumes: 7 is not of type",
        ),
        ("kind: Node\n---\napiVersion: v1\nkind: [Node]\n", "document 2: kind: ['Node'] is not a string"),
        ("apiVersion: v1\nkind: NodeList\nitems: x\n", "document 1: items: not a list"),
        (
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\n"
            "spec: {resourceGroups: [{coveredResources: 7}]}\n",
            "document 1: ClusterQueue q: spec.resourceGroups.0.coveredResources: not a list of resource names",
        ),
    ],
    ids=["status", "volumes", "kind", "items", "cluster-queue"],
)
def test_an_object_no_api_server_would_return_is_an_error_naming_file_document_and_field(
    capsys: pytest.CaptureFixture[str], snapshot: Path, document: str, named: str
) -> None:
    """A hand-edited snapshot: the wrong type where the planner reads a field. Missing fields are no error
    (hand-written snapshots leave out what the plan does not read)."""
    (snapshot / "edited.yaml").write_text(document)
    for command in (["plan", "--cluster", str(snapshot)], ["convert", "--cluster", str(snapshot), str(snapshot / "x")]):
        code, out, err = _run(capsys, *command)
        assert code == 2 and out == "", err
        assert f"edited.yaml: {named}" in err and "Traceback" not in err


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: ml}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:{selector}
      containers:
      - name: main
        image: cuda
        resources:
          limits: {{nvidia.com/gpu: {gpus}}}
"""


@pytest.mark.parametrize(
    ("pool", "expected"), [("shared", "blocked"), (None, "blocked"), ("whole", "claims"), ("dra", "claims")]
)
def test_convert_with_the_cluster_decides_as_the_plan(
    capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path, pool: str | None, expected: str
) -> None:
    selector = f"\n      nodeSelector: {{{POOL}: {pool}}}" if pool else ""
    manifest = tmp_path / "app.yaml"
    manifest.write_text(DEPLOYMENT.format(name="app", selector=selector, gpus=1))
    before = manifest.read_bytes()
    code, _, err = _run(capsys, "convert", "--in-place", "--cluster", str(snapshot), "--report", "json", str(manifest))
    rules = {f["rule"] for f in json.loads(err)["findings"]}
    if expected == "blocked":
        assert code == 2 and "shared-device" in rules
        assert manifest.read_bytes() == before  # never turned into an exclusive claim
    else:
        assert code == 0 and "shared-device" not in rules
        assert "resourceClaims" in manifest.read_text()


def test_a_pool_that_advertises_only_renamed_shares_is_a_device_plugin_pool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With renameByDefault the nodes advertise `nvidia.com/gpu.shared`, a name no mapping converts: it is
    still the device plugin's capacity, 8 shares of 2 GPUs."""
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "nvidia"},
        "data": {
            "default": "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
            "    - name: nvidia.com/gpu\n      replicas: 4\n"
        },
    }
    plugin = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin", "namespace": "nvidia"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "p", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}],
                    "volumes": [{"name": "available-configs", "configMap": {"name": "cfg"}}],
                }
            }
        },
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0", "labels": {POOL: "renamed"}},
        "status": {"allocatable": {"nvidia.com/gpu.shared": "8"}},
    }
    state = ClusterState(server_version="v1.36.3", api_versions={"v1", "apps/v1", "resource.k8s.io/v1"})
    state.add([config_map, plugin, node])
    write_snapshot(state, tmp_path / "cluster")
    code, plan, _ = _plan(capsys, tmp_path / "cluster")
    assert code == 0
    (pool,) = plan["pools"]
    assert pool["stack"] == "device-plugin"
    assert pool["device_plugin"] == {"nvidia.com/gpu.shared": 8} and pool["gpus"] == {"device-plugin": 2}
