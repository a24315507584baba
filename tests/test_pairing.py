"""Pairing codes and their limits, on a real SessionDB (``core.pairing``)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.clock import ManualClock
from core.messages import InboundMessage
from core.pairing import ALPHABET, Pairings
from tests.curator_helpers import migrated_db

CODE = re.compile(r"code: ([A-Z0-9]{8}) ")


def dm(user: str, platform: str = "telegram") -> InboundMessage:
    return InboundMessage(
        platform=platform,
        chat_id=user,
        user_id=user,
        user_name=f"name-{user}",
        text="let me in",
        platform_message_id="1",
        dedup_key=f"{user}:1",
        received_at=0.0,
    )


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[Pairings, ManualClock]]:
    clock = ManualClock()
    async with migrated_db(tmp_path / "state.db") as db:
        yield Pairings(db.pairing, clock), clock


def code_in(text: str | None) -> str:
    assert text is not None
    found = CODE.search(text)
    assert found is not None, text
    return found[1]


async def test_a_code_is_eight_unambiguous_characters_and_approves_in_any_case(
    world: tuple[Pairings, ManualClock],
) -> None:
    pairings, _clock = world
    code = code_in(await pairings.offer(dm("100")))
    assert len(code) == 8
    assert set(code) <= set(ALPHABET)
    assert not set(code) & set("IO01")
    assert not await pairings.is_paired("telegram", "100")
    loose = f"{code[:4].lower()}-{code[4:].lower()}"
    ok, said = await pairings.approve("telegram", loose, approver="telegram:owner")
    assert ok, said
    assert "name-100" in said
    assert await pairings.is_paired("telegram", "100")


async def test_one_request_per_person_per_ten_minutes_and_three_waiting(
    world: tuple[Pairings, ManualClock],
) -> None:
    pairings, clock = world
    first = code_in(await pairings.offer(dm("1")))
    assert await pairings.offer(dm("1")) is None  # asked a moment ago: nothing new
    for user in ("2", "3"):
        code_in(await pairings.offer(dm(user)))
    full = await pairings.offer(dm("4"))
    assert full is not None
    assert "try again later" in full
    clock.advance(601)
    second = code_in(await pairings.offer(dm("1")))  # a new code replaces the old one
    ok, _ = await pairings.approve("telegram", first, approver="telegram:owner")
    assert not ok
    ok, _ = await pairings.approve("telegram", second, approver="telegram:owner")
    assert ok


async def test_codes_expire_after_an_hour_and_belong_to_their_platform(
    world: tuple[Pairings, ManualClock],
) -> None:
    pairings, clock = world
    other = code_in(await pairings.offer(dm("7", platform="discord")))
    ok, said = await pairings.approve("telegram", other, approver="cli")
    assert not ok
    assert "No telegram pairing request" in said
    clock.advance(3601)
    ok, _ = await pairings.approve("discord", other, approver="cli")
    assert not ok


async def test_nobody_approves_themselves(world: tuple[Pairings, ManualClock]) -> None:
    pairings, _clock = world
    code = code_in(await pairings.offer(dm("55")))
    ok, said = await pairings.approve("telegram", code, approver="telegram:55")
    assert not ok
    assert "own" in said
    assert not await pairings.is_paired("telegram", "55")


async def test_five_wrong_codes_lock_approval_for_an_hour(
    world: tuple[Pairings, ManualClock],
) -> None:
    pairings, clock = world
    code = code_in(await pairings.offer(dm("9")))
    wrong = "ABCDEFGH" if code != "ABCDEFGH" else "HGFEDCBA"
    for _ in range(5):
        ok, _said = await pairings.approve("telegram", wrong, approver="cli")
        assert not ok
    ok, said = await pairings.approve("telegram", code, approver="cli")
    assert not ok
    assert "locked" in said
    clock.advance(3601)
    fresh = code_in(await pairings.offer(dm("9")))  # the old code expired meanwhile
    ok, said = await pairings.approve("telegram", fresh, approver="cli")
    assert ok, said


async def test_revoke_makes_a_stranger_again(world: tuple[Pairings, ManualClock]) -> None:
    pairings, _clock = world
    ok, _ = await pairings.approve(
        "telegram", code_in(await pairings.offer(dm("3"))), approver="cli"
    )
    assert ok
    listed = await pairings.listing("telegram")
    assert "telegram:3" in listed
    assert "by cli" in listed
    ok, _ = await pairings.revoke("telegram", "3")
    assert ok
    assert not await pairings.is_paired("telegram", "3")
    ok, said = await pairings.revoke("telegram", "3")
    assert not ok
    assert "was not paired" in said
