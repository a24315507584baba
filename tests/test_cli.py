"""The real ``chatgate`` console script, run as a subprocess."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway.config import load_settings, settings_model
from migrations.runner import head_revision
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.loopback import free_port
from tests.fakes.openai_server import FakeOpenAIServer

CHATGATE = Path(sys.executable).parent / "chatgate"
OFFLINE_MARK = "No model is configured, so chatgate is running in offline mode."
SESSION_LINE = re.compile(r"Session: (\S+)")


def cli_env(**extra: str) -> dict[str, str]:
    """The test's environment ($CHATGATE_HOME set, provider variables cleared by ``home``)."""
    env = dict(os.environ)
    env["COLUMNS"] = "200"  # rich wraps at 80 columns when not on a terminal
    env.update(extra)
    return env


def chatgate(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHATGATE), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env or cli_env(),
        timeout=60,
        check=False,
    )


def write_yaml(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")


# -- init and configuration errors ------------------------------------------------------


def test_init_writes_a_commented_config(home: Path) -> None:
    result = chatgate("init")

    path = home / "config.yaml"
    assert result.returncode == 0, result.stderr
    assert str(path) in result.stdout.replace("\n", "")
    text = path.read_text(encoding="utf-8")
    assert text.count("#") > 10
    model = settings_model()
    sections = [name for name in model.model_fields if name != "home"]
    for section in ("server", "database", "model", "webhook", "sessions", *sections):
        assert f"\n{section}:" in f"\n{text}", section  # every section is documented
    # The starter config is valid and means the defaults.
    assert load_settings(home, {}) == model(home=home.resolve())


def test_init_refuses_to_overwrite_without_force(home: Path) -> None:
    assert chatgate("init").returncode == 0
    path = home / "config.yaml"
    path.write_text("server:\n  port: 9000\n", encoding="utf-8")

    refused = chatgate("init")
    assert refused.returncode != 0
    assert "already exists" in refused.stderr
    assert "--force" in refused.stderr
    assert path.read_text(encoding="utf-8") == "server:\n  port: 9000\n"

    forced = chatgate("init", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "# chatgate configuration" in path.read_text(encoding="utf-8")


def assert_one_line_config_error(result: subprocess.CompletedProcess[str], key: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert key in lines[0]
    return lines[0]


def test_invalid_port_in_config_exits_2_naming_the_key(home: Path) -> None:
    write_yaml(home, "server: {port: 99999}\n")

    line = assert_one_line_config_error(chatgate("run"), "server.port")
    assert "65535" in line


def test_invalid_port_in_environment_exits_2_naming_the_key(home: Path) -> None:
    line = assert_one_line_config_error(
        chatgate("run", env=cli_env(CHATGATE_PORT="abc")), "server.port"
    )
    assert "integer" in line


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ("server: {prot: 8080}\n", "server.prot"),
        ("modle: {name: gpt}\n", "modle"),
        ("webhook: {routes: {support: {secrett: x}}}\n", "webhook.routes.support.secrett"),
    ],
)
def test_unknown_setting_is_named(home: Path, config: str, key: str) -> None:
    write_yaml(home, config)

    line = assert_one_line_config_error(chatgate("db", "current"), key)
    assert "unknown setting" in line


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ("model: {provider: gpt}\n", "model.provider"),
        ("database: {url: 'mysql://x/y'}\n", "database.url"),
        ("server: [1, 2]\n", "server"),
        ("server: {port: [\n", "config.yaml"),
        ("- just\n- a list\n", "config.yaml"),
    ],
)
def test_other_invalid_configs_exit_2(home: Path, config: str, key: str) -> None:
    write_yaml(home, config)

    assert_one_line_config_error(chatgate("db", "current"), key)


def test_an_unknown_memory_provider_stops_run_naming_the_key(home: Path) -> None:
    write_yaml(home, "memory: {provider: no-such-provider}\n")

    line = assert_one_line_config_error(chatgate("run"), "memory.provider")
    assert "no-such-provider" in line


# -- database commands -------------------------------------------------------------------


