"""The admission decision for one Pod: select, convert, check, then hand over to the mode's handler.

Order of the checks and why:
1. Anything but a CREATE of a Pod is allowed untouched. The MutatingWebhookConfiguration
   registers CREATE only; an UPDATE that arrives anyway (another configuration, a manual
   test) gets no patch because a pod's resources and resourceClaims are immutable, so an
   already converted pod is left exactly as it is.
2. The pod's shape and size (webhook/podcheck.py): a pod no apiserver would send, or one over
   the per-pod limits, is denied before any work. Opt-out of the pod (webhook/optout.py), and
   a static pod's mirror (webhook/podcheck.py): allowed, no patch.
3. Namespace selection (webhook/namespaces.py), done by the server as well as by the
   configuration's selectors, because a direct POST to /mutate bypasses the selectors:
   a namespace the configuration does not select is left alone, and nothing is created there.
4. Conversion by the engine of the whole pod (a pod reviewed again after a later webhook changed
   it has its first-pass claims turned back into requests first: webhook/reinvocation.py), for
   the cluster's release (its version, unless the configuration
   sets targetVersion) and with the cluster's DeviceClasses that serve extended resource names:
   the migration strategy (`strategy:`) takes the same decision as the translator would for that
   cluster. The engine's result lists what it converted; the pod is not walked again.
5. ResourceQuotas the converted pod would escape (webhook/quota.py): `quotaGap` denies
   (the default), warns, or converts anyway. A quota counting the claims that the pod's claims
   would pass refuses it here, as the quota refused the device-plugin pod before conversion
   (the claims would be refused later and the pod left Pending).
6. The mode's handler (webhook/modes.py): `enforce` creates templates and patches, `audit`
   only reports. The handler also decides how its mode meets a quota gap and an API failure:
   nothing here depends on the mode.

The Reviewer gets its collaborators (ReviewParts) from its caller; `Reviewer.for_api` wires the
real ones to one ResourceApi and the server's watched copies.

API failures on the way are decided in webhook/failures.py (only an outage follows
`apiUnavailable`). Nothing here raises for a well-formed request: an unexpected error is a
denial with code 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dra_migrate.engine import (
    Config,
    ConversionResult,
    Target,
    at_admission,
    convert,
    is_mirror_pod,
    with_served_classes,
)
from dra_migrate.webhook import messages
from dra_migrate.webhook.budget import Budget
from dra_migrate.webhook.cluster import ClusterCaches
from dra_migrate.webhook.envelope import AdmissionRequest
from dra_migrate.webhook.extended import ExtendedResourceIndex, without_resources
from dra_migrate.webhook.modes import ConvertedPod, ModeHandler, handler_for
from dra_migrate.webhook.namespaces import NamespaceSelection
from dra_migrate.webhook.optout import opt_out_reason
from dra_migrate.webhook.podcheck import (
    limit_problem,
    mirror_pod_warning,
    shape_problem,
    without_managed_fields,
)
from dra_migrate.webhook.policy import QuotaGap, WebhookPolicy
from dra_migrate.webhook.quota import QuotaLookup, QuotaRecord, claimed_devices, quota_exceeded, quota_gaps
from dra_migrate.webhook.reinvocation import restore_earlier_claims
from dra_migrate.webhook.resource_api import ApiError, ResourceApi
from dra_migrate.webhook.responses import Decision, Outcome, allowed, denied
from dra_migrate.webhook.templates import TemplateEnsurer

log = logging.getLogger(__name__)


class NamespaceFilter(Protocol):
    def skip_reason(self, namespace: str, budget: Budget) -> str | None: ...


class QuotaSource(Protocol):
    def quotas(self, namespace: str, budget: Budget) -> list[QuotaRecord]: ...


@dataclass(frozen=True, slots=True)
class ReviewParts:
    """What a review asks besides the pod: the namespace's selection, its quotas, the classes that
    serve extended resource names, the cluster's release (None: the configured target), and the
    mode's handler."""

    namespaces: NamespaceFilter
    quotas: QuotaSource
    extended: ExtendedResourceIndex
    cluster_target: Callable[[], Target | None]
    handler: ModeHandler


