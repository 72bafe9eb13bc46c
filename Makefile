# Entry points for people and CI. Every target sets up what it needs (a fresh machine has nothing).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: setup demo test lint docs e2e-bins helm-bin promtool-bin kueue-bin e2e bench releases yaml12 clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

DOCS_STAMP = $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,docs]'
	touch $(DOCS_STAMP)

## The documentation site from docs/ and README.md, built strict (a broken link fails) into site/.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## The main job on the bundled examples: preview (diff), then write the converted tree to out/.
## examples/krm converts at render time (an exec KRM function), so its files stay as they are in Git.
demo: $(STAMP)
	$(BIN)/dra-migrate diff --report text --exclude krm examples/; test $$? -le 1  # exit 1: there are changes
	$(BIN)/dra-migrate convert --report text --validate --exclude krm --output-dir out/ examples/
	@echo "converted manifests written to out/"

# Test directories are checked one by one: each has its own conftest module.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/mypy bench
	for path in tests/*/ tests/*.py; do $(BIN)/mypy "$$path" || exit 1; done

## The test command: lint, types, then the whole suite (the e2e part needs tests/e2e/build-control-plane.sh).
test: lint
	$(BIN)/pytest -q

## Control-plane binaries of every supported release (DRA_MIGRATE_E2E_RELEASES=1.37 for fewer), and the
## standalone kustomize the KRM function test runs (kubectl kustomize has no --enable-exec).
e2e-bins:
	bash tests/e2e/build-control-plane.sh
	bash tests/translator/build-kustomize.sh

## helm for the chart tests, built from Go modules into ~/.cache/dra-migrate/helm-<version>/ (reused).
helm-bin:
	bash tests/deploy/build-helm.sh

## promtool for the monitoring tests (rules, their unit tests, a scrape), built from the Prometheus Go
## module into ~/.cache/dra-migrate/promtool-<version>/ (reused).
promtool-bin:
	bash tests/deploy/build-promtool.sh

## Kueue's own configuration check (its pkg/config loading and validation) for the plan's Kueue tests, built
## from the Go module in tests/planning/kueue-config-check into ~/.cache/dra-migrate/kueue-config-check-<version>/.
kueue-bin:
	bash tests/planning/build-kueue-config-check.sh

e2e: $(STAMP) e2e-bins helm-bin
	$(BIN)/pytest -q tests/e2e

## The engine's release table, generated from the Kubernetes sources pinned in tools/releasegen/releases.txt.
releases:
	cd tools/releasegen && GOFLAGS=-mod=mod go run . -out ../../dra_migrate/engine/releases/table.py

## ruamel.yaml's YAML 1.2 scalar resolvers as data, so quoting decisions need not import ruamel.yaml.
yaml12: $(STAMP)
	$(BIN)/python tools/yaml12gen.py

bench: $(STAMP)
	$(BIN)/python bench/translate.py
	$(BIN)/python bench/webhook.py
	$(BIN)/python bench/review_cost.py

clean:
	rm -rf $(VENV) out site dist build .pytest_cache .mypy_cache .ruff_cache .hypothesis
