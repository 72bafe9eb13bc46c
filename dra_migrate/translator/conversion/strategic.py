"""Strategic-merge patches of a converted base, given the DRA form of what they mean to the objects they patch.

An overlay's patch means `convert(merge(base, patch))`: what the engine makes of the object the
overlay renders today. Once the base is converted, the patch applies to `convert(base)` instead, so
its DRA form is the patch that takes `convert(base)` there: its fields are kept as written, a
container's device counts become what the conversion keeps of them, and the lists kustomize replaces
whole (a pod's `resourceClaims`, a container's `claims`, `tolerations`) are written whole, as the
conversion has them: an overlay that sets the count to 0, deletes it or raises an init container's
count gets the pod's claims as they must render, and a patch that sets its own tolerations keeps
the one the conversion adds. The form is checked here by merging it as kustomize does
(`merge`); render verification then builds it with the real kustomize. Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from dra_migrate.engine import Config, DeviceRequestSpec, Severity, convert

# Lists kustomize merges by a key in the built-in kinds' schema; every other list a patch names
# replaces the base's (a pod's resourceClaims and a container's claims too: the schema kustomize
# carries predates them).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "hostAliases": "ip",
}
BUILT_IN_GROUPS = frozenset({"", "apps", "batch"})
_CONTAINER_LISTS = ("initContainers", "containers")
_UNSUPPORTED = ("$setElementOrder/", "$retainKeys", "$deleteFromPrimitiveList/")


class UnsupportedDirectiveError(Exception):
    """A directive this merge does not model."""


def merge(base: Any, patch: Any, keyed: bool = True) -> Any:
    """`patch` merged into `base` as kustomize merges a strategic-merge patch (`keyed`: the object is
    of a built-in kind, whose container and volume lists merge by name)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive is not None:
        raise UnsupportedDirectiveError(f"`$patch: {directive}` on a map")
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if isinstance(key, str) and key.startswith(_UNSUPPORTED):
            raise UnsupportedDirectiveError(f"`{key}`")
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            merge_key = MERGE_KEYS.get(key) if keyed else None
            out[key] = _merge_list(out.get(key), value, merge_key, keyed)
        elif isinstance(value, dict) and value.get("$patch") == "delete":
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value, keyed)
    return out


def _merge_list(base: Any, patch: list[Any], merge_key: str | None, keyed: bool) -> list[Any]:
    """A list merged by `merge_key` as kustomize (kyaml) merges it: the patch's items first, in its
    order, each merged into the base's item of its key, then the base's other items in theirs."""
    if merge_key is None or not all(isinstance(item, dict) for item in patch):
        return [copy.deepcopy(item) for item in patch]  # replaced as written, directives and all
    if any(item.get("$patch") == "replace" for item in patch):
        return [{k: copy.deepcopy(v) for k, v in i.items() if k != "$patch"} for i in patch if i.get("$patch") is None]
    based = [b for b in base if isinstance(b, dict)] if isinstance(base, list) else []
    by_key = {b.get(merge_key): b for b in based}
    out = []
    for item in patch:
        if item.get("$patch") != "delete":
            out.append(merge(by_key.get(item.get(merge_key)), item, keyed))
    named = {item.get(merge_key) for item in patch}
    out.extend(copy.deepcopy(b) for b in based if b.get(merge_key) not in named)
    return out


def is_keyed(obj: Mapping[str, Any]) -> bool:
    return str(obj.get("apiVersion") or "").rpartition("/")[0] in BUILT_IN_GROUPS


class Form(NamedTuple):
    patch: Any  # the patch document that takes the converted target where the conversion of the patched one is
    templates: list[dict[str, Any]]  # templates it references that the target's conversion does not have


