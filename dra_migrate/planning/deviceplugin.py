"""The NVIDIA device plugin's configuration in a cluster, and what it means per node.

The plugin reads one config file per node (api/config/v1 of NVIDIA/k8s-device-plugin): the node's
`nvidia.com/device-plugin.config` label names a key of the ConfigMap the plugin mounts, else
DEFAULT_CONFIG, else a key named `default`, else the only key, else no file. Deployed by its Helm
chart the ConfigMap is a volume of the DaemonSet; deployed by the GPU Operator it is named in the
ClusterPolicy (`spec.devicePlugin.config`). A config that sets `replicas` > 1 under
`sharing.timeSlicing` or `sharing.mps` advertises each GPU that many times: with `renameByDefault:
false` (the default) under the same name, so `nvidia.com/gpu: 1` is a share, not a GPU. Nodes also
carry what GPU feature discovery reports (`nvidia.com/gpu.replicas`, `nvidia.com/gpu.sharing-strategy`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import yaml

from dra_migrate.cluster.state import ClusterState, allocatable_of, labels_of, name_of, namespace_of
from dra_migrate.planning.amdplugin import is_amd_plugin

CONFIG_LABEL = "nvidia.com/device-plugin.config"
NAMED_FALLBACK = "default"
SHARED_SUFFIX = ".shared"  # DefaultSharedResourceNameSuffix
_IMAGES = ("k8s-device-plugin", "nvidia-device-plugin")


class Sharing(NamedTuple):
    strategy: str  # "time-slicing" or "mps"
    replicas: int
    advertised: str  # the name the node advertises the shares under
    fail_requests_greater_than_one: bool
    resource: str  # the name of the devices unshared (advertised differs when the shares are renamed)


class PluginConfig(NamedTuple):
    mig_strategy: str  # none, single, mixed
    sharing: tuple[Sharing, ...]


class PluginSource(NamedTuple):
    where: str  # "DaemonSet kube-system/nvidia-device-plugin", "ClusterPolicy cluster-policy"
    config_map: tuple[str, str] | None  # (namespace, name)
    default_key: str | None
    configs: Mapping[str, PluginConfig]
    problems: tuple[str, ...]
    node_selector: Mapping[str, str] = {}  # the DaemonSet's: the plugin runs only on nodes with these labels

    def runs_on(self, node: dict[str, Any]) -> bool:
        labels = labels_of(node)
        return all(labels.get(key) == value for key, value in self.node_selector.items())


def parse_config(text: str) -> PluginConfig:
    """One config file of the plugin; ValueError naming the field that is wrong."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ValueError("not a mapping")
    flags = _mapping(data.get("flags"))
    sharing = _mapping(data.get("sharing"))
    shares: list[Sharing] = []
    for strategy, key in (("time-slicing", "timeSlicing"), ("mps", "mps")):
        section = sharing.get(key)
        if not isinstance(section, dict):
            continue
        rename_by_default = section.get("renameByDefault") is True
        # MPS fails larger requests unless told otherwise; time-slicing lets them through
        fail = section.get("failRequestsGreaterThanOne")
        fail_more = bool(fail) if fail is not None else strategy == "mps"
        for index, resource in enumerate(section.get("resources") or []):
            if not isinstance(resource, dict) or not isinstance(resource.get("name"), str):
                raise ValueError(f"sharing.{key}.resources[{index}].name: missing")
            replicas = resource.get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
                raise ValueError(f"sharing.{key}.resources[{index}].replicas: {replicas!r} is not a positive integer")
            if replicas < 2:
                continue
            name = resource["name"]
            rename = resource.get("rename") if isinstance(resource.get("rename"), str) else None
            advertised = rename or (name + SHARED_SUFFIX if rename_by_default else name)
            shares.append(Sharing(strategy, replicas, advertised, fail_more, name))
    return PluginConfig(str(flags.get("migStrategy") or "none"), tuple(shares))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(e.get("name")): str(e.get("value"))
        for e in container.get("env") or []
        if isinstance(e, dict) and e.get("value") is not None
    }


