"""Codex ``PreToolUse`` hooks (https://developers.openai.com/codex/hooks, and the
output schema codex-rs/hooks/schema/generated/pre-tool-use.command.output.schema.json
in https://github.com/openai/codex).

stdin: as Claude Code's, plus ``turn_id`` (and ``agent_id``/``agent_type`` in a
subagent, whose calls get their own streak, ``<session_id>/<agent_id>``). The
output schema has ``additionalProperties: false`` at both levels, so the deny
object carries exactly ``hookEventName``, ``permissionDecision`` and
``permissionDecisionReason``.

Stop (policy ``[stop]``): the output schema's top level also allows
``continue`` (default true) and ``stopReason``, as Claude Code's; the stop
answer is the deny with ``"continue": false`` and the reason. Codex's hooks
page does not say what ``continue: false`` does at ``PreToolUse``; the call is
denied either way.

Warning (policy ``warn_at``): ``{"systemMessage": "..."}``, shown to the user.
The output schema lists ``hookSpecificOutput.additionalContext`` for
PreToolUse, but Codex's parser (codex-rs/hooks/src/engine/output_parser.rs)
refuses it there ("PreToolUse hook returned unsupported additionalContext")
and the hook's answer is then dropped; ``systemMessage`` is a universal field
it accepts. So under Codex the user sees the warning, the model does not.

Fail-open notice: ``systemMessage`` too (a universal output field), shown to
the user; no decision, so the call runs as with no answer.

Install: ``.codex/hooks.json`` (project) or ``~/.codex/hooks.json`` (user; or
``$CODEX_HOME/hooks.json``), ``hooks.PreToolUse``. Codex also reads inline
``[hooks]`` tables in ``config.toml``; the JSON form is written, whose root may
hold only ``description`` and ``hooks``. The matcher is a regex, so it is left
out (every tool). Codex asks the user to review and trust a new hook first.

Results (policy ``progress``): ``PostToolUse`` carries the tool's output as
``tool_response`` and the ``tool_use_id`` of its call; the install adds the same
entry to ``hooks.PostToolUse`` when the policy in effect uses progress.

User turns (policy ``reset_on_user_turn``): ``UserPromptSubmit`` (with
``session_id``, ``turn_id`` and ``prompt``) ends the session's streaks; the hook
answers exit 0 with nothing on stdout, and the install adds the entry to
``hooks.UserPromptSubmit`` when the policy in effect has the key.

Detection: ``turn_id``, which only Codex sends.
"""

from __future__ import annotations

from ..core.records import Record
from ._common import (
    Install,
    decode_input,
    pre_tool_use_deny,
    pre_tool_use_stop,
    system_message,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:
    from typing import Any

NAME = "codex"
EVENTS = ("PreToolUse",)
ALL_EVENTS = ("SessionStart", "PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop")
RESULTS = (("PostToolUse", "tool_response"),)
USER_TURNS = ("UserPromptSubmit",)
INSTALL = Install(
    event="PreToolUse",
    project=".codex/hooks.json",
    user=".codex/hooks.json",
    user_dir_env="CODEX_HOME",
    result_events=("PostToolUse",),
    user_turn_events=USER_TURNS,
)


def matches(payload: dict[str, Any]) -> bool:
    return "turn_id" in payload


def decode(payload: Any, line: int | None = None) -> Record | None:
    return decode_input(payload, line, EVENTS, results=RESULTS, user_turns=USER_TURNS)


deny_output = pre_tool_use_deny

STOPS = True

stop_output = pre_tool_use_stop

warn_output = system_message

notice_output = system_message
