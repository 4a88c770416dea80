"""The brake in a smolagents agent: ``ToolCallingAgent`` and ``CodeAgent``.

Needs ``pip install 'loop-brake-cli[smolagents]'``::

    from smolagents import CodeAgent, ToolCallingAgent
    from loop_brake_cli.integrations.smolagents import attach

    agent = ToolCallingAgent(tools=[search], model=model)   # or CodeAgent(...)
    brake = attach(agent, max_repeats=3)

smolagents has no hook around a tool call, so ``attach`` takes the agent's own
seam: a ``ToolCallingAgent``'s ``execute_tool_call`` (every call the model makes,
parallel calls of one step each in its thread), and a ``CodeAgent``'s tools
themselves (its calls come from the Python the model wrote, so the agent's tools
are replaced by braked copies that the code's interpreter gets at each run). A
denied call's tool never runs and the call fails as a smolagents tool fails: a
``ToolCallingAgent`` raises ``AgentToolExecutionError`` with the core's denial
text (the step's error, which the model reads on its next step); in a
``CodeAgent`` the tool raises ``LoopBrakeError``, the code stops at that line, and
the model reads smolagents' "Code execution failed at line ..." with the denial
text. That smolagents message quotes the failing line of the model's code, and
smolagents logs every call with its arguments at its default verbosity: the
brake's own texts never hold them. At a policy's ``[stop]`` the call fails with
the stop text and the agent is interrupted (``agent.interrupt()``): the run ends
before the model is asked again, with smolagents' ``AgentError("Agent
interrupted.")``; the stop text is the last step's error. The result of a call that
ran feeds the policy's progress mode. A ``ToolCallingAgent`` call a policy's
``warn_at`` warns gets the warning after its output when the output is text (the
observation the model reads); a ``CodeAgent`` tool's value goes on into the
agent's code unchanged, so there it is not told.

The session is the agent's conversation: its memory's first step (a run with
``reset=False`` goes on in the previous run's session; a new run starts a new one),
so two agents never share a streak. Every call counts, ``final_answer`` too.
``session_key=`` (a function of the agent) keys calls yourself. ``dispose(agent)``
puts back what ``attach`` replaced.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from typing import Any

from smolagents import CodeAgent
from smolagents.utils import AgentToolExecutionError

from ..core.brake import LoopBrake, LoopBrakeError
from ..core.canonical import parse_arguments
from ..core.verdicts import Verdict
from ._session import SessionBrake, make_brake

__all__ = ["LoopBrakeAgent", "attach", "dispose"]

_attached: weakref.WeakKeyDictionary[Any, LoopBrakeAgent] = weakref.WeakKeyDictionary()


class LoopBrakeAgent:
    """The brake of one agent: what ``attach`` replaced and how it judges a call."""

    def __init__(
        self,
        agent: Any,
        brake: LoopBrake | None = None,
        *,
        max_repeats: object = None,
        policy: Any = None,
        session_key: Callable[[Any], str | None] | None = None,
    ) -> None:
        self._agent = weakref.ref(agent)  # _attached holds this: never the agent itself
        self.seam = SessionBrake(
            make_brake(brake, max_repeats, policy=policy),
            session_key=session_key,
            default_key=self._default_key,
            where="smolagents",
        )
        self.brake = self.seam.brake
        self.tools: dict[str, Any] = {}  # a CodeAgent's own tools, while braked copies stand in
        self.own_execute = agent.__dict__.get("execute_tool_call")
        self.class_execute = getattr(type(agent), "execute_tool_call", None)

    @property
    def agent(self) -> Any:
        return self._agent()

    def _default_key(self, agent: Any) -> str:
        """The conversation: the first step of the agent's memory, else the agent."""
        steps = agent.memory.steps
        return self.seam.scoped_key(steps[0] if steps else agent, "smolagents")

    def judge(self, tool_name: str, args: Any) -> Verdict:
        """Count one call; at a stop, interrupt the agent (its run ends)."""
        agent = self.agent
        verdict = self.seam.judge(self.seam.session(agent), tool_name, args)
        if verdict.stop:
            agent.interrupt()
        return verdict

    def execute_tool_call(self, tool_name: str, arguments: Any) -> Any:
        """A ``ToolCallingAgent``'s ``execute_tool_call``, braked."""
        args = parse_arguments(arguments)[0] if isinstance(arguments, str) else arguments
        verdict = self.judge(tool_name, args)
        if verdict.denied:
            raise AgentToolExecutionError(verdict.message, self.agent.logger)
        if self.own_execute is not None:
            result = self.own_execute(tool_name, arguments)
        else:
            result = self.class_execute(self.agent, tool_name, arguments)
        self.seam.feed(verdict, result)
        if verdict.warning is not None and isinstance(result, str):  # the observation
            return f"{result}\n\n{verdict.warning}" if result else verdict.warning
        return result

    def braked_tool(self, tool: Any) -> Any:
        """A copy of a ``CodeAgent`` tool whose ``forward`` is braked."""
        forward = tool.forward
        names = list(getattr(tool, "inputs", None) or {})

        def braked_forward(*args: Any, **kwargs: Any) -> Any:
            verdict = self.judge(tool.name, {**dict(zip(names, args, strict=False)), **kwargs})
            if verdict.denied:
                raise LoopBrakeError(verdict)
            result = forward(*args, **kwargs)
            self.seam.feed(verdict, result)
            return result

        braked = copy.copy(tool)
        braked.forward = braked_forward
        return braked


def attach(
    agent: Any,
    brake: LoopBrake | None = None,
    *,
    max_repeats: object = None,
    policy: Any = None,
    session_key: Callable[[Any], str | None] | None = None,
) -> LoopBrake:
    """Brake every tool call of ``agent`` (a ``ToolCallingAgent`` or a ``CodeAgent``);
    returns the brake. Attaching twice is refused."""
    if agent in _attached:
        raise ValueError("loop_brake_cli.integrations.smolagents: the agent is braked already")
    braker = LoopBrakeAgent(
        agent, brake, max_repeats=max_repeats, policy=policy, session_key=session_key
    )
    if isinstance(agent, CodeAgent):
        braker.tools = dict(agent.tools)
        agent.tools = {name: braker.braked_tool(tool) for name, tool in agent.tools.items()}
    else:
        agent.execute_tool_call = braker.execute_tool_call
    _attached[agent] = braker
    return braker.brake


def dispose(agent: Any) -> None:
    """Put back what ``attach`` replaced on ``agent`` and forget its streaks."""
    braker = _attached.pop(agent, None)
    if braker is None:
        return
    if isinstance(agent, CodeAgent):
        agent.tools = braker.tools
    elif braker.own_execute is not None:
        agent.execute_tool_call = braker.own_execute
    else:
        del agent.execute_tool_call
    braker.brake.reset()
