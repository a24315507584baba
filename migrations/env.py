"""Alembic environment: runs on the connection ``migrations.runner`` hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from core.store import audit_schema, usage_schema  # noqa: F401  (their tables join the metadata)
from core.store.schema import metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        # ``migrations.runner.upgrade``'s progress callback, per applied revision.
        on_version_apply=context.config.attributes.get("on_version_apply", ()),
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `chatgate db upgrade`, not bare alembic")
_run(connection)
