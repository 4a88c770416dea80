"""``loop-brake hook`` itself: stdin in, a verdict in each agent's dialect out.

This module parses its own few options instead of going through click, for two
reasons. Start-up: the hook runs before every tool call. And the exit code: a
usage error in click exits 2, which Claude Code, Codex and Gemini CLI all read
as "block this call", so a typo in a hook command would silently deny every
tool call with a usage message as the reason. Here a bad option or value is a
brake failure like any other: the call is allowed with one stderr line, or
denied with ``--fail-closed``.

The input is read by the agent's own decoder (``agents/``, detected unless
``--agent``), the one the hook-log reader ``formats/hook_log.py`` uses too, and
counted through a ``LoopBrake`` on the store (``streak.step``), so a replayed log
of hook inputs gets, call by call, the verdicts the live hook gave. A decoder's
BadRecord is a brake failure; an event that is not a pre-tool call is allowed
with no output.

A post-tool event (``PostToolUse``, ``AfterTool``, Cursor's ``postToolUse`` and
``afterMCPExecution``) decodes to the call's result. Under a policy that uses
progress its digest (``progress.result_digest`` with the policy's ignore
patterns; never the result) is recorded by ``LoopBrake.observe_result``
(``streak.result_step``); without one nothing is read or written. Either way
the answer is exit 0 with nothing on stdout: the call has run, there is
nothing to deny, and an agent reads a post-tool hook's stdout (a ``decision``
there would block the agent). A failure is one stderr line saying the result
was not recorded, even with ``--fail-closed``: a lost result only means the
call counts as the seed counts it.

A user-turn event (Claude Code's and Codex's ``UserPromptSubmit``, Gemini CLI's
``BeforeAgent``, Cursor's ``beforeSubmitPrompt``) decodes to a ``UserTurn``. Under
a policy with ``reset_on_user_turn`` the session's state is removed from the
store (``Store.reset``: every process sharing the store starts the session
over; ``streak``'s docstring says what ends); without one nothing is read or
written, as before. Either way the answer is exit 0 with nothing on stdout: a
user-turn hook's stdout is added to the model's context, and its exit 2 would
block the user's prompt. A failure is one stderr line saying the streaks were
not ended, even with ``--fail-closed``: the brake never refuses a prompt.

Exit codes: 0 (allow = no output, or the agent's warning field for a call a
policy's ``warn_at`` warns; deny = the agent's JSON on stdout), or 2
with the reason on stderr (every supported agent blocks the call on exit 2)
for a denial that cannot be answered in JSON: the agent cannot be told (a
``--fail-closed`` failure on unreadable input), or stdout cannot take the
answer (closed, ``/dev/full``, ``ulimit -f``; ``stdio``).
"""

from __future__ import annotations

import errno
import os
from types import ModuleType

from .. import agents
from ..core.brake import LoopBrake
from ..core.canonical import JSONInputError, parse_json
from ..core.limits import DEFAULT_MAX_REPEATS, InvalidMaxRepeatsError, resolve_max_repeats
from ..core.records import BadRecord, ToolCall, ToolResult, UserTurn
from ..core.verdicts import Verdict
from ..stores import Store, StoreError, open_store, store_target
from ..stores.base import DEFAULT_IDLE_TTL as DEFAULT_TTL
from ..stores.base import DEFAULT_LOCK_TIMEOUT, DEFAULT_MAX_SESSIONS
from .stdio import Streams

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any, BinaryIO, TextIO

__all__ = ["DEFAULT_MAX_INPUT_BYTES", "HELP", "main", "parse_duration"]

PROG = "loop-brake hook"
DEFAULT_MAX_INPUT_BYTES = 8 * 1024 * 1024  # as filter's --max-line-bytes

