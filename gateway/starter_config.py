"""The core's part of the commented config.yaml that ``chatgate init`` writes.

Features and platforms bring their own blocks (``starter_config`` in their specs);
``gateway.config.starter_config`` puts them together in section order.
"""

STARTER_HEADER = """\
# chatgate configuration. Every setting is optional; the values shown are the defaults.
# Environment variables override this file (names in brackets).

"""

CORE_STARTER = """\
server:
  host: 127.0.0.1          # [CHATGATE_HOST] address the HTTP server binds
  port: 8080               # [CHATGATE_PORT]
  log_level: info          # [CHATGATE_LOG_LEVEL] debug | info | warning | error
  shutdown_grace: 20       # on SIGTERM/SIGINT, seconds running turns may finish; the rest
                           # are cancelled and run again at the next start
  read_timeout_seconds: 30 # a client must send a request's head and body within this
  max_connections: 1000    # connections served at once; past it requests get 503

logging:
  log_bodies: false        # [CHATGATE_LOG_BODIES] true: library loggers that carry message
                           # text may log at debug level; secrets are redacted either way
  format: text             # [CHATGATE_LOG_FORMAT] text | json (one JSON object a line)

telemetry:
  otlp_endpoint: ""        # [OTEL_EXPORTER_OTLP_ENDPOINT] e.g. http://127.0.0.1:4318: send
                           # OpenTelemetry traces and GenAI metrics there (pip install
                           # 'chatgate[otel]'); empty: none

database:
  url: ""                  # [CHATGATE_DATABASE_URL] empty: SQLite at $CHATGATE_HOME/state.db;
                           # postgresql://user@host/db (one gateway per database)
  busy_timeout_ms: 5000    # SQLite: how long a writer waits for the lock
  max_batch: 256           # most writes committed together in one transaction
  lease_check_seconds: 5   # PostgreSQL: how often the gateway checks it still holds the database

model:
  provider: auto           # [CHATGATE_MODEL_PROVIDER] auto | offline | openai | anthropic
                           # auto: openai when OPENAI_BASE_URL or OPENAI_API_KEY is set,
                           # anthropic when ANTHROPIC_API_KEY is set, else offline
  name: ""                 # [CHATGATE_MODEL] e.g. gpt-4o-mini, llama3.1, claude-sonnet-4-5
  base_url: null           # [OPENAI_BASE_URL] any OpenAI-compatible server
  # api_key: ...           # [OPENAI_API_KEY] prefer the environment for secrets
  # anthropic_api_key: ... # [ANTHROPIC_API_KEY]
  timeout_seconds: 60      # per try of a model call
  call_timeout_seconds: 90 # one model call, every try and backoff pause included
  slow_notice_seconds: 20  # tell the chat once that the answer is coming (0: never)
  max_retries: 3           # on 429, 5xx and timeouts, honouring Retry-After
  retry_base_seconds: 0.5  # first backoff; doubles each retry, with jitter
  retry_max_seconds: 30
  stream: false            # stream tokens from the provider (a reply shown while it is
                           # generated streams whatever this says)
  max_tokens: 4096
  vision: true             # send images to the model; false: a line naming each instead

streaming:
  enabled: true            # show replies while they are generated where the platform's
                           # own `streaming` is auto; false turns it off everywhere

sessions:
  group_sessions_per_user: true  # in group chats, each member gets their own session
  max_iterations: 20       # model calls per turn before the tool loop gives up
  max_tool_calls_per_turn: 50  # tool calls a turn may run; then it stops with one line
  idle_worker_seconds: 300 # a chat's worker exits after this long without messages
                           # and its transcript leaves memory (read back when it speaks)
  cache_bytes: 268435456   # transcripts kept in memory, in bytes (256 MiB); the least
                           # recently used go first and are read back when needed
  turn_timeout_seconds: 300  # a turn's model calls and tools together; then one line

recovery:
  max_age: 3600            # [CHATGATE_RECOVERY__MAX_AGE] seconds a turn the store cannot
                           # commit (disk full, locked) keeps retrying; then one notice
  probe_max_seconds: 5     # [CHATGATE_RECOVERY__PROBE_MAX_SECONDS] longest pause between
                           # probe writes while the store cannot write

tools:                     # which tools each chat is offered (built-in and mcp_<server>_<tool>)
  allow: ["*"]             # [CHATGATE_TOOLS__ALLOW] fnmatch globs, e.g. ["memory", "skill*"]
  deny: []                 # [CHATGATE_TOOLS__DENY] e.g. ["cronjob", "mcp_shell_*"]; deny wins
  platforms: {}            # per platform, e.g. {"webhook": {"deny": ["send_file"]}}
  routes: {}               # per webhook route, e.g. {"public": {"allow": ["session_search"]}}
  chats: {}                # per chat, e.g. {"webhook:owner": {"allow": ["*"]}}
                           # the most specific level that sets allow decides the allow list;
                           # every level's deny applies. A session keeps the tools it began
                           # with; a change applies from the next session (/new)
  require_approval: []     # tool-name globs whose calls wait for an owner's yes in the chat,
                           # e.g. ["mcp_fs_write_*", "cronjob"]; tools an MCP server marks
                           # destructive always wait
  approvers: []            # who may approve besides each platform's owners:
                           # "platform:user_id" entries, e.g. ["webhook:alice"]
  approval_timeout_seconds: 300  # no decision in this long denies the call

pricing:                   # per million tokens, per provider and model; none built in
  openai: {}               # e.g. {"gpt-4o-mini": {input: 0.15, output: 0.60, cache_read: 0.075}}
  anthropic: {}            # e.g. {"claude-sonnet-4-5": {input: 3.0, output: 15.0,
                           #        cache_read: 0.30, cache_write: 3.75}}
  offline: {}              # a cache price left out is the input price

budgets:                   # a turn over a budget gets one line and no model call; null: no limit
  global:                  # every model call together, e.g. daily_tokens: 2000000
    {daily_tokens: null, monthly_tokens: null, daily_cost: null, monthly_cost: null}
  per_platform: {}         # e.g. {webhook: {daily_tokens: 500000}}
  per_chat:                # each chat, e.g. daily_tokens: 20000 and
                           #   overrides: {"webhook:ops": {daily_tokens: 100000}}
    {daily_tokens: null, monthly_tokens: null, daily_cost: null, monthly_cost: null,
     overrides: {}}
  per_person:              # each person, e.g. monthly_cost: 5.0 (overrides by platform:user_id)
    {daily_tokens: null, monthly_tokens: null, daily_cost: null, monthly_cost: null,
     overrides: {}}
  background:              # review, curator and cron: skipped when over, never charged to a chat
    {daily_tokens: null, monthly_tokens: null, daily_cost: null, monthly_cost: null}
  timezone: UTC            # where budget days and months start (an IANA name)
                           # keys: daily_tokens, monthly_tokens (input + output), daily_cost,
                           # monthly_cost (from pricing)

prompt:
  identity: ""             # replaces the built-in identity paragraph ($CHATGATE_HOME/SOUL.md wins)
  workspace: null          # a folder whose AGENTS.md / CLAUDE.md / ... every new session reads
  chat_workspaces: {}      # per chat, e.g. {"webhook:alice": ~/code/api}; wins over the above
  context_max_chars: 20000 # cap on each project context file and on the whole block

"""
