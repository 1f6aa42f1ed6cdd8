"""An earlier release of the project, unpacked from this checkout's history to run beside it.

``git archive`` writes the release's tree into a directory; ``python -m services.cli.main``
started there imports that tree's packages, not this checkout's (the working directory comes
first on ``sys.path``, the editable install's finder after it), with this interpreter and so
with the dependencies installed for this checkout. That holds only while the release depends
on no package this checkout does not (this checkout may need more): a release that needs
another, or a checkout without git or without the release's commit, cannot be run this way,
and :class:`ReleaseUnavailable` says why.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
GIT_TIMEOUT_S = 60.0


class ReleaseUnavailable(Exception):
    """The release cannot be unpacked and run here; the message says why."""


def unpack(commit: str, into: Path) -> Path:
    """The tree of ``commit`` written into ``into``, checked to run as said above."""
    if shutil.which("git") is None:
        raise ReleaseUnavailable("git is not installed: no earlier release to unpack")
    if not (CHECKOUT / ".git").exists():
        raise ReleaseUnavailable(f"{CHECKOUT} is not a git checkout: no history to unpack from")
    found = _git("cat-file", "-e", f"{commit}^{{commit}}", check=False)
    if found.returncode != 0:
        raise ReleaseUnavailable(f"commit {commit} is not in this checkout (a shallow clone?)")
    ours = dependencies((CHECKOUT / "pyproject.toml").read_text())
    theirs = dependencies(_git("show", f"{commit}:pyproject.toml").stdout.decode())
    missing = sorted(set(theirs) - set(ours))
    if missing:
        raise ReleaseUnavailable(
            f"{commit} depends on packages this checkout does not (or on other versions), so "
            f"this interpreter cannot run it: {missing}"
        )
    archive = _git("archive", "--format=tar", commit).stdout
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    imported = imported_from(into)
    if not imported.is_relative_to(into.resolve()):
        raise AssertionError(
            f"`python -m` in {into} imports the project from {imported}, not from the release: "
            "the test would run this checkout twice"
        )
    return into


def dependencies(pyproject: str) -> list[str]:
    """What a ``pyproject.toml`` says the project needs to run, in its order."""
    needed: list[str] = tomllib.loads(pyproject)["project"]["dependencies"]
    return needed


def imported_from(tree: Path) -> Path:
    """Where this interpreter, started in ``tree``, imports the ``services`` package from."""
    printed = subprocess.run(
        [sys.executable, "-c", "import services; print(services.__file__)"],
        cwd=tree,
        env={key: value for key, value in os.environ.items() if not key.startswith("SPADES_")},
        capture_output=True,
        check=True,
        timeout=GIT_TIMEOUT_S,
    )
    return Path(printed.stdout.decode().strip()).resolve()


def _git(*args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", "-C", str(CHECKOUT), *args],
        capture_output=True,
        check=check,
        timeout=GIT_TIMEOUT_S,
    )
