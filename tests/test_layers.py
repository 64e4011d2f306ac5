"""The layer contract of `c4core`: dependencies point one way, and this file is where that is written.

`LAYERS` lists the package's modules and subpackages from the bottom up. A module may import
modules of lower layers only, never one of its own layer or above (a subpackage's files may
import each other), so there is no cycle and the low layers stay
light (`config` loads no torch, `report` knows nothing of MLflow). Every import counts: at the
top of a module, inside a function, or under ``TYPE_CHECKING``. The README's module table
follows this order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "c4core"

LAYERS: list[set[str]] = [
    {"figures"},  # how figures and a user's text are worded: one rule each
    # the game interface, the player interface and `random`, the registry of games, and one
    # package per game: its rules, engines, kernels, search tree, solver, bots and suite
    {"games"},
    {"config"},  # every config and profile, the league's game named through the games' registry
    {"evaluation"},  # matches, the joint Elo fit, every position of a small game, exact NashConv
    {"learners"},  # the net, tables, search, ranks, PPO, the AlphaZero-style learner, the plug-ins
    {"league", "players"},  # the league's members, matchmaking and generations; player specs
    {"serving", "report"},  # the served model, the report
    {"tracking"},  # MLflow: the store, versions, the champion, league runs, URIs, leases
    {"app", "entry"},  # the play page; what the entry points share
    {"cli", "steps"},  # the `c4` command and the DAG's steps
]
"""The modules of `c4core`, lowest layer first."""


def _layer_of() -> dict[str, int]:
    return {m: i for i, layer in enumerate(LAYERS) for m in layer}


def imported_modules(path: Path) -> set[str]:
    """The `c4core` modules that the file at `path` imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from c4core import kernels` names a module; `from c4core.x import y`, module x
            names = (
                [f"{node.module}.{a.name}" for a in node.names] if node.module == "c4core" else [node.module]
            )
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "c4core" and len(parts) > 1:
                found.add(parts[1])
    return found


def modules() -> list[str]:
    """The package's top-level modules and subpackages."""
    files = [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    return sorted(files + [p.parent.name for p in PACKAGE.glob("*/__init__.py")])


def sources(module: str) -> list[Path]:
    """The files of a module: the module itself, or every file of a subpackage."""
    if (PACKAGE / module).is_dir():
        return sorted((PACKAGE / module).rglob("*.py"))
    return [PACKAGE / f"{module}.py"]


def test_every_module_has_one_layer() -> None:
    placed = [m for layer in LAYERS for m in layer]
    assert len(placed) == len(set(placed)), "a module is listed in two layers"
    assert set(placed) == set(modules()), "LAYERS must list every c4core module, and only those"


@pytest.mark.parametrize("module", modules())
def test_imports_point_down(module: str) -> None:
    layer = _layer_of()
    imported = set().union(*(imported_modules(path) for path in sources(module))) - {module}
    upward = sorted(m for m in imported if m in layer and layer[m] >= layer[module])
    assert not upward, f"c4core.{module} (layer {layer[module]}) imports {upward}, not below it"


def test_the_check_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from c4core import figures\n"
        "if TYPE_CHECKING:\n    from c4core.tracking.store import MLflowStore\n"
        "def f():\n    import c4core.report\n    from c4core.app import create_app\n"
        "import numpy\n"
    )
    assert imported_modules(source) == {"figures", "tracking", "report", "app"}


def test_the_package_never_imports_airflow() -> None:
    for path in [p for m in modules() for p in sources(m)]:
        tree = ast.parse(path.read_text())
        roots = {
            (a.name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [n])
        }
        assert "airflow" not in roots, f"{path} imports airflow"


def test_the_package_build_lists_every_subpackage() -> None:
    import tomllib

    listed = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}
    assert sorted(listed) == sorted(found), "pyproject.toml's packages must list every c4core package"
