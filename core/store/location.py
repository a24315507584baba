"""Where a SessionDB lives, said so that it can be shown: in errors and ``chatgate status``."""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError


def redacted_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***``."""
    return make_url(url).render_as_string(hide_password=True)


def masked_url(value: str) -> str:
    """``value`` with its password hidden if it is a URL carrying one, else unchanged."""
    if "://" not in value or "@" not in value:
        return value
    try:
        return redacted_url(value)
    except ArgumentError:
        return value


def error_reason(exc: BaseException) -> str:
    """One line saying why a database call failed: the driver's own error (the cause),
    without SQLAlchemy's wrapper noise."""
    root = exc.__cause__ or exc.__context__ or exc
    return f"{root.__class__.__name__}: {root}".splitlines()[0]
