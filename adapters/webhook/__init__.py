"""The HTTP webhook: any system that can POST JSON talks to the agent (``adapter``).

On by default; ``webhook.enabled: false`` turns it off. Each route may carry its own
secret, system message and workspace.
"""

from __future__ import annotations

from adapters.base import Adapter
from adapters.platform import PlatformServices, PlatformSpec
from adapters.webhook.settings import WebhookSettings
from core.messages import InboundMessage
from core.prompt.builder import CallerContext

PROMPT_HINT = (
    "Replies go back over an HTTP webhook as plain text; the receiving system may not "
    "render markdown, so keep formatting simple."
)

STARTER_CONFIG = """\
webhook:
  enabled: true
  # secret: ...            # [CHATGATE_WEBHOOK_SECRET] require HMAC-signed requests
  max_body_bytes: 8388608  # larger bodies get 413 (base64 images ride in the body)
  max_skew_seconds: 300    # signed requests older or newer than this get 401
  wait_timeout_seconds: 120  # a waiting request answers 202 after this long
  legacy_signatures: false # also accept the old timestamp.body signature
  replay_cache_size: 100000  # signatures remembered for replay refusal; full: 503
  allow_unsigned: false    # start on a non-loopback host without a secret
  sessions_per_user: false # each user of a chat gets their own session
  streaming: auto          # Accept: text/event-stream gets deltas as generated (off: done only)
  fetch_private_urls: false  # fetch image urls on private, loopback or link-local addresses
  owners: []               # user ids of the bot's owners (approve writes in chat)
  dm_policy: pairing       # not applied: the secret authenticates webhook requests
  group_policy: allowlist  # not applied, as dm_policy
  rate_limit_per_minute: 0  # messages a chat may send a minute, the rest wait (0: no limit)
  routes: {}               # per-route settings, e.g.
  #   support:
  #     secret: ...        # overrides the global secret for /webhook/support
  #     system_message: null  # e.g. "You answer customer questions about ACME routers."
  #     workspace: null    # e.g. /srv/acme: project context for this route's sessions
"""


def build(hook: WebhookSettings, services: PlatformServices) -> Adapter:
    # Imported here: settings are read by every CLI command, the HTTP adapter serves one.
    from adapters.webhook.adapter import WebhookAdapter, WebhookOptions

    options = WebhookOptions(
        secret=hook.secret.get_secret_value() if hook.secret else None,
        route_secrets={
            name: route.secret.get_secret_value()
            for name, route in hook.routes.items()
            if route.secret is not None
        },
        max_body_bytes=hook.max_body_bytes,
        max_skew_seconds=hook.max_skew_seconds,
        wait_timeout_seconds=hook.wait_timeout_seconds,
        legacy_signatures=hook.legacy_signatures,
        replay_cache_size=hook.replay_cache_size,
        sessions_per_user=hook.sessions_per_user,
        media=services.media,
        streaming=hook.streaming == "auto",
        cache_dir=services.cache_dir,
        fetch_private_urls=hook.fetch_private_urls,
    )
    return WebhookAdapter(options, now=services.now)


def exposed_problem(hook: WebhookSettings, host: str) -> tuple[str, str] | None:
    """Unsigned routes on an address others can reach: anyone there talks to the model
    and reads every chat's replies."""
    if hook.secret is not None or hook.allow_unsigned:
        return None
    return (
        "webhook.secret",
        f"required when listening on {host} (not loopback): set CHATGATE_WEBHOOK_SECRET, "
        "or webhook.allow_unsigned: true to serve unsigned requests anyway "
        "(webhook.enabled: false turns the webhook off)",
    )


def caller_context(hook: WebhookSettings, msg: InboundMessage) -> CallerContext:
    """A route's system message and workspace, for new sessions of its chats."""
    route = hook.routes.get(msg.route or "")
    if route is None:
        return CallerContext()
    return CallerContext(system_message=route.system_message, workspace=route.workspace)


SPEC = PlatformSpec(
    name="webhook",
    settings=WebhookSettings,
    build=build,
    enabled=lambda hook: hook.enabled,
    env={"CHATGATE_WEBHOOK_SECRET": "secret"},
    prompt_hint=PROMPT_HINT,
    mounts_routes=True,
    starter_config=STARTER_CONFIG,
    caller_context=caller_context,
    exposed_problem=exposed_problem,
    # A webhook chat is a group only with sessions_per_user, and then one per user.
    group_sessions_per_user=lambda hook: hook.sessions_per_user,
    authenticated=True,
)
