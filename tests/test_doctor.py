"""``chatgate doctor`` against the fake servers: all green when every piece answers; each
broken piece named, with its fix, and exit 1 when one does not."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from gateway.doctor import Check, diagnose
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.loopback import free_port
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram

CHATGATE = Path(sys.executable).parent / "chatgate"
WRONG_TOKEN = "123456789:AAWrongTokenTheFakeRefuses_987654321"


async def chatgate(*args: str, env: dict[str, str]) -> tuple[int, str]:
    """Run the real console script without blocking the loop the fakes serve on."""
    proc = await asyncio.create_subprocess_exec(
        str(CHATGATE),
        *args,
        env={**os.environ, "COLUMNS": "250", **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name: check for check in checks}


async def test_every_check_passes_against_the_fakes(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, FakeDiscord() as dc:
        env = {**fake_openai.gateway_env(), **tg.gateway_env(), **dc.gateway_env()}
        assert (await chatgate("db", "upgrade", env=env))[0] == 0
        code, out = await chatgate("doctor", "--json", env=env)
    report = json.loads(out)
    assert code == 0, out
    assert report["ok"] is True
    rows = {row["name"]: row for row in report["checks"]}
    expected = {"config", "home", "free space", "exposure", "database", "model"}
    assert {*expected, "telegram token", "discord token"} <= rows.keys()
    assert all(row["status"] == "ok" for row in rows.values()), rows
    assert "fake-model" in rows["model"]["detail"]


async def test_a_wrong_token_and_an_unreachable_model_fail_with_their_fixes(home: Path) -> None:
    async with FakeTelegram() as tg:
        env = {
            **tg.gateway_env(TELEGRAM_BOT_TOKEN=WRONG_TOKEN),
            "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
            "OPENAI_API_KEY": "sk-doctor-test",
        }
        code, out = await chatgate("doctor", env=env)
    assert code == 1, out
    lines = out.splitlines()
    telegram = next(line for line in lines if "telegram token" in line)
    assert "FAIL" in telegram
    assert "refused (401)" in telegram
    assert "TELEGRAM_BOT_TOKEN" in telegram
    model = next(line for line in lines if line.lstrip("│ ").startswith("model"))
    assert "FAIL" in model
    assert "cannot connect" in model
    assert "model.base_url" in model
    assert WRONG_TOKEN.split(":")[1] not in out  # the Bot API URL carries the token
    assert "sk-doctor-test" not in out


async def test_a_database_never_migrated_fails_with_the_command_that_fixes_it(home: Path) -> None:
    found = by_name(await diagnose(home, {}))
    assert found["database"].status == "fail"
    assert "chatgate db upgrade" in found["database"].fix
    assert not (home / "state.db").exists()  # the doctor does not create it


async def test_a_model_the_endpoint_does_not_offer_is_named(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.models = ["other-model"]
    found = by_name(await diagnose(home, fake_openai.gateway_env()))
    assert found["model"].status == "fail"
    assert "'fake-model'" in found["model"].detail
    assert "other-model" in found["model"].fix


async def test_a_server_without_a_model_list_is_checked_with_one_token(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.models = None
    passed = by_name(await diagnose(home, fake_openai.gateway_env()))
    fake_openai.fail(status=401)
    refused = by_name(await diagnose(home, fake_openai.gateway_env()))

    assert passed["model"].status == "ok", passed["model"]
    assert "one-token call" in passed["model"].detail
    [ask, _] = fake_openai.requests
    assert ask["max_tokens"] == 1
    assert ask["model"] == "fake-model"
    assert refused["model"].status == "fail"
    assert "OPENAI_API_KEY" in refused["model"].fix


async def test_a_missing_api_key_is_refused_by_the_endpoint(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    found = by_name(await diagnose(home, {"OPENAI_BASE_URL": fake_openai.base_url}))
    assert found["model"].status == "fail"
    assert "OPENAI_API_KEY" in found["model"].fix


@pytest.mark.parametrize(("key", "ok"), [("sk-ant-fake", True), ("sk-ant-wrong", False)])
async def test_the_anthropic_key_is_checked_against_the_model_list(
    home: Path, fake_anthropic: FakeAnthropicServer, key: str, ok: bool
) -> None:
    env = {
        "CHATGATE_MODEL_PROVIDER": "anthropic",
        "CHATGATE_MODEL__BASE_URL": fake_anthropic.base_url,
        "ANTHROPIC_API_KEY": key,
    }
    model = by_name(await diagnose(home, env))["model"]
    assert (model.status == "ok") is ok, model
    assert ok or "ANTHROPIC_API_KEY" in model.fix


async def test_a_reachable_address_without_a_webhook_secret_fails(home: Path) -> None:
    found = by_name(await diagnose(home, {"CHATGATE_HOST": "0.0.0.0"}))
    assert found["exposure"].status == "fail"
    assert "CHATGATE_WEBHOOK_SECRET" in found["exposure"].fix
    signed = {"CHATGATE_HOST": "0.0.0.0", "CHATGATE_WEBHOOK_SECRET": "s3cret-value"}
    assert by_name(await diagnose(home, signed))["exposure"].status == "ok"


async def test_an_invalid_config_is_one_failed_row_with_its_fix(home: Path) -> None:
    (home / "config.yaml").write_text("server:\n  port: 99999\n")
    found = by_name(await diagnose(home, {}))
    assert found["config"].status == "fail"
    assert "server.port" in found["config"].detail
    assert "CHATGATE_SERVER__PORT" in found["config"].fix
    assert found["home"].status == "ok"


def test_a_home_every_user_may_write_to_fails(home: Path) -> None:
    home.chmod(0o777)
    found = by_name(asyncio.run(diagnose(home, {})))
    assert found["home"].status == "fail"
    assert found["home"].fix == f"chmod o-w {home.resolve()}"
