"""``typing.NamedTuple``'s class syntax without importing ``typing``.

The hook runs before every tool call and pays its start-up each time;
``typing`` (with the ``re``, ``enum``, ``contextlib`` and ``warnings`` it
imports) was a third of what the hook imported beyond ``sqlite3``. Its class
syntax is a thin layer over ``collections.namedtuple``, which the interpreter
has loaded anyway: this is that layer. Type checkers read ``typing.NamedTuple``
(modules import it under ``if TYPE_CHECKING``), so the classes type the same.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the point here)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NamedTuple"]

_PROHIBITED = frozenset(
    {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults"}
    | {"_make", "_replace", "_asdict", "_source"}
)
_SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})


class _NamedTupleMeta(type):
    """Build the class as ``typing.NamedTuple`` does: the annotated names are the
    fields (in order), their class values the defaults, everything else (methods,
    properties, the docstring) is set on the ``collections.namedtuple``."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
        if ns.get("_root", False):
            return super().__new__(mcls, name, bases, ns)
        fields = list(ns.get("__annotations__", {}))
        defaults = [ns[field] for field in fields if field in ns]
        if any(field not in ns for field in fields[len(fields) - len(defaults) :]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        # mypy types a namedtuple() call only with literal names and defaults; these are
        # the class's annotations and values, read at run time (typing.NamedTuple's way)
        cls = namedtuple(name, fields, defaults=defaults, module=ns["__module__"])  # type: ignore[misc]
        cls.__annotations__ = dict(ns.get("__annotations__", {}))
        for key, value in ns.items():
            if key in _PROHIBITED:
                raise AttributeError(f"cannot overwrite NamedTuple attribute {key}")
            if key not in _SPECIAL and key not in cls._fields:
                setattr(cls, key, value)
        return cls


NamedTuple = _NamedTupleMeta("NamedTuple", (), {"_root": True, "__module__": __name__})
