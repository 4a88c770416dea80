"""The brake in an OpenAI Agents SDK agent: tool guardrails on every function tool.

Needs ``pip install 'loop-brake-cli[openai-agents]'``::

    from agents import Agent, Runner
    from loop_brake_cli.integrations.openai_agents import LoopBrakeGuardrail

    guard = LoopBrakeGuardrail(max_repeats=3)
    agent = guard.brake_agent(Agent(name="a", tools=[search]))   # a braked clone
    Runner.run_sync(agent, "find the weather")

A tool input guardrail runs before each function tool is invoked. A denied
call's tool never runs: the guardrail answers ``reject_content`` with the core's
denial text, which the SDK hands the model as that tool call's output, and the
run goes on; the denial as data (``code``, ``count``, ``maxRepeats``,
``hashPrefix``) is the guardrail's ``output_info``. Arguments are hashed as the
model sent them (the JSON text, parsed as the CLI parses it). A policy's stop
trips the guardrail (``raise_exception``): the run ends with the SDK's own
``ToolInputGuardrailTripwireTriggered``, whose ``output.output_info`` is the stop
as data. A tool output guardrail feeds each result to the progress mode. A call a
policy's ``warn_at`` warns runs, and when its output is a str the output guardrail
hands the model that output with the warning after it: the SDK's only way to change
an output is ``reject_content``, so the guardrail's result says ``reject_content``
and its ``output_info`` is the warning as data (``warnAt`` beside the denial's
fields), and output guardrails listed after the brake's do not run for that call.
An output that is not a str (structured ``ToolOutputText``/image/file outputs, other
values), or of a tool with an output JSON schema, is left as it is: the model is not
told.

``brake_agent`` brakes the whole run, not only the clone's own tools: every
function tool an agent of a braked run gets from ``Agent.get_all_tools`` (its
``tools``, the tools of its ``mcp_servers``, agents used as tools) carries the
guardrails, and so do the tools of every agent the run hands off to and of an
agent run as a tool (they share the run's ``usage``, which marks the run as
braked). For that the module wraps ``Agent.get_all_tools`` once, on the first
``brake_agent``; the wrapper changes nothing for a run that is not braked.

The session is the conversation where the SDK names one, the run config's
``group_id`` ("links traces from the same conversation"), else the run: every
``ToolContext`` of one ``Runner.run`` (and of the runs nested in it) shares that
run's ``Usage``, which keys it and whose streak is forgotten with it, so two runs
in parallel never share a streak. ``session_key=`` (a function of the
``ToolContext``, returning a str, or None for the default) keys calls yourself;
``guard.brake`` is the ``LoopBrake``, its session table bounded
(``integrations._session``).
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agents import (
    Agent,
    FunctionTool,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolOutputGuardrail,
)

from ..core.brake import LoopBrake
from ..core.canonical import parse_arguments
from ..core.verdicts import Verdict
from ._denial import denial_fields
from ._session import BrakeOptions, SessionBrake

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeGuardrail", "run_session_key"]

# The runs braked by a guard: id(usage) -> (the usage, weakly; the guards braking it).
_BRAKED_RUNS: dict[int, tuple[weakref.ref[Any], list[LoopBrakeGuardrail]]] = {}
_GUARD_ATTRIBUTE = "_loop_brake_guards"


def run_session_key(context: Any) -> str | None:
    """The conversation (``run_config.group_id``), else None (the run's own session)."""
    group = getattr(getattr(context, "run_config", None), "group_id", None)
    return None if group is None else str(group)


class LoopBrakeGuardrail:
    """Tool guardrails that deny the ``max_repeats``-th identical call in a row."""

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = SessionBrake.of(
            brake, options, default_key=self._default_key, where="openai_agents"
        )
        self.brake = self.seam.brake
        self.guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._check, name="loop_brake"
        )
        self.output_guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._observe, name="loop_brake_results"
        )
        # A tool whose output has a JSON schema keeps its output as it is (the warning is
        # text); its copies get this guardrail, which feeds the result and warns nobody.
        self.schema_output_guardrail: ToolOutputGuardrail[Any] = ToolOutputGuardrail(
            guardrail_function=self._observe_only, name="loop_brake_results"
        )
        # The verdict of each warned call, from its input guardrail to its output
        # guardrail: keyed by the call's ToolContext, forgotten with it.
        self._warned: weakref.WeakKeyDictionary[Any, Verdict] = weakref.WeakKeyDictionary()

    def _default_key(self, context: Any) -> str:
        group = run_session_key(context)
        if group is not None:
            return group
        return self.seam.scoped_key(context.usage, "run")  # one Usage per run

    def _check(self, data: Any) -> ToolGuardrailFunctionOutput:
        context = data.context
        args, _ = parse_arguments(context.tool_arguments)
        verdict = self.seam.judge(
            self.seam.session(context), context.tool_name, args, context.tool_call_id
        )
        if not verdict.denied:
            if verdict.warned:
                self._warned[context] = verdict
            return ToolGuardrailFunctionOutput.allow()
        if verdict.stop:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=denial_fields(verdict))
        return ToolGuardrailFunctionOutput.reject_content(
            verdict.message, output_info=denial_fields(verdict)
        )

    def _observe_only(self, data: Any) -> ToolGuardrailFunctionOutput:
        context = data.context
        self._warned.pop(context, None)
        self.seam.feed_call(self.seam.session(context), context.tool_call_id, data.output)
        return ToolGuardrailFunctionOutput.allow()

    def _observe(self, data: Any) -> ToolGuardrailFunctionOutput:
        """Feed the result; a warned call's text output goes to the model with the
        warning after it, through the SDK's one way to change an output
        (``reject_content``, whose ``output_info`` says it is a warning)."""
        verdict = self._warned.get(data.context)
        allowed = self._observe_only(data)
        output = data.output
        if verdict is None or verdict.warning is None or not isinstance(output, str):
            return allowed
        info = {**denial_fields(verdict), "warnAt": verdict.warn_at}
        text = f"{output}\n\n{verdict.warning}" if output else verdict.warning
        return ToolGuardrailFunctionOutput.reject_content(text, output_info=info)

    def brake_tools(self, tools: Iterable[Any]) -> list[Any]:
        """Copies of the function tools with this guard's guardrails added (once);
        other tools as given."""
        braked = []
        for tool in tools:
            if isinstance(tool, FunctionTool) and self.guardrail not in (
                tool.tool_input_guardrails or []
            ):
                tool = copy.copy(tool)
                tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), self.guardrail]
                observe = (
                    self.output_guardrail
                    if tool.output_json_schema is None
                    else self.schema_output_guardrail
                )
                tool.tool_output_guardrails = [*(tool.tool_output_guardrails or []), observe]
            braked.append(tool)
        return braked

    def brake_agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A clone of ``agent`` whose runs are braked: its function tools carry this
        guard's guardrails, and so do those of every agent the run reaches."""
        _wrap_get_all_tools()
        clone = agent.clone(tools=self.brake_tools(agent.tools))
        setattr(clone, _GUARD_ATTRIBUTE, [*getattr(agent, _GUARD_ATTRIBUTE, []), self])
        return clone


