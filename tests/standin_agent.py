"""A stand-in for a headless coding agent, for ``loop-brake run``'s end-to-end tests.

Installed on a temporary PATH as ``claude``, ``codex`` or ``gemini`` (its name
decides which agent it is), it replays a real recorded headless stream
(``$STANDIN_STREAM``) line by line to stdout, and before each tool call it runs
the pre-tool hooks it was configured with, exactly as the real agent finds and
calls them:

* ``claude``: the ``--settings FILE`` JSON's ``hooks.PreToolUse`` (matcher ``*``
  or a regex) plus ``$HOME/.claude/settings.json``'s, each command through
  ``sh -c`` with the PreToolUse input on stdin; a ``permissionDecision`` of
  ``deny`` (or exit 2) blocks the call, ``continue: false`` ends the run;
* ``codex``: every ``-c hooks.PreToolUse=<TOML>`` override, parsed as TOML; like
  Codex, an untrusted (non-managed) hook runs only under
  ``--dangerously-bypass-hook-trust``;
* ``gemini``: ``hooks.BeforeTool`` of the file ``$GEMINI_CLI_SYSTEM_SETTINGS_PATH``
  names, plus ``$HOME/.gemini/settings.json``'s; ``decision: deny`` blocks,
  ``continue: false`` ends the run.

A blocked call's recorded result line is replaced by the agent's way of showing a
refused tool (an error result carrying the hook's reason). With ``$STANDIN_LOOP``
set, once the recording's calls are replayed the last call is made again and
again (new ids), as a stuck agent does, at most ``$STANDIN_LOOP`` times.

Test switches: ``$STANDIN_IGNORE_TERM`` (SIGTERM ignored), ``$STANDIN_FORK``
(a child ``sleep`` that holds stdout; ``setsid`` leaves the process group too),
``$STANDIN_HANG`` (after the stream, wait for a signal), ``$STANDIN_FLOOD`` (after
the stream, write its last line forever), ``$STANDIN_COPY`` (a file every line
written is appended to), ``$STANDIN_EXIT`` (the exit status), ``$STANDIN_PIDS`` (a
file the pids are appended to, one a line), ``$STANDIN_HOOKS_RAN`` (a file each
hook answer is appended to), ``$STANDIN_STDERR`` (a line on stderr before each call,
coloured as an agent's own notes are).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time

import tomllib

NAME = os.path.basename(sys.argv[0])
ARGS = sys.argv[1:]


def note_pid(pid: int) -> None:
    path = os.environ.get("STANDIN_PIDS")
    if path:
        with open(path, "a") as handle:
            handle.write(f"{pid}\n")


def emit(obj_or_line: object) -> None:
    line = obj_or_line if isinstance(obj_or_line, str) else json.dumps(obj_or_line)
    # a SIGTERM waits until the line is in both places (stdout and the copy)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        copy = os.environ.get("STANDIN_COPY")
        if copy:
            with open(copy, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def option(name: str) -> list[str]:
    values = []
    for i, arg in enumerate(ARGS):
        if arg == name and i + 1 < len(ARGS):
            values.append(ARGS[i + 1])
        elif arg.startswith(name + "="):
            values.append(arg[len(name) + 1 :])
    return values


def read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def groups_for(event: str) -> list[dict]:
    """The matcher groups of ``event`` from every settings source the agent reads."""
    home = os.environ.get("HOME", "")
    if NAME == "claude":
        sources = [read_json(os.path.join(home, ".claude", "settings.json"))]
        for value in option("--settings"):
            sources.append(
                json.loads(value) if value.lstrip().startswith("{") else read_json(value)
            )
        groups = []
        for settings in sources:
            groups += settings.get("hooks", {}).get(event, [])
        return groups
    if NAME == "gemini":
        sources = [read_json(os.path.join(home, ".gemini", "settings.json"))]
        system = os.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
        if system:
            sources.append(read_json(system))
        groups = []
        for settings in sources:
            groups += settings.get("hooks", {}).get(event, [])
        return groups
    # codex: the session-flags layer's hooks, which must be trusted to run
    if "--dangerously-bypass-hook-trust" not in ARGS:
        return []
    groups = []
    for value in option("-c") + option("--config"):
        key, _, raw = value.partition("=")
        if key.strip() == f"hooks.{event}":
            groups += tomllib.loads(f"v = {raw}")["v"]
    return groups


def run_hooks(event: str, payload: dict) -> tuple[str | None, bool]:
    """(deny reason or None, stop) from every matching hook command."""
    reason, stop = None, False
    for group in groups_for(event):
        matcher = group.get("matcher")
        if matcher not in (None, "", "*") and not re.search(matcher, payload["tool_name"]):
            continue
        for handler in group.get("hooks", []):
            done = subprocess.run(
                ["/bin/sh", "-c", handler["command"]],
                input=json.dumps(payload).encode(),
                capture_output=True,
                check=False,
            )
            ran = os.environ.get("STANDIN_HOOKS_RAN")
            if ran:
                with open(ran, "ab") as handle:
                    handle.write(done.stdout.strip() + b"|" + done.stderr.strip() + b"\n")
            if done.returncode == 2:
                reason = done.stderr.decode().strip() or "blocked"
                continue
            if not done.stdout.strip():
                continue
            answer = json.loads(done.stdout)
            specific = answer.get("hookSpecificOutput", {})
            if specific.get("permissionDecision") == "deny":
                reason = specific.get("permissionDecisionReason", "denied")
            if answer.get("decision") in ("deny", "block"):
                reason = answer.get("reason", "denied")
            if answer.get("continue") is False:
                stop = True
                reason = reason or answer.get("stopReason", "stopped")
    return reason, stop


class Claude:
    def __init__(self) -> None:
        assert "stream-json" in option("--output-format"), "claude needs stream-json here"
        self.denied: dict[str, str] = {}

    def calls(self, obj: dict) -> list[tuple[str, dict]]:
        if obj.get("type") != "assistant":
            return []
        return [
            (block["id"], block)
            for block in obj.get("message", {}).get("content", [])
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]

    def payload(self, obj: dict, block: dict) -> dict:
        return {
            "session_id": obj.get("session_id"),
            "transcript_path": "/tmp/standin.jsonl",
            "cwd": os.getcwd(),
            "hook_event_name": "PreToolUse",
            "tool_name": block["name"],
            "tool_input": block.get("input", {}),
            "tool_use_id": block["id"],
        }

    def result_for(self, obj: dict) -> dict:
        """The recorded result line, with denied calls' results as Claude shows a hook's
        denial: an error result carrying the reason."""
        if obj.get("type") != "user":
            return obj
        for block in obj.get("message", {}).get("content", []):
            if isinstance(block, dict) and block.get("tool_use_id") in self.denied:
                block["content"] = self.denied[block["tool_use_id"]]
                block["is_error"] = True
        return obj

    def renew(self, obj: dict, n: int) -> dict:
        obj = json.loads(json.dumps(obj))
        if obj.get("type") == "assistant":
            obj["message"]["id"] = f"{obj['message'].get('id')}_r{n}"
            for _id, block in self.calls(obj):
                block["id"] = f"{block['id']}_r{n}"
        elif obj.get("type") == "user":
            for block in obj.get("message", {}).get("content", []):
                if isinstance(block, dict) and "tool_use_id" in block:
                    block["tool_use_id"] = f"{block['tool_use_id']}_r{n}"
        return obj

    def final(self, obj: dict) -> bool:
        return obj.get("type") == "result"


class Codex:
    def __init__(self) -> None:
        assert ARGS[:1] == ["exec"] or "exec" in ARGS, "codex needs exec here"
        assert "--json" in ARGS, "codex exec needs --json here"
        self.thread = "default"
        self.denied: dict[str, str] = {}

    def calls(self, obj: dict) -> list[tuple[str, dict]]:
        if obj.get("type") == "thread.started":
            self.thread = obj.get("thread_id")
        item = obj.get("item", {})
        if obj.get("type") == "item.started" and item.get("type") == "command_execution":
            return [(item["id"], item)]
        return []

    def payload(self, obj: dict, item: dict) -> dict:
        return {
            "session_id": self.thread,
            "turn_id": "turn-1",
            "cwd": os.getcwd(),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": item["command"]},
            "tool_use_id": item["id"],
        }

    def result_for(self, obj: dict) -> dict:
        item = obj.get("item", {})
        if obj.get("type") == "item.completed" and item.get("id") in self.denied:
            item["aggregated_output"] = self.denied[item["id"]]
            item["exit_code"] = None
            item["status"] = "declined"
        return obj

    def renew(self, obj: dict, n: int) -> dict:
        obj = json.loads(json.dumps(obj))
        if "item" in obj:
            obj["item"]["id"] = f"{obj['item']['id']}_r{n}"
        return obj

    def final(self, obj: dict) -> bool:
        return obj.get("type") == "turn.completed"


class Gemini:
    def __init__(self) -> None:
        formats = option("--output-format") + option("-o")
        assert "stream-json" in formats, "gemini needs stream-json here"
        self.session = "default"
        self.denied: dict[str, str] = {}

    def calls(self, obj: dict) -> list[tuple[str, dict]]:
        if obj.get("type") == "init":
            self.session = obj.get("session_id")
        if obj.get("type") == "tool_use":
            return [(obj["tool_id"], obj)]
        return []

    def payload(self, obj: dict, use: dict) -> dict:
        return {
            "session_id": self.session,
            "transcript_path": "/tmp/standin.json",
            "cwd": os.getcwd(),
            "hook_event_name": "BeforeTool",
            "timestamp": "2026-01-05T10:00:00.000Z",
            "tool_name": use["tool_name"],
            "tool_input": use.get("parameters", {}),
        }

    def result_for(self, obj: dict) -> dict:
        if obj.get("type") == "tool_result" and obj.get("tool_id") in self.denied:
            obj["status"] = "error"
            obj.pop("output", None)
            obj["error"] = {"type": "hook", "message": self.denied[obj["tool_id"]]}
        return obj

    def renew(self, obj: dict, n: int) -> dict:
        obj = json.loads(json.dumps(obj))
        if "tool_id" in obj:
            obj["tool_id"] = f"{obj['tool_id']}-r{n}"
        return obj

    def final(self, obj: dict) -> bool:
        return obj.get("type") == "result"


def main() -> int:
    note_pid(os.getpid())
    if os.environ.get("STANDIN_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.environ.get("STANDIN_FORK"):
        child = subprocess.Popen(
            ["sleep", "600"], start_new_session=os.environ["STANDIN_FORK"] == "setsid"
        )
        note_pid(child.pid)
    agent = {"claude": Claude, "codex": Codex, "gemini": Gemini}[NAME]()
    path = os.environ["STANDIN_STREAM"]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for line in handle if line.strip()]
    objs = [json.loads(line) for line in lines]
    event = "BeforeTool" if NAME == "gemini" else "PreToolUse"
    final = [obj for obj in objs if agent.final(obj)]
    body = [obj for obj in objs if not agent.final(obj)]
    # the last call and the lines up to its result, for the loop
    last_call = max((i for i, obj in enumerate(body) if agent.calls(obj)), default=None)

    def play(obj: dict) -> bool:
        """Emit one line, the hooks first for a call; False when a hook stops the run."""
        for call_id, call in agent.calls(obj):
            if os.environ.get("STANDIN_STDERR"):
                sys.stderr.write(f"\x1b[33m{NAME}: about to run {call_id}\x1b[0m\n")
                sys.stderr.flush()
            reason, stop = run_hooks(event, agent.payload(obj, call))
            if reason is not None:
                agent.denied[call_id] = reason
            if stop:
                emit(obj)
                return False
        emit(agent.result_for(obj))
        return True

    for obj in body:
        if not play(obj):
            return 0
    loops = int(os.environ.get("STANDIN_LOOP", "0") or 0)
    if loops and last_call is not None:
        tail = body[last_call : last_call + 2]
        for n in range(1, loops + 1):
            for obj in tail:
                if not play(agent.renew(obj, n)):
                    return 0
    for obj in final:
        emit(obj)
    if os.environ.get("STANDIN_FLOOD"):  # a writer that never stops (a closed reader ends it)
        while True:
            emit(final[-1] if final else body[-1])
    if os.environ.get("STANDIN_HANG"):
        while True:
            time.sleep(3600)
    return int(os.environ.get("STANDIN_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main())
