"""dra-migrate: move device-plugin accelerator workloads to Kubernetes Dynamic Resource Allocation.

Parts: `engine` (pure conversion), `translator` (files), `webhook` (admission), `certs` (TLS).
Importing this package loads only the configuration file's sections that parts own (small,
standard-library modules: configfile.py validates every section whichever command reads the
file), so every command starts fast (`__version__` reads the installed metadata on first use).
"""

from __future__ import annotations

import dra_migrate.webhook.policy  # noqa: F401 - registers the `webhook:` section


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module 'dra_migrate' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dra-migrate")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"