def _guards_of_run(agent: Any, run_context: Any) -> list[LoopBrakeGuardrail]:
    """The guards braking this run: the agent's own (which marks the run), and those
    of the run it belongs to (a handoff target, an agent run as a tool)."""
    usage = getattr(run_context, "usage", None)
    if usage is None:
        return list(getattr(agent, _GUARD_ATTRIBUTE, []))
    ident = id(usage)
    entry = _BRAKED_RUNS.get(ident)
    if entry is None or entry[0]() is not usage:
        entry = (weakref.ref(usage, lambda _ref: _BRAKED_RUNS.pop(ident, None)), [])
    guards = entry[1]
    for guard in getattr(agent, _GUARD_ATTRIBUTE, []):
        if guard not in guards:
            guards.append(guard)
    if guards:
        _BRAKED_RUNS[ident] = entry
    return guards


def _wrap_get_all_tools() -> None:
    """Wrap ``Agent.get_all_tools`` once: the tools of a braked run get the guardrails."""
    original = Agent.get_all_tools
    if getattr(original, "_loop_brake", False):
        return

    async def get_all_tools(self: Any, run_context: Any) -> list[Any]:
        tools = await original(self, run_context)
        for guard in _guards_of_run(self, run_context):
            tools = guard.brake_tools(tools)
        return tools

    get_all_tools._loop_brake = True  # type: ignore[attr-defined]
    get_all_tools.__wrapped__ = original  # type: ignore[attr-defined]
    get_all_tools.__doc__ = original.__doc__
    Agent.get_all_tools = get_all_tools  # type: ignore[method-assign]
