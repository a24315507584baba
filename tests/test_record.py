"""``@record`` behaves as a frozen dataclass does for everything but the cost of building
one: equal records are equal and hash alike (they serve as keys), ``replace`` makes a
changed copy and leaves the original, and the type checker refuses assignment (``make
check``; mypy reads ``dataclass_transform(frozen_default=True)``)."""

from __future__ import annotations

import dataclasses

from core.record import record


@record
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


def test_equal_records_are_equal_and_hash_alike() -> None:
    seen = {Point(1, 2): "first"}

    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(2, 1)
    assert seen[Point(1, 2)] == "first"


def test_replace_makes_a_changed_copy() -> None:
    point = Point(1, tags=("a",))

    moved = dataclasses.replace(point, y=5)

    assert moved == Point(1, 5, ("a",))
    assert point == Point(1, 0, ("a",))


def test_a_record_has_slots_and_no_instance_dict() -> None:
    assert vars(Point)["__slots__"] == ("x", "y", "tags")
    assert not hasattr(Point(1), "__dict__")
