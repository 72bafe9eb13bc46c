"""Mappings for the resource names of kubernetes-sigs/dra-example-driver, for tests only.

The corpus holds upstream manifests that ask for `example.com/gpu` (the example driver's
KEP-5004 demo). No shipped configuration maps `example.com` names: a test that wants them
converted passes this configuration explicitly.
"""

from __future__ import annotations

from typing import Any

from dra_migrate.engine import Config, parse_config

EXAMPLE_DRIVER_MAPPINGS: list[dict[str, Any]] = [
    {"resource": "example.com/gpu", "deviceClassName": "gpu.example.com", "requestName": "gpu"},
]


def example_driver_config(target: str | None = None) -> Config:
    """The built-in mappings plus the example driver's names."""
    return parse_config({"mappings": EXAMPLE_DRIVER_MAPPINGS}, target)