def test_db_upgrade_then_current(home: Path) -> None:
    before = chatgate("db", "current")
    upgraded = chatgate("db", "upgrade")
    after = chatgate("db", "current")

    assert "database: empty" in before.stdout
    assert upgraded.returncode == 0, upgraded.stderr
    assert after.returncode == 0, after.stderr
    assert f"database: {head_revision()}" in after.stdout
    assert f"code: {head_revision()}" in after.stdout
    assert (home / "state.db").exists()


# -- chatgate chat --------------------------------------------------------------------------


def test_run_with_an_unreachable_database_says_so_in_one_line(home: Path) -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql://chatgate:hunter2@127.0.0.1:{port}/chatgate"
    result = chatgate("run", env=cli_env(CHATGATE_DATABASE_URL=url, CHATGATE_PORT=str(free_port())))

    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("chatgate: cannot open the SessionDB at postgresql://chatgate:***@")
    assert "Traceback" not in result.stderr
    assert "hunter2" not in result.stderr + result.stdout


def session_ids(output: str) -> list[str]:
    return SESSION_LINE.findall(output)


def test_chat_answers_offline_and_continues_the_session(home: Path) -> None:
    first = chatgate("chat", stdin="hello\n/status\n")
    second = chatgate("chat", stdin="/status\nstill there?\n/status\n")
    listing = chatgate("sessions", "list")

    assert first.returncode == 0, first.stderr
    assert OFFLINE_MARK in first.stdout
    assert 'You said: "hello"' in first.stdout
    assert "Model: offline (provider: offline)" in first.stdout
    assert "Turns: 1" in first.stdout
    [session_id] = session_ids(first.stdout)
    assert second.returncode == 0, second.stderr
    assert session_ids(second.stdout) == [session_id, session_id]
    assert 'You said: "still there?"' in second.stdout
    assert "Turns: 2" in second.stdout
    assert listing.returncode == 0, listing.stderr
    assert session_id in listing.stdout
    assert "terminal:local" in listing.stdout
    assert "Traceback" not in first.stderr + second.stderr


def test_chat_new_starts_a_fresh_session_and_show_prints_it(home: Path) -> None:
    typed = "hi\n/status\n/new\n[/bold] and [red]red[/red]\n/status\n"
    result = chatgate("chat", "--chat-id", "other", stdin=typed)
    old, new = session_ids(result.stdout)
    shown = chatgate("sessions", "show", old)

    assert result.returncode == 0, result.stderr
    assert old != new
    assert "Started a new session" in result.stdout
    # Text that looks like rich markup is shown as typed, not interpreted (or crashing).
    assert 'You said: "[/bold] and [red]red[/red]"' in result.stdout
    assert "Traceback" not in result.stderr
    assert shown.returncode == 0, shown.stderr
    assert "end_reason: new" in shown.stdout
    assert "session_key: terminal:other" in shown.stdout
    assert "cache_read_tokens: 0" in shown.stdout
    assert f"Session: {old}" in shown.stdout  # the stored system prompt names its session


# -- chatgate run as a real process -----------------------------------------------------------


