"""Small pieces every adapter needs, so each format module stays about its format."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from ..core.canonical import JSONInputError, call_digest, parse_arguments, parse_json
from ..core.records import BadRecord, Record, ToolCall, Usage, line_too_long
from ..readers.reader import TOO_LONG, Source, UnreadableInputError
from ._sniff import WHITESPACE, head_text

__all__ = [
    "CallLedger",
    "RecentIds",
    "TurnUsage",
    "file_calls",
    "file_session",
    "fill_codex_usage",
    "json_path",
    "load_json_line",
    "make_call",
    "never_raises",
    "parse_arguments",
    "read_values",
    "split_input",
    "tokens",
    "values_calls",
]


def load_json_line(raw: bytes) -> tuple[Any, str | None]:
    """Parse one line; return (value, None) or (None, a message that quotes nothing)."""
    try:
        return parse_json(raw), None
    except JSONInputError as exc:
        return None, str(exc)


def json_path(*parts: str | int) -> str:
    """A JSONPath-like locator such as ``$.messages[3].tool_calls[0]``."""
    out = ["$"]
    for part in parts:
        out.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(out)


def file_session(source: Source) -> str:
    """The session key of formats that have no session id: the file's name as given."""
    return source.name


def never_raises(parse: Callable[[Source], Iterator[Record]]) -> Callable[..., Iterator[Record]]:
    """Turn an unexpected exception into a final BadRecord: an adapter never raises on input.

    I/O failures (``UnreadableInputError``) still propagate: the command reports
    those per file. The message names the exception class only, never input.
    """

    @functools.wraps(parse)
    def wrapper(source: Source) -> Iterator[Record]:
        try:
            yield from parse(source)
        except UnreadableInputError:
            raise
        except Exception as exc:  # noqa: BLE001 - the safety net is the point
            yield BadRecord(f"could not read the rest of the input ({exc.__class__.__name__})")

    return wrapper


def _document_error(data: bytes) -> BadRecord:
    """A located error for a document that is not JSON (line from the decoder)."""
    try:
        parse_json(data)
    except JSONInputError as exc:
        message = str(exc)
    else:  # pragma: no cover - only called on failure
        message = "not valid JSON"
    line = None
    try:
        json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        line = exc.lineno
        message = str(
            JSONInputError(f"not valid JSON: {exc.msg[:1].lower() + exc.msg[1:]}", exc.colno)
        )
    except (UnicodeDecodeError, ValueError, RecursionError):
        pass
    return BadRecord(message, line)


def _is_object(raw: bytes) -> bool:
    if not raw.lstrip(WHITESPACE).startswith(b"{"):
        return False
    try:
        return isinstance(parse_json(raw), dict)
    except JSONInputError:
        return False


def _first_line_is_object(head: bytes) -> bool:
    body = head_text(head)
    end = body.find(b"\n")
    return end >= 0 and bool(body[end:].strip()) and _is_object(body[:end])


def _lines_values(lines: Iterator[tuple[int, bytes | None]], limit: int) -> Iterator[Any]:
    for number, raw in lines:
        if raw is TOO_LONG:
            yield line_too_long(number, limit)
            continue
        try:
            yield number, parse_json(raw)
        except JSONInputError as exc:
            yield BadRecord(str(exc), number)


def _split_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    for number, raw in enumerate(data.split(b"\n"), 1):
        raw = raw.rstrip(b"\r")
        if raw.strip():
            yield number, raw


def read_values(source: Source) -> Iterator[tuple[int | None, Any] | BadRecord]:
    """The JSON values of a file that is one JSON document or JSON lines.

    Yields ``(line, value)`` with ``line`` None for a whole document, or a
    BadRecord for a line or document that is not JSON. JSON lines are streamed
    when the first line is a whole object; a document is read whole.
    """
    head = source.head()
    if _first_line_is_object(head):
        yield from _lines_values(source.lines(), source.max_line_bytes)
        return
    data = source.read_all()
    if not data.strip():
        return
    try:
        value = parse_json(data)
    except JSONInputError:
        pass
    else:  # located by JSON path: a line number would say nothing in a one-line file
        yield None, value
        return
    lines = list(_split_lines(data))
    if len(lines) > 1 and _is_object(lines[0][1]):
        # JSON lines whose first line is longer than the sniff window.
        yield from _lines_values(iter(lines), len(data))
        return
    yield _document_error(data)


