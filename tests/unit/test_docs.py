"""The documentation stands alone in a clone: every link in it lands on a file (and a heading)
of the repository, nothing cites the design notes the project was built from, and the API
reference and the rules format name everything the code has (docs/api.md, docs/rules.md)."""

from __future__ import annotations

import json
import re
import subprocess
import typing
from functools import cache
from pathlib import Path

import pytest

from contracts.webhooks import EVENT_TYPES
from domain.errors import CODES
from domain.events import AnyEvent
from domain.rules import PRESETS, Rules

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LINKED = sorted(
    [
        ROOT / "README.md",
        *DOCS.glob("*.md"),
        ROOT / "deploy" / "README.md",
        ROOT / "benchmarks" / "RESULTS.md",
    ]
)
"""The pages a reader moves between: every relative link in them must resolve."""

OUTSIDE = tuple(name + ".md" for name in ("FORMAT", "API", "ARCHITECTURE", "STYLE", "PITFALLS"))
"""The design notes the project was written from, which a clone does not hold (spelled in parts,
so that this file does not cite them either)."""

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*```")
_SCHEMES = ("http://", "https://", "mailto:")
_SKIPPED_DIRS = {".git", ".venv", "node_modules", "var", "__pycache__", ".mypy_cache"}
_TEXT_SUFFIXES = {
    ".py", ".md", ".js", ".css", ".html", ".json", ".toml", ".yaml", ".yml", ".conf", ".txt",
    ".cfg", ".ini", ".sh",
}  # fmt: skip


def _outside_fences(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, code marks and punctuation dropped,
    spaces made hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """Every anchor of a Markdown page's headings (a repeated heading gets ``-1``, ``-2``...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in _outside_fences(page.read_text(encoding="utf-8")):
        if not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(page: Path) -> list[str]:
    return [
        target
        for line in _outside_fences(page.read_text(encoding="utf-8"))
        for target in _LINK.findall(line)
        if not target.startswith(_SCHEMES)
    ]


def broken(page: Path, target: str) -> str | None:
    """Why ``target`` (a link of ``page``) does not resolve in the repository, or None."""
    path_part, _, fragment = target.partition("#")
    landing = (page.parent / path_part).resolve() if path_part else page
    if not landing.exists():
        return "no such file"
    if ROOT not in landing.parents and landing != ROOT:
        return "outside the repository"
    if fragment and landing.suffix == ".md" and fragment not in anchors(landing):
        return f"{landing.relative_to(ROOT)} has no heading #{fragment}"
    return None


@pytest.mark.parametrize("page", LINKED, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_lands_on_a_file_and_heading_of_the_repository(page: Path) -> None:
    assert page.exists(), page
    wrong = {target: why for target in links(page) if (why := broken(page, target))}
    assert not wrong, f"{page.relative_to(ROOT)}: {wrong}"


def test_anchors_are_made_as_github_makes_them() -> None:
    assert slug("Two decks, and a dealer's discard") == "two-decks-and-a-dealers-discard"
    assert slug(" One machine (`spades up`)") == "one-machine-spades-up"
    assert slug("Callers: platform keys and seat tokens") == "callers-platform-keys-and-seat-tokens"


def test_the_link_checker_finds_a_broken_link_and_a_missing_heading() -> None:
    page = ROOT / "README.md"
    assert broken(page, "docs/no-such-page.md") == "no such file"
    missing = broken(page, "docs/api.md#no-such-heading")
    assert missing == "docs/api.md has no heading #no-such-heading"
    assert broken(page, "docs/api.md#limits") is None
    assert broken(page, "../outside.md") in {"no such file", "outside the repository"}


def _repository_files() -> list[Path]:
    """The files a clone holds (tracked, or new and not ignored); every file when git cannot
    say."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        files = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        files = [
            path
            for path in ROOT.rglob("*")
            if path.is_file() and not _SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts)
        ]
    return [path for path in files if path.suffix in _TEXT_SUFFIXES and path.is_file()]


def test_nothing_cites_a_document_the_repository_does_not_hold() -> None:
    citing = {
        f"{path.relative_to(ROOT)}:{number}"
        for path in _repository_files()
        for number, line in enumerate(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), 1
        )
        if any(name in line for name in OUTSIDE)
    }
    assert not citing, f"cite docs/rules.md or docs/api.md instead: {sorted(citing)}"


def test_the_readme_is_a_front_door_that_leads_to_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150, "the README is a front door: move detail to docs/"
    assert "make run" in readme
    assert "make test" in readme
    for page in DOCS.glob("*.md"):
        assert f"(docs/{page.name})" in readme, f"the README does not lead to docs/{page.name}"
    assert "(benchmarks/RESULTS.md)" in readme
    assert "## Limits" in (DOCS / "api.md").read_text(encoding="utf-8")


def _section(page: Path, heading: str) -> str:
    """The text of ``page`` from ``heading`` to the next heading of the same level."""
    text = page.read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    following = re.search(rf"\n{level} ", text[start + 1 :])
    return text[start : start + 1 + following.start()] if following else text[start:]


def test_the_rules_format_names_every_option_preset_and_code_of_the_engine() -> None:
    page = DOCS / "rules.md"
    options = _section(page, "## Rules options")
    missing = [name for name in Rules.__struct_fields__ if name != "preset"]
    missing = [name for name in missing if f"| `{name}` |" not in options]
    assert not missing, f"options the engine has and docs/rules.md does not describe: {missing}"
    presets = _section(page, "## Presets")
    assert [name for name in PRESETS if f"| `{name}` |" not in presets] == []
    codes = _section(page, "## Error codes")
    assert sorted(code for code in CODES if f"`{code}`" not in codes) == []


def _operations() -> list[tuple[str, str]]:
    document = json.loads((ROOT / "contracts" / "openapi.json").read_text(encoding="utf-8"))
    return [
        (method.upper(), re.sub(r"\{[^}]+\}", "{}", path))
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def test_the_api_reference_names_every_route_event_and_webhook_of_the_contract() -> None:
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    written = {
        (method, re.sub(r"\{[^}]+\}", "{}", path))
        for method, path in re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`?\s]*)", text)
    }
    operations = _operations()
    assert ("POST", "/v1/games/{}/actions") in operations
    missing = [f"{method} {path}" for method, path in operations if (method, path) not in written]
    assert not missing, f"routes of contracts/openapi.json not in docs/api.md: {missing}"
    webhooks = _section(DOCS / "api.md", "## Webhooks")
    assert [kind for kind in EVENT_TYPES if f"`{kind}`" not in webhooks] == []
    events = [event.__struct_config__.tag for event in typing.get_args(AnyEvent)]
    assert [event for event in events if f"`{event}`" not in text] == []
