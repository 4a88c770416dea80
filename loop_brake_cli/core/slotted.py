"""Record classes without ``dataclasses``: equality, repr and pickling from ``__slots__``.

The hook imports ``ToolCall`` before every tool call an agent makes (and every
command imports ``FormatInfo``), and importing ``dataclasses`` (which pulls in
``inspect``, ``dis`` and ``tokenize``) cost 7-8 ms of the hook's start-up. So
those classes list their fields in ``__slots__``, in the order their
``__init__`` takes them, and write that ``__init__`` by hand; these bases give
them what the dataclasses gave: field-by-field equality within one class, the
same repr, and pickling (for ``replay -j`` workers).
"""

from __future__ import annotations

__all__ = ["Fields", "FrozenFields"]


class Fields:
    """Equality, repr and pickling over a subclass's ``__slots__``; unhashable, as a
    mutable dataclass is."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    # typeshed declares object.__hash__ a method; None is how Python marks a class unhashable
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{self.__class__.__qualname__}({shown})"

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return self.__class__, self._values()


class FrozenFields(Fields):
    """A ``Fields`` whose attributes cannot change after ``__init__`` (which sets them
    with ``object.__setattr__``), hashable by its values, as a frozen dataclass."""

    __slots__ = ()

    # the base's None (unhashable) given back a method, as a frozen dataclass does
    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")
