"""The commented config.yaml that ``chatgate init`` writes."""

STARTER_CONFIG = """\
# chatgate configuration. Every setting is optional; the values shown are the defaults.
# Environment variables override this file (names in brackets).

server:
  host: 127.0.0.1          # [CHATGATE_HOST] address the HTTP server binds
  port: 8080               # [CHATGATE_PORT]
  log_level: info          # [CHATGATE_LOG_LEVEL] debug | info | warning | error

database:
  url: ""                  # [CHATGATE_DATABASE_URL] empty: SQLite at $CHATGATE_HOME/state.db;
                           # postgresql://user@host/db for several replicas
  busy_timeout_ms: 5000    # SQLite: how long a writer waits for the lock
  max_batch: 256           # most writes committed together in one transaction

model:
  provider: auto           # [CHATGATE_MODEL_PROVIDER] auto | offline | openai | anthropic
                           # auto: openai when OPENAI_BASE_URL or OPENAI_API_KEY is set,
                           # anthropic when ANTHROPIC_API_KEY is set, else offline
  name: ""                 # [CHATGATE_MODEL] e.g. gpt-4o-mini, llama3.1, claude-sonnet-4-5
  base_url: null           # [OPENAI_BASE_URL] any OpenAI-compatible server
  # api_key: ...           # [OPENAI_API_KEY] prefer the environment for secrets
  # anthropic_api_key: ... # [ANTHROPIC_API_KEY]
  timeout_seconds: 60      # per model call
  max_retries: 3           # on 429, 5xx and timeouts, honouring Retry-After
  retry_base_seconds: 0.5  # first backoff; doubles each retry, with jitter
  retry_max_seconds: 30
  stream: false            # stream tokens from the provider
  max_tokens: 4096

webhook:
  enabled: true
  # secret: ...            # [CHATGATE_WEBHOOK_SECRET] require HMAC-signed requests
  max_body_bytes: 1048576  # larger bodies get 413
  max_skew_seconds: 300    # signed requests older or newer than this get 401
  wait_timeout_seconds: 120  # a waiting request answers 202 after this long
  routes: {}               # per-route settings, e.g.
  #   support:
  #     secret: ...        # overrides the global secret for /webhook/support
  #     system_message: "You answer customer questions about ACME routers."
  #     workspace: /srv/acme  # project context for this route's sessions

sessions:
  group_sessions_per_user: true  # in group chats, each member gets their own session
  max_iterations: 20       # model calls per turn before the tool loop gives up
  idle_worker_seconds: 300 # a chat's worker exits after this long without messages

prompt:
  identity: ""             # replaces the built-in identity paragraph ($CHATGATE_HOME/SOUL.md wins)
  workspace: null          # a folder whose AGENTS.md / CLAUDE.md / ... every new session reads
  chat_workspaces: {}      # per chat, e.g. {"telegram:12345": ~/code/api}; wins over the above
  context_max_chars: 20000 # cap on each project context file and on the whole block

memory:
  enabled: true            # the `memory` tool and the MEMORY.md / USER.md prompt snapshot
  memory_chars: 2200       # budget of memories/MEMORY.md (the agent's notes)
  user_chars: 1375         # budget of memories/USER.md (the user profile)
  user_scope: profile      # profile: one USER.md; per_user: memories/users/<platform>-<user>.md
  write_approval: false    # stage each write in pending/memory/ until a person approves it
                           # (/memory approve <id|all>, chatgate memory approve)
  approvers: []            # who may approve/reject in chat, e.g. ["telegram:12345"];
                           # empty: anyone in the chat (fine for a single-operator bot)
  provider: ""             # an external memory provider beside the files, e.g. notes
  provider_options: {}     # notes: {max_results: 3, max_chars: 1500, scope: user}
  nudge_interval: 10       # user turns without a memory write before a memory review

search:
  enabled: true            # the session_search tool over past conversations
  allow_global: false      # let scope="all" search every chat (single-owner deployments only)
  owners: []               # who may use scope="all" anyway, e.g. ["telegram:12345"]

compaction:
  enabled: true            # summarise older turns into a child session when context runs out
  context_window: 128000   # the model's context window, in tokens
  threshold: 0.8           # compact when the next request would exceed this share of it
  keep_recent_messages: 10 # messages carried verbatim into the child session

skills:
  enabled: true            # skills_list / skill_view / skill_manage and the skills index
  disabled: []             # skill names the model never sees
  write_approval: false    # stage skill writes until approved (/skills pending)
  nudge_interval: 10       # tool iterations without skill_manage before a skill review

review:
  enabled: true            # background review after the reply (memory and skills)
  concurrency: 1           # reviews at once; they never hold a chat's lane
  max_iterations: 16       # model calls per review
  notify: true             # tell the chat what a review changed

curator:
  enabled: true            # idle-gated passes over the agent's own skills
  interval_hours: 168      # between passes (the first waits one interval)
  min_idle_hours: 2        # no inbound message for this long before a pass
  stale_after_days: 30     # unused this long: stale
  archive_after_days: 90   # unused this long: moved to skills/.archive/
  consolidate: false       # a model pass merging near-duplicate agent skills
  keep_backups: 5          # snapshots of skills/ kept before passes
  check_minutes: 60        # how often the gates are checked

cron:
  enabled: true            # the cronjob tool and scheduled runs
  tick_seconds: 30         # how often due jobs are looked for
  max_jobs_per_chat: 50
  concurrency: 2           # runs at once
  timezone: UTC            # for cron expressions and ISO times without an offset

telegram:                  # on when TELEGRAM_BOT_TOKEN is set
  mode: polling            # or webhook (needs webhook_url and CHATGATE_TELEGRAM_WEBHOOK_SECRET)
  webhook_url: ""          # https://your.host/telegram/updates
  webhook_path: updates
  allowed_users: []        # ids or @usernames (TELEGRAM_ALLOWED_USERS)
  allowed_chats: []        # chat ids (TELEGRAM_ALLOWED_CHATS)
  allow_all_users: false   # TELEGRAM_ALLOW_ALL_USERS=true admits everyone
  require_mention: true    # in groups: answer when mentioned, replied to or /cmd@bot
  handle_edits: false
  max_backlog_age: 3600    # seconds; older queued updates are skipped with one notice
  max_file_bytes: 20000000

discord:                   # on when DISCORD_BOT_TOKEN is set
  require_mention: true    # in guild channels: answer when mentioned or replied to
  group_sessions_per_user: null  # null follows sessions.group_sessions_per_user
  allowed_users: []        # user ids or usernames (DISCORD_ALLOWED_USERS)
  allowed_roles: []        # role ids (DISCORD_ALLOWED_ROLES)
  allowed_channels: []     # channel or category ids; everyone there (DISCORD_ALLOWED_CHANNELS)
  allow_all_users: false   # DISCORD_ALLOW_ALL_USERS=true admits everyone
  allow_bots: false        # let other bots' messages reach the agent
  message_content: true    # the privileged intent; without it only mentions and DMs have text
  catch_up_max_age: 3600   # seconds of history read after a restart or new session
  watchdog_silence_seconds: 300   # probe after this long without an event (0: off)
  slash_commands: true     # register /new, /status, ... as slash commands
  max_file_bytes: 20000000
"""
