"""How the NVIDIA DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu) can stand in for the device
plugin's sharing, from its source at DRIVER_SOURCE:

- `GpuConfig.sharing` (TimeSlicing, MPS; api/nvidia.com/resource/v1beta1/sharing.go) configures the
  devices of one claim: it shares them among the containers and pods that use that claim, never
  between claims. A pod's own claim (from a template) is never shared that way.
- Consumable shares (cmd/gpu-kubelet-plugin/consumable_shares.go, behind the driver's alpha feature
  gate `ConsumableShares`, driver 0.5): with `--consumable-shares=N` (Helm value `consumableShares`)
  the kubelet plugin publishes every GPU with `allowMultipleAllocations` and a capacity `shares` of N,
  of which a claim consumes 1 unless it asks for more. That is what a time-sliced device plugin with
  `replicas: N` hands out. The scheduler allocates it only where Kubernetes' DRAConsumableCapacity is
  on, and a claim that asks for `shares` is allocated only a device that has them.
- MPS is refused while consumable shares are on ("MPS sharing is not supported when consumable shares
  is enabled", cmd/gpu-kubelet-plugin/device_state.go): an MPS share has no DRA form across pods.
"""

from __future__ import annotations

from dra_migrate.engine import Target

DRIVER_SOURCE = "kubernetes-sigs/dra-driver-nvidia-gpu@9593204 (2026-08-07)"
SHARES_CAPACITY = "shares"
DRIVER_GATE = "ConsumableShares"
HELM_VALUE = "consumableShares"
KUBERNETES_GATE = "DRAConsumableCapacity"
_NAMES = ("nvidia.com/",)


def shares_for(resource: str, strategy: str, target: Target, consumable_shares: bool) -> tuple[str | None, str]:
    """The capacity a claim asks one share of `resource` with, or None and why the driver gives none."""
    if not resource.startswith(_NAMES):
        return None, "no DRA driver setting known to dra-migrate hands out shares of these devices"
    if strategy == "mps":
        return None, "the NVIDIA DRA driver shares a device through MPS only within one claim, never between pods"
    if not consumable_shares:
        return None, (
            f"the NVIDIA DRA driver hands out shares only with consumable shares (its {DRIVER_GATE} gate, "
            f"{HELM_VALUE} = the replicas): plan and convert with --consumable-shares for a pool it serves so"
        )
    if not target.feature_enabled(KUBERNETES_GATE):
        return None, f"consumable shares need {KUBERNETES_GATE}, which is off by default in {target}"
    return SHARES_CAPACITY, ""


def settings_text(replicas: int) -> str:
    return f'feature gate {DRIVER_GATE}, {HELM_VALUE}: "{replicas}"'


def driver_values(replicas: int, node_selector: dict[str, str]) -> dict[str, object]:
    """Helm values of the driver's chart for a pool whose GPUs it hands out as `replicas` shares each."""
    values: dict[str, object] = {"featureGates": {DRIVER_GATE: True}, HELM_VALUE: str(replicas)}
    if node_selector:
        values["kubeletPlugin"] = {"nodeSelector": node_selector}
    return values


def driver_values_file(pool: str) -> str:
    """The file `plan --write` puts a pool's driver values in (the pool name made a file name)."""
    return "dra-driver-values-" + "".join(c if c.isalnum() or c in "-_." else "-" for c in pool) + ".yaml"
