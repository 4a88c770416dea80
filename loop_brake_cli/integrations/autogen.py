"""The brake in an AutoGen AgentChat agent: a workbench around the agent's tools.

Needs ``pip install 'loop-brake-cli[autogen]'`` (``autogen-agentchat`` 0.7)::

    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.tools import StaticWorkbench
    from loop_brake_cli.integrations.autogen import LoopBrakeWorkbench, attach

    agent = AssistantAgent("a", model_client, workbench=LoopBrakeWorkbench(
        StaticWorkbench([search]), max_repeats=3))
    # or, for an agent built with tools=[...] (or any workbench):
    brake = attach(agent, max_repeats=3)

An AgentChat agent runs every tool through a workbench's ``call_tool`` (its
``tools=`` become a ``StaticWorkbench``; ``McpWorkbench`` serves MCP tools).
``LoopBrakeWorkbench`` wraps one: a denied call never reaches it, and the agent
gets the workbench's own failure form, a ``ToolResult`` with ``is_error=True`` and
the core's denial text, which the model reads as that call's result.

A policy's ``[stop]``: the call fails with the stop text, and the agent's model
client, guarded (``attach`` guards the agent's; for an agent built by hand,
``AssistantAgent(..., model_client=workbench.model_client(client))``), answers
the stop text itself from then on instead of asking the model: the agent's turn
ends there with that text as its final message (whatever its
``max_tool_iterations`` or ``reflect_on_tool_use``), and ``agent.run()`` returns.
``workbench.termination()`` (``termination(agent)`` after ``attach``) is a team
termination condition that then ends the team's run with a ``StopMessage``
holding the stop text, before the next turn. The run's ``CancellationToken`` is
never cancelled: a team's participant whose token-linked model call (the OpenAI
client's) is cancelled leaves ``team.run()`` waiting forever, since AgentChat's
container reports an ``Exception`` to the team but not a ``CancelledError``.
Without the guard a model asked again in the same turn gets each of its further
calls denied, until the agent's turn ends (``max_tool_iterations``).

The result of a call that ran feeds the policy's progress mode. A call a
policy's ``warn_at`` warns gets the warning as a last ``TextResultContent`` of
its ``ToolResult``.

The session is the agent's conversation: an AgentChat agent holds one (its model
context), so the session is the agent (``attach``: all its workbenches share it) or
the ``LoopBrakeWorkbench`` (one per agent); the workbench's ``reset()`` forgets it
(an agent's ``on_reset`` clears its context but not its workbenches: reset both).
``session_key=`` (a function of the ``LoopBrakeWorkbench``) keys calls yourself.
The model's call id is the call id. ``dispose(agent)`` puts the agent's
workbenches and model client back.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from autogen_agentchat.base import TerminationCondition
from autogen_agentchat.messages import StopMessage
from autogen_core.models import ChatCompletionClient, CreateResult, RequestUsage
from autogen_core.tools import TextResultContent, ToolResult, Workbench

from ..core.brake import LoopBrake
from ._session import BrakeOptions, SessionBrake, brake_of

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "LoopBrakeModelClient",
    "LoopBrakeTermination",
    "LoopBrakeWorkbench",
    "attach",
    "dispose",
    "termination",
]


class _Stop:
    """The stop text of one conversation once a policy's stop was reached: shared by
    its workbenches, its guarded model client and its termination condition."""

    def __init__(self) -> None:
        self.text: str | None = None


class LoopBrakeWorkbench(Workbench):
    """A workbench that brakes ``call_tool`` of the workbench it wraps."""

    def __init__(
        self,
        inner: Workbench,
        brake: LoopBrake | None = None,
        *,
        owner: Any = None,
        stop: _Stop | None = None,
        **options: Unpack[BrakeOptions],
    ) -> None:
        """``owner``: the conversation the session stands for (default: this workbench;
        ``attach`` passes the agent, and one ``stop`` for all its workbenches)."""
        self.inner = inner
        self.seam = SessionBrake.of(brake, options, default_key=self._default_key, where="autogen")
        self.brake = self.seam.brake
        self._owner = None if owner is None else weakref.ref(owner)
        self._stop = _Stop() if stop is None else stop

    @property
    def stopped(self) -> str | None:
        """The stop text, once a policy's stop was reached (until ``reset()``)."""
        return self._stop.text

    def termination(self) -> LoopBrakeTermination:
        """A team termination condition that fires at this workbench's stop."""
        return LoopBrakeTermination(self._stop)

    def model_client(self, client: ChatCompletionClient) -> LoopBrakeModelClient:
        """``client`` guarded: after this workbench's stop it answers the stop text
        instead of asking the model (pass it to the ``AssistantAgent``)."""
        return LoopBrakeModelClient(client, self._stop)

    def _default_key(self, workbench: Any) -> str:
        owner = self if self._owner is None else self._owner()
        return self.seam.scoped_key(owner, "autogen")

    async def list_tools(self) -> Any:
        return await self.inner.list_tools()

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: Any = None,
        call_id: str | None = None,
    ) -> ToolResult:
        verdict = self.seam.judge(self.seam.session(self), name, arguments, call_id)
        if verdict.stop:  # the guarded model client ends the turn, the termination the run
            self._stop.text = verdict.message
        if verdict.denied:
            return ToolResult(
                name=name, result=[TextResultContent(content=verdict.message)], is_error=True
            )
        with self.seam.running(verdict):  # the call ends with its result or exception
            result = await self.inner.call_tool(name, arguments, cancellation_token, call_id)
            if not result.is_error:
                self.seam.feed(verdict, result.to_text())
        if verdict.warning is not None:  # a warned call: the model reads it after the result
            warning = TextResultContent(content=verdict.warning)
            result = result.model_copy(update={"result": [*result.result, warning]})
        return result

    async def call_tool_stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        yield await self.call_tool(*args, **kwargs)  # never streams: the brake answers whole

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def reset(self) -> None:
        """A new conversation: forget this workbench's streak, reset the wrapped one."""
        self.seam.release(self._default_key(self))
        self._stop.text = None
        await self.inner.reset()

    async def save_state(self) -> Mapping[str, Any]:
        return await self.inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self.inner.load_state(state)

    def _to_config(self) -> Any:
        raise NotImplementedError("a LoopBrakeWorkbench is not serialisable")

    @classmethod
    def _from_config(cls, config: Any) -> LoopBrakeWorkbench:
        raise NotImplementedError("a LoopBrakeWorkbench is not serialisable")


