"""``chatgate run`` on an address others can reach refuses unsigned webhooks, as a process."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from gateway.platforms import is_loopback
from tests.test_cli import chatgate, cli_env, client_for, gateway_process, wait_ready, write_yaml


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "gateway.example"])
def test_run_on_a_non_loopback_host_without_a_secret_refuses_to_start(
    home: Path, host: str
) -> None:
    result = chatgate("run", env=cli_env(CHATGATE_HOST=host))

    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    [line] = result.stderr.strip().splitlines()
    assert "CHATGATE_WEBHOOK_SECRET" in line
    assert "webhook.allow_unsigned: true" in line
    assert host in line


@pytest.mark.parametrize(
    ("env", "config"),
    [({"CHATGATE_WEBHOOK_SECRET": "s3cret"}, ""), ({}, "webhook: {allow_unsigned: true}\n")],
    ids=["with-secret", "allow-unsigned"],
)
async def test_run_on_all_addresses_starts_with_a_secret_or_the_opt_out(
    home: Path, env: dict[str, str], config: str
) -> None:
    write_yaml(home, config)
    with gateway_process(home, {"CHATGATE_HOST": "0.0.0.0", **env}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            unsigned = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": "hi"}
            )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0

    assert unsigned.status_code == (401 if env else 200), unsigned.text


async def test_run_on_localhost_serves_unsigned_as_before(home: Path) -> None:
    with gateway_process(home, {"CHATGATE_HOST": "localhost"}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            response = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": "hi"}
            )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0

    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("10.0.0.1", False),
        ("localhost.example", False),
    ],
)
def test_loopback_hosts_are_told_apart(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
