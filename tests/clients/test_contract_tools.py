"""The published documents as other people's validators read them: ``@asyncapi/parser`` parses
both AsyncAPI documents, Redocly and Spectral (``spectral:oas``, ``spectral:asyncapi``) lint
them, each with no error."""

from __future__ import annotations

import json

from tests.clients.conftest import CONTRACTS, NODE_PROJECT, node_tool, run

ERROR = 0
"""A diagnostic's severity as ``@asyncapi/parser`` (and Spectral) number them: 0 is an error."""


def test_the_asyncapi_parser_reads_both_documents_without_an_error() -> None:
    files = [CONTRACTS / "asyncapi.json", CONTRACTS / "nats-asyncapi.json"]
    node_tool("tsc")  # the project's packages are there
    report = json.loads(run(["node", NODE_PROJECT / "check-asyncapi.mjs", *files]))
    assert set(report) == {str(file) for file in files}
    for file, diagnostics in report.items():
        errors = [d for d in diagnostics if d["severity"] == ERROR]
        assert not errors, f"{file}: {errors}"


def test_redocly_finds_no_error_in_the_openapi_document() -> None:
    out = run([node_tool("redocly"), "lint", CONTRACTS / "openapi.json"], cwd=NODE_PROJECT)
    assert "Your API description is valid" in out, out


def test_spectral_finds_no_error_in_any_document() -> None:
    documents = [
        CONTRACTS / name for name in ("openapi.json", "asyncapi.json", "nats-asyncapi.json")
    ]
    ruleset = NODE_PROJECT / ".spectral.yaml"
    out = run(
        [node_tool("spectral"), "lint", "--ruleset", ruleset, "--format", "json", *documents],
        cwd=NODE_PROJECT,
    )
    found = json.loads(out[out.index("[") :])
    assert {problem["source"] for problem in found} <= {str(d) for d in documents}
    assert not [problem for problem in found if problem["severity"] == ERROR], found
