"""The registry of transcript formats: every adapter module is listed here, once.

Each adapter module has the same small interface:

* ``INFO``: a ``FormatInfo`` (name, description, whether it is line-based, the
  file name patterns a directory search picks up);
* ``sniff(head: bytes) -> bool``: does the start of a file look like this format;
* ``parse(source: Source) -> Iterator[Record]``: every tool call exactly once,
  in order, located by line or JSON path, with the results and the usage of
  each model turn the format records (``ToolResult``, ``Usage``: a turn's usage
  before the calls it produced; docs/formats.md). An adapter may leave the
  results out when ``source.results`` is False (``parse_records`` sets it so
  when nothing reads them), and yields a ``UserTurn`` where the user spoke
  only when ``source.user_turns`` is True. Line-based adapters read ``source.lines()`` so
  they stream (and work on ``tail -f``); document formats read
  ``source.read_all()``.

An adapter module is imported only when its format is named (``get``) or when
detection reaches its sniff, so ``filter`` on tool-call events loads the
``events`` adapter alone and a replay of a Claude Code transcript loads
``claude_code`` alone: start-up is paid on every small run (issue 12).
``ADAPTERS`` imports them all, for the callers that need every one.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from ..core.slotted import FrozenFields

if TYPE_CHECKING:
    from ..core.records import Record
    from ..readers.reader import Source

__all__ = [
    "ADAPTERS",
    "FORMATS",
    "FormatInfo",
    "UnknownFormatError",
    "detect",
    "get",
    "names",
    "parse_records",
]

FORMATS: dict[str, str] = {
    "claude-code": "claude_code",
    "claude-stream": "claude_stream",
    "claude-hooks": "hook_log",
    "codex": "codex",
    "codex-exec": "codex_exec",
    "mcp": "mcp",
    "otel": "otel",
    "cassette": "cassette",
    "gemini-cli": "gemini_cli",
    "gemini-stream": "gemini_stream",
    "opencode-run": "opencode_run",
    "openhands": "openhands",
    "swe-agent": "swe_agent",
    "mini-swe-agent": "mini_swe_agent",
    "cline": "cline",
    "roo-code": "roo_code",
    "cline-ui": "cline_ui",
    # Chat-shaped formats last: their sniffs are the most general.
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "openai-chat": "openai_chat",
    # Last of all: any line with a tool name looks like an event.
    "events": "events",
}
"""Format name (``INFO.name``) -> module in this package, in detection order."""


class FormatInfo(FrozenFields):
    __slots__ = ("name", "description", "line_based", "patterns")
    name: str
    description: str
    line_based: bool
    patterns: tuple[str, ...]

    def __init__(
        self,
        name: str,
        description: str,
        line_based: bool,
        patterns: tuple[str, ...] = ("*.jsonl", "*.json"),
    ) -> None:
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "description", description)
        _set(self, "line_based", line_based)
        _set(self, "patterns", patterns)


class Adapter(Protocol):
    INFO: FormatInfo

    def sniff(self, head: bytes) -> bool: ...

    def parse(self, source: Source) -> Iterator[Record]: ...


class UnknownFormatError(ValueError):
    """No adapter recognised a file; the message names the formats tried."""


def __getattr__(name: str) -> list[ModuleType]:
    """``ADAPTERS``: every adapter module, imported, in detection order."""
    if name == "ADAPTERS":
        return [get(format_name) for format_name in FORMATS]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def names() -> list[str]:
    return list(FORMATS)


def get(name: str) -> ModuleType:
    module = FORMATS.get(name)
    if module is None:
        raise UnknownFormatError(f"unknown format {name!r}; known formats: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{module}")


def parse_records(
    adapter: ModuleType, source: Source, results: bool = False, user_turns: bool = False
) -> Iterator[Record]:
    """The records of one source. ``results``: whether the run reads ``ToolResult``
    records (a policy's progress mode); without it they feed nothing, so an adapter may
    leave them out (``Source.results``: claude-code and codex do, and skip the lines
    that hold only results, most of a transcript's bytes). The event format's result
    lines are read only with ``results``, since elsewhere such a line is the error it
    was before result lines existed. ``user_turns``: whether it reads ``UserTurn``
    records (a policy's ``reset_on_user_turn``); adapters yield them only then
    (``Source.user_turns``), and so the event format reads its user lines."""
    source.results = results
    source.user_turns = user_turns
    if results and adapter.INFO.name == "events":
        return adapter.parse(source, results=True)
    return adapter.parse(source)


def detect(head: bytes, name: str) -> ModuleType:
    """The first format, in ``FORMATS`` order, whose sniff recognises ``head``; the
    adapters after it are not imported."""
    for format_name in FORMATS:
        module = get(format_name)
        if module.sniff(head):
            return module
    raise UnknownFormatError(f"{name}: not a recognised transcript (tried: {', '.join(names())})")
