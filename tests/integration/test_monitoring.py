"""The alerts and the dashboard read what the processes serve: every metric and label they name is
one the code defines (collected from the code, not listed here), Prometheus's own tool accepts
every rule, scrape config and dashboard query, and each alert fires on the series it is about,
and not on healthy ones (``promtool test rules``)."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
ALERTS = DEPLOY / "prometheus" / "alerts.yaml"
DASHBOARD = DEPLOY / "grafana" / "spades.json"
README = DEPLOY / "README.md"
SEVERITIES = {"page", "ticket"}
TARGET_LABELS = {"job", "instance"}
"""Labels Prometheus gives every series it scrapes, whatever the process says."""


METRIC_CLASSES = {
    "Counter": "counter",
    "Gauge": "gauge",
    "Histogram": "histogram",
    "Summary": "summary",
    "CounterMetricFamily": "counter",
    "GaugeMetricFamily": "gauge",
    "HistogramMetricFamily": "histogram",
    "SummaryMetricFamily": "summary",
}


@dataclass
class Defined:
    """One metric the code defines: its type and labels, and the files that define it."""

    kind: str
    labels: set[str]
    where: set[str] = field(default_factory=set)


def _string(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _labels(call: ast.Call, family: bool) -> set[str]:
    keyword = "labels" if family else "labelnames"
    found: ast.expr | None = next((k.value for k in call.keywords if k.arg == keyword), None)
    if found is None and not family and len(call.args) > 2:
        found = call.args[2]
    if isinstance(found, ast.List | ast.Tuple):
        return {
            e.value for e in found.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
    return set()


def defined_metrics() -> dict[str, Defined]:
    """Every series name the services' code can expose (``Counter("x")`` is ``x_total``, a
    histogram ``x_bucket``, ``x_sum``, ``x_count``), read from its source: each call of a
    prometheus_client metric class whose name is a string, or a module's string constant."""
    series: dict[str, Defined] = {}
    for path in sorted((ROOT / "services").rglob("*.py")):
        tree = ast.parse(path.read_text())
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or not call.args:
                continue
            func = call.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called not in METRIC_CLASSES or (name := _string(call.args[0], constants)) is None:
                continue
            kind, labels = METRIC_CLASSES[called], _labels(call, called.endswith("Family"))
            exposed: dict[str, set[str]]
            if kind == "counter":
                exposed = {f"{name.removesuffix('_total')}_total": labels}
            elif kind in ("histogram", "summary"):
                exposed = {f"{name}_sum": labels, f"{name}_count": labels}
                if kind == "histogram":
                    exposed[f"{name}_bucket"] = labels | {"le"}
            else:
                exposed = {name: labels}
            for series_name, series_labels in exposed.items():
                entry = series.setdefault(series_name, Defined(kind, set()))
                entry.labels |= series_labels
                entry.where.add(str(path.relative_to(ROOT)))
    return series


def alert_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def queries() -> list[str]:
    return [rule["expr"] for rule in alert_rules()] + dashboard_queries()


SELECTOR = re.compile(r"\b(spades_[a-z0-9_]+)\s*(?:\{([^}]*)\})?")
MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPED = re.compile(
    r"\b(?:sum|max|min|avg|count)\s+by\s*\(([^)]*)\)\s*\(\s*"
    r"(?:(?:rate|increase|irate|delta|deriv)\s*\(\s*)?(spades_[a-z0-9_]+)"
)


def used_labels(query: str) -> list[tuple[str, set[str]]]:
    """Each metric a query reads, with the labels it selects on or groups a single metric by."""
    used = [
        (name, {m.group(1) for m in MATCHER.finditer(matchers or "")})
        for name, matchers in SELECTOR.findall(query)
    ]
    used += [
        (name, {label.strip() for label in labels.split(",") if label.strip()})
        for labels, name in GROUPED.findall(query)
    ]
    return used


def test_the_metric_collection_finds_what_the_processes_serve() -> None:
    """The collector itself, on metrics each kind of process is known to serve."""
    defined = defined_metrics()
    assert defined["spades_partitions_held"].labels == {"kind"}
    assert defined["spades_follower_lag"].labels == {"kind", "partition"}
    assert defined["spades_partition_failovers_total"].kind == "counter"
    assert defined["spades_engine_decision_seconds_bucket"].labels == {"le"}
    assert defined["spades_engine_commands_total"].labels == {"outcome"}
    assert defined["spades_http_requests_total"].labels == {"method", "route", "status"}
    assert "spades_http_requests" not in defined  # a counter is exposed as ..._total