def values_calls(
    source: Source, value_calls: Callable[[Any, int | None], Iterator[Record]]
) -> Iterator[Record]:
    """``read_values`` with each value's calls in its place; a BadRecord passes through."""
    for item in read_values(source):
        if isinstance(item, BadRecord):
            yield item
        else:
            line, value = item
            yield from value_calls(value, line)


def file_calls(
    source: Source,
    value_calls: Callable[[Any, CallLedger, str, int | None], Iterator[Record]],
) -> Iterator[Record]:
    """``values_calls`` for a file that is one session: one ledger for all its values."""
    session = file_session(source)
    ledger = CallLedger()
    ledger.user_turns = source.user_turns
    return values_calls(source, lambda value, line: value_calls(value, ledger, session, line))


class CallLedger:
    """The call ids a file has used: a call recorded twice is emitted once.

    ``admit`` answers whether to emit a call and with which id. The same id with
    the same tool and arguments is the same call seen again (skipped when
    ``skip_repeats``); an id reused for a different call is no identity, so the
    call is emitted without it (else the brake would take it for a re-delivery).

    ``user_turns``: the reader wants ``UserTurn`` records (``Source.user_turns``);
    ``spoke`` says whether a user message is new (not a repeated history).
    """

    def __init__(self, skip_repeats: bool = True) -> None:
        self.skip_repeats = skip_repeats
        self._ids: dict[Any, bytes | None] = {}
        self._answered: set[str] = set()
        self.user_turns = False
        self._spoken = -1  # the furthest position in a message list of a user turn reported

    def spoke(self, parts: tuple[str | int, ...]) -> bool:
        """Whether the user message located at ``parts`` is a new user turn. A message in a
        list is new only past the furthest position already reported: a request log
        repeats the conversation from its start, and its earlier user messages are the
        same ones again. A message on its own (a line of its own) is always new."""
        position = parts[-1] if parts else None
        if not isinstance(position, int):
            return True
        if position <= self._spoken:
            return False
        self._spoken = position
        return True

    def answered(self, call_id: str) -> bool:
        """True when a result for ``call_id`` was already emitted (a request log repeats
        the conversation, results too); otherwise remember it and return False."""
        if call_id in self._answered:
            return True
        self._answered.add(call_id)
        return False

    def admit(self, call_id: Any, tool: str, args: Any) -> tuple[bool, Any]:
        if call_id is None or call_id == "":
            return True, None
        if isinstance(call_id, bool) or not isinstance(call_id, (str, int)):
            return True, None
        try:
            digest: bytes | None = call_digest(tool, args)
        except (JSONInputError, TypeError, ValueError):
            digest = None
        if call_id not in self._ids:
            self._ids[call_id] = digest
            return True, call_id
        if self.skip_repeats and digest is not None and self._ids[call_id] == digest:
            return False, None
        return True, None


def make_call(
    ledger: CallLedger,
    tool: Any,
    raw_args: Any,
    session: str,
    call_id: Any,
    line: int | None,
    path: str | None,
    *,
    raw_string: bool = False,
) -> Record | None:
    """One located ToolCall (or BadRecord), or None when it repeats an earlier record."""
    if not isinstance(tool, str) or not tool:
        what = "missing" if tool is None else "not a non-empty string"
        return BadRecord(f"tool name {what}", line, path)
    if raw_string and isinstance(raw_args, str):
        args, unparsed = raw_args, False
    else:
        args, unparsed = parse_arguments(raw_args)
    emit, call_id = ledger.admit(call_id, tool, args)
    if not emit:
        return None
    return ToolCall(tool, args, session, call_id, line, path, unparsed)


