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
ran feeds the policy's progress mode.

A call a policy's ``warn_at`` warns runs, and the model reads the warning in the
step's observation: a ``ToolCallingAgent`` call whose output is text gets it after
that output (the observation of the call); another output (an image, a dict, a
number) is left as it is, for the agent and for ``final_answer``, and the warning
goes after the step's observations. A ``CodeAgent`` tool's value goes on into the
agent's code unchanged, and the warning is printed to the run's execution logs
(the local executor's print buffer, where the code's own ``print`` goes), which the
model reads as the step's "Execution logs:", also when the code then fails; an
executor without that buffer (a remote one) gets nothing, so there the model is
not told.

The session is the agent's conversation: its memory's first step (a run with
``reset=False`` goes on in the previous run's session; a new run starts a new one),
so two agents never share a streak. Every call counts, ``final_answer`` too.
``session_key=`` (a function of the agent) keys calls yourself. ``dispose(agent)``
puts back what ``attach`` replaced.
"""

from __future__ import annotations

import copy
import threading
import weakref
from typing import TYPE_CHECKING, Any

from smolagents import CodeAgent
from smolagents.utils import AgentToolExecutionError

from ..core.brake import LoopBrake, LoopBrakeError
from ..core.canonical import parse_arguments
from ..core.verdicts import Verdict
from ._session import BrakeOptions, SessionBrake

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeAgent", "attach", "dispose"]

_attached: weakref.WeakKeyDictionary[Any, LoopBrakeAgent] = weakref.WeakKeyDictionary()


class LoopBrakeAgent:
    """The brake of one agent: what ``attach`` replaced and how it judges a call."""

    def __init__(
        self, agent: Any, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]
    ) -> None:
        self._agent = weakref.ref(agent)  # _attached holds this: never the agent itself
        self.seam = SessionBrake.of(
            brake, options, default_key=self._default_key, where="smolagents"
        )
        self.brake = self.seam.brake
        self.tools: dict[str, Any] = {}  # a CodeAgent's own tools, while braked copies stand in
        self.own_execute = agent.__dict__.get("execute_tool_call")
        self.class_execute = getattr(type(agent), "execute_tool_call", None)
        self.own_process = agent.__dict__.get("process_tool_calls")
        self.class_process = getattr(type(agent), "process_tool_calls", None)
        self.untold: list[str] = []  # warnings of this step's calls whose output is not text
        self._untold_lock = threading.Lock()

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
        if verdict.warning is not None:
            if isinstance(result, str):  # the call's observation
                return f"{result}\n\n{verdict.warning}" if result else verdict.warning
            with self._untold_lock:  # parallel calls of one step run in threads
                self.untold.append(verdict.warning)
        return result

    def process_tool_calls(self, chat_message: Any, memory_step: Any) -> Any:
        """A ``ToolCallingAgent``'s ``process_tool_calls``: after the step's calls, the
        warnings of those whose output is not text go after its observations."""
        if self.own_process is not None:
            yield from self.own_process(chat_message, memory_step)
        else:
            yield from self.class_process(self.agent, chat_message, memory_step)
        with self._untold_lock:
            untold, self.untold = self.untold, []
        if untold:
            seen = memory_step.observations
            memory_step.observations = "\n".join([seen, *untold] if seen else untold)

    def print_warning(self, warning: str) -> None:
        """Print a ``CodeAgent`` call's warning to the run's execution logs (the local
        executor's print buffer, which the model reads); another executor has none."""
        state = getattr(self.agent.python_executor, "state", None)
        if isinstance(state, dict) and "_print_outputs" in state:
            state["_print_outputs"] += warning + "\n"

    def braked_tool(self, tool: Any) -> Any:
        """A copy of a ``CodeAgent`` tool whose ``forward`` is braked."""
        forward = tool.forward
        names = list(getattr(tool, "inputs", None) or {})

        def braked_forward(*args: Any, **kwargs: Any) -> Any:
            verdict = self.judge(tool.name, {**dict(zip(names, args, strict=False)), **kwargs})
            if verdict.denied:
                raise LoopBrakeError(verdict)
            try:
                result = forward(*args, **kwargs)
            finally:
                if verdict.warning is not None:  # after what the tool printed
                    self.print_warning(verdict.warning)
            self.seam.feed(verdict, result)
            return result

        braked = copy.copy(tool)
        braked.forward = braked_forward
        return braked


def attach(
    agent: Any, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]
) -> LoopBrake:
    """Brake every tool call of ``agent`` (a ``ToolCallingAgent`` or a ``CodeAgent``);
    returns the brake. Attaching twice is refused."""
    if agent in _attached:
        raise ValueError("loop_brake_cli.integrations.smolagents: the agent is braked already")
    braker = LoopBrakeAgent(agent, brake, **options)
    if isinstance(agent, CodeAgent):
        braker.tools = dict(agent.tools)
        agent.tools = {name: braker.braked_tool(tool) for name, tool in agent.tools.items()}
    else:
        agent.execute_tool_call = braker.execute_tool_call
        agent.process_tool_calls = braker.process_tool_calls
    _attached[agent] = braker
    return braker.brake


def dispose(agent: Any) -> None:
    """Put back what ``attach`` replaced on ``agent`` and forget its streaks."""
    braker = _attached.pop(agent, None)
    if braker is None:
        return
    if isinstance(agent, CodeAgent):
        agent.tools = braker.tools
    else:
        if braker.own_execute is not None:
            agent.execute_tool_call = braker.own_execute
        else:
            del agent.execute_tool_call
        if braker.own_process is not None:
            agent.process_tool_calls = braker.own_process
        else:
            del agent.process_tool_calls
    braker.brake.reset()
