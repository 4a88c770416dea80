"""One canary decision through a hook command, run as the agent would run it.

``hook install`` and ``loop-brake run`` both write a command that an agent will
start before every tool call, in its own environment, through a shell. A command
that does not resolve there (a bare ``loop-brake`` found only in an active
venv), a store that cannot be reached, a missing extra or a broken policy all
make the hook fail open, and the agent hides the hook's stderr: the brake would
be off with nobody told. So before the command is trusted, it is run once, here:
``sh -c COMMAND`` (the agents' shell on POSIX) with the agent's pre-tool input
for a canary session on stdin. It works when it exits 0, says nothing on stderr
(the hook's every failure is one stderr line) and answers nothing but an allow
(an empty stdout) or valid JSON without a fail-open notice. The caller then
forgets the canary session (``forget``: out of the store the command counts in,
``command_store``, and its fail-open marker), so nothing is left behind.

Nothing of the canary call is an argument of anyone's: its tool is
``loop-brake-check`` with ``{}``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from dataclasses import dataclass

__all__ = [
    "CANARY_TOOL",
    "CheckResult",
    "canary_input",
    "check_command",
    "command_store",
    "forget",
]

CANARY_TOOL = "loop-brake-check"
TIMEOUT = 30.0
"""Seconds the canary decision may take (a cold Python start, a remote store)."""


@dataclass
class CheckResult:
    """What the canary decision showed: ``ok``, and ``reason`` (one line) when not."""

    ok: bool
    reason: str = ""
    session: str = ""


def canary_input(agent: str, session: str) -> bytes:
    """The agent's pre-tool hook input for one canary call (its own event name and
    session field, as ``agents/`` decodes them)."""
    payload: dict[str, object] = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": CANARY_TOOL,
        "tool_input": {},
        "cwd": os.getcwd(),
    }
    if agent == "codex":
        payload["turn_id"] = "loop-brake-check"
        payload["tool_use_id"] = "loop-brake-check"
    elif agent == "gemini":
        payload["hook_event_name"] = "BeforeTool"
    elif agent == "cursor":
        payload = {
            "conversation_id": session,
            "hook_event_name": "preToolUse",
            "tool_name": CANARY_TOOL,
            "tool_input": {},
        }
    else:
        payload["tool_use_id"] = "loop-brake-check"
    return json.dumps(payload).encode()


def check_command(command: str, agent: str, env: dict[str, str] | None = None) -> CheckResult:
    """Run ``command`` once as ``agent`` would, with a canary call; see the module doc."""
    session = f"loop-brake-check-{uuid.uuid4().hex[:12]}"
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=canary_input(agent, session),
            capture_output=True,
            env=env,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return CheckResult(False, f"it did not answer within {TIMEOUT:g} s", session)
    except OSError as exc:
        return CheckResult(False, f"/bin/sh could not start it ({exc.strerror or exc})", session)
    stderr = done.stderr.decode("utf-8", "replace").strip()
    first = _reason(stderr.splitlines()[0]) if stderr else ""
    if done.returncode != 0:
        if done.returncode == 127:
            return CheckResult(False, f"the shell cannot run it (exit 127: {first})", session)
        return CheckResult(False, f"it exited {done.returncode}: {first}", session)
    if stderr:
        return CheckResult(False, first, session)
    out = done.stdout.strip()
    if out:
        try:
            answer = json.loads(out)
        except ValueError:
            return CheckResult(False, "it printed something that is not JSON", session)
        if not isinstance(answer, dict) or "loop brake is off" in str(answer.get("systemMessage")):
            return CheckResult(False, "its answer says the brake is off", session)
    return CheckResult(True, "", session)


def _reason(line: str) -> str:
    """The hook's failure line without its program prefix and "allowed" ending."""
    line = line.removeprefix("loop-brake hook: ")
    return line.removesuffix("; the call was allowed (the brake fails open)")


def command_store(command: str, env: dict[str, str] | None = None) -> str | None:
    """The store a hook command counts in: its own ``--store``/``--state``, else the
    one ``env`` names (``stores.store_target``); None when the command cannot be read
    as ``PROGRAM hook OPTIONS...``."""
    from ..stores import store_target
    from .runner import _parse_args

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) < 2 or words[1] != "hook":
        return None
    opts, _errors = _parse_args(words[2:])
    try:
        return store_target(opts.get("store"), opts.get("state"), env)
    except ValueError:
        return None


def forget(store: str | None, agent: str, session: str, env: dict[str, str] | None = None) -> None:
    """The canary session out of ``store`` and its fail-open marker away (best effort:
    a session expires anyway, a marker after a week)."""
    from ..stores import StoreError, open_store
    from .notice import forget as forget_marker

    forget_marker(agent, session, env)
    if store is None:
        return
    try:
        opened = open_store(store)
        try:
            opened.reset(session)
        finally:
            opened.close()
    except (StoreError, ValueError, OSError):
        pass
