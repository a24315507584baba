"""JSON log lines of real turns parse, and one turn id ties a message's inbound line, its
model calls, its tools and its delivery together; no line carries the message's text."""

from __future__ import annotations

import io
import json
import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.store.schema import inbox
from gateway import log_format
from gateway.log_privacy import SecretRedactor
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway_server import running_gateway
from tests.test_cli import client_for, gateway_process, run_log, wait_ready
from tests.test_webhook_e2e import AddTool, rows, write_config

Json = dict[str, Any]
BODY = "pineapple-marmalade-7"  # the message text, which no log line may carry
FIELDS = {"ts", "level", "logger", "msg", "turn_id"}


@contextmanager
def json_log() -> Iterator[io.StringIO]:
    """What the core logs at DEBUG, formatted as ``chatgate run`` formats JSON lines."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(SecretRedactor({"sk-test-secret-key"}))
    handler.addFilter(log_format.TurnIdFilter())
    handler.setFormatter(log_format.formatter("json"))
    core = logging.getLogger("core")
    level = core.level
    core.setLevel(logging.DEBUG)
    logging.root.addHandler(handler)
    try:
        yield out
    finally:
        logging.root.removeHandler(handler)
        core.setLevel(level)


def parsed(text: str) -> list[Json]:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert lines
    return lines


def turn_ids(lines: list[Json], logger: str, starts: str) -> set[str | None]:
    found = {
        line["turn_id"]
        for line in lines
        if line["logger"] == logger and line["msg"].startswith(starts)
    }
    assert found, f"no {logger} line starting {starts!r}"
    return found


async def test_one_turn_id_from_inbound_through_model_and_tool_to_delivery(
    home: Path, fake_openai: FakeOpenAIServer
) -> None:
    write_config(home)
    fake_openai.reply_tool_call("add", {"a": 2, "b": 3}, call_id="call_add")
    fake_openai.reply_text("2 + 3 = 5")
    fake_openai.reply_text("you are welcome")
    env = fake_openai.gateway_env(OPENAI_API_KEY="sk-test-secret-key")
    with json_log() as out:
        async with running_gateway(home, env, tools=[AddTool()]) as gw:
            assert (await gw.say(f"what is 2 + 3? {BODY}")).status_code == 200
            assert (await gw.say(f"thanks {BODY}")).status_code == 200  # the same chat's lane
            first, second = [str(row.id) for row in await rows(gw, inbox.select())]
    lines = parsed(out.getvalue())

    assert all(line.keys() >= FIELDS for line in lines)
    both = {first, second}
    assert turn_ids(lines, "core.ingress", "inbound accepted") == both
    assert turn_ids(lines, "core.models.observed", "model call") == both
    assert turn_ids(lines, "core.turn", "tool call: name=add") == {first}
    assert turn_ids(lines, "core.turns", "turn done") == both
    assert turn_ids(lines, "core.ledger", "delivered reply") == both
    assert BODY not in out.getvalue()
    assert "sk-test-secret-key" not in out.getvalue()


async def test_a_failure_logs_its_traceback_in_the_json_line() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(log_format.formatter("json"))
    logger = logging.getLogger("tests.json_logs")
    logger.addHandler(handler)
    try:
        try:
            _broken()
        except ValueError:
            logger.exception("it failed")
    finally:
        logger.removeHandler(handler)
    [line] = parsed(out.getvalue())

    assert line["level"] == "ERROR"
    assert line["msg"] == "it failed"
    assert line["turn_id"] is None  # outside any turn
    assert "ValueError: broken on purpose" in line["exc"]


def _broken() -> None:
    raise ValueError("broken on purpose")


async def test_run_with_log_json_writes_only_json_lines(home: Path) -> None:
    env = {"CHATGATE_LOG_LEVEL": "debug"}
    with gateway_process(home, env, "--log-json") as (proc, url):
        async with client_for(url) as client:
            await wait_ready(proc, client)
            body = {"chat_id": "c1", "user_id": "u1", "text": BODY}
            response = await client.post("/webhook/demo", json=body)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    log = run_log(home)
    lines = parsed(log)

    assert response.status_code == 200
    assert all(line.keys() >= FIELDS for line in lines)
    [inbound] = turn_ids(lines, "core.ingress", "inbound accepted")
    assert inbound is not None
    assert turn_ids(lines, "core.models.observed", "model call") == {inbound}
    assert turn_ids(lines, "core.ledger", "delivered") == {inbound}
    assert BODY not in log
