"""The conversion engine: pure functions from one Kubernetes object to its DRA form.

    result = convert(obj, config)            # config = default_config("1.34") or parse_config(...)
    result.object, result.templates, result.findings, result.changes

Shared by the offline translator (plus file I/O) and the admission webhook (plus the
AdmissionReview envelope and template creation). Nothing here does I/O. The names below are
the engine's whole public surface: nothing outside the engine imports its submodules.
"""

from dra_migrate.engine.cel_literal import REPLACEMENT, cel_list, cel_string
from dra_migrate.engine.changes import (
    AddKeys,
    AppendItems,
    Change,
    ChangePath,
    RemoveItems,
    RemoveKey,
    Replace,
    changes,
    get_path,
    same,
)
from dra_migrate.engine.config import (
    Config,
    ConfigError,
    SharedDevices,
    at_admission,
    default_config,
    leave_unconverted,
    parse_config,
    with_emitted_classes,
    with_served_classes,
    with_shared_devices,
    with_strategy,
)
from dra_migrate.engine.containers import ALL_CONTAINERS, REQUESTING_CONTAINERS, pod_containers, resource_maps
from dra_migrate.engine.convert import convert
from dra_migrate.engine.deviceclasses import build_device_class, class_selectors, device_class_name
from dra_migrate.engine.findings import Finding, PathParts, json_path
from dra_migrate.engine.hami import NVIDIA_DRIVER
from dra_migrate.engine.hami import selectors as hami_selectors
from dra_migrate.engine.mapping import (
    DeviceMapping,
    DeviceRequestSpec,
    OpaqueConfig,
    Unconvertible,
    is_extended_resource,
)
from dra_migrate.engine.memo import cached_by_marshal
from dra_migrate.engine.placement import selects, tolerates
from dra_migrate.engine.podspec import resource_entries
from dra_migrate.engine.quantity import QuantityError, device_count
from dra_migrate.engine.quota import PER_CLASS_SUFFIX, REQUESTS_PREFIX, claim_quota_keys, class_quota_name
from dra_migrate.engine.result import Conversion, ConversionResult
from dra_migrate.engine.rules import RULES, Rule, rules_table
from dra_migrate.engine.severity import Severity
from dra_migrate.engine.strategy import EXTENDED_RESOURCE_GATE, ServingClass, Strategy, serving_classes
from dra_migrate.engine.templates import (
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    build_template,
    spec_key,
    spec_matches,
    template_name,
)
from dra_migrate.engine.triggers import Route, TextTriggers, text_triggers
from dra_migrate.engine.validation import cel_problem, dns_subdomain_problem
from dra_migrate.engine.versions import DEFAULT_TARGET, RESOURCE_GROUP, Target, TargetVersionError
from dra_migrate.engine.workloads import BUILTIN_WORKLOADS, is_mirror_pod

__all__ = [
    "ALL_CONTAINERS",
    "BUILTIN_WORKLOADS",
    "DEFAULT_TARGET",
    "EXTENDED_RESOURCE_GATE",
    "MANAGED_BY_LABEL",
    "MANAGED_BY_VALUE",
    "NVIDIA_DRIVER",
    "PER_CLASS_SUFFIX",
    "REPLACEMENT",
    "REQUESTING_CONTAINERS",
    "REQUESTS_PREFIX",
    "RESOURCE_GROUP",
    "RULES",
    "AddKeys",
    "AppendItems",
    "Change",
    "ChangePath",
    "Config",
    "ConfigError",
    "Conversion",
    "ConversionResult",
    "DeviceMapping",
    "DeviceRequestSpec",
    "Finding",
    "OpaqueConfig",
    "PathParts",
    "QuantityError",
    "RemoveItems",
    "RemoveKey",
    "Replace",
    "Route",
    "Rule",
    "ServingClass",
    "Severity",
    "SharedDevices",
    "Strategy",
    "Target",
    "TargetVersionError",
    "TextTriggers",
    "Unconvertible",
    "at_admission",
    "build_device_class",
    "build_template",
    "cached_by_marshal",
    "cel_list",
    "cel_problem",
    "cel_string",
    "changes",
    "claim_quota_keys",
    "class_quota_name",
    "class_selectors",
    "convert",
    "default_config",
    "device_class_name",
    "device_count",
    "dns_subdomain_problem",
    "get_path",
    "hami_selectors",
    "is_extended_resource",
    "is_mirror_pod",
    "json_path",
    "leave_unconverted",
    "parse_config",
    "pod_containers",
    "resource_entries",
    "resource_maps",
    "rules_table",
    "same",
    "selects",
    "serving_classes",
    "spec_key",
    "spec_matches",
    "template_name",
    "text_triggers",
    "tolerates",
    "with_emitted_classes",
    "with_served_classes",
    "with_shared_devices",
    "with_strategy",
]
