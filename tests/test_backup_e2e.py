"""``chatgate backup`` under load and ``chatgate restore`` into a fresh home, end to end.

A real ``chatgate run`` answers webhook messages from the fake OpenAI-compatible model
while ``chatgate backup`` runs beside it; the archive is restored into a new home, a
gateway started on it continues a chat whose earlier turn the next model request
carries, and the archive holds no secret. Damaged archives and non-empty homes are
refused in one line.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import sqlite3
import tarfile
from contextlib import closing
from pathlib import Path

import httpx
import pytest
import yaml

from migrations.runner import head_revision
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_cli import chatgate, cli_env, client_for, gateway_process, wait_ready, write_yaml

API_KEY = "sk-backup-test-0123456789abcdef"
ENV_TOKEN = "env-file-token-9876543210"
REMEMBERED = "my parrot is called Captain Flint"


def seed_home(home: Path, fake: FakeOpenAIServer) -> dict[str, str]:
    """A profile with a secret in config.yaml, memories, a skill and a pending write;
    the environment a gateway on it runs with."""
    write_yaml(home, yaml.safe_dump({"model": {"api_key": API_KEY, "name": "fake-model"}}))
    (home / ".env").write_text(f"OPENAI_API_KEY={ENV_TOKEN}\n", encoding="utf-8")
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_text("likes tea\n§\nworks nights", encoding="utf-8")
    (home / "skills" / "brew").mkdir(parents=True)
    (home / "skills" / "brew" / "SKILL.md").write_text(
        "---\nname: brew\ndescription: Brew tea.\n---\nBoil water.\n", encoding="utf-8"
    )
    (home / "pending" / "memory").mkdir(parents=True)
    (home / "pending" / "memory" / "p1.json").write_text("{}", encoding="utf-8")
    return {"OPENAI_BASE_URL": fake.base_url}


def rows(database: Path, table: str) -> int:
    with closing(sqlite3.connect(database)) as conn:
        count: int = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
        return count


def extracted(archive: Path, into: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return {p.relative_to(into).as_posix(): p.read_bytes() for p in into.rglob("*") if p.is_file()}


async def chat_load(client: httpx.AsyncClient, stop: asyncio.Event, chat: str) -> int:
    """Turns on ``chat`` one after another until ``stop``; how many were answered."""
    answered = 0
    while not stop.is_set():
        response = await client.post(
            "/webhook/demo", json={"chat_id": chat, "user_id": "u1", "text": f"load {answered}"}
        )
        assert response.status_code == 200, response.text
        answered += 1
    return answered


async def backup_under_load(client: httpx.AsyncClient, archive: Path) -> tuple[str, list[int]]:
    stop = asyncio.Event()
    load = [asyncio.ensure_future(chat_load(client, stop, f"load-{n}")) for n in range(3)]
    try:
        result = await asyncio.to_thread(chatgate, "backup", str(archive))
    finally:
        stop.set()
        answered = await asyncio.gather(*load)
    assert result.returncode == 0, result.stderr
    return result.stdout, answered


async def test_a_backup_taken_under_load_restores_to_a_gateway_that_continues(
    home: Path, tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    env = seed_home(home, fake_openai)
    archive = tmp_path / "profile.tar.gz"
    with gateway_process(home, env) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            first = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": REMEMBERED}
            )
            assert first.status_code == 200, first.text
            printed, answered = await backup_under_load(client, archive)

    files = extracted(archive, tmp_path / "extracted")
    manifest = json.loads(files["manifest.json"])
    snapshot = tmp_path / "extracted" / "state.db"
    with closing(sqlite3.connect(snapshot)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert min(answered) >= 1  # turns really ran while the backup was taken
    assert manifest["counts"]["messages"] == rows(snapshot, "messages") >= 2
    assert manifest["counts"]["sessions"] == rows(snapshot, "sessions")
    assert (
        manifest["counts"] | {"skills": 1, "memory_entries": 2, "pending_writes": 1}
        == (manifest["counts"])
    )
    assert manifest["schema_revision"] == head_revision()
    assert "model.api_key" in manifest["removed_from_config"]
    assert str(archive) in printed
    assert not [name for name, data in files.items() if API_KEY.encode() in data]
    assert not [name for name, data in files.items() if ENV_TOKEN.encode() in data]
    assert ".env" not in files

    fresh = tmp_path / "fresh"
    restored = chatgate("restore", str(archive), env=cli_env(CHATGATE_HOME=str(fresh)))
    assert restored.returncode == 0, restored.stderr
    assert rows(fresh / "state.db", "messages") == manifest["counts"]["messages"]
    assert (fresh / "memories" / "MEMORY.md").read_text(encoding="utf-8").endswith("works nights")
    assert (fresh / "skills" / "brew" / "SKILL.md").exists()

    fake_openai.requests.clear()
    again = {**env, "CHATGATE_HOME": str(fresh), "OPENAI_API_KEY": "sk-test"}
    with gateway_process(fresh, again) as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            reply = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": "what is it?"}
            )
    assert reply.status_code == 200, reply.text
    # (Turns in flight when the snapshot was taken are pending in it and run again.)
    [request] = fake_openai.requests_for("what is it?")
    assert REMEMBERED in json.dumps(request["messages"])  # the history came back


def test_restore_into_a_home_that_is_not_empty_is_refused(home: Path, tmp_path: Path) -> None:
    assert chatgate("db", "upgrade").returncode == 0
    archive = tmp_path / "b.tar.gz"
    assert chatgate("backup", str(archive)).returncode == 0

    refused = chatgate("restore", str(archive))

    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"chatgate: {home.resolve()} is not empty: restore into a new or empty CHATGATE_HOME"
    ]


def damaged_copies(archive: Path, tmp_path: Path) -> dict[str, Path]:
    raw = archive.read_bytes()
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(raw[: len(raw) // 2])
    # A member changed after the manifest was written: a valid archive, a wrong checksum.
    tar_bytes = bytearray(gzip.decompress(raw))
    with tarfile.open(fileobj=io.BytesIO(bytes(tar_bytes))) as tar:
        member = tar.getmember("memories/MEMORY.md")
    tar_bytes[member.offset_data] ^= 0xFF
    tampered = tmp_path / "tampered.tar.gz"
    tampered.write_bytes(gzip.compress(bytes(tar_bytes)))
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"this is not an archive")
    return {"truncated": truncated, "tampered": tampered, "garbage": garbage}


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("truncated", "is not a readable backup archive"),
        ("tampered", "memories/MEMORY.md does not match its checksum"),
        ("garbage", "is not a readable backup archive"),
    ],
)
def test_a_damaged_archive_is_refused_in_one_line_and_the_home_stays_empty(
    home: Path, tmp_path: Path, kind: str, reason: str
) -> None:
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_text("likes tea", encoding="utf-8")
    assert chatgate("db", "upgrade").returncode == 0
    archive = tmp_path / "b.tar.gz"
    assert chatgate("backup", str(archive)).returncode == 0
    fresh = tmp_path / "fresh"

    refused = chatgate(
        "restore",
        str(damaged_copies(archive, tmp_path)[kind]),
        env=cli_env(CHATGATE_HOME=str(fresh)),
    )

    assert refused.returncode == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("chatgate: ")
    assert reason in line
    assert not fresh.exists()
    assert [p.name for p in tmp_path.iterdir() if "restoring" in p.name] == []


def test_other_databases_are_snapshotted_and_look_alikes_kept_as_they_are(
    home: Path, tmp_path: Path
) -> None:
    (home / "memory_provider").mkdir()
    notes = home / "memory_provider" / "notes.sqlite3"
    with closing(sqlite3.connect(notes)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE exchanges (text TEXT)")
        conn.execute("INSERT INTO exchanges VALUES ('kept')")
        conn.commit()
        # Still open: the row is in notes.sqlite3-wal, which a file copy would miss.
        archive = tmp_path / "b.tar.gz"
        result = chatgate("backup", str(archive))
    (home / "export.db").write_text("not a database", encoding="utf-8")
    second = tmp_path / "c.tar.gz"
    again = chatgate("backup", str(second))
    fresh = tmp_path / "fresh"
    restored = chatgate("restore", str(second), env=cli_env(CHATGATE_HOME=str(fresh)))

    assert result.returncode == 0, result.stderr
    files = extracted(archive, tmp_path / "first")
    assert "memory_provider/notes.sqlite3-wal" not in files
    assert rows(tmp_path / "first" / "memory_provider" / "notes.sqlite3", "exchanges") == 1
    assert again.returncode == 0, again.stderr
    assert restored.returncode == 0, restored.stderr
    assert (fresh / "export.db").read_text(encoding="utf-8") == "not a database"


def test_an_archive_from_a_newer_schema_is_refused_before_the_home_is_touched(
    home: Path, tmp_path: Path
) -> None:
    assert chatgate("db", "upgrade").returncode == 0
    archive = tmp_path / "b.tar.gz"
    assert chatgate("backup", str(archive)).returncode == 0
    newer = tmp_path / "newer.tar.gz"
    with tarfile.open(archive) as src, tarfile.open(newer, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member)
            assert data is not None
            body = data.read()
            if member.name == "manifest.json":
                manifest = json.loads(body)
                body = json.dumps({**manifest, "schema_revision": "9999"}).encode()
                member.size = len(body)
            dst.addfile(member, io.BytesIO(body))
    fresh = tmp_path / "fresh"

    refused = chatgate("restore", str(newer), env=cli_env(CHATGATE_HOME=str(fresh)))

    assert refused.returncode == 1
    [line] = refused.stderr.strip().splitlines()
    assert "schema revision 9999 is newer than this chatgate" in line
    assert not fresh.exists()
