"""The deployment files say what they mean: configs the real nats-server accepts, manifests
that parse and point at each other, every kind of process ``spades up`` runs, two of each, rolled
out one at a time, all on one K, each scraped where it serves its metrics, and a broker closed
to all but the users of :data:`~services.runtime.broker_users.BROKER_USERS`, each process with
its own."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from contracts.partitions import Partitions
from services.cli.main import app as spades
from services.cli.up import SERVICES, WORKERS, children
from services.runtime.broker_users import ADMIN, BROKER_USERS, deployed_authorization, nkey_variable
from services.runtime.credentials import BrokerCredentials
from services.runtime.nats_server import find_nats_server_binary
from services.runtime.settings import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
AUTHORIZATION = DEPLOY / "nats" / "authorization.conf"
NATS_CONFIGS = sorted(p for p in (DEPLOY / "nats").rglob("*.conf") if p != AUTHORIZATION)
COMPOSE = DEPLOY / "compose.yaml"
PROMETHEUS = DEPLOY / "prometheus"


@pytest.fixture(scope="module")
def broker_environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What a deployed nats-server's environment holds: the users' public keys (as
    ``spades broker keys`` makes them) and the route password and routes."""
    credentials = BrokerCredentials(tmp_path_factory.mktemp("keys")).ensure()
    keys = {nkey_variable(user): credentials.public_key(user) for user in BROKER_USERS}
    route = "nats-route://spades-route:route-password@spades-nats-{}:6222"
    routes = {f"SPADES_NATS_ROUTE_{n}": route.format(n) for n in range(4)}
    return {**keys, **routes, "SPADES_NATS_ROUTE_PASSWORD": "route-password"}


def _run_nats_server_check(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # Only what the test gives: no variable of the machine may fill a reference in.
    return subprocess.run(
        [str(find_nats_server_binary()), "-c", str(config), "-t"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), **env},
        check=False,
    )


def _checked_by_nats_server(config: Path, env: dict[str, str]) -> str:
    result = _run_nats_server_check(config, env)
    assert result.returncode == 0, result.stderr
    return result.stderr + result.stdout


@pytest.mark.parametrize("config", NATS_CONFIGS, ids=[p.name for p in NATS_CONFIGS])
def test_nats_configs_are_valid_and_sync_every_append(
    config: Path, broker_environment: dict[str, str]
) -> None:
    assert "is valid" in _checked_by_nats_server(config, broker_environment)
    assert "sync_interval: always" in config.read_text()


@pytest.mark.parametrize("config", NATS_CONFIGS, ids=[p.name for p in NATS_CONFIGS])
def test_a_deployed_server_admits_only_the_broker_users(
    config: Path, broker_environment: dict[str, str]
) -> None:
    text = config.read_text()
    assert "include ./authorization.conf" in text or "include ../authorization.conf" in text
    assert "no_auth_user" not in text
    # Without the users' keys it does not start at all, rather than start open.
    missing = {k: v for k, v in broker_environment.items() if not k.startswith("SPADES_NATS_NKEY")}
    refused = _run_nats_server_check(config, missing)
    assert refused.returncode != 0
    assert nkey_variable(next(iter(BROKER_USERS))) in refused.stderr


def test_the_cluster_routes_need_the_route_password() -> None:
    for config in NATS_CONFIGS:
        if "cluster" in config.parts:
            lines = [line.split("#")[0] for line in config.read_text().splitlines()]
            assert any("password: $SPADES_NATS_ROUTE_PASSWORD" in line for line in lines)
            # every route comes whole from the environment, with its password
            assert not any("nats-route://" in line for line in lines)


def _compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def _shared_settings() -> dict[str, str]:
    """The k8s ConfigMap every Spades process reads."""
    [config_map] = [
        d for d in _manifests() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "spades"
    ]
    data: dict[str, str] = config_map["data"]
    return data


def deployed_partitions() -> Partitions:
    """The deployment's K, as compose.yaml gives it to every process."""
    return Partitions(int(_compose()["x-spades"]["environment"]["SPADES_PARTITIONS"]))


