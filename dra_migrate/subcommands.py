"""Subcommands whose parsers are made only when one of them is run.

Every `dra-migrate` start registers the subcommands of every part (translator, webhook, certs), and
a run uses one. Making a parser and adding arguments is not free in argparse (a help formatter per
argument, message catalogue lookups per parser), so only names and help are registered up front:
the parser of the subcommand being run is made when argparse reaches it.
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
    """`Subcommands.of(parser, ...)`, then `add_command` for each subcommand."""

    @classmethod
    def of(cls, parser: argparse.ArgumentParser, **kwargs: Any) -> Subcommands:
        """`parser.add_subparsers(**kwargs)` made of this class (dest, required, metavar, ...)."""
        subcommands = parser.add_subparsers(action=cls, **kwargs)
        assert isinstance(subcommands, cls)
        return subcommands

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, tuple[Arguments, dict[str, Any]]] = {}
        self._names: dict[str, Any] = {}  # every subcommand, made or not, in order: what argparse accepts
        self.choices = self._names

    def add_command(self, name: str, arguments: Arguments, **kwargs: Any) -> None:
        """A subcommand (`kwargs` as for add_parser); `arguments` adds its arguments and handler."""
        if "help" in kwargs:  # listed in the parent's help as add_parser would, in the same order
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), kwargs.pop("help")))
        self._names[name] = None
        self._pending[name] = (arguments, kwargs)

    def complete(self, *names: str) -> None:
        """Make the parsers of the named subcommands, or of all of them (shell completion reads them all)."""
        for name in names or list(self._pending):
            pending = self._pending.pop(name, None)
            if pending is not None:
                arguments, kwargs = pending
                arguments(self.add_parser(name, **kwargs))

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        self._names[name] = None
        return super().add_parser(name, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, list) and values:
            self.complete(values[0])  # the subcommand being run, before argparse hands it the rest
        super().__call__(parser, namespace, values, option_string)
