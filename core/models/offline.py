"""The offline provider: a deterministic stand-in used when no model is configured.

It never touches the network, never sleeps and never calls tools, so the gateway
can start, be exercised end to end and be benchmarked without any model. Its answer
says plainly that no model is configured and how to configure one.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.models.base import ChatMessage, ModelReply, ModelRequest

SETUP_HINT = (
    "No model is configured, so chatgate is running in offline mode. "
    "To talk to a real model, set OPENAI_BASE_URL, OPENAI_API_KEY and CHATGATE_MODEL "
    "for any OpenAI-compatible server (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp), "
    "or set ANTHROPIC_API_KEY, then restart chatgate."
)

# Long pastes are echoed in part; the echo only proves the message arrived.
ECHO_LIMIT = 500


def last_user_text(messages: Sequence[ChatMessage]) -> str | None:
    """The content of the most recent user message that has any."""
    for message in reversed(messages):
        if message.role == "user" and message.content:
            return message.content
    return None


def offline_answer(messages: Sequence[ChatMessage]) -> str:
    """The offline reply text for a conversation."""
    said = last_user_text(messages)
    if said is None:
        return SETUP_HINT
    if len(said) > ECHO_LIMIT:
        said = said[:ECHO_LIMIT] + "…"
    return f'{SETUP_HINT}\n\nYou said: "{said}"' + _images_line(messages)


def _images_line(messages: Sequence[ChatMessage]) -> str:
    """Names the images the last user message came with (proof they reached the model)."""
    last = next((m for m in reversed(messages) if m.role == "user"), None)
    if last is None or not last.images:
        return ""
    named = ", ".join(
        f"{ref.name or 'image'} ({ref.mime}, {ref.size:,} bytes)" for ref in last.images
    )
    count = len(last.images)
    return f"\n\nYou sent {count} image{'s' if count != 1 else ''}: {named}."


class OfflineModel:
    """A ``ModelClient`` that answers without a model (provider and model "offline")."""

    @property
    def provider(self) -> str:
        return "offline"

    @property
    def model(self) -> str:
        return "offline"

    async def complete(self, request: ModelRequest) -> ModelReply:
        """Explain how to configure a model and echo the user's last message (streamed a
        line at a time to ``request.on_text``, when it is set)."""
        answer = offline_answer(request.messages)
        if request.on_text is not None:
            for line in answer.splitlines(keepends=True):
                await request.on_text(line)
        return ModelReply(content=answer, finish_reason="stop", model="offline")

    async def aclose(self) -> None:
        """Nothing to release."""
