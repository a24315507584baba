"""The checks Telegram makes on what the bot sends, for ``tests.fakes.telegram_server``.

``checked_text`` is what ``sendMessage`` and ``editMessageText`` share: the text must not
be empty or longer than 4096 UTF-16 code units (after MarkdownV2 markup is removed),
entities must be known types inside the text with their required fields, ``parse_mode``
must be known (ignored when entities are given), and MarkdownV2 must escape its reserved
characters. ``check_command`` is ``setMyCommands``'s check of one command; ``CHAT_ACTIONS``
are the actions ``sendChatAction`` accepts. Each refusal is an ``ApiError`` with
Telegram's description.
"""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.telegram_payloads import Json, utf16_len
from tests.fakes.telegram_wire import ApiError

MAX_MESSAGE_UTF16 = 4096

_ENTITY_TYPES = frozenset(
    {
        "mention",
        "hashtag",
        "cashtag",
        "bot_command",
        "url",
        "email",
        "phone_number",
        "bold",
        "italic",
        "underline",
        "strikethrough",
        "spoiler",
        "blockquote",
        "expandable_blockquote",
        "code",
        "pre",
        "text_link",
        "text_mention",
        "custom_emoji",
        "date_time",
    }
)
_ENTITY_REQUIRED = {"text_link": "url", "text_mention": "user", "custom_emoji": "custom_emoji_id"}

CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)

_MARKDOWN_V2_MARKUP = frozenset("*_~|[]()")
_MARKDOWN_V2_RESERVED = frozenset("_*[]()~`>#+-=|{}.!")
_COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


def checked_text(params: Json) -> tuple[str, list[Json] | None, str | None]:
    text = params.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ApiError(400, "Bad Request: message text is empty")
    parse_mode = params.get("parse_mode") or None
    entities = params.get("entities")
    if entities is not None:
        _check_entities(text, entities)
        parse_mode = None  # Telegram ignores parse_mode when entities are given
    elif parse_mode is not None:
        _check_parse_mode(text, str(parse_mode))
    visible = _markdown_v2_visible(text) if parse_mode == "MarkdownV2" else text
    if utf16_len(visible) > MAX_MESSAGE_UTF16:
        raise ApiError(400, "Bad Request: message is too long")
    return text, entities or None, None if parse_mode is None else str(parse_mode)


def _entity_problem(item: Any, size: int) -> str | None:
    if not isinstance(item, dict):
        return "entity must be an object"
    kind, offset, length = item.get("type"), item.get("offset"), item.get("length")
    if kind not in _ENTITY_TYPES:
        return f"unsupported entity type {kind!r}"
    if not isinstance(offset, int) or not isinstance(length, int) or offset < 0 or length <= 0:
        return f"entity {kind} has invalid offset or length"
    if offset + length > size:
        return (
            f"entity {kind} at UTF-16 offset {offset} with length {length} "
            f"is out of the text bounds ({size})"
        )
    required = _ENTITY_REQUIRED.get(kind)
    if required is not None and not item.get(required):
        return f"entity {kind} has no {required}"
    return None


def _check_entities(text: str, entities: Any) -> None:
    if not isinstance(entities, list):
        raise ApiError(400, "Bad Request: can't parse entities: entities must be an array")
    size = utf16_len(text)
    for item in entities:
        problem = _entity_problem(item, size)
        if problem is not None:
            raise ApiError(400, f"Bad Request: can't parse entities: {problem}")


def _check_parse_mode(text: str, parse_mode: str) -> None:
    if parse_mode == "MarkdownV2":
        _check_markdown_v2(text)
    elif parse_mode not in ("HTML", "Markdown"):
        raise ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode!r}")


def _check_markdown_v2(text: str) -> None:
    """A simple MarkdownV2 check: reserved characters outside markup must be escaped.

    Code spans, blocks and link targets are skipped; ``*_~|[]()`` count as markup; ``>`` is allowed
    at the start of a line (a quote).
    """
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "`":
            index = _skip_code(text, index)
            continue
        if text.startswith("](", index):
            index = _skip_link_target(text, index + 2)
            continue
        if char == ">" and (index == 0 or text[index - 1] == "\n"):
            index += 1
            continue
        if char in _MARKDOWN_V2_RESERVED and char not in _MARKDOWN_V2_MARKUP:
            raise ApiError(
                400,
                f"Bad Request: can't parse entities: Character '{char}' is reserved and "
                "must be escaped with the preceding '\\'",
            )
        index += 1


def _skip_code(text: str, index: int) -> int:
    fence = "```" if text.startswith("```", index) else "`"
    end = text.find(fence, index + len(fence))
    if end < 0:
        raise ApiError(
            400, f"Bad Request: can't parse entities: Can't find end of the entity at {index}"
        )
    return end + len(fence)


def _skip_link_target(text: str, index: int) -> int:
    """Skip a link's ``(url)``: inside it only ``)`` and ``\\`` are escaped."""
    while index < len(text) and text[index] != ")":
        index += 2 if text[index] == "\\" else 1
    return index + 1


def _markdown_v2_visible(text: str) -> str:
    """Roughly the text left once MarkdownV2 markup and escapes are removed."""
    without_links = re.sub(r"\]\((?:[^)\\]|\\.)*\)", "", text)
    without_escapes = re.sub(r"\\(.)", r"\1", without_links)
    return re.sub(r"[*_~|\[\]`]", "", without_escapes)


def check_command(command: Any) -> None:
    if not isinstance(command, dict):
        raise ApiError(400, "Bad Request: can't parse commands JSON object")
    if not _COMMAND_NAME.fullmatch(str(command.get("command", ""))):
        raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
    description = str(command.get("description", ""))
    if not 1 <= len(description) <= 256:
        raise ApiError(400, "Bad Request: command description is empty or too long")
