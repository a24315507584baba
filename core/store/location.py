"""Where a SessionDB lives, said so that it can be shown: in errors and ``chatgate status``."""

from __future__ import annotations

from sqlalchemy.engine import make_url


def redacted_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***``."""
    return make_url(url).render_as_string(hide_password=True)


def error_reason(exc: BaseException) -> str:
    """One line saying why a database call failed: the driver's own error (the cause),
    without SQLAlchemy's wrapper noise."""
    root = exc.__cause__ or exc.__context__ or exc
    return f"{root.__class__.__name__}: {root}".splitlines()[0]
