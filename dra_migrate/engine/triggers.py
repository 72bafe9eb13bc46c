"""What can make `convert` change or report on an object, in terms a text scanner can check.

The translator passes documents through byte for byte, without parsing them, when their text
shows none of these (dra_migrate/translator/reading/prefilter.py). Every rule here mirrors a decision the
engine takes: `route` is the dispatch `convert` itself uses, and the pod-spec fields are the ones
`convert`'s pre-check and the rule modules read; a new rule that reads another field adds it here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from dra_migrate.engine.config import Config
from dra_migrate.engine.mapping import DeviceRequestSpec, is_extended_resource
from dra_migrate.engine.unknown import NOT_WALKED
from dra_migrate.engine.versions import RESOURCE_GROUP
from dra_migrate.engine.workloads import api_group

# Pod-spec fields whose presence alone can lead to a change or a finding (claims already in use,
# the invalid inline form, the 1.30 `source` inside them).
CLAIM_FIELDS = ("resourceClaims", "resourceClaimTemplates")
# Container fields: `resources.claims`, and `resourceFieldRef.resource: claims.*` (invalid construct).
CONTAINER_CLAIMS = "claims"
# Container resource maps whose keys are device-plugin requests.
RESOURCE_SECTIONS = ("limits", "requests")
NODE_NAME = "nodeName"


class Route(enum.Enum):
    """Which part of the engine an object goes to; NONE returns it unchanged, without findings."""

    NONE = "none"
    LIST = "list"
    DRA = "dra"
    WORKLOAD = "workload"
    QUOTA = "quota"
    UNKNOWN = "unknown"  # a kind with no known pod specs: mapped names anywhere in it are reported


# Quota kinds whose keys name device-plugin resources, by API group (engine/quota.py).
QUOTA_KINDS = {"ResourceQuota": "", "ClusterQueue": "kueue.x-k8s.io", "LimitRange": ""}


def route_for(api_version: object, kind: str, config: Config) -> Route:
    if kind == "List":
        return Route.LIST
    group = api_group(api_version)
    if group == RESOURCE_GROUP:
        return Route.DRA
    if config.workloads.lookup({"apiVersion": api_version, "kind": kind}) is not None:
        return Route.WORKLOAD
    if QUOTA_KINDS.get(kind) == group:
        return Route.QUOTA
    if (group, kind) in NOT_WALKED:
        return Route.NONE
    return Route.UNKNOWN


class TextTriggers:
    """For one configuration: what a workload's text must contain for `convert` to do anything.

    * `field_names`: pod-spec and container field names (each a plain key, matched as written);
    * `resource_sections` / `device_name`: a key under these maps that `device_name` accepts is a
      device request. That is every extended resource, mapped or not: an unmapped one is reported,
      so a name in the mapping table (or matching one of its patterns) is only a subset of them.
    """

    __slots__ = ("config", "device_name", "field_names", "resource_sections")

    def __init__(
        self,
        field_names: tuple[str, ...],
        resource_sections: tuple[str, ...],
        device_name: Callable[[str], bool],
        config: Config,
    ) -> None:
        self.field_names = field_names
        self.resource_sections = resource_sections
        self.device_name = device_name
        self.config = config

    def route(self, api_version: object, kind: str) -> Route:
        return route_for(api_version, kind, self.config)

    def mapped_name(self, text: str) -> bool:
        """Whether `text`, a key or a whole scalar, is a name the mapping converts (what an
        UNKNOWN-route object is reported for, engine/unknown.py)."""
        return isinstance(self.config.mappings.resolve(text), DeviceRequestSpec)


def text_triggers(config: Config) -> TextTriggers:
    # nodeName alone matters only when every pod gets node selection; otherwise only pods with
    # claims, which the other triggers already catch.
    node = (NODE_NAME,) if config.node_name.scope == "all" else ()
    return TextTriggers(
        field_names=(*CLAIM_FIELDS, CONTAINER_CLAIMS, *node),
        resource_sections=RESOURCE_SECTIONS,
        device_name=is_extended_resource,
        config=config,
    )
