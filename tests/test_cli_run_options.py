"""``chatgate run --host --port --config``: the options win over the file they point at."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.fakes.loopback import free_port
from tests.test_cli import CHATGATE, cli_env, client_for, wait_ready


@contextmanager
def running(home: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    with (home / "run.log").open("wb") as log:
        proc = subprocess.Popen(
            [str(CHATGATE), "run", *args], env=cli_env(), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield proc
        finally:
            proc.kill()
            proc.wait(timeout=30)


async def test_run_reads_the_given_config_and_the_options_win(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.yaml"
    # A port this test could not bind and a public host; a secret shows the file was read.
    elsewhere.write_text(
        "server:\n  port: 9\n  host: 0.0.0.0\nwebhook:\n  secret: from-the-other-file-0123456789\n",
        encoding="utf-8",
    )
    port = free_port()
    options = ("--host", "127.0.0.1", "--port", str(port), "--config", str(elsewhere))
    with running(home, *options) as proc:
        async with client_for(f"http://127.0.0.1:{port}") as client:
            await wait_ready(proc, client)
            unsigned = await client.post(
                "/webhook/demo", json={"chat_id": "c1", "user_id": "u1", "text": "hi"}
            )
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)

    assert code == 0
    assert unsigned.status_code == 401  # the secret came from --config's file
    assert not (home / "config.yaml").exists()
