"""``chatgate doctor``: every piece a running gateway needs, checked, each failure with
its fix.

The local pieces (the config, the home folder, the database's schema, a webhook secret
on an address others can reach) are checked here; the remote ones (the model endpoint,
each enabled platform's token, the memory provider) in ``gateway.doctor_remote``. Each
check is bounded by ``within`` seconds, and a failing one never stops the others, except
that nothing past the config is checked when the config cannot be read.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Literal

from adapters.probe import Probe
from core.errors import ConfigError, StoreError
from core.record import record
from core.store.location import redacted_url
from core.store.schema_probe import schema_state
from gateway import platforms
from gateway.config import default_home, load_settings
from gateway.doctor_remote import bounded, remote_checks
from gateway.env_settings import canonical_name
from gateway.settings import Settings

# Below this the SQLite journal and the memory files may fail to grow mid-write.
MIN_FREE_BYTES = 100 * 1024 * 1024


@record
class Check:
    """One row of the doctor's table."""

    name: str
    status: Literal["ok", "fail"]
    detail: str
    fix: str = ""

    @classmethod
    def of(cls, name: str, probe: Probe) -> Check:
        return cls(name, "ok" if probe.ok else "fail", probe.detail, probe.fix)


async def diagnose(
    home: Path | None = None, env: Mapping[str, str] | None = None, *, within: float = 5.0
) -> list[Check]:
    """Every check, in the order the table shows them."""
    home = (home or default_home()).expanduser().resolve()
    local = [Check.of("home", home_probe(home)), Check.of("free space", space_probe(home))]
    try:
        settings = load_settings(home, env)
    except ConfigError as exc:
        return [Check("config", "fail", str(exc), config_fix(exc)), *local]
    config = Check("config", "ok", _config_detail(home))
    exposure = Check.of("exposure", exposure_probe(settings))
    probes: list[Awaitable[tuple[str, Probe]]] = [
        bounded("database", database_probe(settings), within)
    ]
    probes += remote_checks(settings, within)
    found = await asyncio.gather(*probes)
    return [config, *local, exposure, *(Check.of(name, probe) for name, probe in found)]


def failed(checks: list[Check]) -> list[Check]:
    return [check for check in checks if check.status == "fail"]


def _config_detail(home: Path) -> str:
    path = home / "config.yaml"
    return f"{path} is valid" if path.exists() else "no config.yaml: defaults and the environment"


def config_fix(exc: ConfigError) -> str:
    if exc.key.isupper():  # the key is an environment variable's name
        return f"correct or unset {exc.key}"
    if "." not in exc.key:
        return f"correct {exc.key}"
    return f"correct {exc.key} in config.yaml (or {canonical_name(exc.key)})"


def home_probe(home: Path) -> Probe:
    if not home.is_dir():
        return Probe(False, f"{home} does not exist", "chatgate init creates it and a config.yaml")
    if not os.access(home, os.W_OK | os.X_OK):
        return Probe(
            False, f"{home} is not writable by this user", "chown it to the gateway's user"
        )
    if home.stat().st_mode & 0o002:
        return Probe(False, f"{home} is writable by every user", f"chmod o-w {home}")
    return Probe(True, f"{home} is writable")


def space_probe(home: Path) -> Probe:
    if not home.is_dir():
        return Probe(False, "no home to measure", "chatgate init")
    free = shutil.disk_usage(home).free
    said = f"{free / 1e9:.1f} GB free"
    if free < MIN_FREE_BYTES:
        return Probe(False, said, f"free at least {MIN_FREE_BYTES // 2**20} MB on its disk")
    return Probe(True, said)


def exposure_probe(settings: Settings) -> Probe:
    host = settings.server.host
    if platforms.is_loopback(host):
        return Probe(True, f"listening on {host}: only this machine can connect")
    try:
        platforms.refuse_exposure(settings, platforms.enabled(settings))
    except ConfigError as exc:
        return Probe(False, f"{host} is reachable by others and {exc.key} is not set", exc.reason)
    return Probe(True, f"listening on {host}; every platform that serves it authenticates")


async def database_probe(settings: Settings) -> Probe:
    url = settings.database_url
    try:
        current, head = await schema_state(url)
    except StoreError as exc:
        return Probe(False, str(exc), "check database.url (CHATGATE_DATABASE_URL)")
    where = redacted_url(url)
    if current is None:
        return Probe(False, f"{where}: no schema yet", "chatgate db upgrade (run also does it)")
    if current != head:
        return Probe(
            False, f"{where}: at {current}, this build needs {head}", "chatgate db upgrade"
        )
    return Probe(True, f"{where}: at {head}, current")
