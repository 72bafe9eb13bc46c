"""The conversion engine: pure functions from one Kubernetes object to its DRA form.

    result = convert(obj, config)            # config = default_config("1.34") or parse_config(...)
    result.object, result.templates, result.findings

Shared by the offline translator (plus file I/O) and the admission webhook (plus the
AdmissionReview envelope and template creation). Nothing here does I/O.
"""

from translator.engine.config import Config, ConfigError, default_config, parse_config
from translator.engine.convert import convert
from translator.engine.findings import Finding, Severity
from translator.engine.result import ConversionResult
from translator.engine.versions import Target, TargetVersionError

__all__ = [
    "Config",
    "ConfigError",
    "ConversionResult",
    "Finding",
    "Severity",
    "Target",
    "TargetVersionError",
    "convert",
    "default_config",
    "parse_config",
]
