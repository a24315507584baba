"""Reading a webhook request: its body within a size cap, and its boolean query flags."""

from __future__ import annotations

from fastapi import Request

from core.errors import RequestRefused

# The words pydantic takes for a bool (any case), so ``?wait=`` means what it meant
# when FastAPI parsed it.
TRUE_WORDS = frozenset({"true", "1", "yes", "on", "t", "y"})
FALSE_WORDS = frozenset({"false", "0", "no", "off", "f", "n"})


async def read_capped(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to pass ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestRefused(413, f"body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestRefused(413, f"body is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def read_flag(request: Request, name: str, *, default: bool) -> bool:
    """The query flag ``name`` (``default`` when absent); 422 for a word that is no bool."""
    value = request.query_params.get(name)
    if value is None:
        return default
    word = value.lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise RequestRefused(422, f"query parameter '{name}' must be true or false", field=name)
