"""A platform chatgate does not ship, added through the public registry API only.

``tests/testroom_platform.py`` is written the way a third-party package would write it;
no project file names it. In-process it is added with ``adapters.registry.register``;
for a real ``chatgate run`` it is installed as an entry point in ``chatgate.platforms``
(a distribution on ``PYTHONPATH``), exactly as ``pip install`` would leave it.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from adapters import registry
from core.errors import ConfigError
from core.store.schema import outbox, prompts, sessions
from gateway.config import load_settings, starter_config
from tests import testroom_platform
from tests.direct_sql import read_rows
from tests.gateway_server import running_gateway
from tests.test_cli import chatgate, cli_env, client_for, gateway_process, wait_ready

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.usefixtures("testroom")
async def test_a_registered_platform_runs_end_to_end(home: Path) -> None:
    (home / "config.yaml").write_text("testroom:\n  room: kitchen\n", encoding="utf-8")
    async with running_gateway(home, {"TESTROOM_SPEAKER": "carol"}) as gw:
        ready = await gw.client.get("/readyz")
        said = await gw.client.post("/testroom/say", json={"text": "hello room"})
        sent = (await gw.client.get("/testroom/sent")).json()
        url = gw.settings.database_url

    assert ready.status_code == 200
    assert "testroom" in ready.json()["adapters"]
    assert said.status_code == 200
    [reply] = sent
    assert reply["chat_id"] == "kitchen"  # the section from config.yaml was read
    assert 'You said: "hello room"' in reply["text"]
    [session] = await read_rows(
        url,
        select(sessions, prompts.c.body)
        .join(prompts, prompts.c.hash == sessions.c.prompt_hash)
        .where(sessions.c.platform == "testroom"),
    )
    assert session.session_key == "testroom:kitchen"
    assert session.user_id == "carol"  # the platform's env var was read
    assert testroom_platform.PROMPT_HINT in session.body
    [row] = await read_rows(url, select(outbox).where(outbox.c.platform == "testroom"))
    # Sent by push delivery from the outbox, and recorded there as delivered.
    assert row.status == "delivered"
    assert row.platform_message_id == "room-message-1"


@pytest.mark.usefixtures("testroom")
def test_a_registered_platform_brings_its_settings_and_starter_block(tmp_path: Path) -> None:
    assert testroom_platform.STARTER_CONFIG in starter_config()
    (tmp_path / "config.yaml").write_text("testroom:\n  rooom: typo\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, {})
    assert caught.value.key == "testroom.rooom"


def test_without_the_registration_its_section_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("testroom:\n  room: kitchen\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, {})
    assert caught.value.key == "testroom"


def install_entry_point(site: Path) -> dict[str, str]:
    """A distribution on ``site`` declaring the platform, as pip would install it; the
    environment a process needs to see it (and this checkout's ``tests`` package)."""
    info = site / "chatgate_testroom-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: chatgate-testroom\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[chatgate.platforms]\ntestroom = tests.testroom_platform:SPEC\n", encoding="utf-8"
    )
    return {"PYTHONPATH": f"{site}:{ROOT}"}


async def test_an_installed_platform_runs_in_chatgate_run(home: Path, tmp_path: Path) -> None:
    env = install_entry_point(tmp_path / "site")
    (home / "config.yaml").write_text("testroom:\n  room: kitchen\n", encoding="utf-8")
    with gateway_process(home, {**env, "TESTROOM_SPEAKER": "carol"}) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            ready = await client.get("/readyz")
            said = await client.post("/testroom/say", json={"text": "hello from outside"})
            sent = (await client.get("/testroom/sent")).json()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    listing = chatgate("sessions", "list", env=cli_env(**env))

    assert "testroom" in ready.json()["adapters"]
    assert said.status_code == 200, said.text
    assert [r["chat_id"] for r in sent] == ["kitchen"]
    assert 'You said: "hello from outside"' in sent[0]["text"]
    assert "testroom:kitchen" in listing.stdout
    init = chatgate("init", "--force", env=cli_env(**env))
    assert init.returncode == 0, init.stderr
    assert "testroom:" in (home / "config.yaml").read_text(encoding="utf-8")


def test_the_entry_point_is_found_by_importlib(tmp_path: Path) -> None:
    # The same distribution as above, read in this process: the registry's own lookup.
    install_entry_point(tmp_path / "site")
    sys.path.insert(0, str(tmp_path / "site"))
    try:
        registry.forget_installed()
        assert registry.platforms()["testroom"] is testroom_platform.SPEC
    finally:
        sys.path.remove(str(tmp_path / "site"))
        registry.forget_installed()
    assert "testroom" not in registry.platforms()


def test_a_platform_may_not_take_a_section_name(tmp_path: Path) -> None:
    clash = testroom_platform.SPEC.__class__(
        name="memory",
        settings=testroom_platform.RoomSettings,
        build=testroom_platform.build,
        enabled=lambda _s: True,
    )
    registry.register(clash)
    try:
        with pytest.raises(ConfigError, match="memory"):
            load_settings(tmp_path, {})
    finally:
        registry.unregister("memory")


@pytest.mark.usefixtures("testroom")
async def test_readyz_names_the_platform_while_its_adapter_is_unhealthy(home: Path) -> None:
    async with running_gateway(home) as gw:
        adapter = gw.gateway.adapters["testroom"]
        assert isinstance(adapter, testroom_platform.RoomAdapter)
        adapter.broken = True
        unhealthy = await gw.client.get("/readyz")
        adapter.broken = False
        healthy = await gw.client.get("/readyz")

    assert unhealthy.status_code == 503
    assert unhealthy.json() == {"status": "adapter unhealthy", "unhealthy": ["testroom"]}
    assert healthy.status_code == 200
