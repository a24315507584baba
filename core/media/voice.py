"""The voice reader of the intake: a voice note or audio file becomes the person's words.

The file the adapter saved is sent to a speech-to-text server (``core.media.speech``)
and the transcript takes the place of the adapter's line naming the file, marked as a
transcript: ``[voice note] see you at six`` (an audio file: ``[audio talk.mp3] ...``).
It is stored as the person's text, so ``session_search`` finds it and every later
request sends it. When the file cannot be transcribed that place holds one line saying
why (``stt.enabled`` off or no server: with the file's path), and the model answers
it: the person hears, in the conversation's own words, that the note was not
understood, and any caption sent with it is still answered.

The upload's name ends in the extension of its type (``.ogg`` for
``.oga`` voice notes), which is how OpenAI's endpoint tells the format.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from core.errors import ModelError, ModelRequestError, ModelTimeout, RateLimited
from core.media.intake import UserInput
from core.media.notes import shown_name, swap_note
from core.media.speech import SpeechClient
from core.messages import Attachment

log = logging.getLogger(__name__)

# The extension OpenAI's transcription endpoint expects for each audio type.
_EXTENSIONS = {
    "audio/ogg": ".ogg",
    "audio/opus": ".ogg",
    "audio/mpeg": ".mp3",
    "audio/mp3": ".mp3",
    "audio/mp4": ".m4a",
    "audio/x-m4a": ".m4a",
    "audio/m4a": ".m4a",
    "audio/aac": ".m4a",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/wave": ".wav",
    "audio/webm": ".webm",
    "audio/flac": ".flac",
    "audio/x-flac": ".flac",
}


def is_audio(attachment: Attachment) -> bool:
    """A voice note or an audio file, by the adapter's kind or the mime type."""
    return attachment.kind in ("voice", "audio") or _mime(attachment).startswith("audio/")


class VoiceReader:
    """An ``AttachmentReader`` for voice notes and audio files (module docstring).

    ``speech`` None: no server to send them to (``unavailable`` says why, to the model).
    """

    def __init__(
        self,
        speech: SpeechClient | None,
        *,
        enabled: bool = True,
        max_bytes: int = 25_000_000,
        unavailable: str = "no speech-to-text server is set (stt.base_url)",
    ) -> None:
        self._speech = speech
        self._enabled = enabled
        self._max_bytes = max_bytes
        self._unavailable = unavailable

    def takes(self, attachment: Attachment) -> bool:
        return is_audio(attachment)

    async def read(self, attachment: Attachment, into: UserInput) -> None:
        label = _label(attachment)
        swap_note(into, attachment, await self._line(attachment, label))

    async def _line(self, attachment: Attachment, label: str) -> str:
        if not self._enabled:
            return f"[{label}, not transcribed (stt.enabled is off): {attachment.path}]"
        if self._speech is None:
            return f"[{label}, not transcribed: {self._unavailable}; saved at {attachment.path}]"
        if attachment.size > self._max_bytes:
            return f"[{label}, not transcribed: larger than stt.max_bytes; at {attachment.path}]"
        try:
            data = await asyncio.to_thread(Path(attachment.path).read_bytes)
        except OSError as exc:
            log.warning("a voice note could not be read from the cache: %s", exc.strerror)
            return f"[{label}, not transcribed: the file is gone]"
        try:
            text = await self._speech.transcribe(data, upload_name(attachment), _mime(attachment))
        except ModelError as exc:
            log.warning("transcription failed: %s", exc)
            why = failure(exc)
            return f"[{label}, not transcribed: {why}; ask them to send it again or type it]"
        text = " ".join(text.split())
        return f"[{label}] {text}" if text else f"[{label}, in which no words were heard]"


def upload_name(attachment: Attachment) -> str:
    """The file's name with the extension of its type, as the server expects it."""
    name = Path(shown_name(attachment)).name
    extension = _EXTENSIONS.get(_mime(attachment))
    if extension is None or name.lower().endswith(extension):
        return name
    return f"{Path(name).stem or 'voice'}{extension}"


def failure(exc: ModelError) -> str:
    """Why a transcription failed, in a few words for the person."""
    if isinstance(exc, RateLimited):
        return "the speech-to-text service is busy (rate-limited)"
    if isinstance(exc, ModelTimeout):
        return "the speech-to-text service did not answer in time"
    if isinstance(exc, ModelRequestError):
        return "the speech-to-text service refused the file"
    return "the speech-to-text service is not answering"


def _label(attachment: Attachment) -> str:
    return "voice note" if attachment.kind == "voice" else f"audio {shown_name(attachment)}"


def _mime(attachment: Attachment) -> str:
    return attachment.mime_type.split(";", 1)[0].strip().lower()
