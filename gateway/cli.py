"""The ``chatgate`` command line."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from gateway.backup_cli import register as register_backup
from gateway.db_cli import register as register_db
from gateway.doctor_cli import register as register_doctor
from gateway.lazy_group import LazyCommand, lazy_root

if TYPE_CHECKING:
    from fastapi import FastAPI

    from core.store.lease import DatabaseLease
    from gateway.config import Settings

# Each admin command lives in its own module, imported only when it runs: importing
# the settings and the store costs seconds that ``--help`` and ``init`` must not pay.
LAZY = {
    "sessions": LazyCommand("gateway.sessions_cli", "sessions_app", "Inspect and search sessions."),
    "memory": LazyCommand("gateway.memory_cli", "memory_app", "Memory stores and staged writes."),
    "skills": LazyCommand(
        "gateway.skills_cli", "skills_app", "Installed skills, their visibility and staged writes."
    ),
    "curator": LazyCommand(
        "gateway.curator_cli", "curator_app", "The skills curator: stales and archives skills."
    ),
    "cron": LazyCommand("gateway.cron_cli", "cron_app", "Scheduled prompts and their targets."),
    "pairing": LazyCommand(
        "gateway.pairing_cli", "pairing_app", "Pairing: let people the policy does not know in."
    ),
    "people": LazyCommand(
        "gateway.people_cli", "people_app", "One person's data: show, export, forget."
    ),
    "audit": LazyCommand(
        "gateway.audit_cli", "audit_app", "The audit ledger: list, summary, export."
    ),
    "mcp": LazyCommand("gateway.mcp_cli", "mcp_app", "MCP servers: their state and their tools."),
    "config": LazyCommand(
        "gateway.config_cli", "config_app", "The configuration this profile runs with."
    ),
    "usage": LazyCommand(
        "gateway.usage_cli",
        "usage_app",
        "Tokens and cost of model calls, by chat, person, platform or kind.",
        group=False,
    ),
    "status": LazyCommand(
        "gateway.status_cli",
        "status_app",
        "Show the model, the SessionDB and the scheduler's jobs with their next run times.",
        group=False,
    ),
}

app = typer.Typer(
    cls=lazy_root(LAZY),
    no_args_is_help=True,
    add_completion=False,
    help="chatgate: one agent, every chat.",
)
db_app = typer.Typer(no_args_is_help=True, help="SessionDB schema.")
app.add_typer(db_app, name="db")
register_doctor(app)
register_backup(app)
register_db(db_app)
console = Console()
err = Console(stderr=True)


def _settings(overrides: dict[str, str] | None = None, config_file: Path | None = None) -> Settings:
    from gateway.config import load_settings

    return load_settings(overrides=overrides, config_file=config_file)


def _configure_logging(settings: Settings, *, json_lines: bool = False) -> None:
    from gateway import log_format, log_privacy, platforms

    logging.basicConfig(level=settings.server.log_level.upper())
    log_format.install("json" if json_lines else settings.logging.format)
    # httpx logs every request URL at INFO, and a URL may carry a token; APScheduler
    # logs each periodic check twice at INFO.
    for noisy in ("httpx", "httpcore", "apscheduler"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.root.level))
    platforms.quiet_loggers(settings)  # what each platform's library must not log
    log_privacy.install(settings)  # no message text (unless log_bodies), no secret


@app.command()
def init(force: Annotated[bool, typer.Option(help="overwrite an existing config")] = False) -> None:
    """Write a commented starter config.yaml into $CHATGATE_HOME."""
    from gateway.config import default_home, starter_config

    home = default_home()
    path = home / "config.yaml"
    if path.exists() and not force:
        err.print(f"{path} already exists (use --force to overwrite)")
        raise typer.Exit(1)
    home.mkdir(parents=True, exist_ok=True)
    path.write_text(starter_config(), encoding="utf-8")
    console.print(f"wrote {path}")


Host = Annotated[
    str | None, typer.Option(help="listen on this address (server.host)", show_default=False)
]
Port = Annotated[
    int | None,
    typer.Option(min=1, max=65535, help="listen on this port (server.port)", show_default=False),
]
ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        exists=True,
        dir_okay=False,
        help="read this file instead of $CHATGATE_HOME/config.yaml",
        show_default=False,
    ),
]


@app.command()
def run(
    host: Host = None,
    port: Port = None,
    config: ConfigFile = None,
    log_json: Annotated[
        bool, typer.Option("--log-json", help="log one JSON object a line (logging.format)")
    ] = False,
) -> None:
    """Start every enabled adapter and the HTTP server.

    SIGTERM or SIGINT stops it gracefully (exit 0). Refused, in one line, when another
    gateway holds the database. --host and --port win over config.yaml and the environment.
    """
    from gateway import heap

    heap.pause()  # until the gateway is up (gateway.heap): start-up makes no garbage
    from gateway.app import create_app
    from gateway.http_server import run_on_server_loop
    from gateway.runtime import database_lease

    overrides = {"server.host": host} if host else {}
    if port is not None:
        overrides["server.port"] = str(port)
    settings = _settings(overrides, config)
    lease = database_lease(settings)
    app_ = create_app(settings, lease=lease)  # configuration errors first, before any log line
    _configure_logging(settings, json_lines=log_json)
    if not run_on_server_loop(settings.server, _serve_owning(app_, settings, lease)):
        raise typer.Exit(1)


async def _serve_owning(app_: FastAPI, settings: Settings, lease: DatabaseLease) -> bool:
    """Hold the database's lease, migrate, serve; False if the server did not start or
    the lease was lost. The lease and the schema fail with one line (``StoreError``), not
    a lifespan traceback."""
    from gateway.app import drain
    from gateway.http_server import serve
    from gateway.runtime import migrate

    async with lease:
        await migrate(settings)
        served = await serve(app_, settings.server, drain=lambda: drain(app_), stop=lease.lost)
        return served and not lease.lost.is_set()


@app.command()
def chat(
    chat_id: Annotated[str, typer.Option(help="which terminal conversation to continue")] = "local",
) -> None:
    """Talk to the agent in this terminal (same core, same SessionDB)."""
    from gateway import log_privacy, platforms
    from gateway.runtime import run_interactive

    spec = platforms.interactive(_settings())
    settings = _settings({f"{spec.name}.{spec.interactive}": chat_id})
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    log_privacy.install(settings)
    model = settings.model_config_for_core()
    console.print(
        f"chatgate chat: model {model.model} ({model.provider}). "
        "Type /help for commands, Ctrl-D to leave.",
        style="dim",
        markup=False,
    )
    asyncio.run(run_interactive(settings, spec))


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply pending migrations."""
    from gateway.db_cli import upgrade_with_progress

    settings = _settings()
    timeout = settings.database.busy_timeout_ms
    asyncio.run(upgrade_with_progress(settings.database_url, busy_timeout_ms=timeout))
    console.print("database is up to date")


