"""Webhook input handling: HMAC signatures, size limits and bad bodies, over real HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from adapters.webhook.auth import sign, sign_legacy
from core.store.schema import inbox, messages
from tests.direct_sql import read_rows
from tests.gateway_server import RunningGateway, running_gateway

SECRET = "global-secret"
ROUTE_SECRET = "route-secret"
LIMIT = 1_048_576  # webhook.max_body_bytes here: smaller than the default, quicker to exceed
GOOD = {"chat_id": "c1", "user_id": "u1", "text": "hello"}
ALLOWED = {200, 202, 401, 413, 422}


def signed_headers(
    secret: str,
    body: bytes,
    target: str = "/webhook/demo",
    *,
    method: str = "POST",
    at: float | None = None,
) -> dict[str, str]:
    """Headers signing ``method target`` with ``body`` (the README's recipe)."""
    timestamp = str(int(time.time() if at is None else at))
    return {
        "content-type": "application/json",
        "x-chatgate-timestamp": timestamp,
        "x-chatgate-signature": sign(secret, timestamp, method, target, body),
    }


def encode(body: object) -> bytes:
    return json.dumps(body).encode()


# One event loop for the module, so the stateless checks can share one gateway.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def signed_gateway(home: Path) -> AsyncIterator[RunningGateway]:
    """Offline model; a global secret from the environment and one route with its own."""
    config = {"webhook": {"max_body_bytes": LIMIT, "routes": {"special": {"secret": ROUTE_SECRET}}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    async with running_gateway(home, {"CHATGATE_WEBHOOK_SECRET": SECRET}) as gw:
        yield gw


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def open_gateway(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[RunningGateway]:
    """Offline model, no secret: every well-formed message is answered at once.

    Shared by the module's tests, which only look at HTTP answers, never at state.
    """
    limit = {"CHATGATE_WEBHOOK__MAX_BODY_BYTES": str(LIMIT)}
    async with running_gateway(tmp_path_factory.mktemp("home"), limit) as gw:
        yield gw


async def post(
    gw: RunningGateway, body: bytes, headers: dict[str, str], route: str = "demo"
) -> httpx.Response:
    return await gw.client.post(f"/webhook/{route}", content=body, headers=headers)


def assert_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error: str = response.json()["error"]
    assert error
    return error


# -- signatures -----------------------------------------------------------------------------


async def test_good_signature_is_answered(signed_gateway: RunningGateway) -> None:
    body = encode(GOOD)
    response = await post(signed_gateway, body, signed_headers(SECRET, body))

    assert response.status_code == 200, response.text
    assert 'You said: "hello"' in response.json()["replies"][0]["text"]


async def test_bad_signature_is_401(signed_gateway: RunningGateway) -> None:
    body = encode(GOOD)
    wrong_secret = signed_headers("not-the-secret", body)
    tampered = signed_headers(SECRET, body)
    other_body = encode({**GOOD, "text": "something else"})

    error = assert_error(await post(signed_gateway, body, wrong_secret), 401)
    assert_error(await post(signed_gateway, other_body, tampered), 401)
    assert "signature" in error
    assert SECRET not in error
    assert await signed_gateway.gateway.db.pending_inbox() == []
    assert await signed_gateway.gateway.db.recent_sessions() == []


async def test_malformed_signature_header_is_401(signed_gateway: RunningGateway) -> None:
    body = encode(GOOD)
    headers = signed_headers(SECRET, body)
    for value in ("", "sha256=", "md5=abc", headers["x-chatgate-signature"][7:], "sha256=zz"):
        bad = {**headers, "x-chatgate-signature": value}
        assert_error(await post(signed_gateway, body, bad), 401)


@pytest.mark.parametrize("skew", [-301, 301, -3600, 86_400])
async def test_stale_or_future_timestamp_is_401(signed_gateway: RunningGateway, skew: int) -> None:
    body = encode(GOOD)
    headers = signed_headers(SECRET, body, at=time.time() + skew)

    error = assert_error(await post(signed_gateway, body, headers), 401)
    assert "skew" in error


async def test_timestamp_within_skew_is_accepted(signed_gateway: RunningGateway) -> None:
    body = encode(GOOD)
    headers = signed_headers(SECRET, body, at=time.time() - 240)

    assert (await post(signed_gateway, body, headers)).status_code == 200


async def test_non_numeric_timestamp_is_401(signed_gateway: RunningGateway) -> None:
    body = encode(GOOD)
    headers = {**signed_headers(SECRET, body), "x-chatgate-timestamp": "yesterday"}
    headers["x-chatgate-signature"] = sign(SECRET, "yesterday", "POST", "/webhook/demo", body)

    assert_error(await post(signed_gateway, body, headers), 401)


@pytest.mark.parametrize("missing", ["x-chatgate-timestamp", "x-chatgate-signature", "both"])
async def test_missing_headers_are_401(signed_gateway: RunningGateway, missing: str) -> None:
    body = encode(GOOD)
    headers = signed_headers(SECRET, body)
    for name in ("x-chatgate-timestamp", "x-chatgate-signature"):
        if missing in (name, "both"):
            del headers[name]

    error = assert_error(await post(signed_gateway, body, headers), 401)
    assert "missing" in error


async def test_route_secret_overrides_the_global_one(signed_gateway: RunningGateway) -> None:
    body = encode(GOOD)

    def headers(secret: str, route: str) -> dict[str, str]:
        return signed_headers(secret, body, f"/webhook/{route}")

    special, demo = "special", "demo"
    assert (await post(signed_gateway, body, headers(ROUTE_SECRET, special), special)).is_success
    assert_error(await post(signed_gateway, body, headers(SECRET, special), special), 401)
    assert_error(await post(signed_gateway, body, headers(ROUTE_SECRET, demo), demo), 401)
    assert (await post(signed_gateway, body, headers(SECRET, demo), demo)).status_code == 200


async def test_pulling_replies_needs_a_signature(signed_gateway: RunningGateway) -> None:
    body = encode({**GOOD, "message_id": "m1"})
    await post(signed_gateway, body, signed_headers(SECRET, body))
    path = "/webhook/demo/chats/c1/replies?after=0"

    def get_headers(secret: str) -> dict[str, str]:
        return signed_headers(secret, b"", path, method="GET")

    unsigned = await signed_gateway.client.get(path)
    badly_signed = await signed_gateway.client.get(path, headers=get_headers("wrong"))
    signed = await signed_gateway.client.get(path, headers=get_headers(SECRET))

    assert_error(unsigned, 401)
    assert_error(badly_signed, 401)
    assert signed.status_code == 200, signed.text
    [reply] = signed.json()["replies"]
    assert reply["message_id"] == "m1"


async def test_unsigned_request_is_not_accepted(signed_gateway: RunningGateway) -> None:
    response = await signed_gateway.client.post("/webhook/demo", json=GOOD)

    assert_error(response, 401)
    assert await signed_gateway.gateway.db.recent_sessions() == []


# -- signatures bound to the request ------------------------------------------------------


async def user_turns(gw: RunningGateway) -> int:
    """User messages stored: one per turn that ran."""
    stmt = select(func.count()).select_from(messages).where(messages.c.role == "user")
    [row] = await read_rows(gw.settings.database_url, stmt)
    return int(row[0])


async def test_a_signature_for_one_route_is_refused_on_another(
    signed_gateway: RunningGateway,
) -> None:
    body = encode(GOOD)
    for_demo = signed_headers(SECRET, body, "/webhook/demo")

    error = assert_error(await post(signed_gateway, body, for_demo, route="other"), 401)

    assert "signature" in error
    assert await user_turns(signed_gateway) == 0


async def test_a_signed_read_is_good_for_its_chat_and_query_only(
    signed_gateway: RunningGateway,
) -> None:
    body = encode({**GOOD, "message_id": "m1"})
    await post(signed_gateway, body, signed_headers(SECRET, body))
    path = "/webhook/demo/chats/c1/replies?after=0"
    headers = signed_headers(SECRET, b"", path, method="GET")
    client = signed_gateway.client

    assert_error(await client.get("/webhook/demo/chats/c2/replies?after=0", headers=headers), 401)
    assert_error(await client.get("/webhook/other/chats/c1/replies?after=0", headers=headers), 401)
    assert_error(await client.get("/webhook/demo/chats/c1/replies?after=1", headers=headers), 401)
    as_post = signed_headers(SECRET, b"", path, method="POST")
    assert_error(await client.get(path, headers=as_post), 401)
    assert (await client.get(path, headers=headers)).status_code == 200


async def test_the_target_is_signed_as_sent_on_the_wire(signed_gateway: RunningGateway) -> None:
    body = encode({**GOOD, "chat_id": "team/ops", "message_id": "m1"})
    await post(signed_gateway, body, signed_headers(SECRET, body))
    wire = "/webhook/demo/chats/team%2Fops/replies?after=0&limit=5"
    decoded = "/webhook/demo/chats/team/ops/replies?after=0&limit=5"

    refused = await signed_gateway.client.get(
        wire, headers=signed_headers(SECRET, b"", decoded, method="GET")
    )
    read = await signed_gateway.client.get(
        wire, headers=signed_headers(SECRET, b"", wire, method="GET")
    )

    assert_error(refused, 401)
    assert read.status_code == 200, read.text
    assert [r["message_id"] for r in read.json()["replies"]] == ["m1"]


async def test_a_replay_without_message_id_is_409_and_runs_no_second_turn(
    signed_gateway: RunningGateway,
) -> None:
    body = encode(GOOD)
    headers = signed_headers(SECRET, body)

    first = await post(signed_gateway, body, headers)
    replay = await post(signed_gateway, body, headers)

    assert first.status_code == 200, first.text
    assert "already used" in assert_error(replay, 409)
    assert await user_turns(signed_gateway) == 1


async def test_a_replay_with_message_id_is_answered_from_the_first_turn(
    signed_gateway: RunningGateway,
) -> None:
    body = encode({**GOOD, "message_id": "m-7"})
    headers = signed_headers(SECRET, body)

    first = await post(signed_gateway, body, headers)
    replay = await post(signed_gateway, body, headers)

    assert first.status_code == replay.status_code == 200, replay.text
    assert replay.json() == first.json()
    assert await user_turns(signed_gateway) == 1
    rows = await read_rows(signed_gateway.settings.database_url, select(inbox.c.id))
    assert len(rows) == 1


async def test_a_replayed_read_is_409(signed_gateway: RunningGateway) -> None:
    path = "/webhook/demo/chats/c1/replies?after=0"
    headers = signed_headers(SECRET, b"", path, method="GET")

    assert (await signed_gateway.client.get(path, headers=headers)).status_code == 200
    assert_error(await signed_gateway.client.get(path, headers=headers), 409)


async def test_the_old_signature_form_needs_legacy_signatures(home: Path) -> None:
    body = encode(GOOD)

    def legacy() -> dict[str, str]:
        timestamp = str(int(time.time()))
        signature = sign_legacy(SECRET, timestamp, body)
        return {"x-chatgate-timestamp": timestamp, "x-chatgate-signature": signature}

    async with running_gateway(home, {"CHATGATE_WEBHOOK_SECRET": SECRET}) as strict:
        assert_error(await post(strict, body, legacy()), 401)
    (home / "config.yaml").write_text("webhook: {legacy_signatures: true}\n", encoding="utf-8")
    async with running_gateway(home, {"CHATGATE_WEBHOOK_SECRET": SECRET}) as lenient:
        assert (await post(lenient, body, legacy())).status_code == 200
        assert (await post(lenient, body, signed_headers(SECRET, body))).status_code == 200


# -- sizes and bodies ----------------------------------------------------------------------


def oversize_body() -> bytes:
    return encode({**GOOD, "text": "x" * LIMIT})


async def test_oversize_body_is_413(open_gateway: RunningGateway) -> None:
    body = oversize_body()
    response = await post(open_gateway, body, {"content-type": "application/json"})

    assert_error(response, 413)


async def test_oversize_streamed_body_without_length_is_413(open_gateway: RunningGateway) -> None:
    body = oversize_body()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 65_536):
            yield body[start : start + 65_536]

    response = await open_gateway.client.post(
        "/webhook/demo", content=chunks(), headers={"content-type": "application/json"}
    )

    assert "content-length" not in response.request.headers
    assert_error(response, 413)


async def test_oversize_body_is_413_before_the_signature(
    signed_gateway: RunningGateway,
) -> None:
    body = oversize_body()
    response = await post(signed_gateway, body, signed_headers(SECRET, body))

    assert_error(response, 413)


async def test_body_at_the_limit_is_accepted(open_gateway: RunningGateway) -> None:
    padding = LIMIT - len(encode({**GOOD, "text": ""}))
    body = encode({**GOOD, "text": "y" * padding})
    assert len(body) == LIMIT

    response = await post(open_gateway, body, {"content-type": "application/json"})

    assert response.status_code == 200, response.text[:200]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"not json",
        b"\xff\xfe\x00",
        b'{"chat_id": "c1", "user_id": "u1", "text": "hi",}',
        b"[" * 100_000,
        b'{"chat_id": ' + b"9" * 5000 + b', "user_id": "u1", "text": "hi"}',
    ],
    ids=["empty", "truncated", "text", "bad-utf8", "trailing-comma", "deep", "huge-int"],
)
async def test_malformed_json_is_422(open_gateway: RunningGateway, body: bytes) -> None:
    error = assert_error(await post(open_gateway, body, {"content-type": "application/json"}), 422)
    assert "JSON" in error


@pytest.mark.parametrize("body", [[GOOD], "hello", 42, None])
async def test_json_that_is_not_an_object_is_422(open_gateway: RunningGateway, body: Any) -> None:
    response = await post(open_gateway, encode(body), {"content-type": "application/json"})

    assert "object" in assert_error(response, 422)


@pytest.mark.parametrize("field", ["chat_id", "user_id", "text"])
async def test_missing_field_is_422_naming_it(open_gateway: RunningGateway, field: str) -> None:
    body = {k: v for k, v in GOOD.items() if k != field}
    response = await post(open_gateway, encode(body), {"content-type": "application/json"})

    error = assert_error(response, 422)
    assert field in error
    assert response.json()["field"] == field


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("text", 5),
        ("text", ["hello"]),
        ("text", ""),
        ("chat_id", True),
        ("chat_id", {"id": 1}),
        ("chat_id", "x" * 256),
        ("user_id", None),
        ("message_id", 1.5),
        ("thread_id", []),
        ("chat_id", "c\x00d"),
        ("message_id", "\x00"),
    ],
)
async def test_wrong_type_is_422_naming_the_field(
    open_gateway: RunningGateway, field: str, value: Any
) -> None:
    body = {**GOOD, field: value}
    response = await post(open_gateway, encode(body), {"content-type": "application/json"})

    assert field in assert_error(response, 422)
    assert response.json()["field"] == field


