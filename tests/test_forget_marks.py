"""How a running gateway hears that a forgetting elsewhere made cached transcripts stale
(``core.people.marks``): a count beside the marks file, read from a shared memory map
before each turn, and the marks file read only when the count moved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.people.marks import ForgetMarks, bell_path, forget_marks_path, key_digest

ROOT = Path(__file__).resolve().parent.parent


def forget_elsewhere(path: Path, *keys: str) -> None:
    """``ForgetMarks.add`` in a process of its own, as ``chatgate people forget`` runs."""
    code = (
        "import sys; from pathlib import Path; from core.people.marks import ForgetMarks; "
        "ForgetMarks(Path(sys.argv[1])).add(sys.argv[2:], 1.0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), *keys], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def write_line_without_ringing(path: Path, *keys: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(json.dumps({"at": 1.0, "keys": [key_digest(k) for k in keys]}) + "\n")


def test_a_forgetting_in_another_process_is_heard_at_the_next_look(tmp_path: Path) -> None:
    path = forget_marks_path(tmp_path)
    watcher = ForgetMarks(path)
    assert watcher.stale_keys() == set()

    forget_elsewhere(path, "webhook:g1", "telegram:42")

    assert watcher.stale_keys() == {key_digest("webhook:g1"), key_digest("telegram:42")}
    assert watcher.stale_keys() == set()
    forget_elsewhere(path, "webhook:g2")
    assert watcher.stale_keys() == {key_digest("webhook:g2")}
    assert bell_path(path).read_bytes() == (2).to_bytes(8, "little")


def test_the_first_look_reads_what_was_marked_since_the_watcher_was_made(
    tmp_path: Path,
) -> None:
    path = forget_marks_path(tmp_path)
    forget_elsewhere(path, "webhook:before")  # before the gateway started: not its concern
    watcher = ForgetMarks(path)
    forget_elsewhere(path, "webhook:g1")

    assert watcher.stale_keys() == {key_digest("webhook:g1")}


def test_the_marks_file_is_read_only_once_the_bell_rings(tmp_path: Path) -> None:
    path = forget_marks_path(tmp_path)
    watcher = ForgetMarks(path)
    assert watcher.stale_keys() == set()

    write_line_without_ringing(path, "webhook:quiet")
    assert watcher.stale_keys() == set()  # nothing rang: the file was not even looked at

    forget_elsewhere(path, "webhook:g1")
    assert watcher.stale_keys() == {key_digest("webhook:quiet"), key_digest("webhook:g1")}


def test_without_a_bell_every_look_reads_the_marks_file(tmp_path: Path) -> None:
    path = forget_marks_path(tmp_path)
    bell_path(path).mkdir(parents=True)  # a bell that cannot be opened or mapped
    watcher = ForgetMarks(path)
    assert watcher.stale_keys() == set()

    write_line_without_ringing(path, "webhook:g1")

    assert watcher.stale_keys() == {key_digest("webhook:g1")}
    assert watcher.stale_keys() == set()