def _is_plugin(daemon_set: Mapping[str, Any]) -> bool:
    spec = ((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}
    return any(
        any(marker in str(c.get("image") or "") for marker in _IMAGES) and not is_amd_plugin(str(c.get("image")))
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        if isinstance(c, dict)
    )


Origin = tuple[str, tuple[str, str] | None, str | None, Mapping[str, str]]  # where, ConfigMap, default key, selector


def _daemon_set_source(daemon_set: dict[str, Any]) -> Origin:
    spec = ((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}
    listed = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    containers = [c for c in listed if isinstance(c, dict)]
    default = next((_env(c)["DEFAULT_CONFIG"] for c in containers if _env(c).get("DEFAULT_CONFIG")), None)
    config_map = None
    for volume in spec.get("volumes") or []:
        name = (volume.get("configMap") or {}).get("name") if isinstance(volume, dict) else None
        if name:
            config_map = (namespace_of(daemon_set), str(name))
            if volume.get("name") == "available-configs":
                break
    selector = spec.get("nodeSelector")
    selector = {str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict) else {}
    return f"DaemonSet {namespace_of(daemon_set)}/{name_of(daemon_set)}", config_map, default, selector


def _operator_sources(state: ClusterState) -> Iterator[Origin]:
    plugin_namespaces = sorted({namespace_of(d) for d in state.of("DaemonSet") if _is_plugin(d)})
    for policy in state.of("ClusterPolicy"):
        config = ((policy.get("spec") or {}).get("devicePlugin") or {}).get("config") or {}
        if not isinstance(config, dict) or not config.get("name"):
            yield f"ClusterPolicy {name_of(policy)}", None, None, {}
            continue
        namespace = str((policy.get("status") or {}).get("namespace") or "") or next(iter(plugin_namespaces), "")
        # the operator labels the nodes it deploys the plugin to itself; where it does not run, the
        # node advertises no GPUs (node_sharing)
        yield f"ClusterPolicy {name_of(policy)}", (namespace, str(config["name"])), config.get("default") or None, {}


def _sources(state: ClusterState) -> Iterator[Origin]:
    operated = bool(state.of("ClusterPolicy"))
    yield from _operator_sources(state)
    if not operated:  # the operator's own DaemonSet reads the ClusterPolicy's ConfigMap
        yield from (_daemon_set_source(d) for d in state.of("DaemonSet") if _is_plugin(d))


def config_map_references(state: ClusterState) -> list[tuple[str, str]]:
    return [config_map for _, config_map, _, _ in _sources(state) if config_map is not None]


def plugin_sources(state: ClusterState) -> list[PluginSource]:
    out = []
    for where, config_map, default, selector in _sources(state):
        configs: dict[str, PluginConfig] = {}
        problems: list[str] = []
        if config_map is not None:
            found = state.config_map(*config_map)
            if found is None:
                problems.append(f"ConfigMap {config_map[0]}/{config_map[1]} is not in the cluster (or was not read)")
            for key, text in ((found or {}).get("data") or {}).items():
                try:
                    configs[str(key)] = parse_config(str(text))
                except ValueError as exc:
                    problems.append(f"ConfigMap {config_map[0]}/{config_map[1]} key {key}: {exc}")
        out.append(PluginSource(where, config_map, default, configs, tuple(problems), selector))
    return out


def config_for(source: PluginSource, node: dict[str, Any]) -> tuple[str | None, PluginConfig | None]:
    """The key the plugin picks for a node, and its config (config-manager's order)."""
    label = labels_of(node).get(CONFIG_LABEL)
    for key in (label, source.default_key, NAMED_FALLBACK):
        if key and key in source.configs:
            return key, source.configs[key]
    if len(source.configs) == 1:
        key = next(iter(source.configs))
        return key, source.configs[key]
    return None, None


def labelled_sharing(node: dict[str, Any]) -> tuple[Sharing, ...]:
    """What GPU feature discovery reports on a node: `<resource>.replicas` and `.sharing-strategy` labels."""
    labels = labels_of(node)
    out = []
    for key, value in labels.items():
        if not key.endswith(".replicas") or not value.isdigit() or int(value) < 2:
            continue
        resource = key.removesuffix(".replicas")
        strategy = labels.get(f"{resource}.sharing-strategy", "time-slicing")
        if strategy in ("time-slicing", "mps"):
            out.append(Sharing(strategy, int(value), resource, strategy == "mps", resource))
    return tuple(out)


def node_sharing(sources: list[PluginSource], node: dict[str, Any]) -> tuple[Sharing, ...]:
    """The shares a node advertises: from the config of the plugin that runs on it where it is known,
    else its labels; only names the node advertises (a node that reports no allocatable resources at
    all, as in a hand-written snapshot, is taken at its config's word)."""
    found = labelled_sharing(node)
    for source in sources:
        if not source.runs_on(node):
            continue
        _, config = config_for(source, node)
        if config is not None:
            found = config.sharing
            break
    allocatable = allocatable_of(node)
    return tuple(s for s in found if s.advertised in allocatable) if allocatable else found