async def test_integer_ids_are_accepted_as_text(open_gateway: RunningGateway) -> None:
    body = {"chat_id": 12345, "user_id": 7, "text": "hi", "message_id": 99}
    response = await post(open_gateway, encode(body), {"content-type": "application/json"})

    assert response.status_code == 200, response.text
    assert response.json()["message_id"] == "99"


async def test_bad_route_name_is_404(open_gateway: RunningGateway) -> None:
    response = await post(open_gateway, encode(GOOD), {}, route="bad route!")

    assert_error(response, 404)


async def test_bad_query_values_are_422(open_gateway: RunningGateway) -> None:
    post_response = await open_gateway.client.post(
        "/webhook/demo", params={"wait": "perhaps"}, json=GOOD
    )
    get_response = await open_gateway.client.get(
        "/webhook/demo/chats/c1/replies", params={"after": -1}
    )

    assert "wait" in assert_error(post_response, 422)
    assert "after" in assert_error(get_response, 422)
    assert get_response.json()["field"] == "after"
    assert "detail" not in get_response.json()


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/webhook/demo/chats/c1/replies?limit=0", 422),
        ("GET", "/webhook/demo/chats/c1/replies?after=soon", 422),
        ("GET", "/webhook/bad%20route/chats/c1/replies", 404),
        ("GET", "/no/such/page", 404),
        ("GET", "/webhook/demo", 405),
        ("DELETE", "/webhook/demo/chats/c1/replies", 405),
        ("POST", "/healthz", 405),
    ],
)
async def test_every_refusal_has_the_one_error_shape(
    open_gateway: RunningGateway, method: str, path: str, status: int
) -> None:
    response = await open_gateway.client.request(method, path)

    assert_error(response, status)
    assert set(response.json()) <= {"error", "field"}
    if status == 405:
        assert response.headers["allow"]


