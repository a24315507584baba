"""Server processes for the benchmark: started on a free loopback port, always stopped.

``ServerProcess`` is a context manager: on exit (also on CTRL-C) the process gets
SIGINT, so uvicorn shuts down gracefully and the gateway flushes its writes, then
SIGKILL if it has not gone within a bound.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

import httpx

from tests.fakes.loopback import free_port as free_port  # the benches import it from here

HOST = "127.0.0.1"
# A server run under valgrind (bench/instructions.py) starts ~50x slower: it sets more.
READY_TIMEOUT_SECONDS = float(os.environ.get("CHATGATE_BENCH_READY_SECONDS", "60"))
STOP_TIMEOUT_SECONDS = 20.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ServerError(Exception):
    """The server did not become ready; carries the tail of its log."""


class ServerProcess:
    """One server process, its log file and its readiness probe."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        port: int,
        log_path: Path,
        env: Mapping[str, str],
        cwd: Path,
        ready_path: str = "/readyz",
    ) -> None:
        self.name = name
        self.port = port
        self._argv = list(argv)
        self._log_path = log_path
        self._env = dict(env)
        self._cwd = cwd
        self._ready_path = ready_path
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ServerProcess:
        with self._log_path.open("wb") as log:
            # A new session: CTRL-C reaches only us, and we stop the server in order.
            self._proc = subprocess.Popen(
                self._argv,
                cwd=self._cwd,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def cpu_seconds(self) -> float:
        """User plus system CPU time used so far by the server's process group."""
        if self._proc is None:
            return 0.0
        return sum(_group_cpu_ticks(self._proc.pid)) / CLOCK_TICKS

    def loop_cpu_seconds(self) -> float:
        """CPU time used so far by the main threads of the server's process group: the
        event loop's (a Python thread's OS name is its process's, so the main thread is
        told apart by its id; without ``--wrap`` it is the server's alone)."""
        if self._proc is None:
            return 0.0
        return sum(_group_cpu_ticks(self._proc.pid, main_threads=True)) / CLOCK_TICKS

    def log_tail(self, lines: int = 30) -> str:
        text = self._log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> int | None:
        """Stop gracefully (SIGINT), then forcibly; return the exit code."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            # The whole group: a wrapper (``--wrap``) and the server behind it.
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT_SECONDS)
        return proc.returncode

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                raise ServerError(f"{self.name} exited before it was ready:\n{self.log_tail()}")
            try:
                probe = httpx.get(self.url + self._ready_path, timeout=2.0, trust_env=False)
                if probe.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise ServerError(f"{self.name} not ready after {READY_TIMEOUT_SECONDS:.0f}s")


def _group_cpu_ticks(pgid: int, *, main_threads: bool = False) -> Iterator[int]:
    """Each process's user plus system ticks (or its main thread's) in group ``pgid``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            if main_threads:
                pid = stat.parent.name
                fields = (stat.parent / "task" / pid / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        yield int(fields[11]) + int(fields[12])


def add_settings_option(parser: argparse.ArgumentParser) -> None:
    """``--set NAME=VALUE`` (repeatable): settings for the gateway's environment, for A/B runs."""
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the gateway's environment, e.g. CHATGATE_AUDIT__ENABLED=false",
    )


def settings_env(args: argparse.Namespace) -> dict[str, str]:
    """What ``--set`` gave, as environment variables."""
    return dict(value.split("=", 1) for value in args.set)
