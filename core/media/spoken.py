"""Spoken replies: the answer to a voice note, read aloud, sent with the text.

A ``reply_media`` hook (``core.hooks``): when the message a turn answered held a voice
note, the reply's text (Markdown marks dropped, up to ``max_chars``) goes to an
OpenAI-compatible ``/audio/speech`` (``core.media.speech``, Opus in Ogg) and the audio
is stored in the media store as ``MediaRef(kind="voice", mime="audio/ogg")``, which the
reply carries in ``OutboundMessage.files``: a platform sends it as a voice message. A
reply longer than ``max_chars`` is not spoken (a cut-off recording helps nobody: the
text says it all). A failure is logged, without the text, and the reply goes out as
text alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from core.errors import ModelError
from core.media.refs import MediaRef
from core.media.speech import SpeechClient
from core.media.store import MediaStore
from core.store.records import InboxItem

log = logging.getLogger(__name__)

VOICE_MIME = "audio/ogg"
VOICE_NAME = "reply.ogg"

# Markdown a voice would read out as symbols: fences, emphasis and heading marks, and
# the URL half of a link.
_CODE_FENCE = re.compile(r"^\s*```.*$", re.MULTILINE)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")
_MARKS = re.compile(r"[*_`~]+|^\s{0,3}#{1,6}\s+|^\s*>\s?", re.MULTILINE)


def spoken_text(reply: str) -> str:
    """``reply`` as it should be read aloud (Markdown marks dropped)."""
    text = _CODE_FENCE.sub("", reply)
    text = _LINK.sub(r"\1", text)
    return _MARKS.sub("", text).strip()


class SpokenReplies:
    """The ``reply_media`` hook (module docstring)."""

    def __init__(
        self, speech: SpeechClient, store: MediaStore, *, voice: str, max_chars: int
    ) -> None:
        self._speech = speech
        self._store = store
        self._voice = voice
        self._max_chars = max_chars

    async def __call__(self, item: InboxItem, reply: str) -> Sequence[MediaRef]:
        if not any(a.kind == "voice" for a in item.message.attachments):
            return []
        text = spoken_text(reply)
        if not text or len(text) > self._max_chars:
            log.debug("inbox %s: reply not spoken (%d characters)", item.id, len(text))
            return []
        try:
            audio = await self._speech.speak(text, self._voice)
        except ModelError as exc:
            # The exception names the status and server, never the text.
            log.warning("inbox %s: the spoken reply failed, sending text only: %s", item.id, exc)
            return []
        if not audio:
            log.warning("inbox %s: the speech server sent no audio, sending text only", item.id)
            return []
        return [await self._store.put(audio, VOICE_MIME, kind="voice", name=VOICE_NAME)]
