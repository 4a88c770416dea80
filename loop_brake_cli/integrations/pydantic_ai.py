"""The brake in a pydantic-ai agent: a capability around every tool execution.

Needs ``pip install 'loop-brake-cli[pydantic-ai]'`` (``pydantic-ai-slim`` 2.68 or
later is enough)::

    from pydantic_ai import Agent
    from loop_brake_cli.integrations.pydantic_ai import LoopBrakeCapability

    agent = Agent(model, tools=[search], capabilities=[LoopBrakeCapability(max_repeats=3)])

``wrap_tool_execute`` runs around every tool the agent executes, however it was
registered (``@agent.tool``, ``@agent.tool_plain``, ``tools=[...]``, a toolset,
an MCP server), after pydantic-ai validated its arguments and before the tool
runs. A denied call's tool never runs: it raises ``ModelRetry`` with the core's
denial text, which is how pydantic-ai tells a model to change its call (the
model gets a retry prompt for that tool call id). Each denial uses one of the
tool's retries (``Agent(retries=...)``), so a model that keeps repeating itself
past them ends the run with ``UnexpectedModelBehavior``. A policy's stop ends the
run at once: ``LoopBrakeStop`` (a ``LoopBrakeError`` carrying the stop's verdict)
propagates out of ``run``/``run_sync``, and pydantic-ai's ``capture_run_messages()``
holds the run's messages up to it. (``RunContext.cancel()`` would end it too, as a
``RunCancelled`` that cannot say why.) Each tool's return value feeds the progress
mode. A call a policy's ``warn_at`` warns returns a ``ToolReturn`` whose
``content`` (sent to the model beside the return value, pydantic-ai's own way to
tell the model more than the result) ends with the warning (``with_warning``).

``LoopBrakeToolset`` is the same brake as a wrapper toolset, for one toolset's
tools only (it sees no tool registered outside it).

The session is the conversation pydantic-ai resolves for the run
(``ctx.conversation_id``: the one passed to ``run``, or the one on the message
history, else a fresh id per run), else the run id: a run that continues a
conversation continues its streak, two runs in parallel never share one. A
conversation can always come back, so its streak is not forgotten at the run's
end; the session table is bounded instead (least recently used first,
``integrations._session``). ``.brake`` is the ``LoopBrake``; ``session_key=`` (a
function of the ``RunContext`` returning a str, or None for the default) keys
calls yourself.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai import ModelRetry, ToolReturn
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.toolsets import WrapperToolset
from pydantic_core import to_jsonable_python

from ..core.brake import LoopBrake
from ._session import BrakeOptions, SessionBrake, fresh_call_id, stop_error

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeCapability", "LoopBrakeToolset", "conversation_session_key"]


def conversation_session_key(ctx: Any) -> str:
    """The run's conversation id, else its run id (else a session of this call alone)."""
    return getattr(ctx, "conversation_id", None) or getattr(ctx, "run_id", None) or fresh_call_id()


def _seam(brake: LoopBrake | None, options: BrakeOptions) -> SessionBrake:
    return SessionBrake.of(
        brake, options, default_key=conversation_session_key, where="pydantic_ai"
    )


async def _braked_call(seam: SessionBrake, ctx: Any, name: str, args: Any, run: Any) -> Any:
    """Judge one call (validated arguments hashed as JSON), run it, feed its result."""
    verdict = seam.judge(seam.session(ctx), name, to_jsonable_python(args), ctx.tool_call_id)
    if verdict.stop:
        raise stop_error(verdict)
    if verdict.denied:
        raise ModelRetry(verdict.message)
    with seam.running(verdict):  # the call ends with its result or its exception
        result = await run()
        seam.feed(verdict, result)
    return result if verdict.warning is None else with_warning(result, verdict.warning)


def with_warning(result: Any, warning: str) -> ToolReturn:
    """The tool's result as a ``ToolReturn`` whose ``content`` (what pydantic-ai sends
    the model beside the return value) ends with the warning; a ``ToolReturn`` the tool
    gave keeps its own value, metadata and content."""
    if not isinstance(result, ToolReturn):
        return ToolReturn(return_value=result, content=warning)
    content = result.content
    if content is None:
        kept: list[Any] = []
    elif isinstance(content, str):
        kept = [content]
    else:
        kept = list(content)
    return replace(result, content=[*kept, warning])


@dataclass(init=False)
class LoopBrakeCapability(AbstractCapability[Any]):
    """Deny the ``max_repeats``-th identical tool call in a row of a conversation."""

    seam: SessionBrake = field(repr=False)

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = _seam(brake, options)

    @property
    def brake(self) -> LoopBrake:
        return self.seam.brake

    async def wrap_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        return await _braked_call(self.seam, ctx, call.tool_name, args, lambda: handler(args))


@dataclass(init=False)
class LoopBrakeToolset(WrapperToolset[Any]):
    """The brake around one toolset's tools (``LoopBrakeCapability`` brakes them all)."""

    seam: SessionBrake = field(repr=False)

    def __init__(
        self, wrapped: Any, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]
    ) -> None:
        self.seam = _seam(brake, options)
        self.wrapped = wrapped

    @property
    def brake(self) -> LoopBrake:
        return self.seam.brake

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        parent = super().call_tool
        return await _braked_call(
            self.seam, ctx, name, tool_args, lambda: parent(name, tool_args, ctx, tool)
        )
