"""The webhook's answers are encoded with orjson: the bytes a client parses must stay the
JSON Starlette's ``JSONResponse`` sent before, awkward text and timestamps included."""

from __future__ import annotations

import json

from fastapi.responses import JSONResponse

from adapters.webhook.json_body import JsonResponse

AWKWARD = {
    "session_id": "20261207_180104_98166e03",
    "replies": [
        {
            "id": 2**53 + 1,
            "text": 'Grüße, 你好 👋\n\t"quoted" \\ back\u0000slash \u2028 </script>',
            "created_at": 1796666464.45871,
            "files": [],
            "actions": [{"label": "Approve", "command": "/approve 7"}],
        }
    ],
    "cursor": 0,
    "pending": False,
    "error": None,
}


def test_body_is_the_json_starlette_sent() -> None:
    ours = JsonResponse(AWKWARD)
    theirs = JSONResponse(AWKWARD)
    assert ours.body == theirs.body
    assert json.loads(bytes(ours.body)) == AWKWARD


def test_headers_name_json_and_length() -> None:
    response = JsonResponse({"error": "nope"}, status_code=422, headers={"Retry-After": "1"})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/json"
    assert response.headers["content-length"] == str(len(response.body))
    assert response.headers["retry-after"] == "1"
