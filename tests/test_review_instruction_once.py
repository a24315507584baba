"""A review's instruction is stored once (migration 0021): read back in place at the
head, and put back into each transcript on the way down, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from sqlalchemy import text

from core.store.db import SessionDB
from core.store.reviews import ReviewOutcome
from tests.direct_sql import DirectSql
from tests.test_reply_text_once import (  # noqa: F401  (db_url: the fixture)
    db_url,
    migrate,
    session_row,
)

T0 = 1_780_000_000.0
INSTRUCTION = "[Background review] " + "look back over the conversation. " * 20
TRANSCRIPT = [
    {"role": "user", "content": INSTRUCTION},
    {"role": "assistant", "content": "Nothing to save.", "finish_reason": "stop"},
]


async def test_the_instruction_goes_back_into_the_transcript_on_the_way_down(
    db_url: str,  # noqa: F811
) -> None:
    await migrate(db_url)
    async with SessionDB(db_url) as db:
        for session_id in ("s1", "s2"):
            session = await db.open_session(session_row(session_id))
            review_id = await db.reviews.schedule(
                session_id=session.id,
                session_key="webhook:c1",
                kinds="memory",
                at_message_count=10,
                at=T0,
            )
            outcome = ReviewOutcome("done", T0 + 1, 1, [], TRANSCRIPT)
            await db.reviews.finish(review_id, outcome)
        read = await db.reviews.transcript(review_id)
    async with DirectSql(db_url) as sql:
        copies = await sql.scalar(
            text("SELECT count(*) FROM prompts WHERE body = :b").bindparams(b=INSTRUCTION)
        )

    await migrate(db_url, "0020", down=True)
    async with DirectSql(db_url) as sql:
        down = [r.transcript for r in await sql.rows(text("SELECT transcript FROM reviews"))]
        left = await sql.scalar(
            text("SELECT count(*) FROM prompts WHERE body = :b").bindparams(b=INSTRUCTION)
        )

    assert read == TRANSCRIPT
    assert copies == 1
    assert [json.loads(t) if isinstance(t, str) else t for t in down] == [TRANSCRIPT] * 2
    assert left == 0