def test_every_metric_the_alerts_and_the_dashboard_read_is_defined_by_the_code() -> None:
    defined = defined_metrics()
    unknown: set[str] = set()
    for query in queries():
        for name, labels in used_labels(query):
            if name not in defined:
                unknown.add(name)
                continue
            allowed = defined[name].labels | TARGET_LABELS
            assert labels <= allowed, f"{name} has no label {labels - allowed}: {query}"
    assert not unknown, f"no code defines {sorted(unknown)}"


def test_the_alerts_and_the_dashboard_cover_every_kind_of_process() -> None:
    read = {name for query in queries() for name, _ in used_labels(query)}
    for wanted in (
        "spades_partitions_held",
        "spades_partition_failovers_total",
        "spades_follower_lag",
        "spades_engine_decision_seconds_bucket",
        "spades_engine_conflicts_total",
        "spades_webhook_deliveries_pending",
        "spades_webhook_deliveries_failed_total",
        "spades_webhook_endpoints_disabled",
        "spades_timers_overdue",
        "spades_timer_lateness_seconds_bucket",
        "spades_http_requests_total",
        "spades_http_request_duration_seconds_bucket",
    ):
        assert wanted in read, wanted
    dashboard = {name for query in dashboard_queries() for name, _ in used_labels(query)}
    assert read - dashboard <= {"spades_follower_position"}, "each metric has a panel"


def test_every_alert_says_how_long_how_bad_and_what_to_do() -> None:
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in README.read_text().splitlines()
        if line.startswith("#")
    }
    names = [rule["alert"] for rule in alert_rules()]
    assert len(names) == len(set(names))
    for rule in alert_rules():
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert {"summary", "description", "runbook"} <= set(rule["annotations"]), rule["alert"]
        page, _, anchor = rule["annotations"]["runbook"].partition("#")
        assert page == "deploy/README.md", rule["alert"]
        assert anchor in anchors, (rule["alert"], anchor)


def test_the_dashboard_is_a_grafana_dashboard_over_a_chosen_prometheus() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "spades"
    [variable] = dashboard["templating"]["list"]
    assert (variable["type"], variable["query"]) == ("datasource", "prometheus")
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        assert panel["description"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


# --------------------------------------------------------------------------- promtool


def promtool() -> str:
    """Prometheus's own checker (Debian's ``prometheus`` package); CI must have it."""
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: apt-get install prometheus")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


def run_promtool(*args: str, cwd: Path) -> str:
    result = subprocess.run(
        [promtool(), *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_promtool_accepts_the_alerts() -> None:
    rules = len(alert_rules())
    assert f"SUCCESS: {rules} rules found" in run_promtool("check", "rules", str(ALERTS), cwd=ROOT)


def test_promtool_accepts_every_dashboard_query(tmp_path: Path) -> None:
    """As recording rules: promtool parses each query as Prometheus would (Grafana's
    ``$__rate_interval`` is a range by then)."""
    recorded = [
        {"record": f"dashboard:query_{n}", "expr": query.replace("$__rate_interval", "5m")}
        for n, query in enumerate(dashboard_queries())
    ]
    (tmp_path / "dashboard.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": recorded}]})
    )
    checked = run_promtool("check", "rules", "dashboard.yaml", cwd=tmp_path)
    assert f"SUCCESS: {len(recorded)} rules found" in checked


def test_promtool_accepts_the_compose_scrape_config_and_its_rules() -> None:
    config = DEPLOY / "prometheus" / "prometheus.yml"
    checked = run_promtool("check", "config", str(config), cwd=ROOT)
    assert "is valid prometheus config" in checked
    assert f"SUCCESS: {len(alert_rules())} rules found" in checked


ALERT_CASES = Path(__file__).with_name("alert_cases.yaml")
"""What each alert is about, and what it must stay quiet on (``promtool test rules`` cases)."""


def test_each_alert_fires_on_what_it_is_about_and_not_on_healthy_series(tmp_path: Path) -> None:
    """The rules as deployed, but for their annotations (promtool compares those word for word;
    ``check rules`` has checked their templates)."""
    document = yaml.safe_load(ALERTS.read_text())
    for group in document["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations")
    (tmp_path / "alerts.yaml").write_text(yaml.safe_dump(document))
    cases = yaml.safe_load(ALERT_CASES.read_text())
    for case in cases:
        case["interval"] = "1m"
    tested = {test["alertname"] for case in cases for test in case["alert_rule_test"]}
    assert tested == {rule["alert"] for rule in alert_rules()}, "every alert has a case"
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump({"rule_files": ["alerts.yaml"], "evaluation_interval": "1m", "tests": cases})
    )
    run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
