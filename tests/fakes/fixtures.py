"""Pytest fixtures for the fake model servers (the root conftest imports these)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer


@pytest.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAIServer]:
    """A running fake OpenAI-compatible server with an empty script."""
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def fake_anthropic() -> AsyncIterator[FakeAnthropicServer]:
    """A running fake Anthropic Messages server with an empty script."""
    async with FakeAnthropicServer() as server:
        yield server
