"""One exception tree for chatgate.

ChatgateError                  every error chatgate raises on purpose
├── ConfigError                a setting is missing or invalid (``key``, ``reason``)
├── StoreError                 the SessionDB could not be read or written
│   ├── DatabaseHeld           another gateway holds the database's lease (``holder``)
│   └── StoreUnavailable       the store cannot write now (``kind``, ``path``); it may clear
│       ├── StoreFull          disk (or database quota) full
│       ├── StoreLocked        another connection holds the write lock
│       ├── StoreReadOnly      the database or its directory is read-only
│       └── StoreUnreachable   the database server or file cannot be reached (I/O error)
├── DeliveryError              a reply cannot be delivered now; the outbox retries it
│   ├── Undeliverable          a reply can never be delivered (blocked bot, chat gone)
│   └── DeliveryRateLimited    the platform asked for a pause (``retry_after`` seconds)
├── ModelError                 a model provider call failed (``provider``, ``status``)
│   ├── TransientModelError    worth retrying (``retry_after`` when the provider named one)
│   │   ├── RateLimited        429; ``retry_after`` seconds when the provider said
│   │   ├── ProviderUnavailable  5xx or the connection failed (``retry_after``)
│   │   └── ModelTimeout       no answer within the configured timeout
│   ├── ModelRequestError      the provider refused the request (4xx other than 429)
│   └── BudgetExceeded         a budget is used up: the call was not made
├── TurnTimedOut               a turn ran past its bound (``seconds``) and was given up
├── TurnSuspended              a turn waiting for an approval is set down; it resumes later
├── ToolArgumentError          a tool call's arguments cannot be used (nothing was done)
├── MemoryRefused              a memory write was refused; nothing was written (``index``)
│   ├── InvalidContent         empty content, or a line that is only the entry separator
│   ├── ThreatDetected         an entry would match a threat pattern (``pattern_id``)
│   ├── NoMatch                ``old_text`` is in no entry (``closest_entries``)
│   ├── AmbiguousMatch         ``old_text`` is in several different entries (``matches``)
│   ├── EntryChanged           a staged patch/remove's pinned entry is gone (``entry``)
│   └── OverLimit              the batch's result would not fit (``current``, ``projected``,
│                              ``limit``, ``excess``)
├── PendingNotFound            no pending memory write has this id (``pending_id``)
├── SkillRefused               a skill write broke a validation rule (``rule``)
├── SkillOperationFailed       a ``skill_manage`` batch failed and was rolled back (``index``)
├── CronError                  a request about cron jobs cannot be done (for a person)
├── ScheduleError              a cron schedule or ``cron.timezone`` cannot be used
├── TargetError                a cron delivery target cannot be used
├── PromptRefused              a cron run must not go ahead (``reason``, told to its target)
├── CuratorBusy                another curator pass is running on these skills
├── BackupError                a backup (of the home, or a skills snapshot) is missing,
│                              damaged or unsafe to restore
├── TransitionError            a manual skill archive or restore cannot be done
├── RequestRefused             an HTTP request is answered with an error (``status``,
│                              ``headers``, JSON ``body``)
├── SignatureError             a webhook request is not signed correctly (no secrets in it)
├── CatchUpIncomplete          a history catch-up pass left something unread or unstored;
│                              it should run again
└── McpUnavailable             an MCP server cannot be reached or used now (``server``)

Each adapter and model client translates its library's errors into these at its own
boundary, so the rest of the code catches narrow types and never inspects class names.
Messages are read by people (chat replies, tool results, CLI output): keep them stable.
"""

from __future__ import annotations

from typing import Any


class ChatgateError(Exception):
    """Base class of every error chatgate raises on purpose."""


