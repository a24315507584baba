"""The recall ceiling's cut, spill files and their pruning, without a gateway."""

from __future__ import annotations

import os
from pathlib import Path

from core.memory.recall_limit import KEEP_SPILLS, SPILL_MAX_AGE_SECONDS, RecallCeiling

NOW = 1_800_000_000.0


def test_recall_within_the_ceiling_is_untouched(tmp_path: Path) -> None:
    ceiling = RecallCeiling(1_000, tmp_path)
    assert ceiling.bound("x" * 1_000, session_id="s", now=NOW) == "x" * 1_000
    assert list(tmp_path.iterdir()) == []


def test_a_cut_fits_the_ceiling_and_says_how_much_is_missing() -> None:
    text = RecallCeiling(1_000).bound("y" * 5_000, session_id="s", now=NOW)
    assert len(text) <= 1_000
    assert text.endswith(
        "[Recall cut: 4,000 of 5,000 characters left out, over the 1,000-character limit "
        "(memory.prefetch_max_chars).]"
    )


def test_old_and_surplus_spills_are_pruned(tmp_path: Path) -> None:
    folder = tmp_path / "spill"
    folder.mkdir()
    stale = folder / "20000101T000000Z-old-aaaaaa.txt"
    stale.write_text("old")
    os.utime(stale, (NOW - SPILL_MAX_AGE_SECONDS - 60,) * 2)
    for i in range(KEEP_SPILLS + 5):
        fresh = folder / f"20270101T0000{i:02d}Z-s-bbbbbb.txt"
        fresh.write_text("recent")
        os.utime(fresh, (NOW - 60,) * 2)
    ceiling = RecallCeiling(1_000, folder)
    text = ceiling.bound("z" * 3_000, session_id="a/b", now=NOW)
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == KEEP_SPILLS
    assert stale.name not in names
    [newest] = [n for n in names if n.endswith("-a_b-" + n[-10:-4] + ".txt")]
    assert str(folder / newest) in text


def test_a_spill_that_cannot_be_written_is_cut_instead(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    text = RecallCeiling(1_000, blocker / "spill").bound("q" * 2_000, session_id="s", now=NOW)
    assert "[Recall cut: " in text