HELP = f"""\
Usage: {PROG} [OPTIONS]
       {PROG} install {"|".join(agents.installable())} [--project|--user] [--dry-run]
       {PROG} uninstall {"|".join(agents.installable())} [--project|--user] [--dry-run]

  Run before each tool call by a coding agent: read the call (JSON on stdin),
  count it in the on-disk streak of its session, and deny the call that brings
  a streak of identical calls to maxRepeats. Allow = exit 0, nothing printed;
  deny = exit 0 with the agent's documented deny JSON. Under a policy with
  progress = true it also takes the post-tool event (the call's result): the
  result's digest is recorded, nothing is printed, nothing is denied. A call
  a policy's warn_at warns runs: exit 0 with the agent's warning field
  (docs/policies.md), nothing for an agent without one.

Options:
  --agent [{"|".join(agents.names())}]
                          Input/output dialect (default: detected).
  -m, --max-repeats N     Deny the call that brings a streak to N (default:
                          $DSH_LOOP_BRAKE_MAX_REPEATS, else 3).
  --store URL             Where streaks live: a path or sqlite:///path (one
                          machine), or redis://HOST:PORT/DB, rediss://...
                          (TLS), unix:///PATH (one Redis or Valkey server
                          shared by a fleet; the redis extra). Default:
                          $LOOP_BRAKE_STORE, else the --state file.
  --state PATH            SQLite state file (default: $LOOP_BRAKE_STATE, else
                          ${{XDG_STATE_HOME:-~/.local/state}}/loop-brake/state.db).
  --ttl, --idle-ttl DURATION
                          Sessions idle longer than this start over and are
                          pruned or expire (default 24h; 90s, 30m, 24h, 7d or
                          seconds).
  --max-sessions N        Keep at most N sessions, oldest dropped first
                          (default {DEFAULT_MAX_SESSIONS}; SQLite only).
  --lock-timeout SECONDS  Wait this long for the store's lock (default
                          {DEFAULT_LOCK_TIMEOUT:g}).
  --max-input-bytes N     A longer hook input is a brake failure; no more
                          is read (default {DEFAULT_MAX_INPUT_BYTES}, 8 MiB).
  --policy FILE           Policy file (per-tool limits, exemptions, cycles,
                          stop; default: $LOOP_BRAKE_POLICY, else
                          .loop-brake.toml or pyproject.toml upward, else
                          ~/.config/loop-brake/policy.toml). A bad file is a
                          brake failure (allowed, or denied with
                          --fail-closed). A stop is answered in the agent's
                          own stop form where it has one.
  --fail-closed           If the brake itself fails (bad input or option,
                          store locked, disk full, read-only, not a store,
                          Redis unreachable or slower than 0.2 s), deny the
                          call instead of allowing it.
  --shadow                Never deny: append the verdict a denial would have
                          been to --log and let the call run.
  --log FILE              Append one verdict JSON line per denied (or, with
                          --shadow, would-be denied) or warned call, and one
                          error line each time the brake fails open.
  --session KEY           Count every call under session KEY (a subagent's
                          under KEY/<agent id>) instead of the agent's own
                          session id (what `loop-brake run --session` passes).
  -h, --help              Show this message and exit.

  Failures never print a traceback: one line on stderr, and the call is
  allowed (or denied with --fail-closed); the first in a session also says
  "loop brake is off for this session" in the agent's systemMessage. A
  denial that cannot be written to stdout exits 2 (agents block the call)
  with the reason on stderr.
  Arguments are never printed or stored, only the tool name, ids and a
  12-hex hash prefix.
"""

