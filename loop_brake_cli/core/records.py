"""The records that flow from adapters to the brake, and the verdict line schema.

Adapters yield ``ToolCall`` or ``BadRecord``, and where the format records them a
``ToolResult`` (what a call returned, for the progress mode of a policy) and
``Usage`` (what a model turn cost, for replay's waste figures), and a
``UserTurn`` (the user spoke: under a policy's ``reset_on_user_turn`` it ends the
session's streaks); consumers that do not use the last three pass over them. The
verdict line is the one JSON shape every command writes (filter, replay --verdicts,
hook --shadow, the proxy log). It carries the tool name, ids and the 12-hex prefix, never arguments.

A record names its session by a key (``session_key``, ``subagent_session_key``,
``DEFAULT_SESSION``): they live here, beside the records, so an adapter or a wire
decoder names a session without importing the brake.
"""

from __future__ import annotations

from .slotted import Fields
from .verdicts import CODE, PLUGIN, Verdict

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_SESSION",
    "BadRecord",
    "Record",
    "ToolCall",
    "ToolResult",
    "Usage",
    "UserTurn",
    "error_record",
    "line_too_long",
    "session_key",
    "subagent_session_key",
    "verdict_record",
]

DEFAULT_SESSION = "default"


def session_key(session_id: str | None = None, agent_id: str | None = None) -> str:
    """The explicit session id, else the agent id, else "default"."""
    if session_id is not None:
        return session_id
    if agent_id is not None:
        return agent_id
    return DEFAULT_SESSION


def subagent_session_key(session_id: str, agent_id: str | None) -> str:
    """A subagent's own streak: the parent session joined with the agent id."""
    return session_id if agent_id is None else f"{session_id}/{agent_id}"


class ToolCall(Fields):
    """One tool call as an adapter found it; ``line`` or ``path`` locates it."""

    __slots__ = ("tool", "args", "session", "call_id", "line", "path", "args_unparsed")

    def __init__(
        self,
        tool: str,
        args: Any,
        session: str,
        call_id: Any = None,
        line: int | None = None,
        path: str | None = None,
        args_unparsed: bool = False,
    ) -> None:
        self.tool = tool
        self.args = args
        self.session = session
        self.call_id = call_id
        self.line = line
        self.path = path
        self.args_unparsed = args_unparsed


class BadRecord(Fields):
    """Input that could not be read as a call; ``message`` never quotes the input."""

    __slots__ = ("message", "line", "path")

    def __init__(self, message: str, line: int | None = None, path: str | None = None) -> None:
        self.message = message
        self.line = line
        self.path = path


class ToolResult(Fields):
    """What a call returned: ``result`` is the raw JSON value, never written anywhere;
    the engine only hashes it. ``call_id`` pairs it with its call (None: the
    session's latest call). ``digest`` is set instead of ``result`` when the host
    hashed the result itself (``resultDigest``). ``error``: whether the call failed,
    where the input says so apart from the value (a hook's failure event, an
    event line's ``isError``, a transcript's exit code, failed status or error
    observation: each adapter's docstring says which); None: as
    ``progress.result_error`` reads the value."""

    __slots__ = ("session", "call_id", "result", "digest", "line", "path", "error")

    def __init__(
        self,
        session: str,
        call_id: Any = None,
        result: Any = None,
        digest: bytes | None = None,
        line: int | None = None,
        path: str | None = None,
        error: bool | None = None,
    ) -> None:
        self.session = session
        self.call_id = call_id
        self.result = result
        self.digest = digest
        self.line = line
        self.path = path
        self.error = error


class Usage(Fields):
    """The tokens one model turn spent, as the transcript recorded them (None: not
    recorded, never 0). ``turn`` names the turn (a message or response id) so an
    adapter that sees the same usage twice reports it once; the calls a turn
    produced are the session's calls between this record and the next ``Usage``
    of the session, which adapters ensure by yielding it before those calls."""

    __slots__ = (
        "session",
        "turn",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "line",
        "path",
    )

    def __init__(
        self,
        session: str,
        turn: str | None = None,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        reasoning_tokens: int | None = None,
        line: int | None = None,
        path: str | None = None,
    ) -> None:
        self.session = session
        self.turn = turn
        self.model = model
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cache_read_tokens = cache_read_tokens
        self.cache_write_tokens = cache_write_tokens
        self.reasoning_tokens = reasoning_tokens
        self.line = line
        self.path = path


