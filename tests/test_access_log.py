"""``chatgate run``'s access log: health probes are not logged at INFO, other requests are.

A real ``chatgate run`` subprocess and its log.
"""

from __future__ import annotations

import signal
from pathlib import Path

import yaml

from tests.test_cli import client_for, gateway_process, run_log, wait_ready, write_yaml

PROBES = ("/healthz", "/readyz", "/metrics")


def access_lines(log: str, path: str) -> list[str]:
    return [line for line in log.splitlines() if f'"GET {path} HTTP/1.1"' in line]


async def _probe_then_chat(home: Path) -> str:
    with gateway_process(home, {}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            for path in PROBES:
                assert (await client.get(path)).status_code == 200
            assert (await client.get("/docs")).status_code == 200
            chat = {"chat_id": "c1", "user_id": "u1", "text": "hello"}
            assert (await client.post("/webhook/demo", json=chat)).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    return run_log(home)


async def test_probes_are_not_logged_at_info_other_requests_are(home: Path) -> None:
    log = await _probe_then_chat(home)

    assert {path: access_lines(log, path) for path in PROBES} == {p: [] for p in PROBES}
    [docs] = access_lines(log, "/docs")
    assert "INFO uvicorn.access" in docs
    assert " 200" in docs
    assert any('"POST /webhook/demo HTTP/1.1" 200' in line for line in log.splitlines())
    assert "hello" not in log  # the access line names the path, never the body


async def test_at_debug_the_probes_show_as_debug_lines(home: Path) -> None:
    write_yaml(home, yaml.safe_dump({"server": {"log_level": "debug"}}))
    log = await _probe_then_chat(home)

    for path in PROBES:
        assert access_lines(log, path), path
        assert all("DEBUG uvicorn.access" in line for line in access_lines(log, path))
