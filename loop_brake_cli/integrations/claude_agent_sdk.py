"""The brake in a Claude Agent SDK (Python) agent: in-process ``PreToolUse`` hooks.

Needs ``pip install 'loop-brake-cli[claude-agent-sdk]'``::

    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
    from loop_brake_cli.integrations.claude_agent_sdk import attach

    options = ClaudeAgentOptions(allowed_tools=["Read", "Grep"])
    brake = attach(options, max_repeats=3)     # adds the hooks to options.hooks
    async with ClaudeSDKClient(options) as client: ...

The SDK runs a hook callback in the Python process whenever Claude Code reaches a
hook event, so the brake is the one the ``loop-brake hook`` command is, without a
process per tool call: the hook input is Claude Code's hook input, read by the
same decoder (``agents/claude_code.py``: the session is Claude's ``session_id``, a
subagent's calls its own streak through ``agent_id``, the tool use id the call
id), and the answer is Claude Code's ``PreToolUse`` deny (``permissionDecision:
"deny"`` with the core's denial text as the reason, which Claude reads as the
tool's error; the tool never runs). At a policy's ``[stop]`` the answer adds
``continue: false`` and ``stopReason``: Claude Code ends the run. A call a
policy's ``warn_at`` warns gets the hook command's warning answer
(``additionalContext``, no decision): Claude reads it, the call runs. ``PostToolUse``
and ``PostToolUseFailure`` hand each result to the policy's progress mode.

Every tool is matched (MCP and SDK tools too). ``session_key=`` (a function of
the hook input) keys calls yourself. ``dispose(options)`` removes the hooks and
forgets the streaks. A hook input the decoder cannot read gets no decision
(``{}``): Claude Code goes on as without the brake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claude_agent_sdk import HookMatcher

from ..agents import claude_code
from ..core.brake import LoopBrake
from ..core.records import ToolCall, ToolResult
from ._session import BrakeOptions, SessionBrake

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeHooks", "attach", "dispose"]


class LoopBrakeHooks:
    """The brake's hook callbacks; ``hooks()`` is the ``ClaudeAgentOptions.hooks`` part."""

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = SessionBrake.of(
            brake, options, default_key=self._default_key, where="claude_agent_sdk"
        )
        self.brake = self.seam.brake
        self.matchers = {
            "PreToolUse": HookMatcher(matcher=None, hooks=[self.pre_tool_use]),
            "PostToolUse": HookMatcher(matcher=None, hooks=[self.post_tool_use]),
            "PostToolUseFailure": HookMatcher(matcher=None, hooks=[self.post_tool_use]),
        }

    @staticmethod
    def _default_key(input_data: Any) -> str:
        """The hook's own session key (``session_id``, a subagent's ``agent_id``)."""
        record = claude_code.decode(input_data)
        return record.session  # type: ignore[union-attr]

    def hooks(self) -> dict[str, list[HookMatcher]]:
        """``{event: [matcher]}`` for ``ClaudeAgentOptions(hooks=...)``."""
        return {event: [matcher] for event, matcher in self.matchers.items()}

    async def pre_tool_use(self, input_data: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        """The ``PreToolUse`` callback: Claude Code's deny (or stop), else no decision."""
        record = claude_code.decode(input_data)
        if not isinstance(record, ToolCall):
            return {}
        verdict = self.seam.judge(
            self.seam.session(input_data), record.tool, record.args, record.call_id
        )
        if not verdict.denied:  # a warned call: Claude Code's additionalContext
            return {} if verdict.warning is None else claude_code.warn_output(verdict.warning)
        if verdict.stop:
            return claude_code.stop_output(verdict.message)
        return claude_code.deny_output(verdict.message)

    async def post_tool_use(
        self, input_data: Any, tool_use_id: Any, context: Any
    ) -> dict[str, Any]:
        """``PostToolUse``/``PostToolUseFailure``: the result, to the progress mode; the
        call has ended, so its tool use id may count again."""
        record = claude_code.decode(input_data)
        if isinstance(record, ToolResult):
            self.seam.feed_call(self.seam.session(input_data), record.call_id, record.result)
        return {}


def attach(
    options: Any, brake: LoopBrake | None = None, **brake_options: Unpack[BrakeOptions]
) -> LoopBrake:
    """Add the brake's hooks to ``options.hooks``, after the user's own matchers;
    returns the brake. Several ``options`` may share one brake (``brake=``)."""
    hooks = LoopBrakeHooks(brake, **brake_options)
    merged = dict(options.hooks or {})
    for event, matchers in hooks.hooks().items():
        merged[event] = [*merged.get(event, []), *matchers]
    options.hooks = merged
    return hooks.brake


def dispose(options: Any) -> None:
    """Remove every brake ``attach`` added to ``options`` and forget its streaks."""
    for event, matchers in list((options.hooks or {}).items()):
        kept = []
        for matcher in matchers:
            owner = getattr(matcher.hooks[0], "__self__", None) if matcher.hooks else None
            if isinstance(owner, LoopBrakeHooks):
                owner.brake.reset()
            else:
                kept.append(matcher)
        options.hooks[event] = kept
