"""Subcommands whose arguments are added only when one of them is run.

Every `dra-migrate` start builds the parsers of every part (translator, webhook, certs), and a run
uses one subcommand. argparse makes a help formatter for each argument it adds, so adding all of
them would cost each start several milliseconds; only names, help and descriptions are added up front.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

Arguments = Callable[[argparse.ArgumentParser], None]

if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # generic only in the type stubs
    _SubParsers = argparse._SubParsersAction


class Subcommands(_SubParsers):
    """`parser.add_subparsers(action=Subcommands, ...)`, then `add_command` for each subcommand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, Arguments] = {}

    def add_command(self, name: str, arguments: Arguments, **kwargs: Any) -> None:
        """A subcommand (`kwargs` as for add_parser); `arguments` adds its arguments and handler."""
        self.add_parser(name, **kwargs)
        self._pending[name] = arguments

    def complete(self, *names: str) -> None:
        """Add the arguments of the named subcommands, or of all of them (shell completion reads them all)."""
        for name in names or list(self._pending):
            arguments = self._pending.pop(name, None)
            if arguments is not None:
                arguments(self._name_parser_map[name])

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, list) and values:
            self.complete(values[0])  # the subcommand being run: its arguments, before they are parsed
        super().__call__(parser, namespace, values, option_string)