class UserTurn(Fields):
    """The user spoke in ``session`` (a prompt, not a tool result carried in a user
    message). Nothing of what was said is kept: only where it was. Adapters yield
    it only when the reader asks (``Source.user_turns``, set under a policy with
    ``reset_on_user_turn``), so without one every consumer sees what it saw before."""

    __slots__ = ("session", "line", "path")

    def __init__(self, session: str, line: int | None = None, path: str | None = None) -> None:
        self.session = session
        self.line = line
        self.path = path


Record = ToolCall | BadRecord | ToolResult | Usage | UserTurn


def line_too_long(line: int, limit: int) -> BadRecord:
    """What every line reader reports for a line the reader skipped (``TOO_LONG``)."""
    return BadRecord(f"line longer than {limit} bytes", line)


def _locate(out: dict[str, Any], line: int | None, path: str | None, file: str | None) -> None:
    if file is not None:
        out["file"] = file
    if line is not None:
        out["line"] = line
    if path is not None:
        out["path"] = path


def verdict_record(call: ToolCall, verdict: Verdict, file: str | None = None) -> dict[str, Any]:
    """The verdict line for one call, keys in the documented order.

    Under a policy (``verdict.rule`` set) the line also says which rule decided and
    the limit that applied, and a stop is ``"verdict": "stop"``; without one the
    line is the seed's, byte for byte."""
    if verdict.rule is not None:
        return _policy_record(call, verdict, file)
    out: dict[str, Any] = {"verdict": "deny" if verdict.denied else "pass"}
    _call_fields(out, call, verdict, file)
    return _denial_fields(out, verdict)


def _policy_record(call: ToolCall, verdict: Verdict, file: str | None) -> dict[str, Any]:
    kind = "stop" if verdict.stop else "deny" if verdict.denied else "pass"
    out: dict[str, Any] = {"verdict": kind}
    _call_fields(out, call, verdict, file)
    out["rule"] = verdict.rule
    out["limit"] = verdict.limit
    if verdict.match is not None:
        out["match"] = verdict.match
    if verdict.policy_hash:  # hashed without the rule's args_ignore paths
        out["policyHash"] = True
    if verdict.exempt:
        out["exempt"] = True
    if verdict.progress:
        out["progress"] = True
        if verdict.denied and verdict.rule == "streak":
            out["identicalResults"] = verdict.identical_results
    if verdict.cycle:
        out["cycle"] = [{"toolName": tool, "hashPrefix": prefix} for tool, prefix in verdict.cycle]
        out["cycleRepeats"] = verdict.cycle_repeats
    if verdict.window:
        out["window"] = verdict.window
        out["seen"] = verdict.cycle_repeats
    elif verdict.rule == "same_error":
        out["errors"] = verdict.cycle_repeats
    elif verdict.rule == "same_result":
        out["identicalResults"] = verdict.cycle_repeats
    elif verdict.rule == "progress_max":
        out["identicalCalls"] = verdict.cycle_repeats
    if verdict.denials:
        out["denials"] = verdict.denials
    if verdict.warn_at is not None:
        out["warn"] = True
        out["warnAt"] = verdict.warn_at
    _denial_fields(out, verdict)
    if verdict.warn_at is not None:
        out["warning"] = verdict.warning
    return out


def _call_fields(out: dict[str, Any], call: ToolCall, verdict: Verdict, file: str | None) -> None:
    """Where the call was, which call, and its count: the fields every call's verdict line has."""
    _locate(out, call.line, call.path, file)
    out["toolName"] = verdict.tool_name
    out["sessionId"] = verdict.session_id
    if call.call_id is not None:
        out["callId"] = call.call_id
    out["count"] = verdict.count
    out["maxRepeats"] = verdict.max_repeats
    out["hashPrefix"] = verdict.hash_prefix


def _denial_fields(out: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    """The closing fields: ``duplicate``, then a denial's code, plugin and message."""
    if verdict.duplicate:
        out["duplicate"] = True
    if verdict.denied:
        out["code"] = CODE
        out["plugin"] = PLUGIN
        out["message"] = verdict.message
    return out


def error_record(bad: BadRecord, file: str | None = None) -> dict[str, Any]:
    """The error verdict line for input that was not a readable call."""
    out: dict[str, Any] = {"verdict": "error"}
    _locate(out, bad.line, bad.path, file)
    out["error"] = bad.message
    return out
