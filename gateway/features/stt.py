"""Voice in: the ``stt:`` section, and the voice reader of the intake it configures.

Voice notes and audio files are transcribed on an OpenAI-compatible
``/audio/transcriptions`` (``core.media.voice``). The reader is built with the intake
(``gateway.media_intake``), before any feature opens, so this feature contributes
nothing at run time: it owns the settings. ``base_url`` and ``api_key`` default to the
chat model's (``model.base_url``, ``model.api_key``); with neither (the offline or the
Anthropic model) voice notes reach the model as a line saying they could not be
transcribed, and the start-up log says so once.
"""

from __future__ import annotations

import logging

from pydantic import Field, SecretStr, field_validator

from adapters.platform import Section
from core.media.speech import SpeechClient, SpeechServer
from core.media.voice import VoiceReader
from core.retry import RetryPolicy
from gateway.features.base import FeatureSpec
from gateway.settings import Settings

log = logging.getLogger(__name__)

STARTER_CONFIG = """\
stt:                       # voice notes and audio files, transcribed into the person's words
  enabled: true            # false: the model gets a line with the saved file's path instead
  base_url: null           # an OpenAI-compatible server with /audio/transcriptions;
                           # null: model.base_url (the chat model's server)
  # api_key: ...           # [CHATGATE_STT__API_KEY] unset: model.api_key
  model: whisper-1         # e.g. whisper-1, gpt-4o-mini-transcribe, whisper-large-v3
  timeout_seconds: 60      # per try; retried like model calls (model.max_retries)
  max_bytes: 25000000      # larger audio is not sent (OpenAI takes up to 25 MB)
"""


def http_url(value: str | None) -> str | None:
    """A speech server's ``base_url``: empty is unset, anything else an HTTP URL."""
    if not value:
        return None
    if not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return value


class SttSettings(Section):
    enabled: bool = True
    # An OpenAI-compatible server; None: the chat model's (``model.base_url``).
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = Field(default="whisper-1", min_length=1)
    timeout_seconds: float = Field(default=60.0, gt=0, le=3600)
    max_bytes: int = Field(default=25_000_000, ge=1)

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        return http_url(value)


def speech_server(
    settings: Settings,
    base_url: str | None,
    api_key: SecretStr | None,
    *,
    model: str,
    timeout_seconds: float,
) -> SpeechServer | None:
    """The server a speech section names, else the chat model's; None when neither
    names one (a ``base_url`` or an ``api_key``, which means OpenAI's own API)."""
    m = settings.model
    url = base_url or m.base_url or None
    key = api_key if api_key is not None and api_key.get_secret_value() else m.api_key
    secret = key.get_secret_value() if key is not None else None
    if not url and not secret:
        return None
    retry = RetryPolicy(m.max_retries, m.retry_base_seconds, m.retry_max_seconds)
    return SpeechServer(url, secret, model, timeout_seconds, retry)


def voice_reader(settings: Settings) -> VoiceReader:
    """The intake's reader of voice notes and audio files for these settings."""
    s = settings.section(SttSettings)
    server = speech_server(
        settings, s.base_url, s.api_key, model=s.model, timeout_seconds=s.timeout_seconds
    )
    if s.enabled and server is None:
        # INFO: every offline start has no server; the note in each voice turn says it too.
        log.info(
            "voice notes cannot be transcribed: no speech-to-text server is set "
            "(stt.base_url, or an OpenAI-compatible model.base_url / OPENAI_API_KEY)"
        )
    speech = SpeechClient(server) if server is not None else None
    return VoiceReader(speech, enabled=s.enabled, max_bytes=s.max_bytes)


def build(settings: Settings) -> None:
    """The reader is the intake's (``voice_reader``); nothing runs beside it."""
    settings.section(SttSettings)


SPEC = FeatureSpec("stt", build, settings=SttSettings, starter_config=STARTER_CONFIG)
