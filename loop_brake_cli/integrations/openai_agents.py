"""The brake in an OpenAI Agents SDK agent: a tool input guardrail.

Needs ``pip install 'loop-brake-cli[openai-agents]'``::

    from agents import Agent, Runner
    from loop_brake_cli.integrations.openai_agents import LoopBrakeGuardrail

    guard = LoopBrakeGuardrail(max_repeats=3)
    agent = guard.brake_agent(Agent(name="a", tools=[search]))   # a braked clone
    Runner.run_sync(agent, "find the weather")

The guardrail runs before each function tool is invoked. A denied call's tool
never runs: the guardrail answers ``reject_content`` with the core's denial
text, which the SDK hands the model as that tool call's output, and the run
goes on; the denial as data (``code``, ``count``, ``maxRepeats``,
``hashPrefix``) is the guardrail's ``output_info``. Arguments are hashed as the
model sent them (the JSON text, parsed as the CLI parses it).

The session is the conversation where the SDK names one, the run config's
``group_id`` ("links traces from the same conversation"), else the run: every
``ToolContext`` of one ``Runner.run`` shares that run's ``Usage``, which keys it,
so two runs in parallel never share a streak. ``session_key=`` (a function of the
``ToolContext``) keys calls yourself; ``guard.brake`` is the ``LoopBrake``.
"""

from __future__ import annotations

import copy
import itertools
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from agents import Agent, FunctionTool, ToolGuardrailFunctionOutput, ToolInputGuardrail

from ..brake import LoopBrake
from ..canonical import parse_arguments
from ._denial import denial_fields
from ._session import make_brake

__all__ = ["LoopBrakeGuardrail", "run_session_key"]

_numbers = itertools.count(1)
_run_keys: dict[int, tuple[weakref.ref[Any], str]] = {}


def run_session_key(context: Any) -> str:
    """The conversation (``run_config.group_id``), else the run the call belongs to."""
    group = getattr(getattr(context, "run_config", None), "group_id", None)
    if group is not None:
        return str(group)
    usage = context.usage  # one object per run, shared by each ToolContext of the run
    entry = _run_keys.get(id(usage))
    if entry is None or entry[0]() is not usage:
        ident = id(usage)
        ref = weakref.ref(usage, lambda _ref, ident=ident: _run_keys.pop(ident, None))
        entry = _run_keys[ident] = (ref, f"run#{next(_numbers)}")
    return entry[1]


class LoopBrakeGuardrail:
    """A tool input guardrail that denies the ``max_repeats``-th identical call."""

    def __init__(
        self,
        brake: LoopBrake | None = None,
        *,
        max_repeats: object = None,
        session_key: Callable[[Any], str] = run_session_key,
    ) -> None:
        self.brake = make_brake(brake, max_repeats)
        self.session_key = session_key
        self.guardrail: ToolInputGuardrail[Any] = ToolInputGuardrail(
            guardrail_function=self._check, name="loop_brake"
        )

    def _check(self, data: Any) -> ToolGuardrailFunctionOutput:
        context = data.context
        args, _ = parse_arguments(context.tool_arguments)
        verdict = self.brake.check(
            context.tool_name,
            args,
            session_id=self.session_key(context),
            call_id=context.tool_call_id,
        )
        if not verdict.denied:
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content(
            verdict.message, output_info=denial_fields(verdict)
        )

    def brake_tools(self, tools: Iterable[Any]) -> list[Any]:
        """Copies of the function tools with this guardrail added; other tools as given."""
        braked = []
        for tool in tools:
            if isinstance(tool, FunctionTool):
                tool = copy.copy(tool)
                tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), self.guardrail]
            braked.append(tool)
        return braked

    def brake_agent(self, agent: Agent[Any]) -> Agent[Any]:
        """A clone of ``agent`` whose function tools carry this guardrail."""
        return agent.clone(tools=self.brake_tools(agent.tools))
