"""The HTTP access log without the health probes.

uvicorn logs one INFO line per request (``uvicorn.access``). A load balancer, Docker's
``HEALTHCHECK`` and Prometheus ask ``GET /healthz``, ``/readyz`` and ``/metrics`` every
few seconds, which would bury the lines an operator reads. Those probes are logged at
DEBUG instead (shown with ``server.log_level: debug``); every other request, and a probe
by any other method, stays at INFO. The line carries method, path, status and the
client's address, never a body.
"""

from __future__ import annotations

import logging

ACCESS_LOGGER = "uvicorn.access"
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class ProbesAtDebug(logging.Filter):
    """Moves the access line of a ``GET`` probe to DEBUG (dropped unless DEBUG is on)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _is_probe(record):
            return True
        if not logging.getLogger(ACCESS_LOGGER).isEnabledFor(logging.DEBUG):
            return False
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def _is_probe(record: logging.LogRecord) -> bool:
    # uvicorn's access record: (client address, method, path with query, HTTP version, status).
    args = record.args
    if not isinstance(args, tuple) or len(args) < 3:
        return False
    method, path = args[1], str(args[2]).partition("?")[0]
    return method in ("GET", "HEAD") and path in PROBE_PATHS


def install() -> None:
    """Filter the access logger (once, however often the server starts)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, ProbesAtDebug) for f in logger.filters):
        logger.addFilter(ProbesAtDebug())
