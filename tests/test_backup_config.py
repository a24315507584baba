"""The config.yaml a backup carries has no secret in it, wherever the secret was set."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import yaml

from gateway.backup_config import secret_free_config
from gateway.config import load_settings
from tests.postgres import postgres_database
from tests.test_cli import chatgate, cli_env, write_yaml

ROUTE_SECRET = "route-secret-abcdefgh"
PG_PASSWORD = "pg-password-12345678"
ENV_KEY = "sk-from-the-environment-1234"


def test_secrets_from_the_file_and_the_environment_are_left_out(home: Path) -> None:
    config = {
        "model": {"name": "fake-model", "base_url": f"http://me:{ENV_KEY}@127.0.0.1:1/v1"},
        "webhook": {"routes": {"ops": {"secret": ROUTE_SECRET, "system_message": "Be brief."}}},
        "database": {"url": f"postgresql://chatgate:{PG_PASSWORD}@127.0.0.1/chatgate"},
    }
    write_yaml(home, yaml.safe_dump(config))
    settings = load_settings(home, {"OPENAI_API_KEY": ENV_KEY})

    text, dropped = secret_free_config(settings)

    assert text is not None
    for secret in (ROUTE_SECRET, PG_PASSWORD, ENV_KEY):
        assert secret not in text
    kept = yaml.safe_load(text)
    assert kept["webhook"]["routes"]["ops"] == {"system_message": "Be brief."}
    assert kept["database"]["url"] == "postgresql://chatgate:***@127.0.0.1/chatgate"
    assert kept["model"]["name"] == "fake-model"
    assert sorted(dropped) == ["model.base_url", "webhook.routes.ops.secret"]


async def test_on_postgresql_the_archive_has_the_files_and_says_pg_dump(
    home: Path, tmp_path: Path
) -> None:
    (home / "memories").mkdir()
    (home / "memories" / "USER.md").write_text("prefers metric", encoding="utf-8")
    async with postgres_database() as url:
        env = cli_env(CHATGATE_DATABASE_URL=url)
        assert chatgate("db", "upgrade", env=env).returncode == 0
        archive = tmp_path / "pg.tar.gz"
        result = chatgate("backup", str(archive), env=env)
        current = chatgate("db", "current", env=env)

    assert result.returncode == 0, result.stderr
    assert "back it up with pg_dump" in result.stdout
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        handle = tar.extractfile("manifest.json")
        assert handle is not None
        manifest = json.loads(handle.read())
    assert "state.db" not in names
    assert "memories/USER.md" in names
    assert manifest["database"] == "postgresql"
    assert f"database: {manifest['schema_revision']} " in current.stdout
    assert manifest["counts"]["memory_entries"] == 1
