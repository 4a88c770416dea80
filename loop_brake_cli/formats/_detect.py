"""Is an input in the format it is read as? Said once per input, never silently wrong.

A format given with ``--format`` is trusted for reading, but every input is
also sniffed: when its head looks like another format, or the format read finds
no tool call in content that is not blank, the caller says so once (``looks
like a claude-code transcript, not codex; use --format claude-code``) and counts
the input as unreadable. ``filter`` without ``--format`` reads the format the
head shows instead of events (``FormatCheck.other``).

A live stream (a pipe, a terminal) is decided from its first lines: ``peek``
waits for one complete non-blank line, never for the whole 64 KiB head, so the
first verdict is not held back. The messages name formats and files only,
never content.

``not_a_transcript`` knows the files agents keep beside their transcripts
(Gemini CLI's ``logs.json``, its prompts only; Cline's and Roo Code's
``task_metadata.json``, and a task's ``ui_messages.json`` when its
``api_conversation_history.json`` is beside it, whose reader takes the usage from it),
which a directory replay skips without a word. A task's ``ui_messages.json`` named on
the command line with its history beside is skipped with one line (the folder is one
transcript, read once), unless a ``--format`` is given.
"""

from __future__ import annotations

import os
import re
import stat
from types import ModuleType
from typing import Any

from ..readers.reader import CHUNK_SIZE, JSON_WHITESPACE, Source
from ._sniff import head_text

__all__ = [
    "Choice",
    "FormatCheck",
    "choose",
    "is_live",
    "not_a_transcript",
    "peek",
    "reads",
    "rereadable",
    "zero_calls",
]