@db_app.command("current")
def db_current() -> None:
    """Show the schema revision of the database and of this build."""
    from core.store.schema_version import code_revision, schema_revision

    current = asyncio.run(schema_revision(_settings().database_url))
    console.print(f"database: {current or 'empty'}  code: {code_revision()}")


def main() -> None:
    """Entry point. Usage errors print the usage and exit 2, as do configuration errors
    (in one line); expected failures print one line and exit 1; never a traceback."""
    from core.errors import ChatgateError, ConfigError

    try:
        exit_code = app(standalone_mode=False)
    except ConfigError as exc:
        _fail(f"invalid configuration: {exc}", 2)
    except ChatgateError as exc:
        _fail(str(exc), 1)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:
        # typer >= 0.22 vendors click: its usage errors derive from TyperException,
        # not from the installed click's ClickException.
        _show(exc)
    except OSError as exc:  # e.g. a home that is not writable
        _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), 1)
    # Without standalone mode click returns a ``typer.Exit``'s code instead of raising
    # it; a refusal such as ``init`` without --force must still exit non-zero.
    if isinstance(exit_code, int) and exit_code:
        sys.exit(exit_code)


def _fail(line: str, code: int) -> None:
    print(f"chatgate: {line}", file=sys.stderr)
    sys.exit(code)


def _show(exc: typer.TyperException) -> None:
    show = getattr(exc, "show", None)  # click's exceptions print usage and error
    if callable(show):
        show()
    else:
        print(f"Error: {exc.format_message()}", file=sys.stderr)
    if exc.exit_code == 2 and getattr(exc, "ctx", None) is None:
        # Some parse errors carry no context, hence no usage line of their own.
        print("Try 'chatgate --help' for help.", file=sys.stderr)
    sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