def strategic_form(patch: dict[str, Any], target: dict[str, Any], config: Config) -> Form | str:
    """The DRA form of `patch` for the (unconverted) object it patches, or why there is none."""
    keyed = is_keyed(target)
    try:
        patched = merge(target, patch, keyed)
    except UnsupportedDirectiveError as exc:
        return f"it uses {exc}, which dra-migrate cannot rewrite"
    before, after = convert(copy.deepcopy(target), config), convert(patched, config)
    errors = [f.message for f in after.findings if f.severity is Severity.ERROR]
    if errors:
        return f"the patched object cannot be converted: {errors[0]}"
    if before.object is None or after.object is None:
        return "the conversion drops the object"
    converted, expected = before.object, after.object
    form = copy.deepcopy(patch)
    for path, spec in config.workloads.pod_specs(expected):
        base_spec = _at(converted, path)
        if not keyed and any(isinstance(p, int) for p in path) and isinstance(_at(form, path), dict):
            base_spec = {}  # in a list the patch replaces whole: nothing of the base's pod spec is left
        if not isinstance(base_spec, dict):
            return f"`{_dotted(path)}` is not in the converted object"
        problem = _pod_spec_form(form, path, spec, base_spec, config, keyed)
        if problem is not None:
            return problem
    merged = merge(converted, form, keyed)
    for path in list(_differences(merged, expected, ())) if merged != expected else ():
        # a field the engine sets outside the pod spec (Trainer's processes per node, Ray's start
        # parameters): written as the conversion has it, where a map path reaches it
        if path and all(isinstance(part, str) for part in path):
            _set_at(form, path, copy.deepcopy(_at(expected, path)))
    merged = merge(converted, form, keyed)
    if merged != expected:
        where = _differing(merged, expected)
        return f"the converted base, patched, would not render `{where}` as the conversion of the patched object has it"
    known = {t["metadata"]["name"] for t in before.templates}
    return Form(form, [t for t in after.templates if t["metadata"]["name"] not in known])


def _pod_spec_form(
    form: dict[str, Any],
    path: tuple[Any, ...],
    want: dict[str, Any],
    base: dict[str, Any],
    config: Config,
    keyed: bool,
) -> str | None:
    """Write into `form` at `path` what takes the converted pod spec `base` to `want`."""
    spec = _at(form, path)
    written = spec if isinstance(spec, dict) else {}
    for field in ("resourceClaims", "tolerations"):  # kustomize replaces both lists whole
        rendered = written[field] if field in written else base.get(field)
        if not _same_set(rendered, want.get(field)):
            written[field] = copy.deepcopy(want.get(field))
    for field in _CONTAINER_LISTS:
        if not keyed:  # a kind outside kustomize's schema: a list in a patch replaces the base's whole
            rendered = written[field] if field in written else base.get(field)
            if rendered != want.get(field):
                written[field] = copy.deepcopy(want.get(field))
            continue
        problem = _containers_form(written, field, want.get(field), base.get(field), config)
        if problem is not None:
            return problem
    if written and not isinstance(spec, dict) and not _set_at(form, path, written):
        return f"the patch cannot hold `{_dotted(path)}`"
    return None


def _containers_form(spec: dict[str, Any], field: str, want: Any, base: Any, config: Config) -> str | None:
    """Container entries whose devices the conversion changes. A container the patch does not name
    gets an entry of its own, and so does every one before it in the base: kustomize renders the
    patch's entries first, so the entries keep the base's order."""
    wanted = [c for c in want if isinstance(c, dict)] if isinstance(want, list) else []
    based = {c.get("name"): c for c in base if isinstance(c, dict)} if isinstance(base, list) else {}
    listed = spec.get(field)
    if listed is not None and not (isinstance(listed, list) and all(isinstance(c, dict) for c in listed)):
        return f"its `{field}` is not a list of containers"
    entries = {c.get("name"): c for c in listed or () if c.get("$patch") != "delete"}
    added: list[dict[str, Any]] = []  # entries for containers the patch does not name, in the base's order
    last_needed = -1
    for container in wanted:
        name = container.get("name")
        entry = entries.get(name)
        new_resources = _resources_form(entry, container, based.get(name, {}), config)
        if entry is None:
            entry = {"name": name}
            added.append(entry)
            if new_resources is not None:
                last_needed = len(added) - 1
        if new_resources is None:
            continue
        if new_resources:
            entry["resources"] = new_resources
        else:
            entry.pop("resources", None)
    if last_needed >= 0:
        spec[field] = [*(listed or []), *added[: last_needed + 1]]
    return None