_VALUE_OPTIONS = {
    "--agent": "agent",
    "-m": "max_repeats",
    "--max-repeats": "max_repeats",
    "--state": "state",
    "--store": "store",
    "--ttl": "ttl",
    "--idle-ttl": "ttl",
    "--max-sessions": "max_sessions",
    "--lock-timeout": "lock_timeout",
    "--max-input-bytes": "max_input_bytes",
    "--log": "log",
    "--policy": "policy",
    "--session": "session",
}
_FLAG_OPTIONS = {"--fail-closed": "fail_closed", "--shadow": "shadow"}
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``24h`` or ``7d``; must be positive."""
    raw = text.strip().lower()
    scale = 1
    if raw[-1:] in _UNITS:
        scale = _UNITS[raw[-1]]
        raw = raw[:-1]
    try:
        value = float(raw) * scale
    except ValueError:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 24h, 7d)") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"duration must be positive: {text!r}")
    return value


def _parse_args(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    opts: dict[str, Any] = {"fail_closed": False, "shadow": False}
    errors: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in ("-h", "--help"):
            opts["help"] = True
            continue
        if arg in _FLAG_OPTIONS:
            opts[_FLAG_OPTIONS[arg]] = True
            continue
        name, eq, value = arg.partition("=")
        if name in _VALUE_OPTIONS and eq:
            opts[_VALUE_OPTIONS[name]] = value
            continue
        if arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--"):
            opts["max_repeats"] = arg[2:]
            continue
        if arg in _VALUE_OPTIONS:
            if i >= len(argv):
                errors.append(f"option {arg} needs a value")
                continue
            opts[_VALUE_OPTIONS[arg]] = argv[i]
            i += 1
            continue
        errors.append(f"unknown option or argument {arg!r}")
    agent = opts.get("agent")
    if agent is not None:
        try:
            opts["agent"] = agents.get(agent)
        except agents.UnknownAgentError:
            errors.append(f"--agent must be one of {', '.join(agents.names())}, not {agent!r}")
            opts["agent"] = None
    for key, label, convert in (
        ("ttl", "--ttl", parse_duration),
        ("max_sessions", "--max-sessions", _positive_int),
        ("lock_timeout", "--lock-timeout", _non_negative_float),
        ("max_input_bytes", "--max-input-bytes", _positive_int),
    ):
        if key in opts:
            try:
                opts[key] = convert(opts[key])
            except ValueError as exc:
                errors.append(f"{label}: {exc}")
                del opts[key]
    return opts, errors


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not an integer: {text!r}") from None
    if value < 1:
        raise ValueError(f"must be at least 1, not {value}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise ValueError(f"must be zero or more seconds, not {text!r}")
    return value


def _explicit_max_repeats(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidMaxRepeatsError(
            "--max-repeats", raw, "must be an integer of at least 1"
        ) from None


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Hook:
    def __init__(self, opts: dict[str, Any], streams: Streams) -> None:
        self.opts = opts
        self.streams = streams
        self.result = False  # the input is a post-tool event: never denied
        self.user_turn = False  # the input is a user-turn event: never denied either
        self.store: Store | None = None
        self.payload: Any = None

    def warn(self, message: str) -> None:
        from ..render.visible import visible

        self.streams.err(f"{PROG}: {visible(message, lines=True)}\n")

    def answer(self, agent: ModuleType, message: str, stop: bool = False) -> str | None:
        """The agent's deny JSON (or its stop form) on stdout: None once written, else why
        it was not."""
        from .answer import answer_line

        output = agent.stop_output(message) if stop else agent.deny_output(message)
        try:
            self.streams.out(answer_line(output))
        except OSError as exc:
            return exc.strerror or exc.__class__.__name__
        return None

    def tell(self, agent: ModuleType, warning: str) -> None:
        """A warned call's answer (``agent.warn_output``); the call runs whatever happens:
        an agent without a warning form gets nothing, a failed write one stderr line."""
        from .answer import answer_line

        output = agent.warn_output(warning)
        if output is None:
            return
        try:
            self.streams.out(answer_line(output))
        except OSError as exc:
            self.warn(f"{_one_line(warning)} (not written: {exc.strerror or exc}; allowed)")

    def deny(self, agent: ModuleType, message: str, stop: bool = False) -> int:
        """Deny the call: the JSON answer and exit 0, or exit 2 (every supported agent
        blocks on 2) with the message on stderr when stdout cannot take the answer."""
        why = self.answer(agent, message, stop)
        if why is None:
            return 0
        self.warn(f"{_one_line(message)} (the deny answer could not be written: {why}; exit 2)")
        return 2

    def fail(self, reason: str, agent: ModuleType | None) -> int:
        """The failure policy: allow with a stderr line, or deny with --fail-closed
        (a post-tool event is never denied: its call has run; nor is a user's prompt)."""
        if self.result:
            return self.not_recorded(reason)
        if self.user_turn:
            return self.not_ended(reason)
        if not self.opts["fail_closed"] or self.opts["shadow"]:
            self.warn(f"{reason}; the call was allowed (the brake fails open)")
            self.log_error(reason)
            self.notify(agent, reason)
            return 0
        if agent is None:
            why: str | None = "the agent cannot be told"
        else:
            why = self.answer(
                agent,
                f"loop brake: the brake could not decide ({reason}); "
                "the call was denied because the hook runs with --fail-closed.",
            )
        if why is None:
            self.warn(f"{reason}; the call was denied (--fail-closed)")
            return 0
        self.warn(f"{reason}; the call was denied (--fail-closed: exit 2, {why})")
        return 2

    def open_store(self) -> Store:
        """The store ``--store``/``--state``/``$LOOP_BRAKE_STORE`` name (``stores``); a
        bad URL is a StoreError, the brake's failure like any other."""
        opts = self.opts
        try:
            self.store = open_store(
                store_target(opts.get("store"), opts.get("state")),
                idle_ttl=opts.get("ttl", DEFAULT_TTL),
                max_sessions=opts.get("max_sessions", DEFAULT_MAX_SESSIONS),
                lock_timeout=opts.get("lock_timeout", DEFAULT_LOCK_TIMEOUT),
                warn=self.warn,
                short_lived=True,  # one decision, then exit: no redis-py import (stores/resp.py)
            )
        except ValueError as exc:
            raise StoreError(f"--store: {exc}") from None
        return self.store

    def brake(self, max_repeats: int, policy: Any) -> LoopBrake:
        """The brake this decision counts through: the store the options name, ``policy``
        (an empty one is none), and the digest it counts on (``LoopBrake.digest``). A
        store failure is the brake's one rule (``LoopBrake.uncounted``: the call is not
        counted); the hook answers it in its own words (``fail``, with
        ``LoopBrake.failure``), so the brake's own line is not said."""
        return LoopBrake(max_repeats, policy=policy, store=self.open_store(), warn=_quiet)

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()

    def log(self, call: ToolCall, verdict: Verdict) -> None:
        path = self.opts.get("log")
        if not path:
            return
        from ..core.records import verdict_record
        from ..readers.output import json_line

        try:
            # Never through a symlink: the log must not be a way to append to another file.
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(path, flags, 0o600)
            try:
                os.write(fd, json_line(verdict_record(call, verdict)))
            finally:
                os.close(fd)
        except OSError as exc:
            reason = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or exc
            self.warn(f"could not append to --log {path}: {reason}")

    def notify(self, agent: ModuleType | None, reason: str) -> None:
        """The fail-open notice in the agent's user-visible field, once per session
        (``hook/notice.py``); the call stays allowed whatever happens here."""
        if agent is None:
            return
        from ..render.visible import visible
        from .notice import MESSAGE, first_notice

        output = agent.notice_output(MESSAGE.format(reason=visible(_one_line(reason))))
        if output is None:
            return
        payload = self.payload if isinstance(self.payload, dict) else {}
        session = payload.get("conversation_id" if agent.NAME == "cursor" else "session_id")
        if not first_notice(agent.NAME, session):
            return
        from .answer import answer_line

        try:
            self.streams.out(answer_line(output))
        except OSError:
            pass  # the stderr line is said already

    def log_error(self, reason: str) -> None:
        """One error line in ``--log`` for a call the brake could not judge."""
        path = self.opts.get("log")
        if not path:
            return
        from ..readers.output import json_line

        try:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(path, flags, 0o600)
            try:
                os.write(fd, json_line({"verdict": "error", "error": reason}))
            finally:
                os.close(fd)
        except OSError:
            pass  # the stderr line is said already

    def read(
        self, data: bytes
    ) -> tuple[ModuleType | None, ToolCall | ToolResult | UserTurn | BadRecord | None]:
        """The agent (None if it cannot be told) and the call its decoder reads."""
        forced = self.opts.get("agent")
        if not data.strip():
            return forced, BadRecord("hook input is empty (expected one JSON object on stdin)")
        try:
            payload = parse_json(data)
        except JSONInputError as exc:
            return forced, BadRecord(f"hook input is {exc}")
        self.payload = payload
        agent = forced or (agents.detect(payload) if isinstance(payload, dict) else None)
        if agent is None:
            return None, BadRecord("hook input is not a JSON object")
        session = self.opts.get("session")
        if session is not None and isinstance(payload, dict):
            payload["conversation_id" if agent.NAME == "cursor" else "session_id"] = session
        call = agent.decode(payload)
        if isinstance(call, BadRecord):
            return agent, BadRecord(f"hook input: {call.message}")
        return agent, call

    def run(self, data: bytes, errors: list[str]) -> int:
        opts = self.opts
        agent, call = self.read(data)
        if isinstance(call, BadRecord):
            return self.fail(call.message, agent)
        if call is None:
            return 0  # not a pre-tool event: nothing to count
        if isinstance(call, ToolResult):
            self.result = True
            return self.record_result(call, errors)
        if isinstance(call, UserTurn):
            self.user_turn = True
            return self.end_turn(call, errors)
        if errors:
            return self.fail("; ".join(errors), agent)
        try:
            max_repeats, _ = resolve_max_repeats(_explicit_max_repeats(opts.get("max_repeats")))
        except InvalidMaxRepeatsError as exc:
            return self.fail(str(exc), agent)
        from ..core.policy.discover import discover_policy

        try:
            policy = discover_policy(opts.get("policy"))
        except ValueError as exc:  # policy.PolicyError, not imported unless a file exists
            return self.fail(f"unusable policy: {'; '.join(str(exc).splitlines())}", agent)
        try:
            brake = self.brake(max_repeats, policy)
        except StoreError as exc:
            return self.fail(str(exc), agent)
        try:
            try:
                digest = brake.digest(call.tool, call.args)  # a policy hash under args_ignore
            except (ValueError, TypeError) as exc:
                return self.fail(f"tool_input cannot be hashed ({exc})", agent)
            verdict = brake.observe(call.session, call.tool, digest, call.call_id)
        finally:
            self.close_store()
        if verdict.rule == "store":  # the store failed: the call was not counted
            return self.fail(brake.failure or "the store failed", agent)
        if not verdict.denied:
            if verdict.warn_at is not None:  # a policy's warn_at: the call runs, told
                self.log(call, verdict)
                if not opts["shadow"]:
                    self.tell(agent, verdict.warning)  # type: ignore[arg-type]
            return 0
        self.log(call, verdict)
        if opts["shadow"]:
            return 0
        return self.deny(agent, verdict.message, verdict.stop)

    def record_result(self, result: ToolResult, errors: list[str]) -> int:
        """A post-tool event: record the result's digest under a progress policy.
        Always exit 0 and nothing on stdout (see the module docstring)."""
        opts = self.opts
        from ..core.policy.discover import discover_policy

        try:
            policy = discover_policy(opts.get("policy"))
        except ValueError as exc:  # policy.PolicyError, not imported unless a file exists
            return self.not_recorded(f"unusable policy: {'; '.join(str(exc).splitlines())}")
        if policy is None or policy.empty or not policy.reads_results:
            return 0  # without progress, same_error or same_result a result changes nothing
        if errors:
            return self.not_recorded("; ".join(errors))
        try:
            brake = self.brake(DEFAULT_MAX_REPEATS, policy)
        except StoreError as exc:
            return self.not_recorded(str(exc))
        try:
            brake.observe_result(
                result.session, result.call_id, result.result, result.digest, result.error
            )
        except (ValueError, TypeError) as exc:
            return self.not_recorded(f"the tool's result cannot be hashed ({exc})")
        finally:
            self.close_store()
        if brake.failure is not None:
            return self.not_recorded(brake.failure)
        return 0

    def end_turn(self, turn: UserTurn, errors: list[str]) -> int:
        """A user-turn event: under ``reset_on_user_turn`` the session starts over in the
        store. Always exit 0 and nothing on stdout (see the module docstring)."""
        from ..core.policy.discover import discover_policy
        from ..core.streak import ends_on_user_turn

        try:
            policy = discover_policy(self.opts.get("policy"))
        except ValueError as exc:  # policy.PolicyError, not imported unless a file exists
            return self.not_ended(f"unusable policy: {'; '.join(str(exc).splitlines())}")
        if not ends_on_user_turn(policy):
            return 0  # without the key a user turn changes nothing: no state is touched
        if errors:
            return self.not_ended("; ".join(errors))
        try:
            brake = self.brake(DEFAULT_MAX_REPEATS, policy)
        except StoreError as exc:
            return self.not_ended(str(exc))
        try:
            brake.user_turn(turn.session)
        finally:
            self.close_store()
        if brake.failure is not None:
            return self.not_ended(brake.failure)
        return 0

    def not_ended(self, reason: str) -> int:
        """A user-turn event's failure: one stderr line, never a denial of the prompt."""
        self.warn(f"{reason}; the session's streaks were not ended by this user turn")
        return 0

    def not_recorded(self, reason: str) -> int:
        """A post-tool event's failure: one stderr line, never a denial."""
        self.warn(f"{reason}; the tool's result was not recorded (the call counts without it)")
        return 0


def _quiet(_message: str) -> None:
    """The brake's failure lines: the hook says its own (``_Hook.fail``)."""


_POST_TOOL_EVENTS = tuple(event for agent in agents.AGENTS for event, _field in agent.RESULTS)
_USER_TURN_EVENTS = tuple(event for agent in agents.AGENTS for event in agent.USER_TURNS)


def _event_named(head: bytes) -> str | None:
    """The event an input too long to parse names at its start (its ``hook_event_name``
    precedes the tool's input and output, and the prompt, in every agent's)."""
    import re

    match = re.search(rb'"hook_event_name"\s*:\s*"([A-Za-z]+)"', head)
    return None if match is None else match.group(1).decode()


def main(
    argv: list[str],
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one hook decision; returns the exit status (never raises for bad input).

    Without streams, the process's own descriptors (``stdio.Streams``)."""
    streams = Streams(stdin, stdout, stderr)
    opts, errors = _parse_args(argv)
    if opts.get("help"):
        try:
            streams.out(HELP.encode())
        except OSError:
            pass
        return 0
    hook = _Hook(opts, streams)
    agent = opts.get("agent")
    try:
        return _decide(hook, streams, opts, errors, agent)
    except KeyboardInterrupt:  # Ctrl-C or SIGINT mid-decision: the brake could not decide
        return hook.fail("interrupted before a decision", agent)


def _decide(
    hook: _Hook, streams: Streams, opts: dict[str, Any], errors: list[str], agent: Any
) -> int:
    """Read the input and decide, every failure through the hook's failure policy."""
    if streams.stdin_closed or streams.stdin_is_tty():
        return hook.fail(
            f"no hook input: stdin is {'closed' if streams.stdin_closed else 'a terminal'} "
            "(an agent pipes the tool call to it as JSON; see `loop-brake hook --help`)",
            agent,
        )
    limit = opts.get("max_input_bytes", DEFAULT_MAX_INPUT_BYTES)
    try:
        data = streams.read_input(limit)
    except OSError as exc:
        return hook.fail(f"could not read stdin ({exc.strerror or exc})", agent)
    if data is None:  # a post-tool or user-turn event is never denied, even too long
        event = _event_named(streams.head)
        hook.result = event in _POST_TOOL_EVENTS
        hook.user_turn = event in _USER_TURN_EVENTS
        return hook.fail(f"hook input longer than {limit} bytes (--max-input-bytes)", agent)
    try:
        return hook.run(data, errors)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug must not block the agent, nor print a traceback
        # Only the class name: an exception's text could carry part of the input.
        return hook.fail(f"internal error ({exc.__class__.__name__}); please report it", agent)