def test_the_deployed_users_are_the_broker_table_for_the_deployments_k() -> None:
    layout = deployed_partitions()
    assert AUTHORIZATION.read_text() == deployed_authorization(layout), (
        "deploy/nats/authorization.conf is stale: `spades broker authorization "
        f"--partitions {layout.count} > deploy/nats/authorization.conf`"
    )
    for stream in layout.streams:  # each partition's stream is named: K > 1, none legacy
        assert f"$JS.API.STREAM.INFO.{stream}" in AUTHORIZATION.read_text()


def test_spades_broker_authorization_renders_the_deployed_file() -> None:
    layout = deployed_partitions()
    rendered = CliRunner().invoke(
        spades, ["broker", "authorization", "--partitions", str(layout.count)]
    )
    assert rendered.exit_code == 0, rendered.output
    assert rendered.output == AUTHORIZATION.read_text()
    legacy = CliRunner().invoke(
        spades, ["broker", "authorization"], env={"SPADES_PARTITIONS": None}
    )
    assert legacy.output == deployed_authorization(Partitions(1))
    refused = CliRunner().invoke(spades, ["broker", "authorization", "--partitions", "0"])
    assert refused.exit_code != 0


def test_the_kubernetes_nats_config_is_valid(
    tmp_path: Path, broker_environment: dict[str, str]
) -> None:
    documents = list(yaml.safe_load_all((DEPLOY / "k8s" / "20-nats.yaml").read_text()))
    [config_map] = [d for d in documents if d["kind"] == "ConfigMap"]
    assert config_map["data"]["authorization.conf"] == deployed_authorization(deployed_partitions())
    config = tmp_path / "nats.conf"
    config.write_text(config_map["data"]["nats.conf"])
    (tmp_path / "authorization.conf").write_text(config_map["data"]["authorization.conf"])
    environment = {**broker_environment, "POD_NAME": "spades-nats-0"}
    assert "is valid" in _checked_by_nats_server(config, environment)