def _resources_form(
    entry: dict[str, Any] | None, want: dict[str, Any], base: dict[str, Any], config: Config
) -> dict[str, Any] | None:
    """The `resources` a patch's container entry needs (None: the entry needs no change for devices)."""
    written = entry.get("resources") if entry is not None else None
    resources = copy.deepcopy(written) if isinstance(written, dict) else {}
    want_resources = _map(want.get("resources"))
    base_resources = _map(base.get("resources"))
    for kind in ("limits", "requests"):
        values: dict[str, Any] | None = resources.get(kind) if isinstance(resources.get(kind), dict) else None
        want_map, base_map = _map(want_resources.get(kind)), _map(base_resources.get(kind))
        names = {n for n in (*(values or {}), *want_map, *base_map) if _mapped(n, config)}
        for name in names:
            if name in want_map:
                value = want_map[name]
            elif name in base_map:
                value = None  # the converted base still has it: delete it
            else:
                if values is not None:
                    values.pop(name, None)
                continue
            if values is None:
                values = resources.setdefault(kind, {})
            values[name] = value
        if values is not None and not values and kind not in want_resources:
            del resources[kind]  # an empty map in a patch renders as `{}`
    rendered_claims = resources["claims"] if "claims" in resources else base_resources.get("claims")
    if rendered_claims != want_resources.get("claims"):
        resources["claims"] = copy.deepcopy(want_resources.get("claims"))
    if resources == (written if isinstance(written, dict) else {}):
        return None
    return resources


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _mapped(name: Any, config: Config) -> bool:
    return isinstance(name, str) and isinstance(config.mappings.resolve(name), DeviceRequestSpec)


def _same_set(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(item in b for item in a) and all(item in a for item in b)
    return bool(a == b)


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        if isinstance(obj, dict) and isinstance(part, str):
            obj = obj.get(part)
        elif isinstance(obj, list) and isinstance(part, int) and part < len(obj):
            obj = obj[part]
        else:
            return None
    return obj


def _set_at(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> bool:
    """Set `value` at `path`, creating maps on the way; False where a list item would be needed."""
    node: Any = obj
    for part in path[:-1]:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.setdefault(part, {})
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return False
    if not isinstance(node, dict) or not isinstance(path[-1], str):
        return False
    node[path[-1]] = value
    return True


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path)


def _differing(have: Any, want: Any, path: tuple[Any, ...] = ()) -> str:
    """The first field where two objects differ, dotted."""
    for found in _differences(have, want, path):
        return _dotted(found) or "the object"
    return "the object"


def _differences(have: Any, want: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if isinstance(have, dict) and isinstance(want, dict):
        for key in [*want, *(k for k in have if k not in want)]:
            if have.get(key) != want.get(key):
                yield from _differences(have.get(key), want.get(key), (*path, key))
    elif isinstance(have, list) and isinstance(want, list) and len(have) == len(want):
        for index, (h, w) in enumerate(zip(have, want, strict=True)):
            if h != w:
                yield from _differences(h, w, (*path, index))
    else:
        yield path


def targets_of(patch: Mapping[str, Any], objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects a strategic-merge patch without a `target` applies to: its kind and name (and
    namespace, when it names one)."""
    metadata = patch.get("metadata") if isinstance(patch.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    kind, name, namespace = patch.get("kind"), metadata.get("name"), metadata.get("namespace")
    found = []
    for obj in objects:
        own = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        assert isinstance(own, Mapping)
        if obj.get("kind") == kind and own.get("name") == name and (not namespace or own.get("namespace") == namespace):
            found.append(obj)
    return found
