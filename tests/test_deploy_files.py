"""The deploy files do what they say: the example config is what ``chatgate init``
writes, the container's health check answers for a running gateway, compose takes
every secret from ``.env``, and the systemd unit is sandboxed and stops gracefully."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from subprocess import DEVNULL
from typing import Any, cast

import pytest
import yaml
from pydantic import BaseModel

from gateway.config import settings_model, starter_config
from gateway.env_settings import aliases
from gateway.settings import ServerSettings
from tests.fakes.loopback import free_port
from tests.gateway_server import running_gateway

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
GRACE = ServerSettings().shutdown_grace


def dockerfile_instruction(name: str) -> list[str]:
    """Each ``name`` instruction of deploy/Dockerfile, continuation lines joined."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    return [line for line in text.splitlines() if line.split(" ", 1)[0] == name]


def healthcheck_command() -> list[str]:
    [check] = dockerfile_instruction("HEALTHCHECK")
    command: list[str] = json.loads(check[check.index("CMD") + len("CMD") :])
    return command


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text("utf-8"))
    return loaded


def unit_file() -> dict[str, list[str]]:
    """deploy/chatgate.service's ``Key=value`` lines (keys may repeat)."""
    found: dict[str, list[str]] = {}
    for line in (DEPLOY / "chatgate.service").read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            found.setdefault(key.strip(), []).append(value.strip())
    return found


# -- the example config ---------------------------------------------------------------


def test_the_example_config_is_what_chatgate_init_writes() -> None:
    example = (DEPLOY / "config.example.yaml").read_text(encoding="utf-8")
    assert example == starter_config(), "settings changed: run `make config-example`"


# -- the image ------------------------------------------------------------------------


async def health_check(port: int) -> int:
    """The image's HEALTHCHECK command, run here: its exit status."""
    command = healthcheck_command()
    assert command[0] == "python"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *command[1:], env={"CHATGATE_PORT": str(port)}, stderr=DEVNULL
    )
    return await proc.wait()


async def test_the_image_health_check_passes_for_a_running_gateway_only(home: Path) -> None:
    async with running_gateway(home) as gw:
        up = await health_check(int(gw.base_url.rsplit(":", 1)[1]))
    down = await health_check(free_port())

    assert up == 0
    assert down != 0


def test_the_image_installs_from_the_lock_before_the_sources_and_runs_unprivileged() -> None:
    copies = [line.split()[1] for line in dockerfile_instruction("COPY")]
    [user] = dockerfile_instruction("USER")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [uv_version] = re.findall(r"^UV_VERSION := (\S+)$", makefile, re.MULTILINE)

    assert copies.index("pyproject.toml") < copies.index("core")  # deps cached apart
    assert any("uv sync --locked" in run for run in dockerfile_instruction("RUN"))
    assert any(f"uv=={uv_version}" in run for run in dockerfile_instruction("RUN"))
    assert user.split()[1].split(":")[0] not in ("0", "root")
    assert "@sha256:" in dockerfile_instruction("ARG")[0]  # a pinned base image
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert {".env", ".venv", ".git"} <= set(ignored)


# -- docker compose -------------------------------------------------------------------


def secret_env_vars() -> set[str]:
    """The documented variables (DESIGN.md's names) the gateway reads into a secret."""
    model = settings_model()
    found = set()
    for var, dotted in aliases(model).items():
        section, key = dotted.split(".")
        fields = cast(type[BaseModel], model.model_fields[section].annotation).model_fields
        if "SecretStr" in str(fields[key].annotation):
            found.add(var)
    return found


def test_compose_takes_every_secret_from_dot_env_and_writes_none() -> None:
    services = compose()["services"]
    gateway, postgres = services["chatgate"], services["postgres"]
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    listed = set(re.findall(r"^# ([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))

    assert {"TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "OPENAI_API_KEY"} <= secret_env_vars()
    assert secret_env_vars() <= listed
    assert [entry["path"] for entry in gateway["env_file"]] == [".env"]
    assert postgres["environment"]["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD")
    assert gateway["environment"]["PGPASSWORD"].startswith("${POSTGRES_PASSWORD")
    for name, value in literal_environment():
        assert not re.search("PASSWORD|SECRET|TOKEN|KEY", name), f"{name} is written in the file"
        assert not re.search(r"://[^/@]*:[^/@]*@", value), f"{name} holds a password"


def literal_environment() -> list[tuple[str, str]]:
    """Every ``environment`` entry of every service whose value is not from ``.env``."""
    return [
        (name, str(value))
        for service in compose()["services"].values()
        for name, value in service.get("environment", {}).items()
        if not str(value).startswith("${")
    ]


def test_compose_runs_one_gateway_on_sqlite_by_default_and_postgres_by_profile() -> None:
    services = compose()["services"]
    gateway = services["chatgate"]

    assert "profiles" not in gateway
    assert "replicas" not in gateway.get("deploy", {})
    assert services["postgres"]["profiles"] == ["postgres"]
    assert gateway["depends_on"]["postgres"] == {"condition": "service_healthy", "required": False}
    assert all(s["restart"] == "unless-stopped" and "healthcheck" in s for s in services.values())
    assert gateway["healthcheck"]["test"] == ["CMD", *healthcheck_command()]
    assert int(gateway["stop_grace_period"].rstrip("s")) > GRACE


# -- systemd --------------------------------------------------------------------------


def test_the_unit_keeps_state_in_its_state_directory_and_stops_gracefully() -> None:
    unit = unit_file()

    assert unit["StateDirectory"] == ["chatgate"]
    assert unit["Environment"] == ["CHATGATE_HOME=%S/chatgate"]
    assert unit["KillSignal"] == ["SIGTERM"]
    assert int(unit["TimeoutStopSec"][0]) > GRACE
    assert unit["ProtectSystem"] == ["strict"]
    assert unit["NoNewPrivileges"] == ["yes"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_scores_the_unit_ok() -> None:
    scored = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(DEPLOY / "chatgate.service")],
        capture_output=True,
        text=True,
        check=False,
    )
    [score] = re.findall(r"Overall exposure level for chatgate.service: ([\d.]+)", scored.stdout)

    assert float(score) <= 4.0, scored.stdout
