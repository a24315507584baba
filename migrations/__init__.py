"""Alembic environment and versions for the SessionDB schema."""
