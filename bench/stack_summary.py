"""Summarise a py-spy ``--format raw`` profile: where the gateway's samples went.

Record one through the benchmark (py-spy is not a project dependency: ``pip install
py-spy``), then read it:

    .venv/bin/python bench/throughput.py --only gateway \\
        --wrap "py-spy record --rate 250 --threads --format raw -o /tmp/gw.txt --"
    .venv/bin/python bench/stack_summary.py /tmp/gw.txt

Prints samples per thread, per library (by the leaf frame's file), the functions
with the most self samples and those with the most inclusive samples.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")
OWN_PACKAGES = ("core/", "adapters/", "gateway/", "migrations/")


@dataclass(slots=True)
class Summary:
    total: int = 0
    threads: Counter[str] = field(default_factory=Counter)
    libraries: Counter[str] = field(default_factory=Counter)
    own: Counter[str] = field(default_factory=Counter)
    inclusive: Counter[str] = field(default_factory=Counter)


def stacks(path: Path) -> Iterator[tuple[list[str], int]]:
    """(frames root first, sample count) for every line of a raw profile."""
    for line in path.read_text().splitlines():
        text, _, count = line.rpartition(" ")
        if text and count.isdigit():
            yield text.split(";"), int(count)


def name(frame: str) -> str:
    """``file:function`` for a frame (line numbers dropped so a function is one row)."""
    match = FRAME.match(frame)
    return f"{match['file']}:{match['func']}" if match else frame


def library(frame: str) -> str:
    match = FRAME.match(frame)
    file = match["file"] if match else frame
    if file.startswith(OWN_PACKAGES):
        return "chatgate"
    if file.startswith("<frozen") or "/" not in file:
        return "stdlib/other"
    return file.split("/", 1)[0]


def summarise(path: Path, thread_filter: str | None, exclude: list[str]) -> Summary:
    summary = Summary()
    for frames, count in stacks(path):
        thread = frames[0] if frames[0].startswith("thread ") else "all"
        if thread_filter and thread_filter not in thread:
            continue
        if any(word in frame for frame in frames for word in exclude):
            continue
        body = frames[1:] if thread != "all" else frames
        if not body:
            continue
        summary.total += count
        summary.threads[thread] += count
        summary.libraries[library(body[-1])] += count
        summary.own[name(body[-1])] += count
        for func in {name(f) for f in body}:
            summary.inclusive[func] += count
    return summary


def show(title: str, counts: Counter[str], total: int, limit: int) -> None:
    print(f"\n{title}")
    for key, value in counts.most_common(limit):
        print(f"{100.0 * value / total:6.1f}%  {value:>6}  {key}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("profile", type=Path)
    parser.add_argument("--thread", help="only stacks of threads whose label contains this")
    parser.add_argument(
        "--exclude",
        action="append",
        default=["importlib._bootstrap", "gateway/runtime.py:open_gateway"],
        help="drop stacks with a frame containing this (default: start-up imports)",
    )
    parser.add_argument("--limit", type=int, default=25)
    args = parser.parse_args()
    summary = summarise(args.profile, args.thread, args.exclude)
    if not summary.total:
        print("no samples")
        return
    print(f"{summary.total} samples")
    show("by thread", summary.threads, summary.total, args.limit)
    show("by library (leaf frame)", summary.libraries, summary.total, args.limit)
    show("self samples", summary.own, summary.total, args.limit)
    show("inclusive samples", summary.inclusive, summary.total, args.limit)
    own = Counter({k: v for k, v in summary.inclusive.items() if k.startswith(OWN_PACKAGES)})
    show("inclusive samples, chatgate functions", own, summary.total, args.limit)


if __name__ == "__main__":
    main()