def is_live(source: Source) -> bool:
    """A pipe, a terminal or a socket: reading ahead could wait for the agent."""
    raw = source.underlying or source.stream
    try:
        mode = os.fstat(raw.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # no descriptor (an in-memory stream)
        return False
    return not stat.S_ISREG(mode)


def _has_complete_line(data: bytes) -> bool:
    cut = data.rfind(b"\n")
    return cut >= 0 and bool(data[:cut].strip(JSON_WHITESPACE))


def peek(source: Source) -> bytes:
    """The head to sniff, left in the source for the reader.

    A file gives its first 64 KiB. A live stream gives what has arrived up to its
    first complete, non-blank line (and only complete lines): the reader has to
    wait for that line anyway before its first verdict.
    """
    if not is_live(source):
        return source.head()
    while not _has_complete_line(source.head_bytes) and len(source.head_bytes) < CHUNK_SIZE:
        held = len(source.head_bytes)
        source.head(held + 1)  # one read of what is there (up to held + 1 bytes)
        if len(source.head_bytes) == held:  # end of input: what came is all there is
            return source.head_bytes
    head = source.head_bytes
    return head[: head.rfind(b"\n") + 1] if _has_complete_line(head) else head


def _named(name: str) -> str:
    if name == "events":
        return "tool-call events"
    return f"{'an' if name[:1] in 'aeio' else 'a'} {name} transcript"


def _read_as(name: str) -> str:
    return "tool-call events" if name == "events" else name


_UNDETECTED: Any = object()
"""``FormatCheck._detected`` until ``detected()`` is first asked."""


class FormatCheck:
    """One input read as a given format: what to say about it, at most once."""

    __slots__ = ("adapter", "head", "said", "path", "_detected")

    def __init__(
        self, adapter: ModuleType, head: bytes, said: bool = False, path: str | None = None
    ) -> None:
        self.adapter = adapter
        self.head = head
        self.said = said
        self.path = path  # a regular file that can be read again to check advice; else None
        self._detected: ModuleType | None = _UNDETECTED

    @property
    def name(self) -> str:
        return str(self.adapter.INFO.name)

    def detected(self) -> ModuleType | None:
        """The format the head looks like (None: none), computed once and only if asked."""
        if self._detected is _UNDETECTED:
            from . import detect

            try:
                self._detected = detect(self.head, "")
            except Exception:  # no format (UnknownFormatError), or a sniff's bug: no opinion
                self._detected = None
        return self._detected

    def _sniffs(self) -> bool:
        try:
            return bool(self.adapter.sniff(self.head))
        except Exception:
            return False

    def other(self) -> ModuleType | None:
        """The format the head shows instead of this one: None when the head is blank,
        sniffs as this format (one parse of the first line for events), or is of no
        known format."""
        if not head_text(self.head) or self._sniffs():
            return None
        other = self.detected()
        return None if other is self.adapter else other

    def mismatch(self) -> str | None:
        """Before reading: the head looks like another format (and not like this one)."""
        if self.said:
            return None
        other = self.other()
        if other is None:
            return None
        self.said = True
        found = other.INFO.name
        said = f"looks like {_named(found)}, not {_read_as(self.name)}"
        if not reads(other, self.path):
            return f"{said} (but {found} reads no tool call from it either)"
        return f"{said}; use --format {found}"

    def nothing_read(self) -> str | None:
        """After reading: no tool call came out of content that is not blank.

        Silent when the head is this format's own (a transcript without tool calls)."""
        if self.said or not head_text(self.head):
            return None
        other = self.detected()
        if other is self.adapter:
            return None
        self.said = True
        read_as = _read_as(self.name)
        if other is None:
            return f"no tool call read as {read_as}, and it is not a format loop-brake knows"
        found = other.INFO.name
        if not reads(other, self.path):
            return (
                f"no tool call read as {read_as}; it looks like {_named(found)}, "
                f"but {found} reads no tool call from it either"
            )
        return (
            f"no tool call read as {read_as}; it looks like {_named(found)}: use --format {found}"
        )


# A model's message, as the chat-shaped formats and the agents' transcripts mark it (once
# each: a Claude Code line's ``"type": "assistant"`` repeats its message's role).
_ASSISTANT = re.compile(rb'"role"\s*:\s*"(?:assistant|model)"|"type"\s*:\s*"gemini"')


def zero_calls(name: str, path: str | None, model_turns: int = 0) -> str:
    """What to say of an input read as format ``name`` that gave no tool call (issue 39:
    no silent zero): how many assistant messages it holds (``model_turns`` as the adapter
    counted them, else the model-message markers of the file at ``path``, read again),
    or that nothing in it is one. Names the format, never content."""
    turns = model_turns or _assistant_messages(path)
    read_as = _read_as(name)
    if turns:
        plural = "s" if turns != 1 else ""
        return f"no tool call in its {turns} assistant message{plural} (read as {read_as})"
    return f"no tool call and no assistant message (read as {read_as})"


def _assistant_messages(path: str | None) -> int:
    """How many model-message markers the file at ``path`` holds (0: none, or it cannot be
    read again: a live stream)."""
    if path is None:
        return 0
    from ..readers.reader import open_source

    try:
        source = open_source(path)
    except OSError:
        return 0
    try:
        return len(_ASSISTANT.findall(source.read_all()))
    except Exception:  # an unreadable file says so elsewhere; here: no count
        return 0
    finally:
        source.close()


def reads(adapter: ModuleType, path: str | None) -> bool:
    """Whether ``--format <adapter>`` would read the file at ``path``: a tool call comes out,
    or at least no error (a transcript of this format without calls). Advice to use a
    format is given only then, so it never sends the user from one refusal to another
    (a SWE-agent demonstration was once said to be openai-chat, which could not read it).
    True when the input cannot be read again (a live stream: ``path`` None); never raises.
    """
    if path is None:
        return True
    from ..core.records import BadRecord, ToolCall
    from ..readers.reader import open_source
    from . import parse_records

    try:
        source = open_source(path)
    except OSError:
        return True
    try:
        for record in parse_records(adapter, source):
            if record.__class__ is ToolCall:
                return True
            if record.__class__ is BadRecord:
                return False
    except Exception:  # an unreadable file or an adapter's bug: no advice either way
        return False
    finally:
        source.close()
    return True


def rereadable(path: str) -> str | None:
    """``path`` when it names a regular file (it can be read again), else None."""
    try:
        return path if path != "-" and stat.S_ISREG(os.stat(path).st_mode) else None
    except (OSError, ValueError):
        return None


# Patterns, compiled (and cached by re) on the first logs.json seen, not at start-up.
_GEMINI_LOG_KEYS = (rb'"sessionId"\s*:', rb'"messageId"\s*:')
_GEMINI_TRANSCRIPT = rb'"toolCalls"\s*:'


_CLINE_UI = rb'^\[\s*\{\s*"ts"\s*:\s*\d+\s*,\s*"type"\s*:\s*"(?:say|ask)"'
_CLINE_HISTORY = "api_conversation_history.json"
_CLINE_METADATA = rb'^\{\s*"(?:files_in_context|model_usage|environment_history)"\s*:'


def not_a_transcript(head: bytes, path: str) -> str | None:
    """What a file is when it is one agents keep beside transcripts, else None."""
    base = os.path.basename(path).lower()
    if base.endswith(".gz"):
        base = base[:-3]
    if base in ("ui_messages.json", "task_metadata.json"):
        return _cline_companion(base, head_text(head), path)
    if base != "logs.json":
        return None
    body = head_text(head)
    if body.startswith(b"["):
        empty = body.rstrip(JSON_WHITESPACE) == b"[]"
        shaped = all(re.search(key, body) for key in _GEMINI_LOG_KEYS)
        if empty or (shaped and not re.search(_GEMINI_TRANSCRIPT, body)):
            return "Gemini CLI's prompt log (logs.json holds the user's prompts, no tool call)"
    return None


def _cline_companion(base: str, body: bytes, path: str) -> str | None:
    """Cline's and Roo Code's files beside a task's api_conversation_history.json: the UI
    log only where that history is there to read it with (alone, it is ``cline-ui``)."""
    if base == "ui_messages.json" and re.match(_CLINE_UI, body) and _history_beside(path):
        return (
            "a task's UI log, read with the api_conversation_history.json beside it "
            "(the task's calls; its usage from this file); --format cline-ui reads it alone"
        )
    if base == "task_metadata.json" and re.match(_CLINE_METADATA, body):
        return "Cline's task metadata (task_metadata.json, no tool call)"
    return None


def _is_ui_log(path: str) -> bool:
    base = os.path.basename(path).lower()
    return base.removesuffix(".gz") == "ui_messages.json"


def _history_beside(path: str) -> bool:
    try:
        return os.path.isfile(os.path.join(os.path.dirname(path), _CLINE_HISTORY))
    except (OSError, ValueError):
        return False


class Choice:
    """How to read one file: an adapter (and, when forced, its check), or why not.

    ``skip``: not a transcript, found in a directory: not read, named once on stderr
    (``quiet``: skipped without a word, a file agents keep beside their transcripts).
    ``error``: not a transcript, named on the command line (or ``--strict``): unreadable.
    """

    __slots__ = ("adapter", "check", "skip", "quiet", "error")

    def __init__(
        self,
        adapter: ModuleType | None = None,
        check: FormatCheck | None = None,
        skip: str | None = None,
        quiet: bool = False,
        error: str | None = None,
    ) -> None:
        self.adapter = adapter
        self.check = check
        self.skip = skip
        self.quiet = quiet
        self.error = error


def choose(
    head: bytes,
    path: str,
    format_name: str | None,
    in_directory: bool = False,
    strict: bool = False,
) -> Choice:
    """Decide how a file is read, from its head (see ``replay_file``)."""
    from . import UnknownFormatError, detect, get

    known = not_a_transcript(head, path)
    if known is not None and in_directory:
        return Choice(skip=known, quiet=True)
    if known is not None and format_name is None and _is_ui_log(path):
        return Choice(skip=known)  # named: said, not read twice (--format reads it alone)
    if format_name is not None:
        adapter = get(format_name)
        return Choice(adapter, FormatCheck(adapter, head, path=rereadable(path)))
    try:
        return Choice(detect(head, path))
    except UnknownFormatError as exc:
        if in_directory and not strict:
            return Choice(skip="not a transcript in any format loop-brake reads")
        message = str(exc).removeprefix(f"{path}: ")
        return Choice(error=f"{known}, not a transcript" if known else message)