async def test_a_chat_id_with_a_slash_can_be_read_back(open_gateway: RunningGateway) -> None:
    body = {"chat_id": "team/ops", "user_id": "u1", "text": "hi", "message_id": "s1"}
    posted = await open_gateway.client.post("/webhook/demo", json=body)

    read = await open_gateway.client.get("/webhook/demo/chats/team%2Fops/replies")

    assert posted.status_code == 200, posted.text
    assert read.status_code == 200, read.text
    assert [r["message_id"] for r in read.json()["replies"]] == ["s1"]


@pytest.mark.parametrize(
    ("value", "status"),
    [("true", 200), ("YES", 200), ("On", 200), ("1", 200)]
    + [("false", 202), ("No", 202), ("off", 202), ("0", 202)],
)
async def test_wait_takes_the_usual_boolean_words(
    open_gateway: RunningGateway, value: str, status: int
) -> None:
    response = await open_gateway.client.post("/webhook/demo", params={"wait": value}, json=GOOD)

    assert response.status_code == status, response.text


@pytest.mark.parametrize("value", ["perhaps", "", " true", "2"])
async def test_wait_that_is_no_boolean_is_422_naming_it(
    open_gateway: RunningGateway, value: str
) -> None:
    response = await open_gateway.client.post("/webhook/demo", params={"wait": value}, json=GOOD)

    assert "wait" in assert_error(response, 422)
    assert response.json()["field"] == "wait"


