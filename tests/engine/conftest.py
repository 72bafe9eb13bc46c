"""Fixtures for the engine tests (pure functions: no cluster, no files written).

Hypothesis settings are given per test (`settings(max_examples=..., deadline=None)`) rather than
through a loaded profile, so these tests do not change the settings of other test directories.
"""

from __future__ import annotations

import pytest

from dra_migrate.engine import Config, default_config


@pytest.fixture(scope="session")
def config() -> Config:
    """The default configuration: built-in mappings, target 1.34, nodeName -> nodeSelector for claim users."""
    return default_config()


@pytest.fixture(scope="session")
def config_132() -> Config:
    return default_config("1.32")


@pytest.fixture(scope="session")
def config_133() -> Config:
    return default_config("1.33")
