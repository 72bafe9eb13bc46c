"""dra-migrate: move device-plugin accelerator workloads to Kubernetes Dynamic Resource Allocation.

Parts: `engine` (pure conversion), `translator` (files), `webhook` (admission), `certs` (TLS).
Importing this package loads nothing else, so every command starts fast.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dra-migrate")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