# -- property: whatever arrives, never a 500 ------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELDS = st.sampled_from(["chat_id", "user_id", "text", "message_id", "user_name", "thread_id"])
NEAR_MESSAGES = st.dictionaries(FIELDS, JSON_VALUES | st.text(max_size=30), max_size=6)
IDS = st.text(max_size=10) | st.integers()
MESSAGES = st.fixed_dictionaries(
    {"chat_id": IDS, "user_id": IDS, "text": st.text(max_size=30)},
    optional={"message_id": IDS, "thread_id": IDS, "user_name": JSON_VALUES},
)
BODIES = st.one_of(
    st.binary(max_size=200),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    NEAR_MESSAGES.map(lambda v: json.dumps(v).encode()),
    MESSAGES.map(lambda v: json.dumps(v).encode()),
)


async def test_arbitrary_bodies_never_cause_a_server_error(open_gateway: RunningGateway) -> None:
    statuses: list[int] = []

    # Hypothesis drives a blocking client from a worker thread while the gateway keeps
    # serving on this test's event loop.
    def explore() -> None:
        with httpx.Client(base_url=open_gateway.base_url, timeout=30) as client:

            @settings(
                max_examples=50,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=[HealthCheck.too_slow],
            )
            @given(body=BODIES, wait=st.booleans())
            def never_500(body: bytes, wait: bool) -> None:
                response = client.post(
                    "/webhook/demo",
                    params={"wait": str(wait).lower()},
                    content=body,
                    headers={"content-type": "application/json"},
                )
                statuses.append(response.status_code)
                assert response.status_code in ALLOWED, (body, response.text)

            never_500()

    await asyncio.to_thread(explore)

    assert len(statuses) >= 50
    # Both answered and refused bodies were tried.
    assert 422 in statuses
    assert {200, 202} & set(statuses)
