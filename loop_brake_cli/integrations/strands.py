"""The brake in a Strands agent: a hook provider on ``BeforeToolCallEvent``.

Needs ``pip install 'loop-brake-cli[strands]'`` (``strands-agents`` 1.x)::

    from strands import Agent
    from loop_brake_cli.integrations.strands import LoopBrakeHooks

    agent = Agent(model=model, tools=[search], hooks=[LoopBrakeHooks(max_repeats=3)])

Strands raises ``BeforeToolCallEvent`` before every tool call of the agent (parallel
calls of one turn each on its own). A denied call is cancelled the Strands way,
``event.cancel_tool`` set to the core's denial text: the tool never runs and the
model gets a tool result with status ``"error"`` and that text. At a policy's
``[stop]`` the call is cancelled with the stop text and the agent is cancelled
after the current tools (``agent.cancel(message=..., after_current_tools=True)``):
the invocation returns with ``stop_reason="cancelled"`` and the stop text as the
final message, before the model is asked again. ``AfterToolCallEvent`` hands each
result of a call that ran to the policy's progress mode; a call a policy's
``warn_at`` warns runs, and its tool result (``event.result``, which Strands lets a
hook replace) gets the warning as a last ``{"text": ...}`` block of its ``content``,
whatever the tool returned (a failed call's error result too): the model reads it
with the result.

The session is the agent's conversation: its ``session_id`` (the session manager's,
so a conversation restored into a new ``Agent`` keeps its streak; else Strands' own
id for the agent) with its ``agent_id``. ``session_key=`` (a function of the
event) keys calls yourself. The tool use id is the call id. ``hooks.brake`` is the
``LoopBrake``; an agent without the provider runs as it did.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry

from ..core.brake import LoopBrake
from ._session import BrakeOptions, SessionBrake

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeHooks", "strands_session_key"]


def strands_session_key(event: Any) -> str:
    """The agent's conversation: its session id and agent id (one JSON text)."""
    agent = event.agent
    return json.dumps([agent.session_id, agent.agent_id])


class LoopBrakeHooks(HookProvider):
    """Cancel the ``max_repeats``-th identical tool call in a row of a conversation."""

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = SessionBrake.of(
            brake, options, default_key=strands_session_key, where="strands"
        )
        self.brake = self.seam.brake
        # The warning of each warned call, from its BeforeToolCallEvent to its
        # AfterToolCallEvent: keyed by the session and the tool use id.
        self._warnings: dict[tuple[str, Any], str] = {}

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)
        registry.add_callback(AfterToolCallEvent, self.after_tool_call)

    def before_tool_call(self, event: Any) -> None:
        use = event.tool_use
        session = self.seam.session(event)
        verdict = self.seam.judge(session, use["name"], use.get("input"), use.get("toolUseId"))
        if not verdict.denied:
            if verdict.warning is not None:
                self._warnings[session, use.get("toolUseId")] = verdict.warning
            return
        event.cancel_tool = verdict.message
        if verdict.stop:
            event.agent.cancel(message=verdict.message, after_current_tools=True)

    def after_tool_call(self, event: Any) -> None:
        use, result = event.tool_use, event.result
        session = self.seam.session(event)
        warning = self._warnings.pop((session, use.get("toolUseId")), None)
        if event.cancel_message is not None or event.exception is not None:
            self.seam.end_call(session, use.get("toolUseId"))  # it ended with no result
            if event.cancel_message is not None:
                return  # cancelled: the tool never ran
        else:
            seen = {"status": result.get("status"), "content": result.get("content")}  # no id
            self.seam.feed_call(session, use.get("toolUseId"), seen)
        if warning is not None:
            content = [*(result.get("content") or []), {"text": warning}]
            event.result = {**result, "content": content}
