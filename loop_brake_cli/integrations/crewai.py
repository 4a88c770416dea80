"""The brake in CrewAI: its tool-call hooks, around every tool call of every agent.

Needs ``pip install 'loop-brake-cli[crewai]'`` (``crewai`` 1.x), in an environment of
its own: CrewAI pins ``mcp<2`` and ``openai<3``, which the ``mcp``, ``fastmcp`` and
``openai-agents`` extras exclude (and ``google-adk`` resolves only to an older CrewAI)::

    from crewai import Agent, Crew, Task
    from loop_brake_cli.integrations.crewai import attach

    brake = attach(max_repeats=3)   # every agent of the process, from its next run on
    Crew(agents=[...], tasks=[...]).kickoff()

CrewAI runs its ``before_tool_call`` hooks before every tool call (native function
calls and the ReAct text path alike) and its ``after_tool_call`` hooks after it, a
blocked call too; its hooks are the process's (``crewai.hooks``), so ``attach``
brakes every agent, and ``dispose()`` takes the hooks off again. A denied call's
tool never runs: the before hook blocks it (returns ``False``) and the after hook
hands the model the core's denial text as the call's result, in place of CrewAI's
"Tool execution blocked by hook". A call a policy's ``warn_at`` warns runs, and the
model reads the warning after the tool's output. The result of a call that ran feeds
the policy's progress mode (the text the model reads, before any later hook).

At a policy's ``[stop]`` the call is denied with the stop text and the agent's next
model call is refused by a ``before_llm_call`` hook raising CrewAI's own
``HookAborted`` (its ``reason`` the stop text, its ``verdict`` the stop's): the
model is not asked again and ``kickoff()`` raises it. An agent's LLM hooks are read
when CrewAI builds its executor (at its first task), so ``attach`` before the agents
run, or the stop ends the run only at CrewAI's own limits.

The session is one conversation: an agent working one task (a crew's task, or one
``Agent.kickoff``), from the first model call of that run on; the agent's next run of
the task is a new session, and two agents never share one. ``session_key=`` (a
function of CrewAI's ``ToolCallHookContext``, returning a str, or None for the
default) keys calls yourself. ``brake`` is the ``LoopBrake``; its table is bounded.

CrewAI has a repeated-call check of its own, ``MAX_REPEATED_TOOL_CALLS`` (5): the
fifth call in one run with the same tool, arguments and result (anywhere in the run,
not only in a row) fails the run with ``ToolExecutionFailedError`` after that call
ran; its ReAct text path also refuses a call identical to the one just before it.
The brake counts consecutive identical calls, denies before the call runs (at 3 by
default, configurable per tool), tells the model and lets it change course, reads
changing results only under the progress mode, and its texts carry no argument.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from crewai.hooks import (
    HookAborted,
    register_after_tool_call_hook,
    register_before_llm_call_hook,
    register_before_tool_call_hook,
    unregister_after_tool_call_hook,
    unregister_before_llm_call_hook,
    unregister_before_tool_call_hook,
)

from ..core.brake import LoopBrake
from ..core.verdicts import Verdict
from ._session import BrakeOptions, SessionBrake, fresh_call_id

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeHooks", "attach", "dispose"]

_attached: list[LoopBrakeHooks] = []


class LoopBrakeHooks:
    """The brake's three CrewAI hooks; ``register()`` adds them, ``unregister()`` takes
    them off."""

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = SessionBrake.of(brake, options, default_key=self._default_key, where="crewai")
        self.brake = self.seam.brake
        # The session of each agent's run of each task: agent -> {id(task): key}.
        self._runs: weakref.WeakKeyDictionary[Any, dict[int, str]] = weakref.WeakKeyDictionary()
        # Each call between its before and after hook: keyed by its tool input (one
        # dict per call, handed to both hooks), which the entry keeps alive.
        self._open: dict[int, tuple[Any, Verdict]] = {}
        # The runs at a stop, until their agent's next run: agent -> {id(task): verdict}.
        self._stops: weakref.WeakKeyDictionary[Any, dict[int, Verdict]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _default_key(self, context: Any) -> str:
        """The agent's run of its task: one session per run, started lazily."""
        agent, task = context.agent, context.task
        if agent is None:  # a tool called outside any agent: this call alone
            return fresh_call_id()
        with self._lock:
            runs = self._runs.setdefault(agent, {})
            key = runs.get(id(task))
            if key is None:
                key = runs[id(task)] = f"crewai#{fresh_call_id()}"
        return key

    def _new_run(self, context: Any) -> None:
        """An agent's first model call of a run: its session (if it had one) ends."""
        agent = context.agent
        if agent is None:
            return
        with self._lock:
            old = self._runs.get(agent, {}).pop(id(context.task), None)
            self._stops.get(agent, {}).pop(id(context.task), None)
        if old is not None:
            self.seam.release(old)

    def before_tool_call(self, context: Any) -> bool | None:
        """Count the call; ``False`` blocks a denied one (CrewAI's own way). CrewAI
        runs the call when a hook raises, and says so only to a verbose agent: the
        brake says so on the ``loop_brake_cli`` logger."""
        try:
            session = self.seam.session(context)
        except TypeError as exc:  # the user's session_key: our own text, no argument
            logging.getLogger("loop_brake_cli").warning("%s; the call ran without the brake", exc)
            return None
        verdict = self.seam.judge(session, context.tool_name, context.tool_input, fresh_call_id())
        with self._lock:
            self._open[id(context.tool_input)] = (context.tool_input, verdict)
            if verdict.stop and context.agent is not None:
                self._stops.setdefault(context.agent, {})[id(context.task)] = verdict
        return False if verdict.denied else None

    def after_tool_call(self, context: Any) -> str | None:
        """The denial text for a denied call; a warned call's output with the warning;
        a result that ran to the progress mode."""
        with self._lock:
            entry = self._open.pop(id(context.tool_input), None)
        if entry is None:
            return None
        verdict = entry[1]
        if verdict.denied:
            return verdict.message
        self.seam.feed(verdict, context.tool_result)
        if verdict.warning is None:
            return None
        output = context.tool_result or ""
        return f"{output}\n\n{verdict.warning}" if output else verdict.warning

    def before_llm_call(self, context: Any) -> None:
        """A run's first model call starts its session anew; after a stop, no model
        call: CrewAI's ``HookAborted`` ends the run."""
        if context.iterations == 0:
            self._new_run(context)
            return
        if context.agent is None:
            return
        with self._lock:
            verdict = self._stops.get(context.agent, {}).get(id(context.task))
        if verdict is not None:
            aborted = HookAborted(reason=verdict.message, source="loop_brake")
            aborted.verdict = verdict  # type: ignore[attr-defined]
            raise aborted

    def register(self) -> None:
        register_before_tool_call_hook(self.before_tool_call)
        register_after_tool_call_hook(self.after_tool_call)
        register_before_llm_call_hook(self.before_llm_call)

    def unregister(self) -> None:
        unregister_before_tool_call_hook(self.before_tool_call)
        unregister_after_tool_call_hook(self.after_tool_call)
        unregister_before_llm_call_hook(self.before_llm_call)


def attach(brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> LoopBrake:
    """Register the brake's hooks with CrewAI (every agent of the process); returns
    the brake."""
    hooks = LoopBrakeHooks(brake, **options)
    hooks.register()
    _attached.append(hooks)
    return hooks.brake


def dispose(brake: LoopBrake | None = None) -> None:
    """Take off the hooks ``attach`` registered (of ``brake`` only, when given) and
    forget their streaks."""
    for hooks in [h for h in _attached if brake is None or h.brake is brake]:
        hooks.unregister()
        _attached.remove(hooks)
        hooks.brake.reset()