class Reviewer:
    def __init__(
        self,
        config: Config,
        parts: ReviewParts,
        *,
        policy: WebhookPolicy | None = None,
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
    ) -> None:
        config = at_admission(config)  # the cluster's own admission plugins ran before this webhook
        self._config = config
        self._policy = policy or WebhookPolicy()
        self._parts = parts
        self._on_api_error = on_api_error
        # The config for the cluster as last seen (release, serving classes), rebuilt when that changes.
        self._derived: tuple[object, Config] = ((), config)

    @classmethod
    def for_api(
        cls,
        config: Config,
        api: ResourceApi,
        *,
        policy: WebhookPolicy | None = None,
        caches: ClusterCaches | None = None,
        on_created: Callable[[], None] = lambda: None,
        on_api_error: Callable[[str, str], None] = lambda operation, reason: None,
    ) -> Reviewer:
        """A Reviewer whose collaborators read `api`, or the watched copies in `caches` when current."""
        policy = policy or WebhookPolicy()
        caches = caches or ClusterCaches()
        templates = TemplateEnsurer(
            api,
            lambda: caches.templates,
            max_per_namespace=policy.max_templates_per_namespace,
            on_created=on_created,
            on_api_error=on_api_error,
        )
        parts = ReviewParts(
            namespaces=NamespaceSelection(policy.excluded_namespaces, api, caches.namespaces),
            quotas=QuotaLookup(api, caches.quotas),
            extended=ExtendedResourceIndex(lambda: caches.device_classes),
            cluster_target=lambda: caches.target,
            handler=handler_for(policy, templates),
        )
        return cls(config, parts, policy=policy, on_api_error=on_api_error)

    @property
    def mode(self) -> str:
        """The mode of the handler that decides (the one place a mode is said)."""
        return str(self._parts.handler.mode)

    def review(self, request: AdmissionRequest) -> Decision:
        try:
            return self._review(request)
        except RecursionError:  # only user-made JSON nests this deep outside managedFields
            return denied(Outcome.DENIED_INVALID, 400, "dra-migrate: the pod is nested too deeply to be a real Pod")
        except Exception as exc:
            log.exception("review %s failed", request.uid)
            return denied(
                Outcome.DENIED_ERROR,
                500,
                f"dra-migrate could not process this pod ({type(exc).__name__}: {exc}); "
                "label it dra-migrate.io/skip=true to bypass conversion",
            )

    def _review(self, request: AdmissionRequest) -> Decision:
        if request.operation != "CREATE" or not request.is_pod or request.object is None:
            return allowed(Outcome.IGNORED)
        pod = without_managed_fields(request.object)
        shape = shape_problem(pod)
        if shape is not None:
            return denied(Outcome.DENIED_INVALID, shape.code, shape.message)
        reason = opt_out_reason(pod)
        if reason is not None:
            return allowed(Outcome.OPTED_OUT, annotations={"reason": reason})
        if is_mirror_pod(pod):
            warning = mirror_pod_warning(pod, self._config)
            return allowed(
                Outcome.MIRROR_POD, warnings=(warning,) if warning else (), annotations={"problems": warning or ""}
            )
        too_big = limit_problem(pod, self._config)
        if too_big is not None:
            return denied(Outcome.DENIED_INVALID, too_big.code, too_big.message)
        budget = Budget(self._policy.api_timeout_seconds)
        try:
            skip = self._parts.namespaces.skip_reason(request.namespace, budget)
        except ApiError as exc:
            return self._failed(exc, pod, request.namespace, f"read namespace {request.namespace}")
        if skip is not None:
            return allowed(Outcome.NOT_SELECTED, annotations={"reason": skip})

        config = self._effective_config()
        restored = restore_earlier_claims(pod, config)  # reviewed again after a later webhook's change
        result = convert(pod if restored is None else restored, config)
        if restored is not None:
            result.source = pod  # the patch applies to the pod as sent
        if not result.changed or result.object is None:
            return self._unchanged(result)
        notes: list[str] = []
        try:
            quotas = self._parts.quotas.quotas(request.namespace, budget) if result.conversions else []
            gaps = quota_gaps(result.conversions, quotas, config.target, self._parts.extended.extended_names())
        except ApiError as exc:
            return self._failed(
                exc, pod, request.namespace, f"list the ResourceQuotas of namespace {request.namespace}"
            )
        if gaps:
            described = [gap.describe(request.namespace) for gap in gaps]
            refusal = self._parts.handler.quota_gap_refusal(described)
            if refusal is not None:
                return refusal
            if self._policy.quota_gap is not QuotaGap.CONVERT:
                notes += [f"webhook.quotaGap {self._policy.quota_gap}: {text}" for text in described]
        devices = claimed_devices(result.templates, result.object)
        exceeded = quota_exceeded(devices, quotas, config.target, self._parts.extended.extended_names())
        if exceeded:
            described = [limit.describe() for limit in exceeded]
            refusal = self._parts.handler.quota_exceeded_refusal(described)
            if refusal is not None:
                return refusal
            notes += described
        return self._parts.handler(ConvertedPod(request, pod, result, tuple(notes), budget))

    def _effective_config(self) -> Config:
        """The configuration for the cluster as it is now: its release, and the DeviceClasses that
        serve extended resource names (the engine's strategy decides with them)."""
        extended = self._parts.extended
        target = self._parts.cluster_target() or self._config.target
        key = (target, extended.generation)
        if self._derived[0] == key:
            return self._derived[1]
        config = with_served_classes(self._config._replace(target=target), extended.serving())
        if self._policy.extended_resource_classes == "skip":  # deprecated: every served name, always
            config = without_resources(config, extended.current())
        self._derived = (key, config)
        return config

    def _unchanged(self, result: ConversionResult) -> Decision:
        return allowed(
            Outcome.UNCHANGED,
            warnings=messages.warnings_for(result.findings),
            annotations={"problems": messages.joined(messages.problems(result.findings))},
        )

    def _failed(self, exc: ApiError, pod: Mapping[str, Any], namespace: str, what: str) -> Decision:
        self._on_api_error(exc.operation, exc.reason)
        return self._parts.handler.api_failed(exc, pod, namespace, what)
