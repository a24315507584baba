"""Write approval: staged writes, replay against fresh disk state, pinned patch/remove targets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.errors import PendingNotFound
from core.memory.approval import PendingWrites
from core.memory.commands import pending_text
from core.memory.operations import DELIMITER, Operation
from core.memory.profile import MemoryFiles, MemoryLimits
from core.memory.store import MemoryStore
from core.memory.tool import memory_tool_call
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.test_cli import chatgate

TEA = "Prefers green tea over coffee"
CITY = "Lives in Lisbon"


@pytest.fixture
def pending(tmp_path: Path) -> PendingWrites:
    return PendingWrites(tmp_path)


@pytest.fixture
def files(tmp_path: Path) -> MemoryFiles:
    return MemoryFiles(tmp_path, MemoryLimits(memory_chars=200, user_chars=120))


def stores(files: MemoryFiles, user_id: str = "u1") -> dict[str, MemoryStore]:
    return files.stores_for("webhook", user_id)


def seed(store: MemoryStore, *entries: str) -> None:
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_text(DELIMITER.join(entries), encoding="utf-8")


def stage(files: MemoryFiles, pending: PendingWrites, args: dict[str, Any]) -> str:
    payload = memory_tool_call(args, stores(files), pending)
    assert payload["success"] is True, payload
    assert payload["staged"] is True
    pending_id: str = payload["pending_id"]
    return pending_id


def test_a_staged_write_is_a_json_file_and_nothing_reaches_the_store(
    files: MemoryFiles, pending: PendingWrites, tmp_path: Path
) -> None:
    pending_id = stage(files, pending, {"target": "user", "action": "add", "content": TEA})

    record = json.loads((tmp_path / "pending" / "memory" / f"{pending_id}.json").read_text())
    assert len(pending_id) == 8
    assert record["target"] == "user"
    assert record["path"] == str(stores(files)["user"].path)
    assert (record["limit"], record["label"]) == (120, "User profile")
    assert record["operations"] == [{"action": "add", "content": TEA, "old_text": ""}]
    assert not stores(files)["user"].path.exists()
    assert [w.id for w in pending.list()] == [pending_id]


def test_approve_writes_it_and_clears_it(files: MemoryFiles, pending: PendingWrites) -> None:
    pending_id = stage(files, pending, {"target": "user", "action": "add", "content": TEA})

    decision = pending.approve(pending_id)

    assert decision.approved
    assert stores(files)["user"].entries() == (TEA,)
    assert pending.list() == ()
    with pytest.raises(PendingNotFound):
        pending.approve(pending_id)


def test_reject_drops_it_unapplied(files: MemoryFiles, pending: PendingWrites) -> None:
    pending_id = stage(files, pending, {"target": "user", "action": "add", "content": TEA})

    assert pending.reject(pending_id).id == pending_id
    assert pending.list() == ()
    assert not stores(files)["user"].path.exists()
    with pytest.raises(PendingNotFound):
        pending.reject(pending_id)


def test_errors_and_no_ops_are_answered_without_staging(
    files: MemoryFiles, pending: PendingWrites
) -> None:
    seed(stores(files)["user"], TEA)

    missing = memory_tool_call({"action": "add", "content": CITY}, stores(files), pending)
    duplicate = memory_tool_call(
        {"target": "user", "action": "add", "content": TEA}, stores(files), pending
    )
    no_match = memory_tool_call(
        {"target": "user", "action": "remove", "old_text": "Berlin"}, stores(files), pending
    )

    assert missing["success"] is False
    assert "target is required" in missing["error"]
    assert duplicate["success"] is True
    assert "staged" not in duplicate
    assert no_match["success"] is False
    assert no_match["closest_entries"] is not None
    assert pending.list() == ()


def test_the_same_write_staged_twice_keeps_one_id(
    files: MemoryFiles, pending: PendingWrites
) -> None:
    args = {"target": "user", "action": "add", "content": TEA}
    assert stage(files, pending, args) == stage(files, pending, args)
    assert len(pending.list()) == 1


def test_approval_replays_against_fresh_state_with_the_limit(
    files: MemoryFiles, pending: PendingWrites
) -> None:
    long_fact = "Works on a distributed database for weather sensors at " + "x" * 40
    pending_id = stage(files, pending, {"target": "user", "action": "add", "content": long_fact})
    seed(stores(files)["user"], "Keeps notes in Obsidian, plain markdown, one vault per year")

    decision = pending.approve(pending_id)

    assert not decision.approved
    assert decision.refusal is not None
    assert "over the limit" in decision.refusal
    (still,) = pending.list()
    assert still.id == pending_id
    assert still.last_refusal == decision.refusal
    assert long_fact not in stores(files)["user"].entries()


def test_a_patch_is_pinned_to_its_entry_and_approval_shows_it(
    files: MemoryFiles, pending: PendingWrites
) -> None:
    seed(stores(files)["user"], TEA, CITY)
    args = {"target": "user", "action": "patch", "old_text": "Lisbon", "content": "Porto"}
    pending_id = stage(files, pending, args)

    (write,) = pending.list()
    decision = pending.approve(pending_id)

    assert write.operations[0].pinned == CITY
    assert repr(CITY) in pending_text([write])
    assert decision.approved
    assert decision.replaced == (CITY,)
    assert stores(files)["user"].entries() == (TEA, "Lives in Porto")


def test_approval_is_refused_when_the_pinned_entry_changed(
    files: MemoryFiles, pending: PendingWrites
) -> None:
    user = stores(files)["user"]
    seed(user, TEA, CITY)
    pending_id = stage(files, pending, {"target": "user", "action": "remove", "old_text": "Lisbon"})
    # Someone edits the entry by hand; old_text still matches, but not the entry approved.
    seed(user, TEA, "Lives in Lisbon since 2019, works remotely")

    decision = pending.approve(pending_id)

    assert not decision.approved
    assert decision.refusal is not None
    assert "changed since it was staged" in decision.refusal
    assert [w.id for w in pending.list()] == [pending_id]
    assert user.entries() == (TEA, "Lives in Lisbon since 2019, works remotely")


def test_a_patch_or_remove_staged_without_a_pin_is_refused(
    files: MemoryFiles, pending: PendingWrites, tmp_path: Path
) -> None:
    seed(stores(files)["user"], CITY)
    pending_id = stage(files, pending, {"target": "user", "action": "remove", "old_text": "Lisbon"})
    path = tmp_path / "pending" / "memory" / f"{pending_id}.json"
    record = json.loads(path.read_text())
    del record["operations"][0]["pinned_entry"]
    path.write_text(json.dumps(record))

    decision = pending.approve(pending_id)

    assert not decision.approved
    assert "cannot be verified" in (decision.refusal or "")
    assert stores(files)["user"].entries() == (CITY,)


def test_approve_all_applies_in_order_and_keeps_the_refused_one(
    files: MemoryFiles, pending: PendingWrites
) -> None:
    memory = stores(files)["memory"]
    seed(memory, "Deploys go through GitHub Actions")
    first = stage(files, pending, {"target": "user", "action": "add", "content": TEA})
    doomed = stage(
        files,
        pending,
        {"target": "memory", "action": "patch", "old_text": "GitHub", "content": "X"},
    )
    last = stage(files, pending, {"target": "memory", "action": "add", "content": "Uses uv"})
    seed(memory, "Deploys go through GitHub Actions and Argo")

    decisions = pending.approve_all()

    assert [(d.write.id, d.approved) for d in decisions] == [
        (first, True),
        (doomed, False),
        (last, True),
    ]
    assert [w.id for w in pending.list()] == [doomed]
    assert stores(files)["user"].entries() == (TEA,)
    assert memory.entries() == ("Deploys go through GitHub Actions and Argo", "Uses uv")


def test_reject_all_and_unknown_ids(files: MemoryFiles, pending: PendingWrites) -> None:
    stage(files, pending, {"target": "user", "action": "add", "content": TEA})
    stage(files, pending, {"target": "memory", "action": "add", "content": CITY})

    assert len(pending.reject_all()) == 2
    assert pending.list() == ()
    for bad in ("deadbeef", "../../etc", ""):
        with pytest.raises(PendingNotFound):
            pending.approve(bad)


def test_per_user_writes_replay_against_that_persons_file(
    tmp_path: Path, pending: PendingWrites
) -> None:
    files = MemoryFiles(tmp_path, MemoryLimits(user_scope="per_user"))
    payload = memory_tool_call(
        {"target": "user", "action": "add", "content": TEA}, stores(files, "alice"), pending
    )

    pending.approve(payload["pending_id"])

    assert stores(files, "alice")["user"].entries() == (TEA,)
    assert stores(files, "bob")["user"].entries() == ()


def test_a_record_pointing_outside_the_memories_folder_is_refused(
    files: MemoryFiles, pending: PendingWrites, tmp_path: Path
) -> None:
    pending_id = stage(files, pending, {"target": "user", "action": "add", "content": TEA})
    path = tmp_path / "pending" / "memory" / f"{pending_id}.json"
    record = json.loads(path.read_text())
    record["path"] = str(tmp_path / "elsewhere.md")
    path.write_text(json.dumps(record))

    decision = pending.approve(pending_id)

    assert not decision.approved
    assert not (tmp_path / "elsewhere.md").exists()


def test_pinned_operations_refuse_a_changed_entry_inside_a_batch(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "M.md", limit=500, label="Memory")
    seed(store, TEA)

    result = store.apply([Operation("remove", old_text="tea", pinned="Prefers tea")])

    assert result.refusal is not None
    assert store.entries() == (TEA,)


# -- through the gateway and the CLI ------------------------------------------------------


def reply_text(response: httpx.Response) -> str:
    replies = response.json()["replies"]
    assert len(replies) == 1
    text: str = replies[0]["text"]
    return text


async def test_with_write_approval_a_write_waits_for_memory_approve(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (home / "config.yaml").write_text(
        "memory:\n  write_approval: true\nwebhook:\n  owners: [u1]\n", encoding="utf-8"
    )
    fake_openai.reply_tool_call("memory", {"target": "user", "action": "add", "content": TEA})
    fake_openai.reply_text("I'll remember once it is approved.")
    user_md = home / "memories" / "USER.md"
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("remember that I like tea")
        on_disk_before = user_md.exists()
        overview = reply_text(await gw.say("/memory"))
        listed = reply_text(await gw.say("/memory pending"))
        help_text = reply_text(await gw.say("/help"))
        (write,) = PendingWrites(home).list()
        approved = reply_text(await gw.say(f"/memory approve {write.id}"))
        after = reply_text(await gw.say("/memory pending"))

    staged = json.loads(fake_openai.requests[1]["messages"][-1]["content"])
    assert staged["success"] is True
    assert staged["staged"] is True
    assert staged["pending_id"] == write.id
    assert staged["target"] == "user"
    assert not on_disk_before
    assert "Write approval: on, 1 write pending" in overview
    assert write.id in listed
    assert TEA in listed
    assert "/memory" in help_text
    assert f"Approved {write.id}" in approved
    assert user_md.read_text(encoding="utf-8").strip() == TEA
    assert after == "No memory writes are pending."


async def test_memory_approvers_limit_who_may_approve(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = 'memory:\n  write_approval: true\n  approvers: ["webhook:owner"]\n'
    (home / "config.yaml").write_text(config, encoding="utf-8")
    fake_openai.reply_tool_call("memory", {"target": "memory", "action": "add", "content": CITY})
    fake_openai.reply_text("Staged.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("note where I live", user_id="guest")
        refused = reply_text(await gw.say("/memory approve all", user_id="guest"))
        approved = reply_text(await gw.say("/memory approve all", chat_id="c2", user_id="owner"))

    assert "Only the operator" in refused
    assert "Approved" in approved
    assert (home / "memories" / "MEMORY.md").read_text(encoding="utf-8").strip() == CITY


async def test_without_approvers_only_the_owners_approve(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    config = "memory:\n  write_approval: true\nwebhook:\n  owners: [owner]\n"
    (home / "config.yaml").write_text(config, encoding="utf-8")
    fake_openai.reply_tool_call("memory", {"target": "memory", "action": "add", "content": CITY})
    fake_openai.reply_text("Staged.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("note where I live", user_id="guest")
        by_guest = reply_text(await gw.say("/memory approve all", user_id="guest"))
        by_stranger = reply_text(await gw.say("/memory reject all", chat_id="c9", user_id="x"))
        pending_after = PendingWrites(home).list()
        approved = reply_text(await gw.say("/memory approve all", chat_id="c2", user_id="owner"))

    assert "Only the operator" in by_guest
    assert "Only the operator" in by_stranger
    assert len(pending_after) == 1  # neither a refused approve nor a refused reject acted
    assert "Approved" in approved
    assert (home / "memories" / "MEMORY.md").read_text(encoding="utf-8").strip() == CITY


def test_cli_lists_approves_and_refuses(home: Path) -> None:
    files = MemoryFiles(home, MemoryLimits())
    seed(stores(files)["memory"], CITY)
    writes = PendingWrites(home)
    added = stage(files, writes, {"target": "user", "action": "add", "content": TEA})
    removal = stage(files, writes, {"target": "memory", "action": "remove", "old_text": "Lisbon"})
    seed(stores(files)["memory"], "Lives in Lisbon, near the river")

    listed = chatgate("memory", "pending")
    approved = chatgate("memory", "approve", added)
    refused = chatgate("memory", "approve", removal)
    unknown = chatgate("memory", "approve", "0000ffff")
    rejected = chatgate("memory", "reject", removal)
    shown = chatgate("memory", "show")

    assert listed.returncode == 0, listed.stderr
    assert added in listed.stdout
    assert removal in listed.stdout
    assert repr(CITY) in listed.stdout
    assert approved.returncode == 0, approved.stderr
    assert stores(files)["user"].entries() == (TEA,)
    assert refused.returncode == 1
    assert "changed since it was staged" in refused.stderr
    assert unknown.returncode == 1
    assert "0000ffff" in unknown.stderr
    assert rejected.returncode == 0, rejected.stderr
    assert writes.list() == ()
    assert shown.returncode == 0, shown.stderr
    assert TEA in shown.stdout
    assert "write approval: off; pending writes: 0" in shown.stdout
