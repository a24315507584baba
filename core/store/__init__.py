"""The SessionDB: sessions, messages, the inbox and the outbox (SQLite WAL or PostgreSQL)."""