def _manifests() -> list[dict[str, Any]]:
    return [
        document
        for path in sorted((DEPLOY / "k8s").glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
    ]


def _spades_deployments() -> list[dict[str, Any]]:
    """The Deployments of Spades processes (not of the Prometheus beside them)."""
    return [
        d
        for d in _manifests()
        if d["kind"] == "Deployment"
        and d["spec"]["template"]["spec"]["containers"][0]["image"].startswith("spades:")
    ]


def _compose_processes() -> dict[str, dict[str, Any]]:
    """compose.yaml's services that run a Spades process, by name."""
    return {
        name: service
        for name, service in _compose()["services"].items()
        if service.get("command", [""])[0] == "serve"
    }


def test_the_deployments_run_every_kind_of_process_spades_up_runs() -> None:
    ran_by_up = [child.name for child in children(Settings(), "nats://127.0.0.1:4222", None)]
    assert sorted(ran_by_up) == sorted(SERVICES)
    in_compose = sorted(service["command"][1] for service in _compose_processes().values())
    assert in_compose == sorted(ran_by_up)
    in_kubernetes = sorted(
        d["spec"]["template"]["spec"]["containers"][0]["name"] for d in _spades_deployments()
    )
    assert in_kubernetes == sorted(ran_by_up)


def test_two_of_each_kind_rolled_out_one_at_a_time_the_new_one_first() -> None:
    for name, service in _compose_processes().items():
        deploy = service["deploy"]
        assert deploy["replicas"] >= 2, name
        assert deploy["update_config"]["order"] == "start-first", name
        assert deploy["update_config"]["parallelism"] == 1, name
        assert deploy["rollback_config"]["order"] == "start-first", name
    budgets = {
        d["spec"]["selector"]["matchLabels"]["app"]: d["spec"]
        for d in _manifests()
        if d["kind"] == "PodDisruptionBudget"
    }
    for deployment in _spades_deployments():
        spec = deployment["spec"]
        app = spec["template"]["metadata"]["labels"]["app"]
        assert spec["selector"]["matchLabels"] == {"app": app}
        assert spec["replicas"] >= 2, app
        assert spec["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
        }, app
        assert budgets[app] == {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}


def test_every_process_of_a_deployment_runs_on_the_same_partitions() -> None:
    layout = deployed_partitions()
    assert layout.count == 6
    assert _compose()["x-spades"]["environment"]["SPADES_STREAM_REPLICAS"] == "3"
    for name, service in _compose_processes().items():
        assert service["environment"]["SPADES_PARTITIONS"] == str(layout.count), name
    assert _shared_settings()["SPADES_PARTITIONS"] == str(layout.count)
    for deployment in _spades_deployments():  # nobody overrides the shared settings
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert not {item["name"] for item in container.get("env", [])} & {
            "SPADES_PARTITIONS",
            "SPADES_STREAM_REPLICAS",
        }
    # the alerts count partitions against the same K
    alerts = (PROMETHEUS / "alerts.yaml").read_text()
    assert set(re.findall(r"\(spades_partitions_held\{[^}]*\}\) [<>] (\d+)", alerts)) == {
        str(layout.count)
    }


def _relabelled(rules: list[dict[str, Any]], meta: dict[str, str]) -> dict[str, str] | None:
    """The labels Prometheus gives a discovered target (``keep`` and plain replacements), or
    None when it drops it. Its regular expressions are anchored at both ends."""
    labels = dict(meta)
    for rule in rules:
        value = ";".join(labels.get(name, "") for name in rule["source_labels"])
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        if rule.get("action", "replace") == "keep":
            if match is None:
                return None
        elif match is not None:
            labels[rule["target_label"]] = match.expand(rule.get("replacement", r"\1"))
    return labels


def test_prometheus_scrapes_every_process_where_it_serves_its_metrics() -> None:
    # compose: each worker on its SPADES_METRICS_PORT, the gateways on their HTTP port, all
    # bound on every address of their container, found by their service's name
    scrape = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job["dns_sd_configs"][0] for job in scrape["scrape_configs"]}
    assert set(jobs) == {f"spades-{kind}" for kind in SERVICES}
    processes = _compose_processes()
    for name, service in processes.items():
        kind = service["command"][1]
        environment = service["environment"]
        port = (
            int(service["command"][service["command"].index("--port") + 1])
            if kind == "gateway"
            else int(environment["SPADES_METRICS_PORT"])
        )
        assert environment["SPADES_HOST"] == "0.0.0.0"
        assert jobs[f"spades-{kind}"]["names"] == [name]
        assert jobs[f"spades-{kind}"]["port"] == port, name
    # Kubernetes: every pod's port named `metrics` (workers) or `http` (gateways), by app label
    settings = _shared_settings()
    assert settings["SPADES_HOST"] == "0.0.0.0"
    [job] = yaml.safe_load((PROMETHEUS / "kubernetes.yml").read_text())["scrape_configs"]
    seen = set()
    for deployment in _spades_deployments():
        pod = deployment["spec"]["template"]
        [container] = pod["spec"]["containers"]
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        kind = container["name"]
        wanted = "http" if kind == "gateway" else "metrics"
        if kind in WORKERS:
            assert ports[wanted] == int(settings["SPADES_METRICS_PORT"]), kind
        for port_name in ports:
            meta = {
                "__meta_kubernetes_pod_label_app": pod["metadata"]["labels"]["app"],
                "__meta_kubernetes_pod_container_port_name": port_name,
                "__meta_kubernetes_pod_name": f"{deployment['metadata']['name']}-abc12",
            }
            target = _relabelled(job["relabel_configs"], meta)
            assert (target is not None) == (port_name == wanted), (kind, port_name)
            if target is not None:
                assert target["job"] == f"spades-{kind}"
                seen.add(kind)
    assert seen == set(SERVICES)
    assert (
        _relabelled(
            job["relabel_configs"],
            {
                "__meta_kubernetes_pod_label_app": "spades-prometheus",
                "__meta_kubernetes_pod_container_port_name": "http",
            },
        )
        is None
    )


