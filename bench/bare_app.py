"""The ceiling for ``bench/throughput.py``: a bare FastAPI endpoint, nothing behind it.

``POST /webhook/{route}`` validates the same body as the gateway's webhook with a
pydantic model and answers a small JSON object. It runs under uvicorn exactly as
``chatgate run`` does (one worker, uvicorn's default loop and HTTP implementation,
``log_config=None``), so the difference between the two is the gateway's own work.

Run: ``python -m bench.bare_app --port 8090``.
"""

from __future__ import annotations

import argparse
import logging

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel, Field

ID_MAX = 255


class BareMessage(BaseModel):
    """The webhook body, with the same constraints as ``adapters.webhook.WebhookMessage``."""

    chat_id: str = Field(min_length=1, max_length=ID_MAX)
    user_id: str = Field(min_length=1, max_length=ID_MAX)
    text: str = Field(min_length=1)
    message_id: str | None = Field(default=None, min_length=1, max_length=ID_MAX)
    user_name: str | None = Field(default=None, max_length=ID_MAX)
    thread_id: str | None = Field(default=None, min_length=1, max_length=ID_MAX)


class BareReply(BaseModel):
    text: str


class BareTurn(BaseModel):
    session_id: str | None
    message_id: str
    replies: list[BareReply]


def create_bare_app() -> FastAPI:
    """The bare app: one validating POST endpoint and a readiness probe."""
    app = FastAPI(title="bare")

    @app.post("/webhook/{route}")
    async def post_message(route: str, body: BareMessage) -> BareTurn:
        """Echo the message id with one canned reply."""
        return BareTurn(
            session_id=None,
            message_id=body.message_id or "",
            replies=[BareReply(text="ok")],
        )

    @app.get("/readyz")
    async def readyz() -> dict[str, str]:
        return {"status": "ready"}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    server = uvicorn.Server(
        uvicorn.Config(
            create_bare_app(),
            host=args.host,
            port=args.port,
            log_level="warning",
            log_config=None,
        )
    )
    server.run()


if __name__ == "__main__":
    main()