@contextmanager
def gateway_process(
    home: Path, env: dict[str, str], *args: str
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``chatgate run [args]`` on a free port; killed (if still running) on exit."""
    port = free_port()
    log = (home / f"run-{port}.log").open("wb")
    proc = subprocess.Popen(
        [str(CHATGATE), "run", *args],
        env=cli_env(CHATGATE_PORT=str(port), **env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield proc, f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        log.close()


async def wait_ready(proc: subprocess.Popen[bytes], client: httpx.AsyncClient) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, f"chatgate run exited with {proc.returncode}"
        assert time.monotonic() < deadline, "chatgate run did not become ready"
        try:
            response = await client.get("/readyz")
            if response.status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.05)  # bounded poll: another process gives us no event


@asynccontextmanager
async def client_for(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        yield client


def run_log(home: Path) -> str:
    return next(home.glob("run-*.log")).read_text(encoding="utf-8")


async def test_run_serves_the_webhook_on_the_offline_model(home: Path) -> None:
    with gateway_process(home, {}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            health = await client.get("/healthz")
            response = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": "hello"}
            )
            docs = await client.get("/docs")
            metrics = await client.get("/metrics")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0  # a stop that was asked for is not a crash
    log = run_log(home)

    assert "Application shutdown complete" in log
    assert "Traceback" not in log
    assert health.json() == {"status": "ok"}
    assert response.status_code == 200, response.text
    [reply] = response.json()["replies"]
    assert OFFLINE_MARK in reply["text"]
    assert 'You said: "hello"' in reply["text"]
    assert docs.status_code == 200
    assert metrics.status_code == 200


def inbox_status(home: Path, message_id: str) -> str | None:
    with sqlite3.connect(home / "state.db") as conn:
        row = conn.execute(
            "SELECT status FROM inbox WHERE platform_message_id = ?", (message_id,)
        ).fetchone()
    return None if row is None else str(row[0])


async def replies_for(
    client: httpx.AsyncClient, message_id: str, *, chat_id: str = "c1"
) -> list[dict[str, Any]]:
    """Poll GET replies (bounded) until ``message_id`` has been answered."""
    deadline = time.monotonic() + 30
    while True:
        response = await client.get(f"/webhook/demo/chats/{chat_id}/replies", params={"after": 0})
        assert response.status_code == 200, response.text
        found = [r for r in response.json()["replies"] if r["message_id"] == message_id]
        if found:
            return found
        assert time.monotonic() < deadline, "the message was never answered"
        await asyncio.sleep(0.05)


async def test_a_crash_after_accepting_loses_nothing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = {"model": {"timeout_seconds": 60, "retry_base_seconds": 0.01}}
    write_yaml(home, yaml.safe_dump(config))
    env = {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test",
        "CHATGATE_MODEL": "fake-model",
    }
    crash = {"chat_id": "c1", "user_id": "u1", "text": "crash me", "message_id": "m-crash"}

    with gateway_process(home, env) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            hello = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": "hello"}
            )
            fake_openai.hang(120)  # the next turn is still at the model when we crash
            queued = await client.post("/webhook/demo", params={"wait": "false"}, json=crash)
            deadline = time.monotonic() + 30
            while len(fake_openai.requests) < 2:
                assert time.monotonic() < deadline, "the queued turn never reached the model"
                await asyncio.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    status_after_crash = inbox_status(home, "m-crash")

    with gateway_process(home, env) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            answered = await replies_for(client, "m-crash")
            status = await client.post("/webhook/demo", json={**crash, "text": "/status"})
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    assert [r["text"] for r in hello.json()["replies"]] == ["echo: hello"]
    assert queued.status_code == 202
    assert status_after_crash == "pending"
    assert [r["text"] for r in answered] == ["echo: crash me"]
    assert answered[0]["session_id"] == hello.json()["session_id"]
    first, _killed, recovered = fake_openai.requests
    assert recovered["messages"][0] == first["messages"][0]  # the same stored prompt
    assert [(m["role"], m["content"]) for m in recovered["messages"][1:]] == [
        ("user", "hello"),
        ("assistant", "echo: hello"),
        ("user", "crash me"),
    ]
    # A redelivery of the crashed message id gets the recovered turn's replies.
    assert [r["text"] for r in status.json()["replies"]] == ["echo: crash me"]
    assert inbox_status(home, "m-crash") == "done"


async def test_run_with_discord_logs_neither_secrets_nor_messages_even_at_debug(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    secret_text = "my locker code is 4-8-15-16"
    async with FakeDiscord() as dc:
        env = {
            **fake_openai.gateway_env(),
            **dc.gateway_env(DISCORD_ALLOW_ALL_USERS="true"),
            "CHATGATE_LOG_LEVEL": "debug",
        }
        with gateway_process(home, env) as (proc, url):
            async with client_for(url) as client:
                await wait_ready(proc, client)
                await dc.wait_commands()
                dc.dm(secret_text)
                await dc.wait_sent(1)
                interaction = dc.slash("help", dm=True)
                await dc.wait_responses(1)
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(proc.wait, 30) == 0
    log = run_log(home)

    assert "discord: connected as" in log  # the adapter's INFO lines are kept
    assert dc.token not in log
    assert interaction["token"] not in log  # interaction webhook URLs carry one
    assert "locker code" not in log
    assert "Traceback" not in log
