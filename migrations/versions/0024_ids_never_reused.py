"""SQLite: ``inbox``, ``outbox`` and ``approvals`` ids are never handed out twice.

A SQLite rowid table gives a new row the largest id in use plus one, so when the row
holding the largest id is deleted, its id goes to the next row. Forgetting a person and
session retention delete rows of these tables, and their ids are promises made outside
the database:

- a webhook client asks for a chat's replies ``after`` the last outbox id it saw, and a
  reply that took a deleted reply's id was never shown to it;
- an inbox id is a turn's ``turn_id`` in the audit ledger, which would join two turns;
- an approval id is in the chat's ``/approve <id>`` buttons, which would act on a later
  approval than the one they were sent with.

``AUTOINCREMENT`` keeps the largest id ever used (``sqlite_sequence``). Adding it means
rebuilding the three tables. With foreign keys on (the PRAGMA cannot change inside the
migration's transaction) a table cannot be dropped while rows point at it, so the rows
of ``outbox``, ``approvals`` and ``outbox_files`` wait in temporary tables while
``inbox`` and then the others are rebuilt, and come back with the same ids. The way down
rebuilds them without it. PostgreSQL's sequences never reuse an id: nothing changes
there.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels = None
depends_on = None

# Children before their parents: the order rows leave in, reversed to come back.
_PARKED = ("outbox_files", "approvals", "outbox")
# Parents before their children.
_REBUILT = ("inbox", "outbox", "approvals")


def _rebuild(autoincrement: bool) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    columns = {
        table: ", ".join(
            f'"{row[1]}"' for row in bind.exec_driver_sql(f'PRAGMA table_info("{table}")')
        )
        for table in _PARKED
    }
    for table in _PARKED:
        bind.exec_driver_sql(f"CREATE TEMP TABLE parked_{table} AS SELECT * FROM {table}")
        bind.exec_driver_sql(f"DELETE FROM {table}")
    for table in _REBUILT:
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass
    for table in reversed(_PARKED):
        names = columns[table]
        bind.exec_driver_sql(
            f"INSERT INTO {table} ({names}) SELECT {names} FROM parked_{table} ORDER BY rowid"
        )
        bind.exec_driver_sql(f"DROP TABLE parked_{table}")


def upgrade() -> None:
    _rebuild(autoincrement=True)


def downgrade() -> None:
    _rebuild(autoincrement=False)
