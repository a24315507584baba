"""Time from ``chatgate run``'s process start to its first ``/readyz`` 200.

Measured on a fresh home (the first start creates and migrates ``state.db``), then on
the same home with no session, then after ``--sessions`` sessions were added (each a
copy of one real session: its row, its two messages, search-indexed by the database's
own triggers, and its inbox and outbox rows), so a startup that reads every session
shows. Each figure is the median of ``--runs`` starts; the CPU time the process used
until it was ready (user + system: the figure a busy machine does not inflate) and its
resident memory then are printed beside it. The offline model, SQLite, loopback only.
Python's bytecode caches are written and used as an installed gateway's are, even when
this shell sets ``PYTHONDONTWRITEBYTECODE``.

    .venv/bin/python bench/startup.py [--sessions 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.servers import HOST, free_port  # noqa: E402
from bench.throughput import gateway_env  # noqa: E402

READY_TIMEOUT_SECONDS = 120.0
POLL_SECONDS = 0.005
STOP_TIMEOUT_SECONDS = 30.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Start:
    seconds: float
    cpu_seconds: float
    rss_mib: float


def chatgate_argv() -> list[str]:
    script = Path(sys.executable).parent / "chatgate"
    if script.exists():
        return [str(script), "run"]
    return [sys.executable, "-m", "gateway.cli", "run"]


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` (``VmRSS``), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def start_env(home: Path, port: int) -> dict[str, str]:
    env = gateway_env(home, port)
    # Without bytecode caches every start compiles its imports again (~2x the CPU).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wait_ready(proc: subprocess.Popen[bytes], url: str, started: float) -> float:
    """Seconds from ``started`` to the first ``/readyz`` 200 (bounded)."""
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() - started < READY_TIMEOUT_SECONDS:
            if proc.poll() is not None:
                raise RuntimeError(f"chatgate run exited with {proc.returncode}")
            try:
                if client.get(url + "/readyz").status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                pass
            time.sleep(POLL_SECONDS)  # another process: no event to wait on
    raise RuntimeError(f"not ready after {READY_TIMEOUT_SECONDS:.0f} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT_SECONDS)


def start_once(home: Path, *, say: str | None = None) -> Start:
    """Start ``chatgate run`` on ``home``, time it to ready, optionally send one message."""
    port = free_port()
    url = f"http://{HOST}:{port}"
    with (home / "gateway.log").open("ab") as log:
        started = time.monotonic()
        proc = subprocess.Popen(
            chatgate_argv(), env=start_env(home, port), stdout=log, stderr=subprocess.STDOUT
        )
    try:
        seconds = wait_ready(proc, url, started)
        cpu, memory = cpu_seconds(proc.pid), rss_mib(proc.pid)
        if say is not None:
            body = {"chat_id": "template", "user_id": "u1", "text": say}
            httpx.post(url + "/webhook/bench", json=body, timeout=30, trust_env=False)
        return Start(seconds, cpu, memory)
    finally:
        stop(proc)


def measure(home: Path, runs: int) -> Start:
    starts = [start_once(home) for _ in range(runs)]
    return Start(
        statistics.median(s.seconds for s in starts),
        statistics.median(s.cpu_seconds for s in starts),
        statistics.median(s.rss_mib for s in starts),
    )


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _copy(conn: sqlite3.Connection, table: str, where: str, changed: dict[str, str]) -> None:
    """Insert one copy of ``table``'s rows matching ``where`` per ``n`` in ``numbers``,
    with ``changed`` columns computed from ``n`` (autoincrement ids left out)."""
    columns = [c for c in _columns(conn, table) if not (c == "id" and table != "sessions")]
    values = [changed.get(c, f"t.{c}") for c in columns]
    conn.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM {table} AS t, numbers WHERE {where}"
    )


def clone_sessions(db: Path, count: int) -> None:
    """``count`` more sessions like the one of chat ``template`` (SQL in bulk)."""
    conn = sqlite3.connect(db)
    try:
        (sid,) = conn.execute("SELECT id FROM sessions WHERE chat_id = 'template'").fetchone()
        conn.execute("CREATE TEMP TABLE numbers (n INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO numbers VALUES (?)", ((n,) for n in range(count)))
        key = "replace(t.session_key, 'template', 'c' || n)"
        session = {"id": "t.id || '_' || n", "session_key": key, "chat_id": "'c' || n"}
        _copy(conn, "sessions", f"t.id = '{sid}'", session)
        _copy(
            conn, "messages", f"t.session_id = '{sid}'", {"session_id": "t.session_id || '_' || n"}
        )
        inbox = {
            "dedup_key": "t.dedup_key || '_' || n",
            "chat_id": "'c' || n",
            "session_key": key,
            "session_id": "t.session_id || '_' || n",
        }
        _copy(conn, "inbox", f"t.session_id = '{sid}'", inbox)
        outbox = {"chat_id": "'c' || n", "session_id": "t.session_id || '_' || n"}
        _copy(conn, "outbox", f"t.session_id = '{sid}'", outbox)
        conn.commit()
    finally:
        conn.close()


def count(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def report(label: str, start: Start) -> None:
    print(
        f"{label:<40} {start.seconds:>7.2f} s {start.cpu_seconds:>7.2f} s {start.rss_mib:>8.1f} MiB"
    )


def run(home: Path, sessions: int, runs: int) -> None:
    db = home / "state.db"
    report("first start (creates state.db)", start_once(home))
    report("0 sessions", measure(home, runs))
    start_once(home, say="hello")  # the template session
    began = time.monotonic()
    clone_sessions(db, sessions)
    seeded = time.monotonic() - began
    print(f"(seeded {sessions} sessions in {seeded:.1f} s; state.db {db.stat().st_size >> 20} MiB)")
    report(f"{count(db, 'sessions')} sessions", measure(home, runs))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"start to /readyz 200, median of {args.runs}, {os.cpu_count()} CPUs")
    print(f"{'':<40} {'ready':>9} {'CPU':>9} {'RSS':>12}")
    with tempfile.TemporaryDirectory(prefix="chatgate-startup-") as name:
        run(Path(name), args.sessions, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
