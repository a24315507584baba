"""Shared fixtures. Every test runs behind a guard that refuses non-loopback connections."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.postgres import postgres_database

pytest_plugins = ["tests.fakes.fixtures"]

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded(real: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            raise AssertionError(f"test tried to reach a non-loopback address: {address!r}")
        return real(self, address)

    return connect


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _guarded(_real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded(_real_connect_ex))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh $CHATGATE_HOME with no provider variables leaking in from the shell."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("CHATGATE_HOME", str(path))
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "CHATGATE_MODEL",
        "CHATGATE_MODEL_PROVIDER",
        "CHATGATE_WEBHOOK_SECRET",
        "CHATGATE_DATABASE_URL",
        "CHATGATE_HOST",
        "CHATGATE_PORT",
    ):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
async def database_env(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, str]]:
    """The environment that points ``chatgate`` at a fresh database of each kind: the
    home's ``state.db``, then a PostgreSQL database of its own (``tests/postgres.py``)."""
    if request.param == "sqlite":
        yield {}
        return
    async with postgres_database() as url:
        yield {"CHATGATE_DATABASE_URL": url}


@pytest.fixture
def testroom() -> Iterator[None]:
    """The test platform of ``tests/testroom_platform.py``, registered in-process (as a
    package's entry point would be) for one test."""
    from adapters import registry
    from tests import testroom_platform

    registry.register(testroom_platform.SPEC)
    try:
        yield
    finally:
        registry.unregister(testroom_platform.NAME)
