"""The deployment files say what they mean: configs the real nats-server accepts, manifests
that parse and point at each other, and a broker closed to all but the users of
:data:`~services.runtime.broker_users.BROKER_USERS`, each process with its own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.runtime.broker_users import ADMIN, BROKER_USERS, deployed_authorization, nkey_variable
from services.runtime.credentials import BrokerCredentials
from services.runtime.nats_server import find_nats_server_binary

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
AUTHORIZATION = DEPLOY / "nats" / "authorization.conf"
NATS_CONFIGS = sorted(p for p in (DEPLOY / "nats").rglob("*.conf") if p != AUTHORIZATION)
SERVICES = ("engine", "projections", "gateway")


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


def test_the_deployed_users_are_the_broker_table() -> None:
    assert AUTHORIZATION.read_text() == deployed_authorization(), (
        "deploy/nats/authorization.conf is stale: "
        "`spades broker authorization > deploy/nats/authorization.conf`"
    )


def test_the_kubernetes_nats_config_is_valid(
    tmp_path: Path, broker_environment: dict[str, str]
) -> None:
    documents = list(yaml.safe_load_all((DEPLOY / "k8s" / "20-nats.yaml").read_text()))
    [config_map] = [d for d in documents if d["kind"] == "ConfigMap"]
    assert config_map["data"]["authorization.conf"] == deployed_authorization()
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


def test_every_spades_deployment_reads_the_shared_settings() -> None:
    deployments = [d for d in _manifests() if d["kind"] == "Deployment"]
    assert {d["metadata"]["name"] for d in deployments} == {
        "spades-engine",
        "spades-projections",
        "spades-webhooks",
        "spades-gateway",
    }
    for deployment in deployments:
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        sources = {next(iter(source.values()))["name"] for source in container["envFrom"]}
        assert sources == {"spades"}
        assert container["args"][:2] == ["serve", container["name"]]


def test_every_spades_deployment_presents_its_own_broker_user() -> None:
    for deployment in (d for d in _manifests() if d["kind"] == "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        [container] = pod["containers"]
        [volume] = pod["volumes"]
        [mount] = container["volumeMounts"]
        env = {item["name"]: item["value"] for item in container["env"]}
        assert volume["secret"]["secretName"] == f"spades-nats-{container['name']}"
        assert mount["name"] == volume["name"]
        assert env["SPADES_NATS_CREDS"] == f"{mount['mountPath']}/nats.nk"
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name, service in compose["services"].items():
        if service.get("command", [""])[0] != "serve":
            continue
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
