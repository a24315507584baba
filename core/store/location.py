"""Where a SessionDB lives, said so that it can be shown: in errors and ``chatgate status``."""

from __future__ import annotations

from sqlalchemy.engine import make_url


def redacted_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***``."""
    return make_url(url).render_as_string(hide_password=True)
