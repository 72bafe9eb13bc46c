"""How much a finding matters."""

import enum


class Severity(enum.StrEnum):
    """`info` records a change that was made; `warning` needs a human look; `error` blocked a change."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
