"""Whether a pod spec can land on a node, from the node's labels, name and taints: `nodeSelector`,
`nodeName`, the required node affinity (`requiredDuringSchedulingIgnoredDuringExecution`, terms ORed,
expressions ANDed, operators In/NotIn/Exists/DoesNotExist/Gt/Lt, `matchFields` on metadata.name) and
tolerations of NoSchedule/NoExecute taints, as the scheduler's NodeAffinity, NodeName and
TaintToleration plugins decide (k8s.io/component-helpers/scheduling/corev1). Preferences never rule a
node out. Unknowns (a node known only by its labels) count as a match."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HOSTNAME = "kubernetes.io/hostname"
_BLOCKING = ("NoSchedule", "NoExecute")


def _integer(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _expression(expression: Mapping[str, Any], value: str | None) -> bool:
    operator = expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = _integer(value), _integer(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _term(term: Any, labels: Mapping[str, str], name: str | None) -> bool:
    if not isinstance(term, Mapping):
        return False
    expressions = [e for e in term.get("matchExpressions") or [] if isinstance(e, Mapping)]
    fields = [e for e in term.get("matchFields") or [] if isinstance(e, Mapping)]
    if not expressions and not fields:
        return False  # an empty term matches no node
    if not all(_expression(e, labels.get(str(e.get("key")))) for e in expressions):
        return False
    return name is None or all(_expression(e, name) for e in fields if e.get("key") == "metadata.name")


def required_terms(pod_spec: Mapping[str, Any]) -> list[Any] | None:
    """The required node selector terms, or None when the pod has none."""
    affinity = (pod_spec.get("affinity") or {}) if isinstance(pod_spec.get("affinity"), Mapping) else {}
    node = affinity.get("nodeAffinity") if isinstance(affinity.get("nodeAffinity"), Mapping) else {}
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution") if node else None
    if not isinstance(required, Mapping):
        return None
    terms = required.get("nodeSelectorTerms")
    return list(terms) if isinstance(terms, list) else None


def selects(pod_spec: Mapping[str, Any], labels: Mapping[str, str], name: str | None = None) -> bool:
    """Whether the pod's nodeSelector, nodeName and required node affinity allow a node with these labels
    (and this name, when known; else its hostname label stands for it)."""
    selector = pod_spec.get("nodeSelector")
    if isinstance(selector, Mapping) and any(labels.get(str(k)) != str(v) for k, v in selector.items()):
        return False
    pinned = pod_spec.get("nodeName")
    known = name if name is not None else labels.get(HOSTNAME)
    if pinned and known is not None and str(pinned) != known:
        return False
    terms = required_terms(pod_spec)
    return terms is None or any(_term(term, labels, name) for term in terms)


def _tolerated(taint: Mapping[str, Any], tolerations: Sequence[Any]) -> bool:
    for toleration in tolerations:
        if not isinstance(toleration, Mapping):
            continue
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        if toleration.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and str(toleration.get("value") or "") == str(taint.get("value") or ""):
            return True
    return False


def tolerates(pod_spec: Mapping[str, Any], taints: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the pod tolerates every taint that keeps pods off a node (NoSchedule, NoExecute). A pod
    with spec.nodeName bypasses the scheduler, but the kubelet still refuses NoExecute taints."""
    tolerations = pod_spec.get("tolerations") if isinstance(pod_spec.get("tolerations"), list) else []
    effects = ("NoExecute",) if pod_spec.get("nodeName") else _BLOCKING
    return all(_tolerated(t, tolerations or []) for t in taints if t.get("effect") in effects)
