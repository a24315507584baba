"""What ``chatgate doctor`` learns from one remote service: a ``Probe``, and the one HTTP
GET the platforms' and the model's checks share.

A probe never carries the URL it called or the library's error text: both may hold a
token (the Bot API puts it in the path), and the doctor prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from core.record import record

if TYPE_CHECKING:
    import httpx


@record
class Probe:
    """One check's outcome: ok, what was found, and for a failure what to do about it."""

    ok: bool
    detail: str
    fix: str = ""


async def http_get(
    url: str, headers: Mapping[str, str], within: float, *, post: object = None
) -> httpx.Response | str:
    """The response to ``GET url`` (or, with ``post``, to POSTing it as JSON), or why there
    was none (a sentence without the URL)."""
    import httpx  # here: only the doctor calls out, and every command reads the registry

    try:
        async with httpx.AsyncClient(timeout=within) as client:
            if post is not None:
                return await client.post(url, headers=dict(headers), json=post)
            return await client.get(url, headers=dict(headers))
    except httpx.TimeoutException:
        return f"no answer within {within:g} s"
    except httpx.HTTPError as exc:
        return f"cannot connect ({type(exc).__name__})"


def refused(response: httpx.Response, what: str, fix: str) -> Probe | None:
    """A failed ``Probe`` when ``response`` is not a 2xx (401/403: ``what`` was refused)."""
    if response.is_success:
        return None
    if response.status_code in (401, 403):
        return Probe(False, f"{what} was refused ({response.status_code})", fix)
    return Probe(False, f"answered {response.status_code}", "see the service's status page")
