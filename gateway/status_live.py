"""What a running gateway says of its MCP servers, for ``chatgate status``.

The servers' live state is in the running gateway's memory, not the SessionDB, so
``chatgate status`` asks the gateway this profile configures (``server.host`` and
``server.port``) for its ``/metrics`` and reads the two MCP families out of them. No
gateway answering is a plain result, not an error: the command still reports what the
configuration and the database say.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from core.record import record
from gateway.settings import Settings

# A gateway on this machine answers at once; a dead port refuses at once.
TIMEOUT_SECONDS = 2.0
# A wildcard bind is reached on the loopback address of its family.
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}


@record
class LiveServer:
    connected: bool
    tools: int


def metrics_url(settings: Settings) -> str:
    host = _LOOPBACK.get(settings.server.host, settings.server.host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.server.port}/metrics"


async def live_mcp_servers(settings: Settings) -> dict[str, LiveServer] | None:
    """Each MCP server's state as the running gateway reports it; None when no gateway
    answers there (or what answers is not a chatgate gateway)."""
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as client:
            response = await client.get(metrics_url(settings))
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    return parse(response.text)


def parse(text: str) -> dict[str, LiveServer] | None:
    """The MCP servers in a ``/metrics`` body; None when it is not chatgate's."""
    connected: dict[str, bool] = {}
    tools: dict[str, int] = {}
    seen = False
    try:
        for family in text_string_to_metric_families(text):
            if family.name == "chatgate_mcp_servers":
                seen = True
            for sample in family.samples:
                server = sample.labels.get("server")
                if server is None:
                    continue
                if sample.name == "chatgate_mcp_server_connected":
                    connected[server] = sample.value == 1
                elif sample.name == "chatgate_mcp_server_tools":
                    tools[server] = int(sample.value)
    except ValueError:  # not Prometheus text
        return None
    if not seen:
        return None
    names = connected.keys() | tools.keys()
    return {n: LiveServer(connected.get(n, False), tools.get(n, 0)) for n in sorted(names)}
