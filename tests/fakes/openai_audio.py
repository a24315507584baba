"""The audio routes of the fake OpenAI-compatible server: speech to text and back.

``FakeOpenAIServer`` mounts them and exposes this object as ``fake.audio``::

    fake.audio.transcribe("see you at six")     # the next transcription's text
    fake.audio.fail_transcription(status=500)   # the next transcription fails
    fake.audio.fail_speech(status=503)          # the next speech request fails

``POST /v1/audio/transcriptions`` (multipart, as the openai client uploads) records the
uploaded file's bytes, name and type and the model in ``transcriptions`` and answers
``{"text": ...}``: the next scripted transcript, else ``transcript of <file name>``.
``POST /v1/audio/speech`` records its JSON body in ``speech_requests`` and answers a
small Ogg/Opus file (``SPOKEN``; the format asked for is recorded, not checked).
Failures are answered like the chat route's, in OpenAI's error shape.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Json = dict[str, Any]

# The start of an Ogg stream holding Opus: what a voice-message player checks first.
SPOKEN = b"OggS\x00\x02" + b"\x00" * 20 + b"\x01\x13OpusHead\x01\x01" + b"\x00" * 12


@dataclass(frozen=True, slots=True)
class Upload:
    """One transcription request: the file as it arrived and the model asked for."""

    data: bytes
    filename: str
    content_type: str
    model: str


@dataclass(frozen=True, slots=True)
class AudioFailure:
    status: int
    message: str


class FakeAudio:
    """The scripts and records of the audio routes (module docstring)."""

    def __init__(self) -> None:
        self.transcriptions: list[Upload] = []
        self.speech_requests: list[Json] = []
        self._transcripts: deque[str | AudioFailure] = deque()
        self._speech: deque[AudioFailure] = deque()

    def routes(self) -> list[Route]:
        return [
            Route("/v1/audio/transcriptions", self._transcription, methods=["POST"]),
            Route("/v1/audio/speech", self._speak, methods=["POST"]),
        ]

    def transcribe(self, text: str) -> None:
        """Answer the next transcription with ``text``."""
        self._transcripts.append(text)

    def fail_transcription(self, *, status: int, message: str = "") -> None:
        """Answer the next transcription with an HTTP error."""
        self._transcripts.append(AudioFailure(status, message or f"fake error {status}"))

    def fail_speech(self, *, status: int, message: str = "") -> None:
        """Answer the next speech request with an HTTP error."""
        self._speech.append(AudioFailure(status, message or f"fake error {status}"))

    async def _transcription(self, request: Request) -> Response:
        async with request.form() as form:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                return _error(AudioFailure(400, "no file was uploaded"))
            data = await upload.read()
            name = upload.filename or ""
            record = Upload(data, name, upload.content_type or "", str(form.get("model", "")))
        self.transcriptions.append(record)
        step = self._transcripts.popleft() if self._transcripts else f"transcript of {name}"
        if isinstance(step, AudioFailure):
            return _error(step)
        return JSONResponse({"text": step})

    async def _speak(self, request: Request) -> Response:
        self.speech_requests.append(await request.json())
        if self._speech:
            return _error(self._speech.popleft())
        return Response(SPOKEN, media_type="audio/ogg")


def _error(failure: AudioFailure) -> Response:
    error = {"message": failure.message, "type": "fake_error", "param": None, "code": None}
    return JSONResponse({"error": error}, status_code=failure.status)
