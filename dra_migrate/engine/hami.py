"""HAMi's device-selection annotations as DRA CEL selectors.

HAMi reads pod annotations that restrict which GPUs a pod may get: `nvidia.com/use-gputype` and
`nvidia.com/nouse-gputype` (comma-separated parts of the card's type name), `nvidia.com/use-gpuuuid`
and `nvidia.com/nouse-gpuuuid` (GPU UUIDs). A claim for any `gpu.nvidia.com` device would drop that
restriction, so each becomes a CEL selector on the attributes the NVIDIA DRA driver publishes for a
GPU (cmd/gpu-kubelet-plugin/deviceinfo.go: `productName`, `uuid`). HAMi's scheduler policies
(`hami.io/node-scheduler-policy`, `hami.io/gpu-scheduler-policy`: binpack or spread) have no DRA
equivalent: the scheduler picks among matching devices by itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dra_migrate.engine.cel_literal import cel_list, cel_string

NVIDIA_DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
_ATTRIBUTES = f'device.attributes["{NVIDIA_DRIVER}"]'
POLICY_ANNOTATIONS = ("hami.io/node-scheduler-policy", "hami.io/gpu-scheduler-policy")


def _values(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _any_contains(values: list[str]) -> str:
    return " || ".join(f"{_ATTRIBUTES}.productName.contains({cel_string(v)})" for v in values)


def _uuid_in(values: list[str]) -> str:
    return f"{_ATTRIBUTES}.uuid in {cel_list(values)}"


def selectors(annotations: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(annotation, CEL selector) for each HAMi selection annotation the pod carries."""
    out: list[tuple[str, str]] = []
    for annotation, build, negate in (
        ("nvidia.com/use-gputype", _any_contains, False),
        ("nvidia.com/nouse-gputype", _any_contains, True),
        ("nvidia.com/use-gpuuuid", _uuid_in, False),
        ("nvidia.com/nouse-gpuuuid", _uuid_in, True),
    ):
        value = annotations.get(annotation)
        values = _values(value) if isinstance(value, str) else []
        if values:
            expression = build(values)
            out.append((annotation, f"!({expression})" if negate else expression))
    return out


def policies(annotations: Mapping[str, Any]) -> list[str]:
    return [name for name in POLICY_ANNOTATIONS if annotations.get(name)]
