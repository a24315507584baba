"""What a platform package gives the registry: one ``PlatformSpec``.

See ``adapters.registry`` for how specs are found, and ``docs/architecture.md`` for the
steps of adding a platform.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from adapters.base import Adapter
from adapters.probe import Probe
from core.media.store import MediaStore
from core.messages import InboundMessage
from core.prompt.builder import CallerContext
from core.record import record

S = TypeVar("S", bound=BaseModel)


class Section(BaseModel):
    """A settings section (a platform's, a feature's): unknown keys are errors, not
    silently ignored."""

    model_config = ConfigDict(extra="forbid")


def split_commas(value: object) -> object:
    """A list from the environment: ``"12345,@alice"`` -> ``["12345", "@alice"]``."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class ChatPolicySettings(Section):
    """Who may talk to the agent on a platform, and how fast: the part of a platform's
    section the core applies to every inbound message (``core.access``).

    Platforms whose people write in from outside (chat apps) derive their section from
    this one; a platform whose requests are authenticated another way (the webhook's
    secret) uses only ``owners`` and the rate limit.
    """

    # Direct messages from people not allow-listed: offered a pairing code (an owner
    # approves it), refused once, let through, or ignored.
    dm_policy: Literal["pairing", "allowlist", "open", "disabled"] = "pairing"
    # Group chats: only allow-listed (and paired) people, everyone, or nobody.
    group_policy: Literal["allowlist", "open", "disabled"] = "allowlist"
    # This platform's user ids of the people who own the bot: they approve pairings and
    # staged writes, and may use the commands that change the gateway.
    owners: list[str] = Field(default_factory=list)
    # Messages one chat may send a minute before the rest wait their turn (0: no limit).
    rate_limit_per_minute: int = Field(default=20, ge=0, le=10_000)

    @field_validator("owners", mode="before")
    @classmethod
    def _owner_list(cls, value: object) -> object:
        # Ids are text, but YAML reads ``[123456]`` as numbers.
        value = split_commas(value)
        if isinstance(value, list):
            return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value


@record
class PlatformServices:
    """What the gateway hands a platform's factory besides its settings."""

    # $CHATGATE_HOME; files a platform downloads go under cache/<platform>/.
    home: Path
    now: Callable[[], float]
    # Ends the process the way Ctrl-C would (the terminal at the end of its input).
    request_stop: Callable[[], None]

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def media(self) -> MediaStore:
        """The home's media store: the files replies carry (``OutboundFile.media``)."""
        return MediaStore(self.home / "media")


@record
class PlatformSpec(Generic[S]):
    """One platform, as the registry lists it. See the module docstring."""

    name: str
    settings: type[S]
    build: Callable[[S, PlatformServices], Adapter]
    # Whether ``chatgate run`` starts it with these settings (a token set, say).
    enabled: Callable[[S], bool]
    # Environment variable -> key of the section it sets (``{"X_TOKEN": "token"}``).
    env: Mapping[str, str] = field(default_factory=dict)
    prompt_hint: str = ""
    # Whether its adapter adds HTTP routes to the gateway's app (``Adapter.install``).
    mounts_routes: bool = False
    # The commented ``<name>:`` block ``chatgate init`` writes (empty: none).
    starter_config: str = ""
    # Settings that only make sense together; raises ``ConfigError`` naming the key.
    check: Callable[[S], None] | None = None
    # Why these settings are unsafe when the server listens on ``host``, a non-loopback
    # address (reachable by others): ``(dotted key, reason)``, or None if they are safe.
    exposed_problem: Callable[[S, str], tuple[str, str] | None] | None = None
    # Library loggers whose lower levels carry secrets or message text: logger name ->
    # the lowest level let through (``{"somelib": logging.INFO}``).
    quiet_loggers: Mapping[str, int] = field(default_factory=dict)
    # Library loggers whose DEBUG lines carry message text: ``chatgate run`` and
    # ``chatgate chat`` cap them at INFO unless ``logging.log_bodies`` is true.
    body_loggers: tuple[str, ...] = ()
    # Overrides ``sessions.group_sessions_per_user`` for this platform (None: follow it).
    group_sessions_per_user: Callable[[S], bool | None] | None = None
    # The system message and workspace a new session starts with (a webhook route's).
    caller_context: Callable[[S, InboundMessage], CallerContext] | None = None
    # Its requests are authenticated before they reach the core (the webhook's secret):
    # ``dm_policy`` and ``group_policy`` do not apply, only ``owners``.
    authenticated: bool = False
    # Only someone at the machine can use it (the terminal): everyone there is an owner.
    trusted_users: bool = False
    # For a platform ``chatgate chat`` talks through: the key its ``--chat-id`` sets.
    # Such a platform is never started by ``chatgate run``.
    interactive: str | None = None
    # ``chatgate doctor``: check these settings against the platform's API (the token),
    # within that many seconds; never raises for what it finds.
    doctor: Callable[[S, float], Awaitable[Probe]] | None = None

    def section(self, value: BaseModel) -> S:
        """``value`` as this platform's settings model (it was validated as one)."""
        if not isinstance(value, self.settings):
            raise TypeError(f"{self.name}: expected {self.settings.__name__}")
        return value

    def adapter(self, value: BaseModel, services: PlatformServices) -> Adapter:
        return self.build(self.section(value), services)

    async def probe(self, value: BaseModel, within: float) -> Probe | None:
        """The ``doctor`` check of these settings, or None when the platform has none."""
        if self.doctor is None:
            return None
        return await self.doctor(self.section(value), within)

    def is_enabled(self, value: BaseModel) -> bool:
        return self.interactive is None and self.enabled(self.section(value))
