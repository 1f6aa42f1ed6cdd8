"""Layering: the rules engine is pure (standard library and msgspec only); contracts never reach
into services."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(source: str) -> set[str]:
    """The top-level module of every absolute import in a source (relative ones stay inside)."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_helper_sees_every_kind_of_import() -> None:
    source = (
        "import os.path, json\n"
        "from a.b import c\n"
        "from . import sibling\n"
        "def f():\n"
        "    import requests\n"
        "if True:\n"
        "    from services.x import y\n"
    )
    assert imported_modules(source) == {"os", "json", "a", "requests", "services"}


def test_domain_imports_only_the_standard_library_and_msgspec() -> None:
    files = sorted((ROOT / "domain").glob("*.py"))
    assert len(files) >= 10
    allowed = set(sys.stdlib_module_names) | {"msgspec", "domain", "__future__"}
    for path in files:
        foreign = imported_modules(path.read_text(encoding="utf-8")) - allowed
        assert not foreign, f"{path.name} imports {sorted(foreign)}"


IMPURE = frozenset(
    {
        # randomness and the clock: the seed and the time are inputs of the domain
        "random", "secrets", "time", "datetime", "uuid",
        # I/O of every kind
        "os", "io", "pathlib", "shutil", "tempfile", "socket", "ssl", "select", "selectors",
        "asyncio", "threading", "multiprocessing", "subprocess", "signal", "urllib", "http",
        "logging", "sqlite3", "builtins",
    }
)  # fmt: skip


def test_domain_draws_no_randomness_reads_no_clock_and_does_no_io() -> None:
    for path in sorted((ROOT / "domain").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        impure = imported_modules(source) & IMPURE
        assert not impure, f"{path.name} imports {sorted(impure)}"
        called = {
            node.func.id
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        io_calls = called & {"open", "print", "input", "__import__", "exec", "eval"}
        assert not io_calls, f"{path.name} calls {sorted(io_calls)}"


def test_domain_uses_no_relative_import_out_of_the_package() -> None:
    for path in sorted((ROOT / "domain").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level <= 1, f"{path.name} imports from outside domain"


def test_contracts_never_import_services() -> None:
    files = sorted((ROOT / "contracts").rglob("*.py"))
    assert files
    for path in files:
        source = path.read_text(encoding="utf-8")
        assert "services" not in imported_modules(source), f"{path.name} imports services"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                assert not (node.module or "").startswith("services"), path.name
