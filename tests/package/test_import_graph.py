"""The package's import rules, read from the source with `ast` (lazy imports inside functions count too).

* The engine is pure and self-contained: it imports nothing from the edges.
* The translator never imports the webhook, the webhook never imports the translator, and
  certs imports neither: each edge can change without touching the others.
* Kubernetes manifests as text and files (manifests: yamltext, the schema check, atomic writes) sit
  below every part that reads or writes them: they import the engine and nothing else, and cluster/
  and planning/ borrow them from there instead of from the translator.
* The translator's stages import only downward (reading < renders < conversion < results); the
  modules at its top (commands, the run and what works on a whole run) may import any stage.
* The configuration loader (configfile.py, configsections.py) imports no part but the engine: each
  part registers its own section.
* Outside the engine only the names its `__init__` exports are used (its public surface).
* Tests and benchmarks import only public names (no leading underscore).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import dra_migrate.engine

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dra_migrate"

Import = tuple[str, str | None, int]  # (module, imported name or None, line)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def package_files(part: str | None = None) -> list[Path]:
    base = PACKAGE / part if part else PACKAGE
    return sorted(base.rglob("*.py"))


def internal_targets(path: Path) -> Iterator[tuple[str, int]]:
    """Every dra_migrate module a file imports (`from pkg import sub` counts as pkg.sub when sub is a module)."""
    for module, name, line in imports_of(path):
        if not module.startswith("dra_migrate"):
            continue
        candidate = f"{module}.{name}" if name else module
        as_path = ROOT.joinpath(*candidate.split("."))
        yield (candidate if as_path.with_suffix(".py").exists() or as_path.is_dir() else module), line


def test_the_package_is_found() -> None:
    assert len(package_files("engine")) > 10 and len(package_files("webhook")) > 10


@pytest.mark.parametrize("path", package_files("engine"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engine_imports_nothing_from_the_edges(path: Path) -> None:
    for target, line in internal_targets(path):
        assert target.startswith("dra_migrate.engine"), f"{path.name}:{line} imports {target}"


FORBIDDEN = {
    "translator": ("dra_migrate.webhook", "dra_migrate.certs", "dra_migrate.argocd"),
    "webhook": ("dra_migrate.translator",),
    "cluster": ("dra_migrate.translator",),
    "planning": ("dra_migrate.translator",),
    "certs": ("dra_migrate.translator", "dra_migrate.webhook", "dra_migrate.engine"),
}


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_edges_do_not_import_each_other(part: str) -> None:
    for path in package_files(part):
        for target, line in internal_targets(path):
            assert not target.startswith(FORBIDDEN[part]), f"{path.relative_to(ROOT)}:{line} imports {target}"


@pytest.mark.parametrize("path", package_files("manifests"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_manifests_import_only_the_engine(path: Path) -> None:
    for target, line in internal_targets(path):
        where = f"{path.relative_to(ROOT)}:{line}"
        assert target.startswith(("dra_migrate.manifests", "dra_migrate.engine")), f"{where} imports {target}"


STAGES = ("reading", "renders", "conversion", "results")  # the translator's, bottom first


def translator_stage(module: str) -> int:
    """A translator module's place in STAGES; its top (commands, the run) is above them all."""
    parts = module.split(".")
    return STAGES.index(parts[2]) if len(parts) > 2 and parts[2] in STAGES else len(STAGES)


def test_the_translator_stages_are_its_subpackages() -> None:
    packages = {path.parent.name for path in (PACKAGE / "translator").glob("*/__init__.py")}
    assert packages == set(STAGES)


@pytest.mark.parametrize("stage", STAGES)
def test_translator_stages_import_only_downward(stage: str) -> None:
    for path in package_files(f"translator/{stage}"):
        own = translator_stage(module_name(path))
        for target, line in internal_targets(path):
            if target.startswith("dra_migrate.translator"):
                assert translator_stage(target) <= own, f"{path.relative_to(ROOT)}:{line} imports {target}, above it"


@pytest.mark.parametrize("name", ["configfile.py", "configsections.py"])
def test_the_configuration_loader_imports_no_part(name: str) -> None:
    for target, line in internal_targets(PACKAGE / name):
        assert target in ("dra_migrate", "dra_migrate.engine", "dra_migrate.configsections"), (
            f"{name}:{line} imports {target}"
        )


def test_every_part_section_is_registered_for_every_command() -> None:
    """Reading a configuration document registers the parts' sections first, whichever part reads it."""
    from dra_migrate.configfile import parse_settings
    from dra_migrate.webhook.policy import WEBHOOK_SECTION, Mode

    assert parse_settings({"webhook": {"mode": "audit"}}).get(WEBHOOK_SECTION).mode is Mode.AUDIT


def outside_engine_files() -> list[Path]:
    files = [p for p in package_files() if "engine" not in p.relative_to(PACKAGE).parts[:1]]
    return files + sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "bench").rglob("*.py"))


def test_only_the_engine_surface_is_used_outside_it() -> None:
    surface = set(dra_migrate.engine.__all__)
    for path in outside_engine_files():
        for module, name, line in imports_of(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            assert not module.startswith("dra_migrate.engine."), f"{where} reaches into {module}"
            if module == "dra_migrate.engine" and name is not None:
                assert name in surface, f"{where} imports {name}, which the engine does not export"


def test_engine_exports_exist() -> None:
    missing = [name for name in dra_migrate.engine.__all__ if not hasattr(dra_migrate.engine, name)]
    assert not missing


@pytest.mark.parametrize("folder", ["tests", "bench"])
def test_tests_and_benchmarks_import_only_public_names(folder: str) -> None:
    for path in sorted((ROOT / folder).rglob("*.py")):
        for module, name, line in imports_of(path):
            if not module.startswith("dra_migrate"):
                continue
            private = [part for part in [*module.split("."), name or ""] if part.startswith("_") and part != "__init__"]
            assert not private, f"{path.relative_to(ROOT)}:{line} imports private {module}.{name}"
