"""``chatgate run`` under cProfile: where the gateway's main thread spends its time.

Serves the same app with the same uvicorn settings as ``gateway.cli.run`` (settings
from ``$CHATGATE_HOME`` and the environment) and writes cProfile stats to ``--out``
when uvicorn stops (SIGINT/SIGTERM). ``bench/throughput.py --profile-out FILE``
drives it; read the result with ``python -m bench.profile_gateway --show FILE``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from pathlib import Path

import uvicorn

from gateway.app import create_app
from gateway.config import load_settings


def serve_profiled(out: Path) -> None:
    settings = load_settings()
    config = uvicorn.Config(
        create_app(settings),
        host=settings.server.host,
        port=settings.server.port,
        log_level=settings.server.log_level,
        log_config=None,
    )
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        uvicorn.Server(config).run()
    finally:
        profiler.disable()
        profiler.dump_stats(out)


def show(path: Path, limit: int) -> None:
    stats = pstats.Stats(str(path))
    stats.sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, help="serve the gateway; write stats here")
    parser.add_argument("--show", type=Path, help="print the stats in this file")
    parser.add_argument("--limit", type=int, default=30)
    args = parser.parse_args()
    if args.show is not None:
        show(args.show, args.limit)
    elif args.out is not None:
        serve_profiled(args.out)
    else:
        parser.error("give --out FILE or --show FILE")


if __name__ == "__main__":
    main()
