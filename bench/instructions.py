"""Instructions per message: a CPU figure that other load on the machine does not move.

On a shared 2-CPU machine, msgs/s and CPU ms per message from ``bench/throughput.py``
move 15-30 % between identical runs, which hides any change smaller than that. This
runs the same load with the server under valgrind's callgrind, which counts the
instructions the server executes: two runs of the same build agree to within 0.5 %.

The server is run twice, with ``--small`` and ``--large`` measured messages (the same
warm-up), and the difference is divided by the difference in messages, so start-up,
imports and shutdown cancel out. Printed: instructions per message, for the gateway
split into its main thread (the event loop) and the others (the SessionDB writer, WAL
checkpoints), and for the bare FastAPI app (``bench/bare_app.py``) with ``--bare``.
Their ratio is what the throughput goal compares on one core, without the noise.

    .venv/bin/python bench/instructions.py [--small 300] [--large 1300] [--bare] [--keep DIR]

Each run takes about a minute (callgrind is ~50x slower than the bare CPU). ``--keep``
leaves callgrind's files (one per thread) for ``callgrind_annotate``.
A/B two builds by running this in each checkout (``git worktree``) and comparing.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUT = ROOT / "bench" / "throughput.py"
TOTALS = re.compile(r"^(?:summary|totals): (\d+)", re.MULTILINE)
# callgrind names each thread's file ``<out>-<thread number>``; thread 1 is the main one.
THREAD = re.compile(r"-(\d+)$")


@dataclass(frozen=True, slots=True)
class Count:
    """Instructions the server executed in one run: its main thread's and the rest."""

    main: int
    others: int

    @property
    def total(self) -> int:
        return self.main + self.others


def count(out_dir: Path, stem: str) -> Count:
    """Sum the callgrind files ``stem.<pid>[-<thread>]`` in ``out_dir``."""
    main = others = 0
    # With threads apart, callgrind leaves the file without a thread number empty.
    files = [p for p in sorted(out_dir.glob(f"{stem}.*")) if p.stat().st_size > 0]
    if not files:
        raise SystemExit(f"callgrind wrote no {stem}.* in {out_dir}: is valgrind installed?")
    for path in files:
        found = TOTALS.search(path.read_text(errors="replace"))
        if found is None:
            raise SystemExit(f"no instruction total in {path}")
        thread = THREAD.search(path.name)
        if thread is None or int(thread[1]) == 1:
            main += int(found[1])
        else:
            others += int(found[1])
    return Count(main, others)


def run(target: str, messages: int, args: argparse.Namespace, out_dir: Path) -> Count:
    stem = f"{target}-{messages}"
    wrap = (
        "valgrind --tool=callgrind --separate-threads=yes "
        f"--callgrind-out-file={out_dir / stem}.%p --"
    )
    argv = [
        sys.executable,
        str(THROUGHPUT),
        "--only",
        target,
        "--messages",
        str(messages),
        "--warmup",
        str(args.warmup),
        "--chats",
        str(args.chats),
        "--wrap",
        wrap,
        *(a for pair in args.set for a in ("--set", pair)),
    ]
    # Start-up alone takes 45-60 s under callgrind: more than the benches' usual wait.
    env = {**os.environ, "CHATGATE_BENCH_READY_SECONDS": "600"}
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
    if target == "gateway" and "every message durable: yes" not in done.stdout:
        raise SystemExit(f"the gateway lost messages:\n{done.stdout}")
    return count(out_dir, stem)


def per_message(target: str, args: argparse.Namespace, out_dir: Path) -> Count:
    small = run(target, args.small, args, out_dir)
    large = run(target, args.large, args, out_dir)
    extra = args.large - args.small
    return Count((large.main - small.main) // extra, (large.others - small.others) // extra)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=300, help="messages of the first run")
    parser.add_argument("--large", type=int, default=1300, help="messages of the second run")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--chats", type=int, default=10, help="concurrent chats")
    parser.add_argument("--bare", action="store_true", help="count the bare app too")
    parser.add_argument(
        "--keep", type=Path, help="keep callgrind's files in this directory (callgrind_annotate)"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a gateway setting"
    )
    args = parser.parse_args(argv)
    if not 0 < args.small < args.large:
        parser.error("need 0 < --small < --large")
    # A short run first, outside callgrind: a fresh install compiles its modules' bytecode
    # on first import, which would land in the first measured run (+0.4 G instructions).
    warm = [sys.executable, str(THROUGHPUT), "--only", "gateway", "--messages", "100"]
    subprocess.run(warm, cwd=ROOT, capture_output=True, check=False)
    with tempfile.TemporaryDirectory(prefix="chatgate-callgrind-") as name:
        out_dir = Path(name) if args.keep is None else args.keep
        out_dir.mkdir(parents=True, exist_ok=True)
        gateway = per_message("gateway", args, out_dir)
        bare = per_message("bare", args, out_dir) if args.bare else None
    print(f"instructions per message ({args.chats} chats, runs of {args.small} and {args.large})")
    print(
        f"gateway  {gateway.total / 1e6:8.3f} M  (event loop {gateway.main / 1e6:.3f} M, "
        f"other threads {gateway.others / 1e6:.3f} M)"
    )
    if bare is not None:
        print(f"bare     {bare.total / 1e6:8.3f} M")
        print(f"ratio bare/gateway: {bare.total / gateway.total:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
