"""The OpenAPI schema says what the HTTP routes do: schemathesis against a running gateway.

Every operation of ``/openapi.json`` is explored with schema-valid and schema-invalid
requests (bounded, derandomized: the same cases every run) and every answer is run
through all of schemathesis's checks: no 5xx, no undocumented status or content type,
bodies and headers as documented, valid data accepted, invalid data refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.core.result import Ok

from adapters.webhook.auth import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from tests.gateway_server import RunningGateway, running_gateway

SECRET = "openapi-secret"
EXAMPLES = 40  # per operation and generation mode
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)


class Signed(requests.auth.AuthBase):
    """Signs each request as sent: method, path and query as on the wire, body bytes."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body or b""
        raw = body.encode() if isinstance(body, str) else body
        assert isinstance(raw, bytes)
        timestamp = str(int(time.time()))
        request.headers[TIMESTAMP_HEADER] = timestamp
        request.headers[SIGNATURE_HEADER] = sign(
            SECRET, timestamp, request.method or "GET", request.path_url, raw
        )
        return request


@dataclass
class Run:
    """What one schemathesis run did."""

    operations: int = 0
    examples: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def explore(base_url: str, auth: requests.auth.AuthBase | None) -> Run:
    """All operations, both generation modes, all checks (blocking: run it in a thread)."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    run = Run()
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result.err()  # the schema itself is valid
        operation = result.ok()
        run.operations += 1
        for mode in MODES:
            _explore_operation(operation, mode, base_url, auth, run)
    return run


def _explore_operation(
    operation: schemathesis.APIOperation[Any, Any, Any, Any],
    mode: schemathesis.GenerationMode,
    base_url: str,
    auth: requests.auth.AuthBase | None,
    run: Run,
) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case[Any]) -> None:
        run.examples += 1
        try:
            response = case.call_and_validate(base_url=base_url, auth=auth)
        except BaseException as failure:  # a FailureGroup: record it, keep exploring
            run.failures.append(f"{operation.label} ({mode.value}): {failure}")
            return
        run.statuses[response.status_code] += 1

    # No invalid request exists for an operation without parameters.
    with contextlib.suppress(Unsatisfiable):
        check()


def report(name: str, run: Run) -> None:
    server_errors = sum(n for status, n in run.statuses.items() if status >= 500)
    print(
        f"\nschemathesis ({name}): {run.operations} operations, {run.examples} examples, "
        f"{len(run.failures)} failures, {server_errors} 5xx; statuses {dict(run.statuses)}"
    )


@pytest.fixture
def outside_the_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # schemathesis keeps its .schemathesis/ folder in the working directory.
    monkeypatch.chdir(tmp_path)


@pytest.fixture
async def unsigned(home: Path, outside_the_repo: None) -> AsyncIterator[RunningGateway]:
    async with running_gateway(home, {}) as gw:
        yield gw


@pytest.fixture
async def signed(home: Path, outside_the_repo: None) -> AsyncIterator[RunningGateway]:
    async with running_gateway(home, {"CHATGATE_WEBHOOK_SECRET": SECRET}) as gw:
        yield gw


def assert_clean(run: Run) -> None:
    assert run.operations >= 5
    assert run.examples >= run.operations * EXAMPLES // 2
    assert not [s for s in run.statuses if s >= 500], run.statuses
    assert run.failures == [], "\n\n".join(run.failures[:3])


async def test_schemathesis_finds_nothing_on_the_unsigned_loopback_gateway(
    unsigned: RunningGateway,
) -> None:
    run = await asyncio.to_thread(explore, unsigned.base_url, None)
    report("unsigned", run)

    assert_clean(run)
    assert {200, 202, 422} <= set(run.statuses)  # turns ran, and bad input was refused


async def test_schemathesis_finds_nothing_with_signed_requests(signed: RunningGateway) -> None:
    run = await asyncio.to_thread(explore, signed.base_url, Signed())
    report("signed", run)

    assert_clean(run)
    assert {200, 422} <= set(run.statuses)


# -- what the schema says, precisely ---------------------------------------------------------


async def openapi(gw: RunningGateway) -> dict[str, Any]:
    response = await gw.client.get("/openapi.json")
    assert response.status_code == 200
    schema: dict[str, Any] = response.json()
    return schema


async def test_the_schema_documents_each_refusal_and_the_signature_headers(
    unsigned: RunningGateway,
) -> None:
    paths = (await openapi(unsigned))["paths"]
    post = paths["/webhook/{route}"]["post"]
    pull = paths["/webhook/{route}/chats/{chat_id}/replies"]["get"]
    decide = paths["/webhook/{route}/approvals/{approval_id}"]["post"]

    assert {"401", "409", "413", "422", "503"} <= set(post["responses"])
    assert {"401", "409", "422", "503"} <= set(pull["responses"])
    assert {"401", "403", "404", "409", "422", "503"} <= set(decide["responses"])
    body = decide["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert body["decision"]["enum"] == ["approve", "deny"]
    assert body["scope"]["enum"] == ["once", "session"]
    for operation in (post, pull, decide):
        headers = {p["name"] for p in operation["parameters"] if p["in"] == "header"}
        assert headers == {TIMESTAMP_HEADER, SIGNATURE_HEADER}
        error = operation["responses"]["422"]["content"]["application/json"]["schema"]
        assert error == {"$ref": "#/components/schemas/ErrorBody"}
    assert "503" in paths["/readyz"]["get"]["responses"]


async def test_the_schema_says_ids_are_text_or_integers(unsigned: RunningGateway) -> None:
    post = (await openapi(unsigned))["paths"]["/webhook/{route}"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]["properties"]

    for name in ("chat_id", "user_id", "message_id", "thread_id"):
        kinds = {option.get("type") for option in body[name]["anyOf"]}
        assert {"string", "integer"} <= kinds, name
    ids = {"chat_id": 42, "user_id": 7, "thread_id": 9, "message_id": 12.0}
    reply = await unsigned.client.post("/webhook/demo", json={"text": "hi", **ids})
    assert reply.status_code == 200, reply.text
    assert reply.json()["message_id"] == "12"


async def test_metrics_are_documented_with_their_real_content_type(
    unsigned: RunningGateway,
) -> None:
    documented = (await openapi(unsigned))["paths"]["/metrics"]["get"]["responses"]["200"]
    served = await unsigned.client.get("/metrics")

    assert list(documented["content"]) == [served.headers["content-type"]]
    assert served.headers["content-type"].startswith("text/plain")