def test_the_kubernetes_prometheus_reads_the_files_it_is_made_from() -> None:
    [config_map] = [
        d
        for d in _manifests()
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "spades-prometheus"
    ]
    assert config_map["data"]["prometheus.yml"] == (PROMETHEUS / "kubernetes.yml").read_text()
    assert config_map["data"]["alerts.yaml"] == (PROMETHEUS / "alerts.yaml").read_text()


def test_grafana_is_given_the_prometheus_and_the_dashboard() -> None:
    grafana = _compose()["services"]["grafana"]
    mounted = {
        inside: outside for outside, inside, *_ in (v.split(":") for v in grafana["volumes"])
    }
    assert (DEPLOY / mounted["/var/lib/grafana/dashboards/spades.json"]).is_file()
    provisioning = DEPLOY / mounted["/etc/grafana/provisioning"]
    [source] = yaml.safe_load((provisioning / "datasources" / "prometheus.yaml").read_text())[
        "datasources"
    ]
    assert source["url"] == "http://prometheus:9090"
    assert "prometheus" in _compose()["services"]
    [provider] = yaml.safe_load((provisioning / "dashboards" / "spades.yaml").read_text())[
        "providers"
    ]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    prometheus = _compose()["services"]["prometheus"]
    assert "./prometheus:/etc/prometheus:ro" in prometheus["volumes"]


def test_every_spades_deployment_reads_the_shared_settings() -> None:
    deployments = _spades_deployments()
    for deployment in deployments:
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        sources = {next(iter(source.values()))["name"] for source in container["envFrom"]}
        assert sources == {"spades"}
        assert container["args"][:2] == ["serve", container["name"]]


def test_every_spades_deployment_presents_its_own_broker_user() -> None:
    for deployment in _spades_deployments():
        pod = deployment["spec"]["template"]["spec"]
        [container] = pod["containers"]
        [volume] = pod["volumes"]
        [mount] = container["volumeMounts"]
        env = {item["name"]: item["value"] for item in container["env"]}
        assert volume["secret"]["secretName"] == f"spades-nats-{container['name']}"
        assert mount["name"] == volume["name"]
        assert env["SPADES_NATS_CREDS"] == f"{mount['mountPath']}/nats.nk"
    compose = _compose()
    for name, service in _compose_processes().items():
        user = service["command"][1]
        assert service["secrets"] == [f"{user}_nkey"], name
        assert service["environment"]["SPADES_NATS_CREDS"] == f"/run/secrets/{user}_nkey"
        assert compose["secrets"][f"{user}_nkey"]["file"] == f"./secrets/{user}.nk"
    assert f"{ADMIN}_nkey" not in compose["secrets"]  # the operator's key stays with the operator


def test_the_cluster_replicates_the_stream_three_times() -> None:
    [config_map] = [
        d for d in _manifests() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "spades"
    ]
    assert config_map["data"]["SPADES_STREAM_REPLICAS"] == "3"
    assert config_map["data"]["SPADES_NATS_URL"].count("nats://") == 3
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert compose["x-spades"]["environment"]["SPADES_STREAM_REPLICAS"] == "3"
    for node in ("nats-1", "nats-2", "nats-3"):
        mounted = compose["services"][node]["volumes"][0].split(":")[0]
        config = compose["services"][node]["command"][1].replace("/etc/nats", mounted)
        assert (DEPLOY / config).is_file()


def test_the_public_entry_is_the_one_nginx_config_in_compose_and_kubernetes() -> None:
    config = (DEPLOY / "nginx" / "nginx.conf").read_text()
    [config_map] = [
        d
        for d in _manifests()
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "spades-entry"
    ]
    assert config_map["data"]["nginx.conf"] == config
    entry = _compose()["services"]["entry"]
    assert "./nginx/nginx.conf:/etc/nginx/nginx.conf:ro" in entry["volumes"]
    gateway = _compose()["services"]["gateway"]
    assert "spades-gateway" in gateway["networks"]["default"]["aliases"]
    assert gateway["environment"]["SPADES_TRUSTED_PROXIES"]
    assert _shared_settings()["SPADES_TRUSTED_PROXIES"]
