"""The model protocol: messages and tool schemas in, one assistant message out.

Every provider (``openai``, ``anthropic``, ``offline``) implements ``ModelClient``.
Providers translate their SDK's errors into ``core.errors`` types at this boundary;
retries live in ``core.models.retrying`` so every provider shares one policy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, Protocol

from core.media.refs import MediaRef
from core.record import record

Role = Literal["user", "assistant", "tool"]
TextSink = Callable[[str], Awaitable[None]]


@record
class ToolCall:
    """A tool call the model asked for; ``arguments`` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


@record
class ChatMessage:
    """One conversation message in provider-neutral form (the system prompt is separate)."""

    role: Role
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    # Images sent with a user message (vision models); the bytes are read from the media
    # store when the request is encoded, so every replay sends the same bytes.
    images: tuple[MediaRef, ...] = ()


@record
class ToolSpec:
    """A tool the model may call: its name, a description and a JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class RequestWire(Protocol):
    """A session's messages as request bytes, kept between requests
    (``core.models.wire.WireCache``)."""

    def parts(
        self,
        dialect: str,
        messages: Sequence[ChatMessage],
        encode: Callable[[ChatMessage], tuple[bytes, bool]],
    ) -> list[bytes]:
        """The bytes of each of ``messages``, encoding with ``encode`` only what is new."""
        ...

    def tools(
        self,
        dialect: str,
        specs: Sequence[ToolSpec],
        encode: Callable[[Sequence[ToolSpec]], bytes],
    ) -> bytes:
        """The encoded tool list, encoded again only when the specs change."""
        ...


@record
class ModelRequest:
    """Everything one model call needs.

    ``system`` is sent byte for byte as stored on the session. With ``on_text`` set the
    provider streams (whatever ``ModelConfig.stream`` says) and passes it each text delta.
    ``wire`` is the session's ``WireCache``: the messages it has seen are not encoded
    again (None: everything is encoded for this request alone).
    """

    system: str
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSpec] = ()
    on_text: TextSink | None = None
    wire: RequestWire | None = None


@record
class ModelReply:
    """The assistant's answer: text, tool calls, or both.

    ``input_tokens`` is the whole prompt; ``cache_read_tokens`` and
    ``cache_write_tokens`` are the parts of it the provider read from or wrote to
    its prompt cache (0 when it does not say).
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@record
class ModelConfig:
    """Provider settings, mapped from the gateway's configuration."""

    provider: Literal["offline", "openai", "anthropic"] = "offline"
    model: str = ""
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_seconds: float = 60.0
    max_retries: int = 3
    retry_base_seconds: float = 0.5
    retry_max_seconds: float = 30.0
    stream: bool = False
    max_tokens: int = 4096
    # All tries of one call together, pauses included (``RetryingModel``).
    call_timeout_seconds: float = 90.0
    # The home's media store (``core.media.store``), where images sent to the model live.
    media_dir: Path | None = None
    # The model is shown images (``model.vision``); false: a line of text stands in for each.
    vision: bool = True


class ModelClient(Protocol):
    """A model provider."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Answer one request or raise a ``core.errors.ModelError``."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class ModelWrapper:
    """A ``ModelClient`` around another: the same provider and model, closed with it.
    Wrappers (retries, metrics, metering, budgets) override ``complete``."""

    def __init__(self, inner: ModelClient) -> None:
        self._inner = inner

    @property
    def provider(self) -> str:
        return self._inner.provider

    @property
    def model(self) -> str:
        return self._inner.model

    async def complete(self, request: ModelRequest) -> ModelReply:
        return await self._inner.complete(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
