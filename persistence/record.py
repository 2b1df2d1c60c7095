"""Light value records: what ``ssa hook``'s cold path uses instead of ``typing.NamedTuple``.

A :class:`Record` subclass names its fields in ``__slots__`` and sets them in
its own typed ``__init__``; it gets value equality, a hash, a ``repr`` and
:meth:`Record.replace` from here. Building a ``NamedTuple`` class costs 0.1 to
0.2 ms (``collections.namedtuple`` compiles its ``__new__``), and loading
:mod:`typing` about 2.5 ms more: together about a tenth of a cold prompt hook
on a regular install (issue 33, ``scripts/bench_hook.py``). A record class
costs about 0.01 ms, and this module imports nothing.

Records are values: nothing in this project changes a field once
``__init__`` has set it (treat them as immutable; :meth:`Record.replace`
makes a changed copy). Pure; any thread.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Self

__all__ = ["Record"]


class Record:
    """Base of a value record whose fields are its subclass's ``__slots__``.

    Equality holds between records of the same class whose fields are equal
    (a record never equals a tuple); the hash is the fields' (a field that
    cannot be hashed makes :func:`hash` raise ``TypeError``, as a tuple's
    does). Pure; any thread; never blocks.
    """

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        """Whether ``other`` is a record of this class with equal fields."""
        if not isinstance(other, Record) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        """The hash of the fields' values.

        Raises:
            TypeError: a field holds a value that cannot be hashed.
        """
        return hash(self._values())

    def __repr__(self) -> str:
        """``Name(field=value, ...)``, in ``__slots__`` order."""
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def replace(self, **changes: object) -> Self:
        """A copy with the fields named in ``changes`` set to their values.

        Raises:
            TypeError: a name in ``changes`` is not a field of this record.
        """
        unknown = sorted(set(changes) - set(self.__slots__))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {unknown[0]!r}")
        copy = object.__new__(type(self))
        for name in self.__slots__:
            object.__setattr__(copy, name, changes.get(name, getattr(self, name)))
        return copy