class ConfigError(ChatgateError):
    """A setting is missing or invalid; ``key`` names it in dotted form."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class StoreError(ChatgateError):
    """The SessionDB could not be read or written."""


class DatabaseHeld(StoreError):
    """Another ``chatgate run`` holds this database's lease; ``holder`` says who, when known
    (``"pid 123 on host-a"``), else is empty."""

    def __init__(self, where: str, holder: str) -> None:
        by = f" ({holder})" if holder else ""
        super().__init__(
            f"another chatgate gateway{by} holds the SessionDB at {where}: one gateway per "
            "database until replicas are supported; stop it first or use another database"
        )
        self.where = where
        self.holder = holder


class StoreUnavailable(StoreError):
    """The store cannot write right now, for a reason outside chatgate that may clear
    (``core.store.faults`` tells these apart from bugs). ``kind`` names the cause,
    ``path`` the file or directory concerned when there is one."""

    kind = "unreachable"

    def __init__(self, detail: str, *, path: str | None = None) -> None:
        where = f" at {path}" if path else ""
        super().__init__(f"{self.describe()}{where}: {detail}")
        self.detail = detail
        self.path = path

    @classmethod
    def describe(cls) -> str:
        return cls.kind.replace("_", " ")


class StoreFull(StoreUnavailable):
    """The disk (or the database's quota) is full."""

    kind = "disk_full"


class StoreLocked(StoreUnavailable):
    """Another connection holds the database's write lock past the busy timeout."""

    kind = "locked"

    @classmethod
    def describe(cls) -> str:
        return "database locked"


class StoreReadOnly(StoreUnavailable):
    """The database (its file or directory, or the server) accepts no writes."""

    kind = "read_only"


class StoreUnreachable(StoreUnavailable):
    """The database server or file cannot be reached, or an I/O error stopped a write."""

    kind = "unreachable"


# -- delivery ------------------------------------------------------------------------


class DeliveryError(ChatgateError):
    """A reply could not be delivered now; it stays in the outbox and is retried."""


class Undeliverable(DeliveryError):
    """A reply can never be delivered (the person blocked the bot, the chat is gone)."""


class DeliveryRateLimited(DeliveryError):
    """The platform refused a send for now and named the pause (``retry_after`` seconds),
    which ``core.retry`` honours."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# -- models --------------------------------------------------------------------------


class ModelError(ChatgateError):
    """A model provider call failed."""

    def __init__(self, message: str, *, provider: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class TransientModelError(ModelError):
    """A failure worth retrying after a pause."""

    retry_after: float | None = None


class RateLimited(TransientModelError):
    """The provider answered 429; ``retry_after`` is its requested pause in seconds."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after


class ProviderUnavailable(TransientModelError):
    """The provider answered 5xx or could not be reached."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after


class ModelTimeout(TransientModelError):
    """The provider did not answer within the configured timeout."""


class ModelRequestError(ModelError):
    """The provider refused the request; retrying the same request will not help."""


class BudgetExceeded(ModelError):
    """A budget is used up; the model was not called. The message says which, and when."""


class TurnTimedOut(ChatgateError):
    """A turn (its model calls and tools) ran past ``seconds`` and was given up."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the turn did not finish within {seconds:g} s")
        self.seconds = seconds


class TurnSuspended(ChatgateError):
    """A turn paused for an approval is set down because the gateway stops: everything
    it needs to resume is stored, so nothing is committed and its item stays pending."""

    def __init__(self) -> None:
        super().__init__("the gateway is stopping; the paused turn resumes at the next start")


# -- tools ---------------------------------------------------------------------------


class ToolArgumentError(ChatgateError):
    """A tool call's arguments are malformed; nothing was done. The message says how
    to fix them (``memory``, ``session_search``)."""


# -- memory --------------------------------------------------------------------------


class MemoryRefused(ChatgateError):
    """A memory write was refused; the store on disk is unchanged.

    ``index`` is the position of the failing operation in its batch (``None`` for
    ``OverLimit``, which is a property of the whole batch).
    """

    index: int | None = None


class InvalidContent(MemoryRefused):
    """The content is empty, or contains a line that is only the entry separator."""