class RecentIds:
    """A bounded set of recently seen ids: de-duplication in constant memory.

    Formats that record one call more than once do so close together (the same
    response split over lines, a log written twice), so remembering the last
    few thousand ids is enough and a long live session never grows memory.
    Two generations of plain dicts of ``size`` ids each (an id seen again moves
    to the young one): every id among the last ``size`` looked up is remembered,
    as with an LRU of that size, for no ordered bookkeeping on each look-up.
    """

    def __init__(self, size: int = 8192) -> None:
        self._ids: dict[Hashable, None] = {}
        self._older: dict[Hashable, None] = {}
        self._size = size

    def seen(self, key: Hashable) -> bool:
        """True if ``key`` was seen before; otherwise remember it and return False."""
        ids = self._ids
        if key in ids:
            return True
        found = key in self._older
        ids[key] = None  # new, or back from the older generation
        if len(ids) >= self._size:
            self._older, self._ids = ids, {}
        return found


def tokens(value: Any) -> int | None:
    """A token count as recorded: a non-negative integer, else None (not recorded, never 0)."""
    if value.__class__ is int and value >= 0:
        return value
    return None


def split_input(usage: Usage, total_input: int | None, cached: int | None) -> None:
    """Set the fresh input and the cache read from an OpenAI-style input count, which
    includes its cached part (without the total, or with a cached part larger than
    it, the fresh input is left unset)."""
    if total_input is not None and cached is not None and cached <= total_input:
        usage.input_tokens = total_input - cached
    elif cached is None:
        usage.input_tokens = total_input
    usage.cache_read_tokens = cached


def fill_codex_usage(usage: Usage, figures: dict[str, Any]) -> None:
    """Set a turn's figures from the Codex CLI's counts, named alike in the rollout's
    ``token_count`` and in ``codex exec``'s ``turn.completed``."""
    input_tokens = tokens(figures.get("input_tokens"))
    split_input(usage, input_tokens, tokens(figures.get("cached_input_tokens")))
    usage.output_tokens = tokens(figures.get("output_tokens"))
    usage.reasoning_tokens = tokens(figures.get("reasoning_output_tokens"))


_FIGURES = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


class TurnUsage:
    """The turns a file has reported usage for, so each turn is reported once.

    Some formats write one turn's usage more than once, with figures that grow
    (Claude Code writes a message over several lines, each with the usage known
    when it was written: the output count of the last line is the final one).
    The first sighting is reported, before the turn's calls; a later one raises
    the figures of that same ``Usage`` object to the larger values instead of
    being reported again, so a consumer reads a turn's figures when the
    session's next ``Usage`` arrives or the input ends. Bounded (the last ``size``
    turns at most, half of them at least) like ``RecentIds``: repeats come close
    together.
    """

    def __init__(self, size: int = 8192) -> None:
        # Two generations of plain dicts of ``size // 2`` turns each: cheaper than an
        # OrderedDict's bookkeeping on every assistant line.
        self._turns: dict[Hashable, Usage] = {}
        self._older: dict[Hashable, Usage] = {}
        self._size = max(size // 2, 1)

    def get(self, key: Hashable) -> Usage | None:
        """The ``Usage`` already reported for turn ``key``, if remembered."""
        earlier = self._turns.get(key)
        if earlier is None and self._older:
            earlier = self._older.get(key)
        return earlier

    def remember(self, key: Hashable, usage: Usage) -> None:
        """``usage`` is the first of turn ``key``: report it, and merge later ones in."""
        self._turns[key] = usage
        if len(self._turns) >= self._size:
            self._older, self._turns = self._turns, {}

    def first(self, key: Hashable, usage: Usage) -> bool:
        """True when ``usage`` is the first of turn ``key`` (report it); else merge it in."""
        earlier = self.get(key)
        if earlier is None:
            self.remember(key, usage)
            return True
        for name in _FIGURES:
            value = getattr(usage, name)
            if value is not None:
                old = getattr(earlier, name)
                if old is None or value > old:
                    setattr(earlier, name, value)
        return False
