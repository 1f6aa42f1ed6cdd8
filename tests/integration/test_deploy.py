"""The deployment files say what they mean: configs the real nats-server accepts, manifests
that parse and point at each other."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.runtime.nats_server import find_nats_server_binary

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NATS_CONFIGS = sorted((DEPLOY / "nats").rglob("*.conf"))


def _checked_by_nats_server(config: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(find_nats_server_binary()), "-c", str(config), "-t"],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr + result.stdout


@pytest.mark.parametrize("config", NATS_CONFIGS, ids=[p.name for p in NATS_CONFIGS])
def test_nats_configs_are_valid_and_sync_every_append(config: Path) -> None:
    assert "is valid" in _checked_by_nats_server(config)
    assert "sync_interval: always" in config.read_text()


def test_the_kubernetes_nats_config_is_valid(tmp_path: Path) -> None:
    documents = list(yaml.safe_load_all((DEPLOY / "k8s" / "20-nats.yaml").read_text()))
    [config_map] = [d for d in documents if d["kind"] == "ConfigMap"]
    config = tmp_path / "nats.conf"
    config.write_text(config_map["data"]["nats.conf"])
    assert "is valid" in _checked_by_nats_server(config, {"POD_NAME": "spades-nats-0"})


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
        "spades-gateway",
    }
    for deployment in deployments:
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        sources = {next(iter(source.values()))["name"] for source in container["envFrom"]}
        assert sources == {"spades"}
        assert container["args"][:2] == ["serve", container["name"]]


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
        assert (DEPLOY / mounted).is_file()
