"""A fresh install opened to strangers: pairing, owners and the group policy, driven
through the fake Telegram Bot API and the ``chatgate pairing`` command line."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import DEFAULT_USER, FakeTelegram, make_user
from tests.gateway_server import RunningGateway, running_gateway
from tests.test_cli import chatgate

OWNER = DEFAULT_USER  # the bot's owner writes from the default user's DM
STRANGER = make_user(7770001, first_name="Sam", username="sam")
CODE = re.compile(r"code: ([A-Z0-9]{8}) ")


@asynccontextmanager
async def gateway(
    home: Path, tg: FakeTelegram, model: FakeOpenAIServer, config: str = ""
) -> AsyncIterator[RunningGateway]:
    owners = f"telegram:\n  owners: [{OWNER['id']}]\n"
    (home / "config.yaml").write_text(owners + config, encoding="utf-8")
    env = {**model.gateway_env(), **tg.gateway_env()}
    env.pop("CHATGATE_TELEGRAM_BASE_FILE_URL")
    async with running_gateway(home, env) as gw:
        yield gw


def to(tg: FakeTelegram, user: dict[str, object]) -> list[str]:
    return [m.text for m in tg.sent if m.chat_id == user["id"]]


async def test_a_stranger_pairs_only_with_the_owners_consent(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai):
        tg.push_update(tg.private_message("hello?", user=STRANGER))
        await tg.wait_until(lambda: len(to(tg, STRANGER)) == 1)
        tg.push_update(tg.private_message("anyone?", user=STRANGER))
        tg.push_update(tg.private_message("/pair approve ABCD2345", user=STRANGER))
        tg.push_update(tg.private_message("/pair list"))  # the owner
        await tg.wait_until(lambda: len(to(tg, OWNER)) == 1)
        [offer] = to(tg, STRANGER)
        code = CODE.search(offer)
        assert code is not None, offer
        tg.push_update(tg.private_message(f"/pair approve {code[1].lower()}"))
        await tg.wait_until(lambda: len(to(tg, OWNER)) == 2)
        tg.push_update(tg.private_message("thanks, now?", user=STRANGER))
        await tg.wait_until(lambda: len(to(tg, STRANGER)) == 2)

    listing, approved = to(tg, OWNER)
    assert "telegram:7770001 sam (7770001)" in listing
    assert "Approved sam (7770001) on telegram" in approved
    # Nothing the stranger sent before approval reached the model, nor answered twice.
    said = [r["messages"][-1]["content"] for r in fake_openai.requests]
    assert said == ["thanks, now?"]
    assert to(tg, STRANGER)[1] == "echo: thanks, now?"


async def test_the_group_policy_lets_only_allowed_people_talk(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai):
        tg.push_update(tg.group_message("hi bot", user=STRANGER, mention=True))
        tg.push_update(tg.group_message("hi bot", mention=True))  # the owner
        await tg.wait_until(lambda: len(tg.sent) == 2)

    texts = [m.text for m in tg.sent]
    assert "echo: @chatgate_test_bot hi bot" in texts  # the owner's
    [refusal] = [t for t in texts if not t.startswith("echo")]
    assert "only talk with people this bot's owner has allowed" in refusal
    assert len(fake_openai.requests) == 1


async def test_dm_policy_disabled_ignores_strangers_and_open_lets_them_in(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai, "  dm_policy: disabled\n"):
        tg.push_update(tg.private_message("hello?", user=STRANGER))
        tg.push_update(tg.private_message("ping"))  # the owner, after the stranger
        await tg.wait_until(lambda: len(tg.sent) >= 1)
    assert to(tg, STRANGER) == []
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai, "  dm_policy: open\n"):
        tg.push_update(tg.private_message("hello?", user=STRANGER))
        await tg.wait_until(lambda: len(tg.sent) >= 1)
    assert to(tg, STRANGER) == ["echo: hello?"]


async def test_the_cli_approves_and_revokes_a_pairing(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai):
        tg.push_update(tg.private_message("hello?", user=STRANGER))
        await tg.wait_until(lambda: len(to(tg, STRANGER)) == 1)
    code = CODE.search(to(tg, STRANGER)[0])
    assert code is not None

    listed = chatgate("pairing", "list")
    wrong = chatgate("pairing", "approve", "telegram", "ZZZZ2222")
    unknown_platform = chatgate("pairing", "approve", "nowhere", code[1])
    approved = chatgate("pairing", "approve", "telegram", code[1].lower())
    after = chatgate("pairing", "list", "--platform", "telegram")
    revoked = chatgate("pairing", "revoke", "telegram", "7770001")
    again = chatgate("pairing", "revoke", "telegram", "7770001")

    assert listed.returncode == 0, listed.stderr
    assert "Waiting for approval: 1" in listed.stdout
    assert "telegram:7770001" in listed.stdout
    assert code[1] not in listed.stdout  # stored hashed: nobody can read it back
    assert wrong.returncode == 1
    assert "No telegram pairing request" in wrong.stderr
    assert unknown_platform.returncode == 2
    assert approved.returncode == 0, approved.stderr
    assert "Approved sam (7770001) on telegram" in approved.stdout
    assert "Let in: 1" in after.stdout
    assert "by cli" in after.stdout
    assert revoked.returncode == 0
    assert "stranger again" in revoked.stdout
    assert again.returncode == 1
    for result in (listed, wrong, unknown_platform, approved, after, revoked, again):
        assert "Traceback" not in result.stderr
