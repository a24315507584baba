"""The ``chatgate`` command line."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from core.errors import ChatgateError, ConfigError
from gateway import log_format, log_privacy, platforms
from gateway.backup_cli import register as register_backup
from gateway.config import Settings, default_home, load_settings, starter_config
from gateway.config_cli import config_app
from gateway.cron_cli import cron_app
from gateway.curator_cli import curator_app
from gateway.db_cli import register as register_db
from gateway.doctor_cli import register as register_doctor
from gateway.memory_cli import memory_app
from gateway.pairing_cli import pairing_app
from gateway.sessions_cli import sessions_app
from gateway.skills_cli import skills_app
from gateway.status_cli import register as register_status

if TYPE_CHECKING:
    from fastapi import FastAPI

    from core.store.lease import DatabaseLease

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="chatgate: one agent, every chat."
)
db_app = typer.Typer(no_args_is_help=True, help="SessionDB schema.")
app.add_typer(db_app, name="db")
app.add_typer(sessions_app, name="sessions")
app.add_typer(memory_app, name="memory")
app.add_typer(skills_app, name="skills")
app.add_typer(curator_app, name="curator")
app.add_typer(cron_app, name="cron")
app.add_typer(pairing_app, name="pairing")
app.add_typer(config_app, name="config")
register_status(app)
register_doctor(app)
register_backup(app)
register_db(db_app)
console = Console()
err = Console(stderr=True)


def _settings() -> Settings:
    return load_settings()


def _configure_logging(settings: Settings, *, json_lines: bool = False) -> None:
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
    home = default_home()
    path = home / "config.yaml"
    if path.exists() and not force:
        err.print(f"{path} already exists (use --force to overwrite)")
        raise typer.Exit(1)
    home.mkdir(parents=True, exist_ok=True)
    path.write_text(starter_config(), encoding="utf-8")
    console.print(f"wrote {path}")


@app.command()
def run(
    log_json: Annotated[
        bool, typer.Option("--log-json", help="log one JSON object a line (logging.format)")
    ] = False,
) -> None:
    """Start every enabled adapter and the HTTP server; SIGTERM or SIGINT stops it
    gracefully (exit 0). Refused, in one line, when another gateway holds the database."""
    from gateway.app import create_app
    from gateway.http_server import run_on_server_loop
    from gateway.runtime import database_lease

    settings = _settings()
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
    from gateway.runtime import run_interactive

    spec = platforms.interactive(_settings())
    settings = load_settings(overrides={f"{spec.name}.{spec.interactive}": chat_id})
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
    """Entry point: one line and exit code 2 for configuration errors, never a traceback."""
    try:
        exit_code = app(standalone_mode=False)
    except ConfigError as exc:
        print(f"chatgate: invalid configuration: {exc}", file=sys.stderr)
        sys.exit(2)
    except ChatgateError as exc:
        print(f"chatgate: {exc}", file=sys.stderr)
        sys.exit(1)
    except (typer.Abort, KeyboardInterrupt):
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # click's usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
    # Without standalone mode click returns a ``typer.Exit``'s code instead of raising
    # it; a refusal such as ``init`` without --force must still exit non-zero.
    if isinstance(exit_code, int) and exit_code:
        sys.exit(exit_code)


if __name__ == "__main__":
    main()
