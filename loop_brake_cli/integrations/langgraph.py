"""The brake in a LangGraph graph without ``create_agent``: a ``ToolNode`` tool-call wrapper.

Needs ``pip install 'loop-brake-cli[langgraph]'`` (``langgraph`` 1.x)::

    from langgraph.prebuilt import ToolNode
    from loop_brake_cli.integrations.langgraph import LoopBrakeWrapper

    brake = LoopBrakeWrapper(max_repeats=3)
    tools = ToolNode([search], wrap_tool_call=brake, awrap_tool_call=brake.awrap_tool_call)
    # a StateGraph node, or create_react_agent(model, tools)

``ToolNode`` hands each tool call to the wrapper before the tool runs (sync and
async, parallel calls of one turn each on their own). A denied call's tool never
runs: the model gets a ``ToolMessage`` with the core's denial text and
``status="error"`` answering its tool call id, as LangGraph reports a failed tool;
the denial as data (``code``, ``count``, ``maxRepeats``, ``hashPrefix``) is the
message's ``artifact``, which is not sent to the model. LangChain's
``create_agent`` middleware (``integrations.langchain``) answers the same way.

A policy's ``[stop]`` interrupts the graph (``GraphInterrupt``, as
``langgraph.types.interrupt`` does): the run ends, the caller gets
``result["__interrupt__"]`` whose value is the stop (``message`` and the denial
as data), the model is not asked again. A call that ran hands its result (the
``ToolMessage`` content) to the policy's progress mode. A call a policy's
``warn_at`` warns runs, and its ``ToolMessage`` carries the warning after the
tool's output (``with_warning``, which the ``create_agent`` middleware uses too).

The session is the LangGraph thread (``configurable.thread_id``); a run without
one keys on its own conversation (the first message of the run's state), so two
runs without a thread never share a streak. ``session_key=`` (a function of the
``ToolCallRequest``) keys calls yourself. The tool call's id is the call id.
``wrapper.brake`` is the ``LoopBrake``; its session table is bounded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.types import Interrupt

from ..core.brake import LoopBrake
from ..core.verdicts import Verdict
from ._denial import denial_fields
from ._session import BrakeOptions, SessionBrake, fresh_call_id

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LoopBrakeWrapper", "answered", "denial_message", "thread_session_key", "with_warning"]


def thread_session_key(request: Any) -> str | None:
    """The LangGraph thread id of a tool call request, or None outside a thread."""
    config = getattr(getattr(request, "runtime", None), "config", None) or {}
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def denial_message(verdict: Verdict, call: Any) -> ToolMessage:
    """The denial as LangChain reports a failed tool: an error ``ToolMessage``
    answering the call, the denial as data in its ``artifact`` (not sent to the model)."""
    return ToolMessage(
        content=verdict.message,
        tool_call_id=call.get("id") or "",
        name=call["name"],
        status="error",
        artifact=denial_fields(verdict),
    )


def with_warning(message: ToolMessage, warning: str) -> ToolMessage:
    """The tool's message with the warning after its output, in the content's own form."""
    content = message.content
    if isinstance(content, list):
        content = [*content, {"type": "text", "text": warning}]
    else:
        content = f"{content}\n\n{warning}" if content else warning
    return message.model_copy(update={"content": content})


def answered(seam: SessionBrake, verdict: Verdict, result: Any) -> Any:
    """The tool's answer to a call that ran: its ``ToolMessage`` content fed to the
    progress mode, and the warning after it for a warned call (a ``Command`` carries no
    result of its own and passes as it is)."""
    if isinstance(result, ToolMessage):
        seam.feed(verdict, result.content)
        if verdict.warning is not None:
            return with_warning(result, verdict.warning)
    return result


def _first_message(request: Any) -> Any:
    """The first message of the run's state: one object for the whole run."""
    state = getattr(request, "state", None)
    messages = state.get("messages") if isinstance(state, dict) else state
    if messages is None and state is not None:
        messages = getattr(state, "messages", None)
    return messages[0] if isinstance(messages, list) and messages else None


class LoopBrakeWrapper:
    """A ``ToolNode`` ``wrap_tool_call``: deny the ``max_repeats``-th identical tool
    call in a row of a thread."""

    def __init__(self, brake: LoopBrake | None = None, **options: Unpack[BrakeOptions]) -> None:
        self.seam = SessionBrake.of(
            brake, options, default_key=self._default_key, where="langgraph"
        )
        self.brake = self.seam.brake

    def _default_key(self, request: Any) -> str:
        thread = thread_session_key(request)
        if thread is not None:
            return thread
        first = _first_message(request)
        if first is None:  # no conversation to key on: this call alone
            return fresh_call_id()
        return self.seam.scoped_key(first, "run")

    def _judge(self, request: Any) -> tuple[Verdict, ToolMessage | None]:
        call = request.tool_call
        verdict = self.seam.judge(
            self.seam.session(request), call["name"], call.get("args"), call.get("id")
        )
        if not verdict.denied:
            return verdict, None
        if verdict.stop:
            raise GraphInterrupt(
                (Interrupt(value={"message": verdict.message, **denial_fields(verdict)}),)
            )
        return verdict, denial_message(verdict, call)

    def __call__(self, request: Any, execute: Callable[[Any], Any]) -> Any:
        """``wrap_tool_call``: the denial, else the tool's own answer."""
        verdict, denial = self._judge(request)
        if denial is not None:
            return denial
        with self.seam.running(verdict):
            return answered(self.seam, verdict, execute(request))

    wrap_tool_call = __call__

    async def awrap_tool_call(self, request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
        """``awrap_tool_call``: as ``wrap_tool_call``, for ``ainvoke``."""
        verdict, denial = self._judge(request)
        if denial is not None:
            return denial
        with self.seam.running(verdict):
            return answered(self.seam, verdict, await execute(request))
