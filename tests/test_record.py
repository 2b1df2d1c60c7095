"""persistence.record: the light value records of ssa hook's cold path (pure; no threads)."""

from __future__ import annotations

import pytest

from persistence.record import Record


class Point(Record):
    __slots__ = ("label", "x")

    def __init__(self, x: int, label: str = "") -> None:
        self.x = x
        self.label = label


class Other(Record):
    __slots__ = ("label", "x")

    def __init__(self, x: int, label: str = "") -> None:
        self.x = x
        self.label = label


def test_records_of_one_class_with_equal_fields_are_equal_and_hash_alike() -> None:
    assert Point(1, "a") == Point(1, "a")
    assert hash(Point(1, "a")) == hash(Point(1, "a"))
    assert Point(1, "a") != Point(1, "b")
    assert len({Point(1, "a"), Point(1, "a"), Point(2, "a")}) == 2


def test_a_record_never_equals_another_class_or_a_tuple() -> None:
    assert Point(1, "a") != Other(1, "a")
    assert Point(1, "a") != ("a", 1)
    assert Point(1, "a") != (1, "a")


def test_replace_makes_a_changed_copy_and_leaves_the_record() -> None:
    point = Point(1, "a")
    moved = point.replace(x=5)
    assert (moved.x, moved.label, type(moved)) == (5, "a", Point)
    assert (point.x, point.label) == (1, "a")


def test_replace_refuses_a_name_that_is_no_field() -> None:
    with pytest.raises(TypeError, match="no field 'y'"):
        Point(1).replace(y=2)


def test_repr_names_the_class_and_each_field() -> None:
    assert repr(Point(1, "a")) == "Point(label='a', x=1)"


def test_a_field_that_cannot_be_hashed_makes_hash_raise() -> None:
    with pytest.raises(TypeError):
        hash(Point(1, [1]))  # type: ignore[arg-type]


def test_a_record_has_no_instance_dict() -> None:
    with pytest.raises(AttributeError):
        Point(1).y = 2  # type: ignore[attr-defined]
