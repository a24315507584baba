"""A push platform's receipts in the audit ledger: the fake Bot API through the real
python-telegram-bot."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram_server import FakeTelegram
from tests.test_audit_e2e import audit_rows, detail
from tests.test_pairing_e2e import CODE, OWNER, STRANGER, gateway, to
from tests.test_telegram_e2e import telegram_gateway


async def test_a_reply_sent_by_a_push_platform_has_its_receipt(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, telegram_gateway(home, tg, fake_openai) as gw:
        tg.push_update(tg.private_message("hello there"))
        [reply] = await tg.wait_sent(1)
        await gw.gateway.core.until_idle(f"telegram:{reply.chat_id}")
        url = gw.settings.database_url
    rows = await audit_rows(url)
    receipts = [(r["event"], detail(r)) for r in rows if r["event"].startswith("delivery_")]

    assert [event for event, _ in receipts] == ["delivery_queued", "delivery_sent"]
    assert receipts[1][1]["platform_message_id"] == str(reply.message_id)


async def test_pairing_requested_and_approved_is_audited(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with FakeTelegram() as tg, gateway(home, tg, fake_openai) as gw:
        tg.push_update(tg.private_message("hello?", user=STRANGER))
        await tg.wait_until(lambda: len(to(tg, STRANGER)) == 1)
        code = CODE.search(to(tg, STRANGER)[0])
        assert code is not None
        tg.push_update(tg.private_message(f"/pair approve {code[1]}"))
        await tg.wait_until(lambda: len(to(tg, OWNER)) == 1)
        url = gw.settings.database_url
    rows = [r for r in await audit_rows(url) if r["event"] == "pairing"]

    assert [(r["person"], detail(r)["action"]) for r in rows] == [
        ("telegram:7770001", "requested"),
        ("telegram:7770001", "approved"),
    ]
