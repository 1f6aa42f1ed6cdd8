"""The NATS monitoring port asks no login (it names the subjects, the connections and their
clients' addresses), so no deployment lets anyone but the node itself reach it: every
nats-server configuration binds it to the loopback, compose publishes it nowhere and the
Kubernetes Service does not carry it. Nothing scrapes it (Prometheus reads the Spades processes
alone), so nothing needs it reachable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.runtime.nats_server import EmbeddedNats

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
MONITOR = 8222
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")

_SETTING = re.compile(r'^\s*"?(?P<key>[A-Za-z_]+)"?\s*[:=]\s*"?(?P<value>[^\s"#,]+)')
"""``key: value`` or ``key = value`` (nats-server's format) or ``"key": "value"`` (JSON)."""
_MONITORING_KEYS = ("http", "https", "http_port", "https_port", "monitor_port", "http_host")


def nats_configs() -> dict[str, str]:
    """Every nats-server configuration deployed: the files and Kubernetes' ConfigMap."""
    configs = {
        str(path.relative_to(DEPLOY)): path.read_text()
        for path in sorted((DEPLOY / "nats").rglob("*.conf"))
    }
    for document in yaml.safe_load_all((DEPLOY / "k8s" / "20-nats.yaml").read_text()):
        if document["kind"] == "ConfigMap":
            configs["k8s/20-nats.yaml nats.conf"] = document["data"]["nats.conf"]
    return configs


def monitoring_settings(text: str) -> dict[str, str]:
    """The monitoring settings of a nats-server configuration (comments left out)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _SETTING.match(line.split("#")[0])
        if match is not None and match["key"].lower() in _MONITORING_KEYS:
            found[match["key"].lower()] = match["value"]
    return found


def exposure(settings: dict[str, str]) -> str | None:
    """Why these settings put the monitoring port on an address beyond the loopback (None:
    they do not, or there is no monitoring port)."""
    for key in ("http", "https"):
        if key in settings:
            host, _, port = settings[key].rpartition(":")
            if not host or host not in LOOPBACK_HOSTS or not port:
                return f"{key}: {settings[key]} (a host other than the loopback, or none)"
    for key in ("http_port", "https_port", "monitor_port"):
        if key in settings and settings.get("http_host") not in LOOPBACK_HOSTS:
            return f"{key}: {settings[key]} on the listen host, not the loopback"
    return None


@pytest.mark.parametrize(
    ("settings", "exposed"),
    [
        ({"http": "0.0.0.0:8222"}, True),
        ({"http": "8222"}, True),
        ({"http_port": "8222"}, True),
        ({"https": "10.0.0.5:8222"}, True),
        ({"http": "127.0.0.1:8222"}, False),
        ({"http_port": "8222", "http_host": "127.0.0.1"}, False),
        ({}, False),
    ],
)
def test_the_check_tells_an_exposed_port(settings: dict[str, str], exposed: bool) -> None:
    assert (exposure(settings) is not None) == exposed


@pytest.mark.parametrize("name", sorted(nats_configs()))
def test_every_deployed_nats_server_binds_monitoring_to_the_loopback(name: str) -> None:
    settings = monitoring_settings(nats_configs()[name])
    assert exposure(settings) is None, f"{name}: {exposure(settings)}"


def test_the_embedded_server_binds_monitoring_to_the_loopback(tmp_path: Path) -> None:
    with EmbeddedNats(tmp_path / "nats") as server:
        text = server.config_path.read_text()
    settings = monitoring_settings(text)
    assert settings, text
    assert exposure(settings) is None, text


def _published_ports(service: dict[str, Any]) -> list[str]:
    return [str(port) for port in (*service.get("ports", []), *service.get("expose", []))]


def test_compose_publishes_no_nats_monitoring_port() -> None:
    compose: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    for name, service in compose["services"].items():
        for port in _published_ports(service):
            target = port.split("/")[0].rsplit(":", 1)[-1]
            assert target != str(MONITOR), f"compose service {name} publishes {port}"
        if str(service.get("image", "")).startswith("nats:"):
            assert not service.get("ports"), f"compose publishes the broker {name}'s ports"


def _k8s_documents() -> list[dict[str, Any]]:
    return [
        document
        for path in sorted((DEPLOY / "k8s").glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if document
    ]


def test_no_kubernetes_service_or_container_port_carries_the_monitoring_port() -> None:
    for document in _k8s_documents():
        name = f"{document['kind']} {document['metadata']['name']}"
        if document["kind"] == "Service":
            for port in document["spec"].get("ports", []):
                assert MONITOR not in (port.get("port"), port.get("targetPort")), name
                assert port.get("name") != "monitor", name
        template = document.get("spec", {}).get("template", {}).get("spec", {})
        for container in template.get("containers", []):
            for port in container.get("ports", []):
                assert port.get("containerPort") != MONITOR, name
                assert port.get("hostPort") != MONITOR, name
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                # the kubelet probes from outside the pod: a loopback port cannot answer it
                get = container.get(probe, {}).get("httpGet", {})
                assert get.get("port") != MONITOR, f"{name}: {probe} reaches 8222 from outside"
