"""How long the CLI takes to answer: ``chatgate --help`` and ``chatgate status``.

Run: ``.venv/bin/python bench/cli_startup.py [--runs N]``. Prints the median wall and
CPU time of each command over N runs (after one warm-up run that compiles bytecode),
in a throwaway CHATGATE_HOME. The goal for ``--help`` is under 0.3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHATGATE = Path(sys.executable).parent / "chatgate"


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    began = time.perf_counter()
    proc = subprocess.Popen([str(CHATGATE), *args], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"chatgate {' '.join(args)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "CHATGATE_HOME": home}
        for args in (["--help"], ["status"]):
            timed(args, env)
            samples = [timed(args, env) for _ in range(runs)]
            wall = statistics.median(w for w, _ in samples)
            cpu = statistics.median(c for _, c in samples)
            print(f"chatgate {' '.join(args):8} wall {wall:.3f} s  cpu {cpu:.3f} s  ({runs} runs)")


if __name__ == "__main__":
    main()
