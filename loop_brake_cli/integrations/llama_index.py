"""The brake in a LlamaIndex agent workflow: ``FunctionAgent``, ``ReActAgent``,
``CodeActAgent`` and the agents of an ``AgentWorkflow``.

Needs ``pip install 'loop-brake-cli[llama-index]'`` (``llama-index-core`` 0.14)::

    from llama_index.core.agent.workflow import FunctionAgent
    from loop_brake_cli.integrations.llama_index import attach

    agent = FunctionAgent(tools=[search], llm=llm)
    brake = attach(agent, max_repeats=3)

Every tool call of a LlamaIndex workflow agent passes its ``_call_tool(ctx, tool,
tool_input)``, which turns a tool's exception into the tool's failure form, a
``ToolOutput`` with ``is_error=True``; ``attach`` wraps that method of the agent
(``AgentWorkflow`` has its own: attach the workflow too). A denied call's tool
never runs and the agent gets that same form with the core's denial text as its
content (``raw_input`` left empty), which the model reads as the call's result. At
a policy's ``[stop]`` it raises ``LoopBrakeStop`` (a ``LoopBrakeError`` whose text
is the stop message) out of the tool step: the workflow ends there and ``await
handler`` raises it, as LlamaIndex ends a run on an error, before the model is
asked again. The result of a call that ran feeds the policy's progress mode; a
call a policy's ``warn_at`` warns gets the warning as a last text block of its
``ToolOutput`` (its ``content`` then ends with it).

The session is the run's workflow state (``ctx.store``, one per run, the same for
every step): a run given ``ctx=`` (a conversation carried on) keeps its streak, two
runs never share one. ``session_key=`` (a function of the ``Context``) keys calls
yourself. ``dispose(agent)`` puts the method back and forgets the streaks.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from llama_index.core.tools import ToolOutput

from ..core.brake import LoopBrake
from ._session import BrakeOptions, SessionBrake, stop_error

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["attach", "dispose"]

_attached: weakref.WeakKeyDictionary[Any, SessionBrake] = weakref.WeakKeyDictionary()


def attach(
    agent: Any, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]
) -> LoopBrake:
    """Brake every tool call of a LlamaIndex workflow agent; returns the brake."""
    if agent in _attached:
        raise ValueError("loop_brake_cli.integrations.llama_index: the agent is braked already")
    seam = SessionBrake.of(
        brake,
        options,
        # Each step gets a Context of its own; the run's state store is one per run.
        default_key=lambda ctx: seam.scoped_key(ctx.store, "llama-index"),
        where="llama_index",
    )
    call_tool = type(agent)._call_tool  # the class's: the agent is not kept alive by it
    agent_ref = weakref.ref(agent)

    async def braked_call_tool(ctx: Any, tool: Any, tool_input: dict[str, Any]) -> Any:
        name = tool.metadata.get_name()
        verdict = seam.judge(seam.session(ctx), name, tool_input)
        if verdict.stop:
            raise stop_error(verdict)
        if verdict.denied:
            return ToolOutput(
                content=verdict.message,
                tool_name=name,
                raw_input={},
                raw_output=verdict.message,
                is_error=True,
            )
        output = await call_tool(agent_ref(), ctx, tool, tool_input)
        if not output.is_error:
            seam.feed(verdict, output.content)
        if verdict.warning is not None:  # a warned call: a text block after the output
            from llama_index.core.base.llms.types import TextBlock

            warning = TextBlock(text=verdict.warning)
            output = output.model_copy(update={"blocks": [*output.blocks, warning]})
        return output

    agent.__dict__["_call_tool"] = braked_call_tool  # a pydantic model: set past its checks
    _attached[agent] = seam
    return seam.brake


def dispose(agent: Any) -> None:
    """Put back the agent's own ``_call_tool`` and forget its streaks."""
    seam = _attached.pop(agent, None)
    if seam is not None:
        agent.__dict__.pop("_call_tool", None)
        seam.brake.reset()
