"""SessionDB tables as SQLAlchemy Core metadata.

The Alembic migrations in ``migrations/versions`` create exactly these tables; this
module is what the store code writes with. Timestamps are unix seconds (REAL), which
are portable, cheap to compare and cheap to write.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

metadata = MetaData()

# SQLite needs INTEGER PRIMARY KEY for rowid autoincrement; Postgres gets BIGINT.
IdType = BigInteger().with_variant(Integer(), "sqlite")

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("session_key", String(512), nullable=False),
    Column("platform", String(32), nullable=False),
    Column("chat_id", String(255), nullable=False),
    Column("thread_id", String(255)),
    Column("user_id", String(255)),
    Column("route", String(255)),
    Column("parent_session_id", String(64), ForeignKey("sessions.id")),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("end_reason", String(32)),
    Column("last_active_at", Float, nullable=False),
    Column("provider", String(32), nullable=False),
    Column("model", String(255), nullable=False),
    # The frozen system prompt, stored once in ``prompts`` (``core.store.prompts``) with
    # the session's own id cut out at ``prompt_id_at``; NULL: blanked (a forgetting).
    Column("prompt_hash", String(32)),
    Column("prompt_id_at", Integer),
    Column("prompt_tiers", JSON),
    # The tool specs the session offers, as JSON in ``prompts``, byte for byte what every
    # turn sends (``core.session_tools``); NULL for a session opened before they were frozen.
    Column("tools_hash", String(32)),
    Column("title", String(255)),
    Column("message_count", Integer, nullable=False, server_default="0"),
    Column("turn_count", Integer, nullable=False, server_default="0"),
    Column("tool_call_count", Integer, nullable=False, server_default="0"),
    Column("input_tokens", BigInteger, nullable=False, server_default="0"),
    Column("output_tokens", BigInteger, nullable=False, server_default="0"),
    # Parts of input_tokens the provider read from / wrote to its prompt cache.
    Column("cache_read_tokens", BigInteger, nullable=False, server_default="0"),
    Column("cache_write_tokens", BigInteger, nullable=False, server_default="0"),
    # One active session per key: enforced by the database, so replicas cannot race.
    Index(
        "ux_sessions_active_key",
        "session_key",
        unique=True,
        sqlite_where=text("ended_at IS NULL"),
        postgresql_where=text("ended_at IS NULL"),
    ),
    Index("ix_sessions_key_started", "session_key", "started_at"),
    Index("ix_sessions_parent", "parent_session_id"),
)

# Prompts and tool lists, each stored once however many sessions use it: thousands of
# chats opened on the same day with the same memory share one row.
prompts = Table(
    "prompts",
    metadata,
    Column("hash", String(32), primary_key=True),
    Column("body", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

messages = Table(
    "messages",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("session_id", String(64), ForeignKey("sessions.id"), nullable=False),
    Column("role", String(16), nullable=False),
    Column("content", Text),
    # The exact bytes sent to the model when they differ from ``content``.
    Column("api_content", Text),
    Column("tool_calls", JSON),
    Column("tool_call_id", String(255)),
    Column("tool_name", String(255)),
    Column("platform_message_id", String(255)),
    Column("created_at", Float, nullable=False),
    Column("finish_reason", String(32)),
    Column("input_tokens", Integer),
    Column("output_tokens", Integer),
    Column("cache_read_tokens", Integer),
    Column("cache_write_tokens", Integer),
    # Files that came with the message, ``[MediaRef.to_json()]``: a user message's images
    # (sent to the model with it), a tool result's files (sent to the chat).
    Column("media", JSON),
    # Who wrote a user message (``platform`` is the session's); NULL for other roles and
    # for user messages of no one person (a compaction summary, a scheduled prompt).
    Column("user_id", String(255)),
    Index("ix_messages_session_id", "session_id", "id"),
    Index("ix_messages_user", "user_id"),
)

inbox = Table(
    "inbox",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("platform", String(32), nullable=False),
    Column("dedup_key", String(512), nullable=False),
    Column("platform_message_id", String(255), nullable=False),
    Column("route", String(255)),
    Column("chat_id", String(255), nullable=False),
    Column("thread_id", String(255)),
    Column("user_id", String(255), nullable=False),
    Column("user_name", String(255)),
    Column("text", Text, nullable=False),
    Column("payload", JSON),
    Column("session_key", String(512), nullable=False),
    # pending -> done | failed | cancelled
    Column("status", String(16), nullable=False),
    Column("received_at", Float, nullable=False),
    Column("processed_at", Float),
    Column("session_id", String(64)),
    Column("error", Text),
    # Processes that started this message's turn; a pending row with 3 was in flight
    # during 3 crashes and is set aside (``core.crash_guard``).
    Column("attempts", Integer, nullable=False, server_default="0"),
    # The platform message showing a streamed preview of this message's reply.
    Column("preview_id", String(255)),
    UniqueConstraint("platform", "dedup_key", name="ux_inbox_dedup"),
    Index("ix_inbox_status", "status", "id"),
    Index("ix_inbox_platform_received", "platform", "received_at"),
    # SQLite: an id is never handed out again after its row is deleted (0024).
    sqlite_autoincrement=True,
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("inbox_id", IdType, ForeignKey("inbox.id")),
    Column("session_id", String(64)),
    Column("platform", String(32), nullable=False),
    Column("route", String(255)),
    Column("chat_id", String(255), nullable=False),
    Column("thread_id", String(255)),
    Column("reply_to", String(255)),
    # NULL when the reply is its turn's assistant message word for word: the text is
    # read from ``message_id``'s row (``core.store.outbox``), not stored twice.
    Column("text", Text),
    # pending -> delivered | failed
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    # Parts of a long reply already delivered: a retry resumes after them.
    Column("parts_sent", Integer, nullable=False, server_default="0"),
    Column("created_at", Float, nullable=False),
    Column("delivered_at", Float),
    Column("platform_message_id", String(255)),
    Column("error", Text),
    # Buttons under the reply, ``[{"label", "command"}]`` (an approval's choices).
    Column("actions", JSON),
    # The streamed preview this reply's first part replaces (``core.streaming``).
    Column("preview_id", String(255)),
    # Rows in ``outbox_files`` (0: none to read).
    Column("file_count", Integer, nullable=False, server_default="0"),
    # The assistant message whose content is this reply's text (``text`` NULL). No
    # foreign key: forgetting and retention delete messages, and the text goes with them.
    Column("message_id", IdType),
    Index("ix_outbox_chat", "platform", "chat_id", "id"),
    Index("ix_outbox_inbox", "inbox_id"),
    Index("ix_outbox_status", "status", "id"),
    # SQLite: an id is never handed out again after its row is deleted (0024).
    sqlite_autoincrement=True,
)

# Files sent with a reply, in order; the bytes are in the home's media store by hash.
outbox_files = Table(
    "outbox_files",
    metadata,
    # Random and unguessable: the webhook serves the file under this id.
    Column("id", String(64), primary_key=True),
    Column("outbox_id", IdType, ForeignKey("outbox.id"), nullable=False),
    Column("position", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("mime", String(255), nullable=False),
    # file | voice | image
    Column("kind", String(16), nullable=False),
    Column("name", String(255), nullable=False),
    Column("size", BigInteger, nullable=False),
    # The line shown with the file (``send_file``'s caption); NULL: none.
    Column("caption", Text),
    Index("ix_outbox_files_outbox", "outbox_id", "position"),
)

reviews = Table(
    "reviews",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("session_id", String(64), ForeignKey("sessions.id"), nullable=False),
    Column("session_key", String(512), nullable=False),
    Column("kinds", String(32), nullable=False),
    # scheduled -> running -> done | failed
    Column("status", String(16), nullable=False),
    # The session's message count when the review was scheduled: the cadence counts from here.
    Column("at_message_count", Integer, nullable=False),
    Column("scheduled_at", Float, nullable=False),
    Column("started_at", Float),
    Column("finished_at", Float),
    Column("iterations", Integer, nullable=False, server_default="0"),
    Column("changes", JSON),
    Column("transcript", JSON),
    # The transcript's first message, a long instruction every review of a kind shares,
    # stored once in ``prompts`` (``core.store.reviews``); NULL: the JSON holds it all.
    Column("instruction_hash", String(32)),
    Column("error", Text),
    Column("input_tokens", BigInteger, nullable=False, server_default="0"),
    Column("output_tokens", BigInteger, nullable=False, server_default="0"),
    Column("cache_read_tokens", BigInteger, nullable=False, server_default="0"),
    Index("ix_reviews_session", "session_id", "id"),
    Index("ix_reviews_status", "status", "id"),
)

cron_jobs = Table(
    "cron_jobs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(255), nullable=False),
    Column("prompt", Text, nullable=False),
    Column("schedule", String(255), nullable=False),
    Column("skills", JSON),
    # "origin", "platform:chat_id[:thread_id]" or "file:<path>"
    Column("deliver", String(1024), nullable=False),
    Column("origin_platform", String(32)),
    Column("origin_route", String(255)),
    Column("origin_chat_id", String(255)),
    Column("origin_thread_id", String(255)),
    Column("origin_user_id", String(255)),
    Column("created_by", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("paused", Boolean, nullable=False, server_default=text("false")),
    # NULL once a one-shot job has run.
    Column("next_run_at", Float),
    Column("last_run_at", Float),
    Column("last_status", String(16)),
    Column("last_error", Text),
    Column("run_count", Integer, nullable=False, server_default="0"),
    Index("ix_cron_jobs_next_run", "next_run_at"),
)

cron_runs = Table(
    "cron_runs",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("job_id", String(32), nullable=False),
    Column("scheduled_for", Float),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float),
    # running -> ok | silent | failed | refused | skipped
    Column("status", String(16), nullable=False),
    Column("session_id", String(64)),
    Column("output", Text),
    Column("delivered_to", String(1024)),
    Column("error", Text),
    Index("ix_cron_runs_job", "job_id", "id"),
)

curator_runs = Table(
    "curator_runs",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float),
    Column("trigger", String(16), nullable=False),
    Column("dry_run", Boolean, nullable=False, server_default=text("false")),
    Column("consolidate", Boolean, nullable=False, server_default=text("false")),
    # running -> done | failed
    Column("status", String(16), nullable=False),
    Column("backup_id", String(64)),
    Column("counts", JSON),
    Column("report", Text),
    Column("error", Text),
)

scheduler_state = Table(
    "scheduler_state",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
)

# People an owner let in through pairing; they pass the platform's access policy.
paired_people = Table(
    "paired_people",
    metadata,
    Column("platform", String(32), primary_key=True),
    Column("user_id", String(255), primary_key=True),
    Column("user_name", String(255)),
    Column("approved_at", Float, nullable=False),
    Column("approved_by", String(255), nullable=False),
)

# Pairing codes waiting for an owner; only a hash of each code is kept.
pairing_requests = Table(
    "pairing_requests",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("platform", String(32), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("user_name", String(255)),
    Column("chat_id", String(255), nullable=False),
    Column("code_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
    Index("ix_pairing_requests_code", "platform", "code_hash"),
    Index("ix_pairing_requests_user", "platform", "user_id"),
)

# Wrong codes given to approve a pairing: enough in an hour lock approval.
pairing_failures = Table(
    "pairing_failures",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("platform", String(32), nullable=False),
    Column("at", Float, nullable=False),
    Index("ix_pairing_failures_platform", "platform", "at"),
)

# One row the store health probe rewrites to learn whether the store writes again.
store_probe = Table(
    "store_probe",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("probed_at", Float, nullable=False),
)

# Tool calls waiting for (or done with) a person's decision. A pending row holds the
# paused turn's work so far (``turn_messages``), so the turn resumes after a restart.
approvals = Table(
    "approvals",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("inbox_id", IdType, ForeignKey("inbox.id"), nullable=False),
    Column("session_id", String(64), nullable=False),
    Column("session_key", String(512), nullable=False),
    Column("platform", String(32), nullable=False),
    Column("route", String(255)),
    Column("chat_id", String(255), nullable=False),
    Column("thread_id", String(255)),
    Column("tool_call_id", String(255), nullable=False),
    Column("tool_name", String(255), nullable=False),
    Column("arguments", Text, nullable=False),
    Column("turn_messages", JSON, nullable=False),
    # pending -> approved | denied | expired
    Column("status", String(16), nullable=False),
    # once | session (approved only)
    Column("scope", String(16)),
    Column("decided_by", String(255)),
    Column("created_at", Float, nullable=False),
    Column("decided_at", Float),
    Column("prompt_outbox_id", IdType),
    Index("ix_approvals_inbox", "inbox_id", "id"),
    Index("ix_approvals_chat", "platform", "chat_id", "status", "id"),
    Index("ix_approvals_status", "status", "id"),
    # SQLite: an id is never handed out again after its row is deleted (0024).
    sqlite_autoincrement=True,
)

# Tools approved "for this session": their later calls in the session are not asked.
approval_grants = Table(
    "approval_grants",
    metadata,
    Column("session_id", String(64), primary_key=True),
    Column("tool_name", String(255), primary_key=True),
    Column("granted_by", String(255), nullable=False),
    Column("granted_at", Float, nullable=False),
)
