"""The brake in a Google ADK app: a ``BasePlugin`` around every tool call of a runner.

Needs ``pip install 'loop-brake-cli[google-adk]'`` (``google-adk`` 2.x)::

    from google.adk.runners import Runner
    from loop_brake_cli.integrations.google_adk import LoopBrakePlugin

    runner = Runner(agent=root_agent, app_name="app", session_service=...,
                    plugins=[LoopBrakePlugin(max_repeats=3)])

A plugin's ``before_tool_callback`` runs before every tool of every agent the runner
runs (sub-agents, agent tools and MCP toolsets too), ahead of the agents' own
callbacks; a dict it returns is the tool's response and the tool never runs. A
denied call answers ``{"error": <the core's denial text>}``, as ADK reports a tool
that failed (an unknown tool, bad arguments), and the model reads it on its next
turn. ``after_tool_callback`` hands the result of a call that ran to the policy's
progress mode and returns nothing, so the plugins after this one and the agent's own
``after_tool_callback`` run as without the brake (a plugin's returned value would end
that chain). A call a policy's ``warn_at`` warns gets the warning in its function
response event, which ``on_event_callback`` sees before the runner stores it for the
model: ``"loop_brake_warning": <the warning>`` beside the final response's own keys
(ADK's ``{"result": ...}`` for a tool that returned no dict), which the model reads
with the result. At a policy's ``[stop]`` the stop text is the call's error and the
invocation ends: the event skips the model's summary (``skip_summarization``) and
the run ends there, the model is not asked again.

The session is the ADK session (``tool_context.session``: its app, user and id, so
two users who pick the same session id never share a streak); ``session_key=`` (a
function of the ``ToolContext``) keys calls yourself. The function call id is the
call id. ``plugin.brake`` is the ``LoopBrake``; its session table is bounded.
``dispose(runner)`` takes the plugin off a runner and forgets its streaks.
"""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

from google.adk.plugins.base_plugin import BasePlugin

from ..core.brake import LoopBrake
from ..core.verdicts import Verdict
from ._session import BrakeOptions, SessionBrake

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["WARNING_KEY", "LoopBrakePlugin", "adk_session_key", "dispose"]

WARNING_KEY = "loop_brake_warning"
"""The key a warned call's response gains (policy ``warn_at``), beside the tool's own."""


def adk_session_key(tool_context: Any) -> str:
    """The ADK session of a tool call: app, user and session id (one JSON text)."""
    session = tool_context.session
    return json.dumps([session.app_name, session.user_id, session.id])


class LoopBrakePlugin(BasePlugin):
    """Deny the ``max_repeats``-th identical tool call in a row of an ADK session."""

    def __init__(
        self,
        brake: LoopBrake | None = None,
        *,
        name: str = "loop_brake",
        **options: Unpack[BrakeOptions],
    ) -> None:
        super().__init__(name=name)
        self.seam = SessionBrake.of(brake, options, default_key=adk_session_key, where="google_adk")
        self.brake = self.seam.brake
        # The verdict of each call that ran, until its result comes back: held by the
        # call's ToolContext, so a call that never returns takes its entry with it.
        self._running: weakref.WeakKeyDictionary[Any, Verdict] = weakref.WeakKeyDictionary()
        # The warning of each warned call whose result came back, until its function
        # response event: keyed by the invocation and the function call id.
        self._warnings: dict[tuple[str, str], str] = {}

    async def before_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any
    ) -> dict[str, Any] | None:
        verdict = self.seam.judge(
            self.seam.session(tool_context),
            tool.name,
            tool_args,
            tool_context.function_call_id,
        )
        if not verdict.denied:
            self._running[tool_context] = verdict
            return None
        if verdict.stop:
            tool_context.actions.skip_summarization = True  # no model turn after this event
            tool_context._invocation_context.end_invocation = True  # nor for any other agent
        return {"error": verdict.message}

    async def after_tool_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any
    ) -> dict[str, Any] | None:
        verdict = self._running.pop(tool_context, None)
        if verdict is None:
            return None
        self.seam.feed(verdict, result)
        if verdict.warning is not None:  # told in its response event, on_event_callback
            key = (tool_context.invocation_id, tool_context.function_call_id)
            self._warnings[key] = verdict.warning
        return None  # never a value: that would skip the later plugins' and the agent's

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception
    ) -> None:
        verdict = self._running.pop(tool_context, None)  # a failed call reported no result
        if verdict is not None:
            self.seam.end(verdict)  # but it ended: its id may count again
        return None

    async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
        """A warned call's function response gets the warning beside its own keys,
        in place, before the runner stores the event for the model."""
        if not self._warnings:
            return None
        for response in event.get_function_responses():
            warning = self._warnings.pop((event.invocation_id, response.id), None)
            if warning is not None:
                response.response = {**(response.response or {}), WARNING_KEY: warning}
        return None

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        """The run ended: forget the warnings of its calls that never got an event."""
        ended = invocation_context.invocation_id
        for key in [key for key in self._warnings if key[0] == ended]:
            del self._warnings[key]
        return None


def dispose(runner: Any) -> None:
    """Remove every ``LoopBrakePlugin`` from ``runner`` (its plugin manager) and forget
    their streaks: the runner's tools run as they did without the brake."""
    plugins = runner.plugin_manager.plugins
    for plugin in [p for p in plugins if isinstance(p, LoopBrakePlugin)]:
        plugins.remove(plugin)
        plugin.brake.reset()
