"""dra-migrate: move device-plugin accelerator workloads to Kubernetes Dynamic Resource Allocation.

Parts: `engine` (pure conversion), `translator` (files), `webhook` (admission), `certs` (TLS).
Importing this package loads nothing else, so every command starts fast (`__version__` reads the
installed metadata on first use).
"""

from __future__ import annotations

# The modules that register the parts' sections of the configuration file (configsections.py),
# imported when a file is read, whichever command reads it.
CONFIG_SECTION_MODULES = ("dra_migrate.webhook.policy",)


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module 'dra_migrate' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dra-migrate")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"
