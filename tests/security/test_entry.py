"""The deployment's public entry, nginx on ``deploy/nginx/nginx.conf`` (its port, upstream and
paths rewritten to this machine's; every limit and timeout as deployed), in front of a real
gateway: the huge-header and slow-header attacks are cut off there (issue 29, finding 1), the
gateway's metrics are not served, and an ordinary request and an event stream pass."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from services.runtime.nats_server import free_port
from tests.security.raw_http import address, endless_head, slow_head
from tests.security.tenants import ACME, bearer, open_table

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "nginx.conf"
NGINX = shutil.which("nginx") or next(
    (path for path in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(path).exists()), None
)
HEADER_TIMEOUT_S = float(re.search(r"client_header_timeout (\d+)s;", CONFIG.read_text())[1])  # type: ignore[index]


def served_config(text: str, port: int, gateway: str, tmp: Path) -> str:
    """The deployed configuration, listening on ``port`` of loopback and proxying to
    ``gateway``, with its pid and temporary files in ``tmp``; nothing else changed."""
    host, gateway_port = address(gateway)
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    text = text.replace("server spades-gateway:8000", f"server {host}:{gateway_port}")
    text = text.replace("/tmp/", f"{tmp}/")
    return text.replace("worker_processes auto;", "worker_processes 1;")


@pytest.fixture(scope="module")
def entry(gateway: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if NGINX is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light; .ci/run does)")
    tmp = tmp_path_factory.mktemp("nginx")
    port = free_port()
    config = tmp / "nginx.conf"
    config.write_text(served_config(CONFIG.read_text(), port, gateway, tmp))
    checked = subprocess.run(
        [NGINX, "-t", "-c", str(config), "-p", str(tmp)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    server = subprocess.Popen(
        [NGINX, "-c", str(config), "-p", str(tmp), "-g", "daemon off;"],
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while True:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        assert time.monotonic() < deadline, "nginx did not start"
        time.sleep(0.1)
    yield url
    server.terminate()
    server.wait(timeout=10)


async def test_endless_header_lines_are_cut_off_at_the_entry(entry: str) -> None:
    results = await asyncio.gather(*(endless_head(entry, 32 * 2**20) for _ in range(4)))
    for sent, answer in results:
        assert answer.closed
        # nginx answers a head past its buffers 400 (its "Request Header Or Cookie Too Large")
        assert answer.status in (400, 431), answer
        assert sent < 32 * 2**20


async def test_slow_heads_are_closed_at_the_entrys_header_timeout(entry: str) -> None:
    lines = int(HEADER_TIMEOUT_S) + 5  # one a second: past the timeout were they let
    results = await asyncio.gather(*(slow_head(entry, 1.0, lines) for _ in range(50)))
    for took, answer in results:
        assert answer.closed, took
        assert HEADER_TIMEOUT_S - 1 <= took <= HEADER_TIMEOUT_S + 2.5, took


async def test_the_entry_passes_requests_and_streams_but_not_metrics(
    entry: str, http: httpx.AsyncClient
) -> None:
    table = await open_table(http, ACME, visibility="public")
    async with httpx.AsyncClient(base_url=entry, timeout=30) as client:
        assert (await client.get(table.url, headers=bearer(ACME))).status_code == 200
        assert (await client.get("/metrics")).status_code == 404
        async with client.stream("GET", f"{table.url}/events/stream") as answer:
            assert answer.status_code == 200
            first = await anext(answer.aiter_lines())  # unbuffered: the state comes at once
            assert first == "event: state"
