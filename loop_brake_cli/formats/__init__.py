"""The registry of transcript formats: every adapter module is listed here, once.

Each adapter module has the same small interface:

* ``INFO``: a ``FormatInfo`` (name, description, whether it is line-based, the
  file name patterns a directory search picks up);
* ``sniff(head: bytes) -> bool``: does the start of a file look like this format;
* ``parse(source: Source) -> Iterator[ToolCall | BadRecord]``: every tool call
  exactly once, in order, located by line or JSON path. Line-based adapters
  read ``source.lines()`` so they stream (and work on ``tail -f``); document
  formats read ``source.read_all()``.

Detection tries the adapters in ``ADAPTERS`` order, most specific first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

from ..reader import Source
from ..records import Record

__all__ = ["ADAPTERS", "FormatInfo", "UnknownFormatError", "detect", "get", "names"]


@dataclass(frozen=True)
class FormatInfo:
    name: str
    description: str
    line_based: bool
    patterns: tuple[str, ...] = ("*.jsonl", "*.json")


class Adapter(Protocol):
    INFO: FormatInfo

    def sniff(self, head: bytes) -> bool: ...

    def parse(self, source: Source) -> Iterator[Record]: ...


class UnknownFormatError(ValueError):
    """No adapter recognised a file; the message names the formats tried."""


def _load() -> list[ModuleType]:
    from . import (
        anthropic,
        cassette,
        claude_code,
        codex,
        events,
        gemini_cli,
        hook_log,
        mcp,
        openai_chat,
        openai_responses,
        openhands,
        otel,
        swe_agent,
    )

    # Chat-shaped formats last: their sniffs are the most general.
    return [
        claude_code,
        hook_log,
        codex,
        mcp,
        otel,
        cassette,
        gemini_cli,
        openhands,
        swe_agent,
        openai_responses,
        anthropic,
        openai_chat,
        events,
    ]


ADAPTERS: list[ModuleType] = _load()


def names() -> list[str]:
    return [module.INFO.name for module in ADAPTERS]


def get(name: str) -> ModuleType:
    for module in ADAPTERS:
        if module.INFO.name == name:
            return module
    raise UnknownFormatError(f"unknown format {name!r}; known formats: {', '.join(names())}")


def detect(head: bytes, name: str) -> ModuleType:
    for module in ADAPTERS:
        if module.INFO.name != "events" and module.sniff(head):
            return module
    if get("events").sniff(head):
        return get("events")
    raise UnknownFormatError(f"{name}: not a recognised transcript (tried: {', '.join(names())})")
