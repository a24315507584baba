"""``ModelHTTP``: one keep-alive HTTP client for a model provider, bodies pre-encoded.

The provider SDKs send through httpx, httpcore and anyio and parse every answer into
pydantic models: at a turn's scale that was about half the event loop's samples, most
of a turn's CPU. Here a request body arrives as bytes (``core.models.wire``) and goes
out on one aiohttp session; answers are parsed with orjson by the provider module.

Transport failures become ``core.errors`` types here, the same as the SDKs' were:

    a status >= 400                      -> ``status_error`` (429, 5xx, 408, other 4xx)
    no answer within ``timeout`` seconds -> ModelTimeout
    connection refused, reset, bad reply -> ProviderUnavailable

Streams are Server-Sent Events: ``events`` yields each as (event name, data).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import orjson

from core.errors import ModelError, ModelTimeout, ProviderUnavailable
from core.models.status import status_error
from core.record import record

if TYPE_CHECKING:
    import aiohttp
    from yarl import URL

    Proxy = tuple[URL | None, aiohttp.BasicAuth | None]

# As many connections as the SDKs' httpx pools allowed: one per turn in flight.
MAX_CONNECTIONS = 1000


@record
class SSE:
    """One server-sent event: its ``event`` name (None when unnamed) and its data."""

    event: str | None
    data: str


class ModelHTTP:
    """See the module docstring. The session opens on first use (it needs the loop)."""

    def __init__(self, provider: str, headers: Mapping[str, str], timeout: float) -> None:
        self._provider = provider
        self._headers = {"content-type": "application/json", **headers}
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, Proxy] = {}  # by scheme and host

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # Imported on the first call, not at start: it takes a while to import, and a
            # gateway on the offline model (or one that only starts) never needs it.
            import aiohttp

            seconds = self._timeout
            timeout = aiohttp.ClientTimeout(
                total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
            )
            connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, limit_per_host=0)
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers=self._headers,
                timeout=timeout,
                # No ``trust_env``: it would look the proxy up again, and the netrc file,
                # in a thread of their own on every request (``_proxy`` looks once).
                skip_auto_headers=("User-Agent",),
            )
        return self._session

    async def post(self, url: str, body: bytes) -> Any:
        """POST ``body``; the answer's JSON, parsed."""
        async with self._request(url, body, "application/json") as response:
            data = await response.read()
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ModelError(
                f"{self._provider}: the answer was not JSON", provider=self._provider
            ) from exc

    async def events(self, url: str, body: bytes) -> AsyncIterator[SSE]:
        """POST ``body`` and yield the events of the streamed answer."""
        async with self._request(url, body, "text/event-stream") as response:
            event: str | None = None
            data: list[str] = []
            try:
                async for raw in response.content:
                    line = raw.decode("utf-8").rstrip("\r\n")
                    if not line:
                        if data:
                            yield SSE(event, "\n".join(data))
                        event, data = None, []
                    elif line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif line.startswith("event:"):
                        event = line[6:].strip()
            except (TimeoutError, _client_error()) as exc:
                raise self._transport_error(exc) from exc
            if data:
                yield SSE(event, "\n".join(data))

    @asynccontextmanager
    async def _request(
        self, url: str, body: bytes, accept: str
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        proxy, proxy_auth = await self._proxy(url)
        try:
            async with self._client().post(
                url, data=body, headers={"accept": accept}, proxy=proxy, proxy_auth=proxy_auth
            ) as response:
                if response.status >= 400:
                    raise await self._status_error(response)
                yield response
        except (TimeoutError, _client_error()) as exc:
            raise self._transport_error(exc) from exc

    async def _proxy(self, url: str) -> Proxy:
        """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
        ``ALL_PROXY``, none for a host in ``NO_PROXY``), as httpx honoured it; looked up
        once per scheme and host, as aiohttp itself would look it up."""
        key = "/".join(url.split("/", 3)[:3])  # scheme://host:port
        found = self._proxies.get(key)
        if found is None:
            found = self._proxies[key] = await asyncio.to_thread(_env_proxy, url)
        return found

    async def _status_error(self, response: aiohttp.ClientResponse) -> ModelError:
        text = (await response.read()).decode("utf-8", "replace")
        return status_error(self._provider, response.status, _error_message(text), response.headers)

    def _transport_error(self, exc: BaseException) -> ModelError:
        if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
            return ModelTimeout(f"{self._provider}: the request timed out", provider=self._provider)
        return ProviderUnavailable(
            f"{self._provider}: connection error: {type(exc).__name__}", provider=self._provider
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _env_proxy(url: str) -> Proxy:
    """aiohttp's own lookup (it reads a netrc file for the proxy's credentials)."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:  # no proxy for this scheme, or the host is in NO_PROXY
        return None, None


def _client_error() -> type[Exception]:
    """aiohttp's base error (aiohttp is loaded once a session exists)."""
    import aiohttp

    return aiohttp.ClientError


def _error_message(text: str) -> str:
    """The ``error.message`` both providers put in an error body, else the body's start."""
    try:
        body = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text[:500]
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else text[:500]
