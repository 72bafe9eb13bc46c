"""Exit codes and the one way every subcommand reports a fatal error."""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_CHANGES = 1  # `diff`: there is something to convert
EXIT_ERROR = 2  # bad input, bad usage, or something could not be converted
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `yes | head`


def fail(command: str, message: str) -> int:
    """Print `dra-migrate <command>: error: <message>` to stderr and return EXIT_ERROR."""
    print(f"dra-migrate {command}: error: {message}", file=sys.stderr, flush=True)
    return EXIT_ERROR
