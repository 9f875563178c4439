"""`tally`'s root command group, whose mounted sub-commands are built when first used.

Each benchmark kind with a CLI (`tally cte ...`, `tally fork RUN`, ...) and `tally mock-server`
is listed by name from the registry, but its module is imported, and its options built, only
when the command line names it or `--help` lists the commands: a `tally run` loads none of them
(bench/fixed_cost.py). Names, order, help text and typo suggestions are those of mounting every
command up front.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup
from typer.main import get_group

from evaltally.benchmarks.base import BenchmarkKind
from evaltally.cli.startup import end

Command = Any
"""typer's vendored click `Command` (typer exports no name for it)."""

Mount = Callable[[typer.Typer], object]
"""Registers one command on a typer app, as the root app would."""


class LazyCommands(MutableMapping[str, Command]):
    """A command table whose pending entries are built on first lookup; listing the names (and
    `in`) builds nothing."""

    def __init__(self, built: Mapping[str, Command], pending: Mapping[str, Mount]) -> None:
        self._built = dict(built)
        self._pending = {name: mount for name, mount in pending.items() if name not in built}
        self._order = [*self._built, *self._pending]

    def __getitem__(self, name: str) -> Command:
        if name in self._pending:
            self._built[name] = _build(name, self._pending.pop(name))
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._pending.pop(name, None)
        if name not in self._built:
            self._order.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._built and name not in self._pending:
            raise KeyError(name)
        self._built.pop(name, None)
        self._pending.pop(name, None)
        self._order.remove(name)

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._pending

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)


def _build(name: str, mount: Mount) -> Command:
    # The same typer machinery that mounts a command on the root app, applied to an app holding
    # only this one: the command comes out exactly as if it had been mounted up front.
    end()  # its work begins without passing cli.output.guard
    holder = typer.Typer()
    mount(holder)
    return get_group(holder).commands[name]


def _kind_cli(kind: BenchmarkKind) -> Mount:
    def mount(app: typer.Typer) -> None:
        sub = kind.load_cli()
        if sub is None:
            raise TypeError(f"{kind.cli} is not a typer app")
        app.add_typer(sub, name=kind.mount_name, help=kind.cli_help)

    return mount


def _kind_command(kind: BenchmarkKind) -> Mount:
    def mount(app: typer.Typer) -> None:
        command = kind.load_command()
        if command is None:
            raise TypeError(f"{kind.command} is not a command function")
        app.command(kind.name, help=kind.cli_help)(command)

    return mount


def _mock_server(app: typer.Typer) -> object:
    from evaltally.mockserver.cli import mock_server_command

    return app.command("mock-server")(mock_server_command)


def mounted_commands() -> dict[str, Mount]:
    """The commands mounted beside the root app's own, in typer's order: single commands (the
    kinds', then `mock-server`), then the kinds' sub-apps."""
    from evaltally.benchmarks.registry import get_kind, kind_names

    commands: dict[str, Mount] = {}
    groups: dict[str, Mount] = {}
    for name in kind_names():
        kind = get_kind(name)
        if kind.cli is not None:
            groups[kind.mount_name] = _kind_cli(kind)
        if kind.command is not None:
            commands[kind.name] = _kind_command(kind)
    return {**commands, "mock-server": _mock_server, **groups}


class RootGroup(TyperGroup):
    """The root group (`typer.Typer(cls=RootGroup)`): its own commands built by typer, the
    mounted ones (`mounted_commands`) on first use."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(self.commands, mounted_commands())

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)