class ThreatDetected(MemoryRefused):
    """The content matches the threat pattern ``pattern_id``."""

    def __init__(self, pattern_id: str) -> None:
        super().__init__(f"content matches threat pattern {pattern_id!r}")
        self.pattern_id = pattern_id


class NoMatch(MemoryRefused):
    """``old_text`` is in no entry; ``closest_entries`` are the likeliest meant."""

    def __init__(self, old_text: str, closest_entries: tuple[str, ...]) -> None:
        super().__init__(f"no entry contains {old_text!r}")
        self.old_text = old_text
        self.closest_entries = closest_entries


class AmbiguousMatch(MemoryRefused):
    """``old_text`` is in several different entries (``matches``)."""

    def __init__(self, old_text: str, matches: tuple[str, ...]) -> None:
        super().__init__(f"{old_text!r} is in {len(matches)} different entries")
        self.old_text = old_text
        self.matches = matches


class EntryChanged(MemoryRefused):
    """The entry a staged patch or remove was pinned to is no longer present verbatim."""

    def __init__(self, entry: str) -> None:
        super().__init__(f"the entry it targets changed since it was staged: {entry!r}")
        self.entry = entry


class OverLimit(MemoryRefused):
    """The batch's final result would be ``projected`` chars, over ``limit``."""

    def __init__(self, current: int, projected: int, limit: int) -> None:
        super().__init__(f"{projected} chars would exceed the limit of {limit}")
        self.current = current
        self.projected = projected
        self.limit = limit

    @property
    def excess(self) -> int:
        return self.projected - self.limit


class PendingNotFound(ChatgateError):
    """No pending memory write has this id."""

    def __init__(self, pending_id: str) -> None:
        super().__init__(f"no pending memory write {pending_id!r}")
        self.pending_id = pending_id


# -- skills and the curator ----------------------------------------------------------


class SkillRefused(ChatgateError):
    """A skill write broke ``rule``; the message says how."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"{detail} [rule: {rule}]")
        self.rule = rule


class SkillOperationFailed(ChatgateError):
    """Operation ``index`` (``action``) of a batch failed (``reason``); all was restored."""

    def __init__(self, index: int, action: str, reason: str) -> None:
        super().__init__(f"operations[{index}] ({action}): {reason}")
        self.index = index
        self.action = action
        self.reason = reason


class CuratorBusy(ChatgateError):
    """Another curator pass (in this or another process) is running on these skills."""


class BackupError(ChatgateError):
    """A backup archive or skills snapshot is missing, damaged or unsafe to restore."""


class TransitionError(ChatgateError):
    """A manual archive or restore that cannot be done; the message says why."""


# -- cron ----------------------------------------------------------------------------


class CronError(ChatgateError):
    """A request about cron jobs that cannot be done; the message is for a person."""


class ScheduleError(ChatgateError):
    """A schedule that cannot be used; the message names the accepted forms."""


class TargetError(ChatgateError):
    """A delivery target that cannot be used; the message says which forms are accepted."""


class PromptRefused(ChatgateError):
    """A cron run must not go ahead; ``reason`` is said to the job's target."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# -- platforms -----------------------------------------------------------------------


class RequestRefused(ChatgateError):
    """A request to our routes is refused: ``status``, ``body`` (``{"error", **extra}``)."""

    def __init__(
        self, status: int, error: str, headers: dict[str, str] | None = None, **extra: Any
    ) -> None:
        super().__init__(error)
        self.status = status
        self.headers = headers
        self.body: dict[str, Any] = {"error": error, **extra}


class SignatureError(ChatgateError):
    """The request is not signed correctly; the message says why, without secrets."""


class CatchUpIncomplete(ChatgateError):
    """A catch-up pass over a platform's history left something unread; run it again."""


class McpUnavailable(ChatgateError):
    """An MCP server cannot be used now; the message says why, without env or headers."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"MCP server {server!r}: {reason}")
        self.server = server
        self.reason = reason
