"""The cutover: per pool and name, with node batches that keep room for pinned workloads, PodDisruptionBudgets
named, a webhook configuration per stage, an undo for every step, and the same plan in text, JSON and HTML."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from planning_support import api_node, cluster_state
from test_node_model import configs, helm_plugin

from dra_migrate.cluster.state import ClusterState
from dra_migrate.configfile import load_config
from dra_migrate.engine import Severity, convert
from dra_migrate.planning.build import build_plan
from dra_migrate.planning.cutover import Stage
from dra_migrate.planning.html import render_html
from dra_migrate.planning.model import Plan
from dra_migrate.planning.text import render_text
from dra_migrate.planning.write import manifests


def _deployment(
    name: str, resource: str, count: int, selector: dict[str, str] | None, replicas: int = 1
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": {resource: count}}}]}
    if selector:
        spec["nodeSelector"] = selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }


def _cluster() -> ClusterState:
    """Pools a and b (NVIDIA, 4 nodes of 8 GPUs each in a), amd (AMD), kept (time-sliced, no consumable
    shares); a budget for the trainer; a ClusterQueue and another webhook."""
    nodes = [api_node(f"a-{i}", {"pool": "a"}, {"nvidia.com/gpu": "8"}) for i in range(4)]
    nodes.append(api_node("b-0", {"pool": "b"}, {"nvidia.com/gpu": "8"}))
    nodes.append(api_node("amd-0", {"pool": "amd"}, {"amd.com/gpu": "8"}))
    nodes.append(
        api_node("kept-0", {"pool": "kept", "nvidia.com/device-plugin.config": "ts"}, {"nvidia.com/gpu": "16"})
    )
    time_sliced = (
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
    )
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "trainer-pdb", "namespace": "ml"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "trainer"}}},
    }
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "research"},
        "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": []}]},
    }
    webhook = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "istio-sidecar-injector"},
        "webhooks": [{"name": "x", "rules": [{"resources": ["pods"]}]}],
    }
    return cluster_state(
        *nodes,
        helm_plugin(),
        configs(ts=time_sliced, default="version: v1\n"),
        _deployment("trainer", "nvidia.com/gpu", 8, {"pool": "a"}, replicas=2),
        _deployment("b-job", "nvidia.com/gpu", 1, {"pool": "b"}),
        _deployment("amd-job", "amd.com/gpu", 1, {"pool": "amd"}),
        budget,
        queue,
        webhook,
        server_version="v1.36.2",
    )


def _plan() -> tuple[Plan, list[Stage]]:
    return build_plan(_cluster(), load_config(None, "1.36"), "pool")


def _converts(stage_file: Path, obj: dict[str, Any]) -> bool:
    """The stage moves the pod to DRA: a claim, or its request left to KEP-5004 through a class."""
    result = convert(obj, load_config(str(stage_file), "1.36"))
    moved = bool(result.conversions or result.extended)
    return moved and not any(f.severity is Severity.ERROR for f in result.findings)


def test_the_webhook_converts_a_name_only_for_pods_whose_every_pool_is_on_dra(tmp_path: Path) -> None:
    """The AMD pool's pods keep their device-plugin requests while the NVIDIA pools move (and the other
    way round); a pod that can land on a pool still on the device plugin is never converted."""
    plan, stages = _plan()
    files = manifests(plan, load_config(None, "1.36"), stages)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert [s.file for s in stages] == [
        "webhook-config-0-start.yaml",
        "webhook-config-1-a.yaml",
        "webhook-config-2-amd.yaml",
        "webhook-config-3-b.yaml",
    ]
    trainer = _deployment("t", "nvidia.com/gpu", 8, {"pool": "a"})
    amd = _deployment("m", "amd.com/gpu", 1, {"pool": "amd"})
    anywhere_nvidia = _deployment("x", "nvidia.com/gpu", 1, {"tier": "any"})
    anywhere_nvidia["spec"]["template"]["spec"].pop("nodeSelector")
    b_job = _deployment("y", "nvidia.com/gpu", 1, {"pool": "b"})
    expected = {  # stage file -> (trainer on a, amd job, b job, a pod that can land anywhere)
        "webhook-config-0-start.yaml": (False, False, False, False),
        "webhook-config-1-a.yaml": (True, False, False, False),
        "webhook-config-2-amd.yaml": (True, True, False, False),
        "webhook-config-3-b.yaml": (True, True, True, False),  # the kept time-sliced pool still serves it
        "webhook-config.yaml": (True, True, True, False),
    }
    for name, wanted in expected.items():
        got = tuple(_converts(tmp_path / name, obj) for obj in (trainer, amd, b_job, anywhere_nvidia))
        assert got == wanted, name


def test_batches_keep_room_for_pinned_workloads_and_name_their_budgets() -> None:
    """Pool a: 4 nodes of 8 GPUs, the trainer pinned there needs 2 x 8: two nodes move before the webhook
    converts it (two stay on the device plugin for it), two after."""
    plan, _ = _plan()
    steps = [s for s in plan.steps if s.pool == "a"]
    webhook = next(i for i, s in enumerate(steps) if s.action.startswith("webhook:"))
    before = {n for s in steps[:webhook] if "cordon" in s.action for n in re.findall(r"a-\d", s.action)}
    after = {n for s in steps[webhook:] if "cordon" in s.action for n in re.findall(r"a-\d", s.action)}
    assert len(before) == 2 and len(after) == 2 and not before & after
    assert all("trainer-pdb" in s.action for s in steps if "drain" in s.action)
    kept = next(s for s in plan.steps if s.pool == "kept")
    assert kept.action.startswith("keep this pool on the device plugin")
    assert all(s.undo for s in plan.steps)


def test_a_pool_a_blocked_workload_is_pinned_to_does_not_move() -> None:
    """With consumable shares a time-sliced pool moves, unless a workload that can land only there stays on
    the device plugin (two shares, which the device plugin may hand out from two GPUs): it would be stranded."""
    time_sliced = (
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
    )
    node = api_node("ts-0", {"pool": "ts"}, {"nvidia.com/gpu": "16"})
    objects = [
        node,
        helm_plugin(),
        configs(default=time_sliced),
        _deployment("one", "nvidia.com/gpu", 1, {"pool": "ts"}),
    ]
    plan, _ = build_plan(cluster_state(*objects, server_version="v1.36.2"), load_config(None, "1.36"), "pool", True)
    assert not any(s.action.startswith("keep this pool") for s in plan.steps if s.pool == "ts")
    objects.append(_deployment("two", "nvidia.com/gpu", 2, {"pool": "ts"}))
    plan, _ = build_plan(cluster_state(*objects, server_version="v1.36.2"), load_config(None, "1.36"), "pool", True)
    assert {w.name: w.path for w in plan.workloads} == {"one": "claims", "two": "blocked"}
    (step,) = [s for s in plan.steps if s.pool == "ts"]
    assert "Deployment ml/two can land only here" in step.action


def _text_of(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_the_html_page_holds_everything_the_text_says() -> None:
    plan, _ = _plan()
    page = _text_of(render_html(plan))
    text = render_text(plan)
    facts = [
        *plan.errors,
        *plan.warnings,
        *(f"{s.action}" for s in plan.steps),
        *(s.check for s in plan.steps),
        *(s.undo for s in plan.steps),
        *plan.webhooks,
        *(r for w in plan.workloads for r in w.reasons),
        *(p for q in plan.quotas for p in q.problems),
    ]
    assert plan.kueue is not None and plan.webhooks == ["istio-sidecar-injector"]
    for mapping in plan.kueue["resources"]["deviceClassMappings"]:
        facts += [mapping["name"], *mapping["deviceClassNames"]]
    for fact in facts:
        normal = " ".join(fact.split())
        assert normal in page, normal
        assert normal in " ".join(text.split()) or fact in (r for w in plan.workloads for r in w.reasons[3:]), normal
    assert "ClusterQueue research" in page and "/research" not in page


def test_a_time_sliced_pool_converts_to_shares_only_once_it_is_on_dra(tmp_path: Path) -> None:
    """Before the pool moves its nodes are still the device plugin's: no share claim for a pod pinned there."""
    time_sliced = (
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
    )
    objects = [api_node(f"ts-{i}", {"pool": "ts"}, {"nvidia.com/gpu": "16"}) for i in range(2)] + [
        helm_plugin(),
        configs(default=time_sliced),
    ]
    config = load_config(None, "1.36")
    plan, stages = build_plan(cluster_state(*objects, server_version="v1.36.2"), config, "pool", True)
    for name, text in manifests(plan, config, stages).items():
        (tmp_path / name).write_text(text)
    pod = _deployment("one", "nvidia.com/gpu", 1, {"pool": "ts"})
    assert [s.file for s in stages] == ["webhook-config-0-start.yaml", "webhook-config-1-ts.yaml"]
    assert not _converts(tmp_path / "webhook-config-0-start.yaml", pod)
    assert _converts(tmp_path / "webhook-config-1-ts.yaml", pod)
