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


# The services' layering. A service package is what one process runs; only the CLI that runs it
# (and its own modules) may import it. Everything several services share lives in the shared
# packages, which never import a service.
SERVICES = frozenset(
    {"engine", "projections", "webhooks", "gateway", "timers", "backup", "archive", "witness"}
)
"""Packages run by a ``spades`` command: a process (engine, projections, webhooks, gateway,
timers, and a witness of the audit logs, run by another party) or a tool the CLI drives (backup,
archive)."""
SHARED = frozenset({"transparency", "runtime", "store", "audit", "client", "bots", "integrity"})
"""Libraries several services and the CLI use: process plumbing and the event streams
(runtime), the read-model database (store), audit by replay (audit), the HTTP client (client),
the bots' strategies (bots: the engine's stand-in for a seat whose clock ran out plays with them,
and their runner plays games through the client), and the audit log's hashing, proofs and signed
notes (transparency: pure, of the specifications, used by the log, its readers and witnesses),
and the collusion signals over hand records (integrity: for the read model, the route and the
CLI alike)."""
RUNNER = "cli"
SHARED_ORDER = ("transparency", "runtime", "store", "audit", "client", "bots", "integrity")
"""Shared packages below in this order import only those before them (and contracts, domain)."""


def services_imported(source: str) -> set[str]:
    """The ``services`` package of every absolute import of ``services.X`` in a source, however it
    is spelled (``import services.x.y``, ``from services.x import y``, ``from services import
    x``), at any depth of the code."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "services":
                names = [f"services.{alias.name}" for alias in node.names]
            else:
                names = [node.module]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "services" and len(parts) > 1:
                found.add(parts[1])
    return found


def service_modules() -> list[tuple[str, str, str]]:
    """Every module under services/: its path, the package it belongs to, its source."""
    base = ROOT / "services"
    return [
        (str(path.relative_to(ROOT)), path.relative_to(base).parts[0], path.read_text("utf-8"))
        for path in sorted(base.rglob("*.py"))
        if len(path.relative_to(base).parts) > 1
    ]


def crossings(modules: list[tuple[str, str, str]]) -> list[str]:
    """Every import that breaks the layering: a service imported by anything but itself and the
    CLI, a shared package importing one above it in :data:`SHARED_ORDER`."""
    found: list[str] = []
    for name, package, source in modules:
        imported = services_imported(source) - {package}
        if package in SERVICES:
            wrong = imported & SERVICES
        elif package in SHARED:
            wrong = imported - set(SHARED_ORDER[: SHARED_ORDER.index(package)])
        else:
            wrong = set()
        found.extend(f"{name} -> services.{other}" for other in sorted(wrong))
    return found


def test_the_services_helper_sees_every_spelling() -> None:
    source = (
        "import services.engine.handler\n"
        "from services.gateway import app\n"
        "from services import webhooks, store\n"
        "from . import sibling\n"
        "def f():\n"
        "    from services.projections.worker import Worker\n"
    )
    assert services_imported(source) == {"engine", "gateway", "webhooks", "store", "projections"}


def test_the_layering_rule_names_each_crossing() -> None:
    modules = [
        ("gateway/app.py", "gateway", "from services.projections.store import Store\n"),
        ("gateway/deps.py", "gateway", "from services.store.database import Store\n"),
        ("webhooks/x.py", "webhooks", "def f():\n    import services.engine.client\n"),
        ("cli/serve.py", "cli", "from services.engine import service\n"),
        ("store/lag.py", "store", "from services.projections.registry import READ_MODELS\n"),
        ("runtime/x.py", "runtime", "from services.store import database\n"),
        ("audit/x.py", "audit", "from services.runtime.game_stream import GameStream\n"),
    ]
    assert crossings(modules) == [
        "gateway/app.py -> services.projections",
        "webhooks/x.py -> services.engine",
        "store/lag.py -> services.projections",
        "runtime/x.py -> services.store",
    ]


def test_every_services_package_is_a_service_shared_or_the_cli() -> None:
    packages = {p.name for p in (ROOT / "services").iterdir() if (p / "__init__.py").exists()}
    assert {"engine", "gateway", "runtime", "store", "cli"} <= packages
    unknown = packages - SERVICES - SHARED - {RUNNER}
    assert not unknown, f"say here whether {sorted(unknown)} is a service or shared"


def test_a_service_is_imported_only_by_itself_and_the_cli_and_shared_code_by_those_above() -> None:
    found = crossings(service_modules())
    assert not found, "move what they share into a shared package:\n" + "\n".join(found)
