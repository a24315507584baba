"""Documents in: the ``documents:`` section, and the document reader it configures.

Text-like files and PDFs a person sends are read for the turn they came with
(``core.media.documents``), up to ``max_chars`` characters a message. The reader is
built with the intake (``gateway.media_intake``), before any feature opens, so this
feature contributes nothing at run time: it owns the settings.
"""

from __future__ import annotations

from pydantic import Field

from adapters.platform import Section
from core.media.documents import DocumentReader
from gateway.features.base import FeatureSpec
from gateway.settings import Settings

STARTER_CONFIG = """\
documents:                 # text files (txt, md, csv, json, yaml, code) and PDFs a person sends
  enabled: true            # false: the model only gets a line naming each file
  max_chars: 20000         # characters of documents' text one message brings to the model;
                           # a document cut there says so
"""


class DocumentSettings(Section):
    enabled: bool = True
    max_chars: int = Field(default=20_000, ge=100, le=1_000_000)


def document_reader(settings: Settings) -> DocumentReader:
    """The intake's reader of documents for these settings."""
    s = settings.section(DocumentSettings)
    return DocumentReader(max_chars=s.max_chars, enabled=s.enabled)


def build(settings: Settings) -> None:
    """The reader is the intake's (``document_reader``); nothing runs beside it."""
    settings.section(DocumentSettings)


SPEC = FeatureSpec("documents", build, settings=DocumentSettings, starter_config=STARTER_CONFIG)
