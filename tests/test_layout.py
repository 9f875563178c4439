"""The layout is the architecture: prompt texts are pure, the registry is the only list of
benchmark kinds, and only entry points import the command line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evaltally.benchmarks.registry import get_kind, kind_names
from testkit import REPO

SRC = REPO / "src" / "evaltally"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_prompt_modules_import_nothing_from_benchmarks() -> None:
    modules = sorted((SRC / "prompts").glob("*.py"))
    assert len(modules) >= 3
    for path in modules:
        bad = {m for m in _imports(path) if m.startswith("evaltally.benchmarks")}
        assert not bad, f"{path.name} imports {bad}"


def test_every_kind_is_one_folder_with_its_prompt_module() -> None:
    for name in kind_names():
        kind = get_kind(name)
        folder = SRC / "benchmarks" / name
        assert (folder / "__init__.py").exists()
        # A kind with prompt texts keeps them in prompts/<kind>.py; a kind without any (a fork
        # renders through its parent's kind) imports no prompt module of its own.
        uses_prompts = any(
            m.startswith("evaltally.prompts")
            for path in folder.glob("*.py")
            for m in _imports(path)
        )
        assert (SRC / "prompts" / f"{name}.py").exists() or not uses_prompts, name
        assert kind.benchmark_class().kind == name


def test_no_module_outside_the_registry_lists_the_kinds() -> None:
    for path in SRC.rglob("*.py"):
        if "benchmarks" in path.parts or "prompts" in path.parts:
            continue
        text = path.read_text()
        assert '"cte"' not in text and "'cte'" not in text, path


def _outside(path: Path, *allowed: str) -> bool:
    rel = path.relative_to(SRC)
    return not any(rel.match(pattern) for pattern in allowed)


def test_only_entry_points_import_the_command_line() -> None:
    # The CLI is the top floor: the library never reaches up into it, so a command's
    # output, guard and options stay the command line's own.
    for path in SRC.rglob("*.py"):
        if not _outside(path, "cli/*.py", "benchmarks/*/cli.py", "__main__.py"):
            continue
        bad = {m for m in _imports(path) if m == "evaltally.cli" or m.startswith("evaltally.cli.")}
        assert not bad, f"{path.relative_to(SRC)} imports {bad}"


def _package_imports(package: str) -> dict[str, set[str]]:
    return {str(path.relative_to(SRC)): _imports(path) for path in (SRC / package).rglob("*.py")}


def test_the_runner_never_reaches_up_into_the_run_or_the_command_line() -> None:
    # run/ opens a run and drives it through runner/; the runner knows neither layer above it.
    for path, names in _package_imports("runner").items():
        bad = {m for m in names if m.split(".")[:2] in (["evaltally", "run"], ["evaltally", "cli"])}
        assert not bad, f"{path} imports {bad}"


def test_the_package_root_keeps_few_loose_modules() -> None:
    # Everything else lives in a package named for its job (docs/testing.md, "Layout").
    loose = sorted(p.name for p in SRC.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(loose) <= 7, loose


def test_config_is_data_and_never_imports_a_benchmark() -> None:
    # Kind lookup, typed options, role and baseline checks are the benchmarks' binding step
    # (benchmarks/binding.py); config/ only reads the file into frozen records.
    for path, names in _package_imports("config").items():
        bad = {m for m in names if m.startswith("evaltally.benchmarks")}
        assert not bad, f"{path} imports {bad}"


def test_a_benchmarks_commands_take_from_the_command_line_only_its_kinds_module() -> None:
    # cli/kinds.py is the one door (guard, consoles, shared options, derived runs): the command
    # line mounts the benchmarks' commands, and they reach back through this door alone.
    for path in SRC.glob("benchmarks/*/cli.py"):
        taken = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evaltally.cli"):
                taken.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                taken.update(a.name for a in node.names if a.name.startswith("evaltally.cli"))
        assert taken <= {"evaltally.cli.kinds"}, f"{path.relative_to(SRC)} takes {taken}"


def test_every_sql_statement_lives_in_the_ledger() -> None:
    # One home for reads and writes of the ledger's tables (and so one definition of a call's
    # current outcome): elsewhere code calls ledger/ functions instead of holding SQL.
    statement = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE)\b[^\n]*\b(FROM|INTO|SET)\b")
    for path in SRC.rglob("*.py"):
        if "ledger" in path.relative_to(SRC).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, joined
                text = "{}".join(
                    v.value
                    for v in node.values
                    if isinstance(v, ast.Constant) and isinstance(v.value, str)
                )
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            assert not statement.search(text), f"{path.relative_to(SRC)}: {text}"


def _module_file(dotted: str) -> Path | None:
    """The source file a dotted `evaltally...` name is, or None for a package's face (its
    __init__.py hands names on; an import through it is no edge between two modules)."""
    path = SRC.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def _module_edges(path: Path) -> set[Path]:
    targets: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            dotted = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            dotted = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found = (_module_file(d) for d in dotted if d.startswith("evaltally."))
        targets.update(f for f in found if f is not None and f != path)
    return targets


def test_no_two_modules_import_each_other_even_lazily() -> None:
    # A loop of imports, even one hidden in a function or under TYPE_CHECKING, means two files
    # hold one job between them: split out what both need instead.
    graph = {path: _module_edges(path) for path in SRC.rglob("*.py")}
    loops: list[list[str]] = []
    done: set[Path] = set()

    def walk(path: Path, trail: list[Path]) -> None:
        if path in trail:
            loops.append([str(p.relative_to(SRC)) for p in trail[trail.index(path) :]])
            return
        if path in done:
            return
        for target in graph.get(path, ()):
            walk(target, [*trail, path])
        done.add(path)

    for path in sorted(graph):
        walk(path, [])
    assert not loops, f"import loops: {loops}"
