"""``send_file`` end to end over the webhook: the model sends a file from the home's
``outbox/`` folder, the reply lists it and ``GET /webhook/{route}/files/{id}`` serves the
same bytes; paths outside the folder, missing, special and oversized files are refused."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.webhook.auth import sign
from core.errors import ConfigError
from gateway.config import load_settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.4\n" + b"0123456789" * 500 + b"\n%%EOF\n"
SECRET = "files-secret"


def outbox(home: Path) -> Path:
    folder = home / "outbox"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def tool_results(model: FakeOpenAIServer) -> list[dict[str, Any]]:
    """Every tool result the model was sent, in order (the last request holds them all)."""
    messages = model.requests[-1]["messages"]
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def signed(method: str, target: str, body: bytes = b"") -> dict[str, str]:
    timestamp = str(int(time.time()))
    return {
        "x-chatgate-timestamp": timestamp,
        "x-chatgate-signature": sign(SECRET, timestamp, method, target, body),
    }


async def test_a_file_sent_by_the_model_is_listed_with_the_reply_and_served_byte_for_byte(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (outbox(home) / "chart.png").write_bytes(PNG)
    fake_openai.reply_tool_call("send_file", {"path": "chart.png", "caption": "Q3 sales"})
    fake_openai.reply_text("Here is the chart.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        answer = await gw.say("draw me the chart")
        [reply] = answer.json()["replies"]
        [listed] = reply["files"]
        served = await gw.client.get(listed["url"])
        elsewhere = await gw.client.get(listed["url"].replace("/demo/", "/other/"))
        unknown = await gw.client.get("/webhook/demo/files/nosuchfileid")

    assert reply["text"] == "Here is the chart."
    assert listed["name"] == "chart.png"
    assert listed["mime"] == "image/png"
    assert listed["size"] == len(PNG)
    assert listed["caption"] == "Q3 sales"
    assert listed["url"] == f"/webhook/demo/files/{listed['id']}"
    assert len(listed["id"]) >= 20  # random, not a counter
    assert served.status_code == 200
    assert served.content == PNG
    assert served.headers["content-type"] == "image/png"
    assert 'filename="chart.png"' in served.headers["content-disposition"]
    assert served.headers["content-disposition"].startswith("attachment")
    assert elsewhere.status_code == 404
    assert unknown.status_code == 404
    assert elsewhere.json()["error"]
    [result] = tool_results(fake_openai)
    assert result == {"success": True, "name": "chart.png", "mime": "image/png", "size": len(PNG)}


async def test_pulled_replies_list_the_file_and_a_reply_of_files_only_has_no_text(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (outbox(home) / "reports").mkdir()
    (outbox(home) / "reports" / "q3.pdf").write_bytes(PDF)
    fake_openai.reply_tool_call("send_file", {"path": "reports/q3.pdf"})
    fake_openai.reply_text("")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        queued = await gw.client.post(
            "/webhook/demo?wait=false", json={"chat_id": "c1", "user_id": "u1", "text": "pdf"}
        )
        async with asyncio.timeout(15):
            await gw.gateway.core.until_idle("webhook:c1")
        pulled = (await gw.client.get("/webhook/demo/chats/c1/replies")).json()
        [reply] = pulled["replies"]
        served = await gw.client.get(reply["files"][0]["url"])

    assert queued.status_code == 202
    assert reply["text"] == ""
    assert [(f["name"], f["mime"], f["caption"]) for f in reply["files"]] == [
        ("q3.pdf", "application/pdf", None)
    ]
    assert served.content == PDF
    assert served.headers["content-type"] == "application/pdf"


async def test_downloading_a_file_is_signed_like_every_webhook_route(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (outbox(home) / "notes.txt").write_bytes(b"plain text\n")
    fake_openai.reply_tool_call("send_file", {"path": "notes.txt"})
    fake_openai.reply_text("Attached.")
    body = json.dumps({"chat_id": "c1", "user_id": "u1", "text": "notes"}).encode()
    env = {**fake_openai.gateway_env(), "CHATGATE_WEBHOOK_SECRET": SECRET}
    async with running_gateway(home, env) as gw:
        answer = await gw.client.post(
            "/webhook/demo",
            content=body,
            headers={"content-type": "application/json", **signed("POST", "/webhook/demo", body)},
        )
        url = answer.json()["replies"][0]["files"][0]["url"]
        unsigned = await gw.client.get(url)
        headers = signed("GET", url)
        good = await gw.client.get(url, headers=headers)
        replayed = await gw.client.get(url, headers=headers)

    assert answer.status_code == 200
    assert unsigned.status_code == 401
    assert good.status_code == 200
    assert good.content == b"plain text\n"
    assert replayed.status_code == 409


async def test_paths_outside_the_outbox_missing_special_and_oversized_files_are_refused(
    home: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    folder = outbox(home)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the chat\n")
    (folder / "escape.txt").symlink_to(secret)
    (folder / "inside-link.txt").symlink_to(folder / "small.txt")
    (folder / "small.txt").write_bytes(b"ok\n")
    (folder / "big.bin").write_bytes(b"x" * 2_000)
    (folder / "empty.txt").write_bytes(b"")
    (folder / "sub").mkdir()
    os.mkfifo(folder / "pipe")
    paths = [
        "../config.yaml",
        "sub/../small.txt",
        str(secret),
        "escape.txt",
        "missing.pdf",
        "sub",
        "pipe",
        "big.bin",
        "empty.txt",
        str(folder / "small.txt"),
        "inside-link.txt",
    ]
    fake_openai.reply_tool_calls([("send_file", {"path": p}) for p in paths])
    fake_openai.reply_text("Done.")
    env = {**fake_openai.gateway_env(), "CHATGATE_FILES__MAX_BYTES": "1000"}
    async with running_gateway(home, env) as gw:
        answer = await gw.say("send them all")
        [reply] = answer.json()["replies"]

    results = tool_results(fake_openai)
    errors = [r.get("error", "") for r in results]
    assert [r["success"] for r in results] == [False] * 9 + [True, True]
    assert "'..' is not allowed" in errors[0]
    assert "'..' is not allowed" in errors[1]
    assert "outside the outbox folder" in errors[2]
    assert "outside the outbox folder" in errors[3]  # a link that leads out
    assert "no such file" in errors[4]
    assert "is a directory" in errors[5]
    assert "not a regular file" in errors[6]
    assert "over the limit of 1,000" in errors[7]
    assert "is empty" in errors[8]
    # An absolute path inside the folder, and a link that stays in it, are fine.
    assert [f["name"] for f in reply["files"]] == ["small.txt", "inside-link.txt"]
    assert all("not for the chat" not in json.dumps(r) for r in results)


async def test_the_tool_is_offered_with_its_guidance_and_can_be_turned_off(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        await gw.say("hello")
    offered = fake_openai.requests[-1]
    async with running_gateway(
        home, {**fake_openai.gateway_env(), "CHATGATE_FILES__ENABLED": "false"}
    ) as gw:
        await gw.say("hello", chat_id="c2")
    turned_off = fake_openai.requests[-1]

    names = [t["function"]["name"] for t in offered["tools"]]
    assert "send_file" in names
    spec = next(t["function"] for t in offered["tools"] if t["function"]["name"] == "send_file")
    assert spec["parameters"]["required"] == ["path"]
    assert str(home / "outbox") in offered["messages"][0]["content"]
    assert "send_file" not in [t["function"]["name"] for t in turned_off.get("tools", [])]
    assert (home / "outbox").is_dir()


@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_a_bad_size_cap_is_a_config_error(home: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="files.max_bytes"):
        load_settings(home, {"CHATGATE_FILES__MAX_BYTES": value})


async def test_a_file_whose_stored_copy_is_gone_is_a_404(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    (outbox(home) / "gone.txt").write_bytes(b"soon gone\n")
    fake_openai.reply_tool_call("send_file", {"path": "gone.txt"})
    fake_openai.reply_text("Sent.")
    async with running_gateway(home, fake_openai.gateway_env()) as gw:
        url = (await gw.say("send")).json()["replies"][0]["files"][0]["url"]
        for stored in (home / "media").rglob("*"):
            if stored.is_file():
                stored.unlink()
        gone = await gw.client.get(url)

    assert gone.status_code == 404
    assert "no longer stored" in gone.json()["error"]