class LoopBrakeTermination(TerminationCondition):
    """Ends a team's run (``RoundRobinGroupChat(..., termination_condition=...)``, alone
    or ``|`` with others) once the workbench reached a policy's stop: a ``StopMessage``
    with the stop text."""

    def __init__(self, stop: _Stop) -> None:
        self._stop = stop
        self._fired = False

    @property
    def terminated(self) -> bool:
        return self._fired

    async def __call__(self, messages: Any) -> StopMessage | None:
        if self._fired or self._stop.text is None:
            return None
        self._fired = True
        return StopMessage(content=self._stop.text, source="loop_brake")

    async def reset(self) -> None:
        self._fired = False

    def _to_config(self) -> Any:
        raise NotImplementedError("a LoopBrakeTermination is not serialisable")

    @classmethod
    def _from_config(cls, config: Any) -> LoopBrakeTermination:
        raise NotImplementedError("a LoopBrakeTermination is not serialisable")


def attach(
    agent: Any, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]
) -> LoopBrake:
    """Wrap each workbench of an ``AssistantAgent`` (its ``tools=`` too) in one
    ``LoopBrakeWorkbench`` brake, and guard its model client; returns the brake."""
    brake = brake_of(brake, options, "autogen")
    key = options.get("session_key")
    client = agent._model_client  # AgentChat keeps it and the workbenches privately
    stop = client.stop if isinstance(client, LoopBrakeModelClient) else _Stop()
    agent._workbench = [
        wb
        if isinstance(wb, LoopBrakeWorkbench)
        else LoopBrakeWorkbench(wb, brake, session_key=key, owner=agent, stop=stop)
        for wb in agent._workbench
    ]
    if not isinstance(client, LoopBrakeModelClient):
        agent._model_client = LoopBrakeModelClient(client, stop)
    return brake


def termination(agent: Any) -> LoopBrakeTermination:
    """The team termination condition of an agent braked by ``attach``."""
    client = agent._model_client
    if not isinstance(client, LoopBrakeModelClient):
        raise ValueError("loop_brake_cli.integrations.autogen: the agent is not braked (attach)")
    return LoopBrakeTermination(client.stop)


def dispose(agent: Any) -> None:
    """Put back the workbenches and the model client ``attach`` wrapped, and forget
    their streaks."""
    restored = []
    for wb in agent._workbench:
        if isinstance(wb, LoopBrakeWorkbench):
            wb.brake.reset()
            wb = wb.inner
        restored.append(wb)
    agent._workbench = restored
    if isinstance(agent._model_client, LoopBrakeModelClient):
        agent._model_client = agent._model_client.inner


_NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)


class LoopBrakeModelClient(ChatCompletionClient):
    """A model client that, once its conversation reached a policy's stop, answers
    the stop text instead of asking the model: the agent's turn ends with it. Until
    then every call and property is the wrapped client's."""

    def __init__(self, inner: ChatCompletionClient, stop: _Stop) -> None:
        self.inner = inner
        self.stop = stop

    def _stopped(self) -> CreateResult | None:
        text = self.stop.text
        if text is None:
            return None
        return CreateResult(finish_reason="stop", content=text, usage=_NO_USAGE, cached=False)

    async def create(self, messages: Any, **kwargs: Any) -> CreateResult:
        stopped = self._stopped()
        if stopped is not None:
            return stopped
        return await self.inner.create(messages, **kwargs)

    async def create_stream(self, messages: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        stopped = self._stopped()
        if stopped is not None:
            yield stopped
            return
        async for chunk in self.inner.create_stream(messages, **kwargs):
            yield chunk

    async def close(self) -> None:
        await self.inner.close()

    def actual_usage(self) -> RequestUsage:
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return self.inner.total_usage()

    def count_tokens(self, messages: Any, **kwargs: Any) -> int:
        return self.inner.count_tokens(messages, **kwargs)

    def remaining_tokens(self, messages: Any, **kwargs: Any) -> int:
        return self.inner.remaining_tokens(messages, **kwargs)

    @property
    def capabilities(self) -> Any:
        return self.inner.capabilities

    @property
    def model_info(self) -> Any:
        return self.inner.model_info

    def _to_config(self) -> Any:
        raise NotImplementedError("a LoopBrakeModelClient is not serialisable")

    @classmethod
    def _from_config(cls, config: Any) -> LoopBrakeModelClient:
        raise NotImplementedError("a LoopBrakeModelClient is not serialisable")
