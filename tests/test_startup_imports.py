"""A started gateway has not imported the libraries of what it does not use: start-up
pays for what is enabled (docs/architecture.md, Start-up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Start the gateway of a fresh home (the webhook, the offline model, no MCP server) in a
# fresh interpreter, once to create the database and once more at its head, and name
# the unused libraries it imported.
PROBE = """
import asyncio, sys
from gateway.app import create_app
from gateway.config import load_settings

async def start() -> None:
    app = create_app(load_settings())
    async with app.router.lifespan_context(app):
        pass

asyncio.run(start())
unused = ("mcp", "mcp_types", "PIL", "pypdf", "alembic", "httpx", "openai", "anthropic",
          "telegram", "discord")
print(" ".join(name for name in unused if name in sys.modules))
"""


def _started(home: Path) -> str:
    env = {"CHATGATE_HOME": str(home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip()


def test_a_gateway_at_the_schema_head_starts_without_unused_libraries(tmp_path: Path) -> None:
    assert _started(tmp_path) == "alembic"  # the first start creates the database
    assert _started(tmp_path) == ""
