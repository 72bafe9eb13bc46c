"""The NVIDIA device plugin's configuration in a cluster, and what it means per node.

Read from NVIDIA/k8s-device-plugin v0.20.0 and NVIDIA/gpu-operator v26.7.0:

- The plugin reads one config file per node (api/config/v1): the node's `nvidia.com/device-plugin.config`
  label names a key of the ConfigMap the plugin mounts, else DEFAULT_CONFIG, else a key named `default`,
  else the only key, else no file (config-manager). Its Helm chart mounts the ConfigMap on the DaemonSet;
  the GPU Operator names it in the ClusterPolicy (`spec.devicePlugin.config`).
- A flag set on the command line or in the environment wins over the file (api/config/v1/config.go,
  NewConfig): the Helm chart's `migStrategy` value and the operator's `spec.mig.strategy` are the
  MIG_STRATEGY variable (templates/daemonset-device-plugin.yml; controllers/object_controls.go).
- The operator deploys its plugin only when `spec.devicePlugin.enabled` is not false (api/nvidia/v1/
  clusterpolicy_types.go, DevicePluginSpec.IsEnabled; controllers/state_manager.go isStateEnabled), on the
  nodes it labels `nvidia.com/gpu.deploy.device-plugin=true` (state_manager.go gpuStateLabels); a plugin
  installed by its own Helm chart is a DaemonSet of its own, read beside it.
- `sharing.timeSlicing` / `sharing.mps` with `replicas` > 1 advertise each GPU that many times, under the
  same name, or `<name>.shared` with `renameByDefault: true`; a resource's own `rename` is ignored
  (api/config/v1/replicas.go, disableResoureRenaming, called by DisableResourceNamingInConfig). MPS fails
  requests for more than one share unless `failRequestsGreaterThanOne: false` (config.go).
- MIG strategies (internal/lm/mig-strategy.go): `single` advertises every MIG device as `nvidia.com/gpu`
  and feature discovery labels the node `nvidia.com/mig.strategy=single` and `nvidia.com/gpu.product=
  <model>-MIG-<profile>`; `mixed` advertises `nvidia.com/mig-<profile>`.
Nodes also carry what feature discovery reports (`nvidia.com/gpu.replicas`, `.sharing-strategy`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import yaml

from dra_migrate.cluster.amdplugin import is_amd_plugin
from dra_migrate.cluster.state import ClusterState, allocatable_of, labels_of, name_of, namespace_of

CONFIG_LABEL = "nvidia.com/device-plugin.config"
DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
PRODUCT_LABEL = "nvidia.com/gpu.product"
NAMED_FALLBACK = "default"
SHARED_SUFFIX = ".shared"  # DefaultSharedResourceNameSuffix
MIG_STRATEGIES = ("none", "single", "mixed")
_IMAGES = ("k8s-device-plugin", "nvidia-device-plugin")


class Sharing(NamedTuple):
    strategy: str  # "time-slicing", "mps" (Intel: "shared-dev-num")
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
    mig_strategy: str | None = None  # MIG_STRATEGY: wins over the config file's flags.migStrategy

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
    flags = _section(data, "flags")
    sharing = _section(data, "sharing")
    shares: list[Sharing] = []
    for strategy, key in (("time-slicing", "timeSlicing"), ("mps", "mps")):
        section = sharing.get(key)
        if section is None:
            continue
        if not isinstance(section, dict):
            raise ValueError(f"sharing.{key}: not a mapping")
        rename_by_default = _flag(section, "renameByDefault", f"sharing.{key}")
        fail = _flag(section, "failRequestsGreaterThanOne", f"sharing.{key}")
        # MPS fails larger requests unless told otherwise; time-slicing lets them through
        fail_more = fail if fail is not None else strategy == "mps"
        resources = section.get("resources") or []
        if not isinstance(resources, list):
            raise ValueError(f"sharing.{key}.resources: not a list")
        for index, resource in enumerate(resources):
            if not isinstance(resource, dict) or not isinstance(resource.get("name"), str):
                raise ValueError(f"sharing.{key}.resources[{index}].name: missing")
            replicas = resource.get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
                raise ValueError(f"sharing.{key}.resources[{index}].replicas: {replicas!r} is not a positive integer")
            if replicas < 2:
                continue
            name = str(resource["name"])
            # `rename` is ignored by the plugin: the name, or `<name>.shared` with renameByDefault
            advertised = name + SHARED_SUFFIX if rename_by_default else name
            shares.append(Sharing(strategy, replicas, advertised, fail_more, name))
    mig = flags.get("migStrategy")
    if mig is not None and mig not in MIG_STRATEGIES:
        raise ValueError(f"flags.migStrategy: {mig!r} is not one of {', '.join(MIG_STRATEGIES)}")
    return PluginConfig(str(mig or "none"), tuple(shares))


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if value is not None and not isinstance(value, dict):
        raise ValueError(f"{key}: not a mapping")
    return value or {}


def _flag(section: dict[str, Any], key: str, where: str) -> bool | None:
    value = section.get(key)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{where}.{key}: {value!r} is not true or false")
    return value


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(e.get("name")): str(e.get("value"))
        for e in container.get("env") or []
        if isinstance(e, dict) and e.get("value") is not None
    }


def _pod_spec(daemon_set: Mapping[str, Any]) -> dict[str, Any]:
    spec = ((daemon_set.get("spec") or {}).get("template") or {}).get("spec") or {}
    return spec if isinstance(spec, dict) else {}


def _containers(daemon_set: Mapping[str, Any]) -> list[dict[str, Any]]:
    spec = _pod_spec(daemon_set)
    return [c for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])] if isinstance(c, dict)]


def _is_plugin(daemon_set: Mapping[str, Any]) -> bool:
    return any(
        any(marker in str(c.get("image") or "") for marker in _IMAGES) and not is_amd_plugin(str(c.get("image")))
        for c in _containers(daemon_set)
    )


def _operated(daemon_set: Mapping[str, Any]) -> bool:
    """The GPU Operator's own plugin DaemonSet (it reads the ClusterPolicy's config, read from there)."""
    references = (daemon_set.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, dict) and r.get("kind") == "ClusterPolicy" for r in references)


Origin = tuple[str, tuple[str, str] | None, str | None, Mapping[str, str], str | None]


def _daemon_set_source(daemon_set: dict[str, Any]) -> Origin:
    containers = _containers(daemon_set)
    default = next((_env(c)["DEFAULT_CONFIG"] for c in containers if _env(c).get("DEFAULT_CONFIG")), None)
    strategy = next((_env(c)["MIG_STRATEGY"] for c in containers if _env(c).get("MIG_STRATEGY")), None)
    config_map = None
    for volume in _pod_spec(daemon_set).get("volumes") or []:
        name = (volume.get("configMap") or {}).get("name") if isinstance(volume, dict) else None
        if name:
            config_map = (namespace_of(daemon_set), str(name))
            if volume.get("name") == "available-configs":
                break
    selector = _pod_spec(daemon_set).get("nodeSelector")
    selector = {str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict) else {}
    return f"DaemonSet {namespace_of(daemon_set)}/{name_of(daemon_set)}", config_map, default, selector, strategy


def plugin_enabled(policy: Mapping[str, Any]) -> bool:
    """The operator deploys its device plugin unless `spec.devicePlugin.enabled` is false (default true)."""
    return ((policy.get("spec") or {}).get("devicePlugin") or {}).get("enabled") is not False


def _operator_sources(state: ClusterState) -> Iterator[Origin]:
    plugin_namespaces = sorted({namespace_of(d) for d in state.of("DaemonSet") if _is_plugin(d)})
    # the operator's plugin runs on the nodes it labels; a snapshot that shows no node with the label
    # (written by hand) is taken as the operator running on every node
    labelled = any(DEPLOY_LABEL in labels_of(n) for n in state.of("Node"))
    selector = {DEPLOY_LABEL: "true"} if labelled else {}
    for policy in state.of("ClusterPolicy"):
        if not plugin_enabled(policy):
            continue
        spec = policy.get("spec") or {}
        strategy = (spec.get("mig") or {}).get("strategy") or None
        config = (spec.get("devicePlugin") or {}).get("config") or {}
        where = f"ClusterPolicy {name_of(policy)}"
        if not config.get("name"):
            yield where, None, None, selector, strategy
            continue
        namespace = str((policy.get("status") or {}).get("namespace") or "") or next(iter(plugin_namespaces), "")
        yield where, (namespace, str(config["name"])), config.get("default") or None, selector, strategy


def _sources(state: ClusterState) -> Iterator[Origin]:
    """The operator's plugins first (where both run on a node, the operator's config is the one read),
    then every plugin DaemonSet the operator does not own (installed by the plugin's Helm chart)."""
    yield from _operator_sources(state)
    yield from (_daemon_set_source(d) for d in state.of("DaemonSet") if _is_plugin(d) and not _operated(d))


def config_map_references(state: ClusterState) -> list[tuple[str, str]]:
    return [origin[1] for origin in _sources(state) if origin[1] is not None]


def plugin_sources(state: ClusterState) -> list[PluginSource]:
    out = []
    for where, config_map, default, selector, strategy in _sources(state):
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
        if strategy is not None and strategy not in MIG_STRATEGIES:
            problems.append(f"{where}: MIG strategy {strategy!r} is not one of {', '.join(MIG_STRATEGIES)}")
            strategy = None
        out.append(PluginSource(where, config_map, default, configs, tuple(problems), selector, strategy))
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


class NodePlugin(NamedTuple):
    """The NVIDIA device plugin as it serves one node."""

    where: str | None  # the plugin that runs there and its config key, or None (the node's labels tell)
    mig_strategy: str
    sharing: tuple[Sharing, ...]


def node_plugin(sources: list[PluginSource], node: dict[str, Any]) -> NodePlugin:
    """The config of the first plugin that runs on the node (its MIG strategy, what it shares), else what
    feature discovery labelled it with; shares only for names the node advertises (a node that reports no
    allocatable resources at all, as in a hand-written snapshot, is taken at its config's word)."""
    labels = labels_of(node)
    labelled = labels.get(MIG_STRATEGY_LABEL)
    found = NodePlugin(None, labelled if labelled in MIG_STRATEGIES else "none", labelled_sharing(node))
    for source in sources:
        if not source.runs_on(node):
            continue
        key, config = config_for(source, node)
        if config is not None or source.mig_strategy is not None:
            strategy = source.mig_strategy or (config.mig_strategy if config is not None else "none")
            where = source.where + (f", config {key}" if key else "")
            found = NodePlugin(where, strategy, config.sharing if config is not None else ())
            break
    allocatable = allocatable_of(node)
    if allocatable:
        found = found._replace(sharing=tuple(s for s in found.sharing if s.advertised in allocatable))
    return found


def node_sharing(sources: list[PluginSource], node: dict[str, Any]) -> tuple[Sharing, ...]:
    return node_plugin(sources, node).sharing


def single_mig_profile(node: dict[str, Any]) -> str | None:
    """The MIG profile a `single`-strategy node advertises as `nvidia.com/gpu`, from feature discovery's
    product label (`A100-SXM4-40GB-MIG-1g.5gb`); None when unknown or invalid (`-MIG-INVALID`)."""
    product = labels_of(node).get(PRODUCT_LABEL, "")
    _, marker, profile = product.rpartition("-MIG-")
    return profile if marker and profile and profile != "INVALID" else None
