"""``chatgate config show``: every setting's effective value and where it came from, and
never a secret, whether the file or the environment set it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CHATGATE = Path(sys.executable).parent / "chatgate"
FILE_SECRET = "whsec-from-the-file-0123456789"
ENV_SECRET = "sk-from-the-environment-0123456789"
DB_PASSWORD = "pg-password-0123456789"


def show(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (home / "config.yaml").write_text(
        "server:\n  max_connections: 50\n"
        f"webhook:\n  secret: {FILE_SECRET}\n"
        f"  routes:\n    ops:\n      secret: {FILE_SECRET}-route\n"
    )
    env = {
        "CHATGATE_HOME": str(home),
        "OPENAI_API_KEY": ENV_SECRET,
        "OPENAI_BASE_URL": f"http://127.0.0.1:9/v1?key={ENV_SECRET}",
        "CHATGATE_DATABASE__URL": f"postgresql://chatgate:{DB_PASSWORD}@127.0.0.1/chatgate",
        "CHATGATE_CRON__TIMEZONE": "Europe/Paris",
        "COLUMNS": "250",
    }
    return subprocess.run(
        [str(CHATGATE), "config", "show", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


def test_no_secret_is_shown_in_the_table_or_the_json(home: Path) -> None:
    for args in ((), ("--json",)):
        done = show(home, *args)
        assert done.returncode == 0, done.stderr
        for secret in (FILE_SECRET, ENV_SECRET, DB_PASSWORD):
            assert secret not in done.stdout + done.stderr


def test_each_value_says_where_it_came_from(home: Path) -> None:
    done = show(home, "--json")
    rows = {row["key"]: row for row in json.loads(done.stdout)}
    assert rows["server.max_connections"]["value"] == "50"
    assert rows["server.max_connections"]["source"] == "file"
    assert rows["server.port"]["source"] == "default"
    assert rows["cron.timezone"] == {
        "key": "cron.timezone",
        "value": "Europe/Paris",
        "source": "env CHATGATE_CRON__TIMEZONE",
        "env": ["CHATGATE_CRON__TIMEZONE"],
    }
    assert rows["model.api_key"]["source"] == "env OPENAI_API_KEY"
    assert rows["model.api_key"]["value"] == "**********"
    assert rows["model.api_key"]["env"] == ["CHATGATE_MODEL__API_KEY", "OPENAI_API_KEY"]
    assert rows["home"]["source"] == "env CHATGATE_HOME"
